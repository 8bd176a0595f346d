"""The wheel: one import namespace (`oab_bench`) plus the task module, and both work installed,
from a folder that is not the checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.e2e  # lighteval's CLI, installed: about half a minute


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A copy of the tracked files, so nothing untracked in the checkout slips in."""
    src = tmp_path_factory.mktemp("src")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for rel in filter(None, tracked.decode().split("\0")):
        if (REPO / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, src / rel)
    return src


@pytest.fixture(scope="module")
def wheel(source, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        str(out),
        str(source),
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    (whl,) = out.glob("oab_bench-*.whl")
    return whl


def test_the_wheel_installs_one_namespace_and_the_task_module(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"oab_bench", "oab_bench_task.py"}
    assert not [n for n in names if "/benchmarks/" in n or n.startswith(("tests/", "benchmarks/"))]
    assert {"oab_bench/dataset_builder/errata.yaml", "oab_bench/dataset_builder/card.md.j2"} <= set(names)
    assert any(n.startswith("oab_bench/judge/audit/templates/") for n in names)


def test_installed_the_cli_and_lighteval_find_everything(wheel, tmp_path, built_dataset):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # the dependencies come from this venv's site-packages as a plain path: its .pth files (our
    # editable install among them) are not run, so only the wheel provides oab_bench
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(py),
        "install",
        "-q",
        "--no-deps",
        "--no-index",
        str(wheel),
    ]
    subprocess.run(pip, check=True, capture_output=True, timeout=300)
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OAB_")} | {"PYTHONPATH": ""}
    where = subprocess.run(
        [
            py,
            "-c",
            "from importlib.util import find_spec as f; print(f('oab_bench').origin, f('oab_bench_task').origin)",
        ],
        cwd=away,
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.returncode == 0 and str(REPO) not in where.stdout, where.stderr[-2000:]
    help_ = subprocess.run(
        [venv / "bin" / "oab-bench", "-h"], cwd=away, env=env, capture_output=True, text=True
    )
    assert help_.returncode == 0 and "leaderboard" in help_.stdout, help_.stderr[-2000:]
    dump = subprocess.run(
        [py, "-m", "lighteval", "tasks", "dump", "--custom-tasks", "oab_bench_task"],
        cwd=away,
        env=env
        | {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OAB_BENCH_DATASET": str(built_dataset)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    # no OAB_JUDGE_* set: browsing the task needs no judge
    assert dump.returncode == 0 and "oab_bench" in dump.stdout, dump.stderr[-3000:]
    assert "OAB-Bench" in dump.stdout  # the task file's docstring
    json.loads(dump.stdout)


def test_an_editable_install_prints_no_warning_of_ours(source, tmp_path):
    """`pip install -e .` builds through pyproject.toml's backend: no warning, setuptools' notice on
    editable installs of mapped folders included (pip shows a backend's warnings)."""
    code = "import build_backend, sys; print(build_backend.build_editable(sys.argv[1]))"
    cmd = [sys.executable, "-W", "error", "-c", code, str(tmp_path)]
    proc = subprocess.run(cmd, cwd=source, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "Warning" not in proc.stderr, proc.stderr[-3000:]
    assert (
        proc.stdout.split()[-1].startswith("oab_bench-0.1.0")
        and (tmp_path / proc.stdout.split()[-1]).is_file()
    )
