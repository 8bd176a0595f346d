"""setuptools' build backend, without the notice it prints on every editable install of a project
whose folders are mapped into its package (ours are, by design: pyproject.toml's package-dir)."""

import warnings

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 (the PEP 517 hooks)


def build_editable(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Editable installation")
        return build_meta.build_editable(*args, **kwargs)
