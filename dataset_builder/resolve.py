"""A dataset argument resolved once, up front, to a local folder in our built layout.

What `datasets` and lighteval then load is always a folder on disk: nothing is fetched later, so
no command spends minutes in the Hub client's retries to end in a traceback. A folder (relative
paths are read from the working folder) is used as `prepared.prepare_dataset` makes it; a Hub id
is looked up with one call (a few seconds at most): missing, gated or unreachable is one line
naming the dataset and what to pass instead. Upstream's raw layout is built (and cached) as
before; a Hub dataset in our built layout is downloaded into the Hugging Face cache. Each Hub
resolution is recorded beside the builds, so that offline the last one is used, saying so.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from oab_bench.dataset_builder import prepared
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.origin import HF_PREFIX, RAW_CONFIGS
from oab_bench.dataset_builder.prepared import UPSTREAM_DATASET, prepare_dataset

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
HUB_TIMEOUT_S = 10.0
INSTEAD = (
    "pass --dataset FOLDER: a folder made by `oab-bench build`, or upstream's files (question.jsonl "
    "and reference_answer/, e.g. a clone of github.com/maritaca-ai/oab-bench)"
)


class Unreachable(Exception):
    """The Hub could not be asked (offline mode, no network, a timeout)."""


_HUB: dict[tuple[str, str | None], str] = {}  # this process's Hub resolutions: one lookup each


def resolve_dataset(given: str, origin: str = "--dataset") -> str:
    """The absolute folder `datasets`/lighteval load for `given`; `origin` names where it came from
    (a flag or a variable) in errors."""
    cwd = os.getcwd()
    spec = given.removeprefix(HF_PREFIX)
    path = Path(spec).expanduser()
    if not path.is_absolute():
        path = Path(cwd) / path
    if path.exists():
        return prepare_dataset(given).path  # (its errors name the dataset as the user gave it)
    repo, _, revision = spec.partition("@")
    if (given.startswith(HF_PREFIX) and Path(spec).is_absolute()) or not HUB_ID.match(repo):
        raise SourceError(f"no such folder {path}", file=f"{origin} {given}")
    key = (repo, revision or None)
    try:
        if key not in _HUB:
            _HUB[key] = _from_hub(*key)
        return _HUB[key]
    except Unreachable as e:
        cached = _last_resolution(*key)
        if cached is not None:
            _HUB[key] = cached
            return cached
        could_be_a_folder = not given.startswith(HF_PREFIX) and repo != UPSTREAM_DATASET
        local = f"no folder {given} in {cwd}, and " if could_be_a_folder else ""
        raise SourceError(
            f"{local}{repo} is a Hugging Face Hub dataset, which cannot be reached from here ({e}) and "
            f"was never resolved here before: {INSTEAD}",
            file=f"{origin} {given}",
        ) from None
    except SourceError as e:
        if given.startswith(HF_PREFIX) or repo == UPSTREAM_DATASET:
            raise e.at(file=f"{origin} {given}") from None
        raise SourceError(f"no folder {given} in {cwd}, and {e.message}", file=f"{origin} {given}") from None


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _info(repo: str, revision: str | None):
    """The Hub's description of the dataset: one request, no retries."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if _offline():
        raise Unreachable("HF_HUB_OFFLINE is set")
    try:
        return HfApi().dataset_info(repo, revision=revision, timeout=HUB_TIMEOUT_S)
    except GatedRepoError:
        raise SourceError(f"{repo} is gated on the Hub: accept its terms and set HF_TOKEN") from None
    except RevisionNotFoundError:
        raise SourceError(f"the Hub dataset {repo} has no revision {revision}") from None
    except RepositoryNotFoundError:
        raise SourceError(
            f"no dataset {repo} on the Hugging Face Hub (or it is private: set HF_TOKEN)"
        ) from None
    except HfHubHTTPError as e:
        status = getattr(e.response, "status_code", None)
        if status is not None and status < 500 and status != 429:
            raise SourceError(f"the Hub refused to describe {repo}: {str(e).splitlines()[0]}") from None
        raise Unreachable(str(e).splitlines()[0]) from None
    except Exception as e:  # no network, DNS, a timeout, offline mode set inside the client
        raise Unreachable(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None


def _from_hub(repo: str, revision: str | None) -> str:
    info = _info(repo, revision)
    files = [s.rfilename for s in info.siblings or []]
    if any(re.fullmatch(r"data/test-.*\.parquet", f) for f in files):  # our built layout, pushed
        from huggingface_hub import snapshot_download

        folder = snapshot_download(
            repo, repo_type="dataset", revision=info.sha, allow_patterns=["README.md", "data/*"]
        )
    elif all(any(f.startswith(f"{c}/") for f in files) for c in RAW_CONFIGS) or repo == UPSTREAM_DATASET:
        folder = prepare_dataset(f"{HF_PREFIX}{repo}@{info.sha}").path  # upstream's raw layout: built
    else:
        raise SourceError(
            f"the Hub dataset {repo} is in neither layout: no data/test-*.parquet (made by `oab-bench "
            "build`) and no questions/ and guidelines/ configs (upstream's)"
        )
    _record(repo, revision, info.sha, folder)
    return folder


def _record_path(repo: str, revision: str | None) -> Path:
    return (
        prepared.builds_dir() / "hub" / (re.sub(r"[^\w.-]+", "_", f"{repo}@{revision or 'main'}") + ".json")
    )


def _record(repo: str, revision: str | None, sha: str, folder: str) -> None:
    path = _record_path(repo, revision)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"repo": repo, "revision": sha, "folder": folder}), encoding="utf-8")
        tmp.replace(path)
    except OSError:  # a read-only cache: the next offline start cannot use it, nothing more
        pass


def _last_resolution(repo: str, revision: str | None) -> str | None:
    """Offline: the folder this Hub id resolved to when it was last reachable, if it is still there."""
    from oab_bench.dataset_builder.publish import is_our_build

    try:
        seen = json.loads(_record_path(repo, revision).read_text(encoding="utf-8"))
        folder = Path(seen["folder"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (is_our_build(folder) or any(folder.glob("data/test-*.parquet"))):
        return None
    short = str(seen.get("revision", ""))[:12]
    print(
        f"oab_bench: the Hub cannot be reached: using {repo} as last resolved here (revision {short}), at {folder}",
        file=sys.stderr,
        flush=True,
    )
    return str(folder)
