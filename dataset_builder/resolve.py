"""A dataset argument resolved once to a folder in our built layout (docs/dataset.md): a Hub id in one call
(recorded for offline starts), upstream's raw layout built once per revision under `$HF_HOME/oab-bench/`."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
import sys
from pathlib import Path

from oab_bench.dataset_builder.errata import DEFAULT_ERRATA
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.source import (
    HF_PREFIX,
    QUESTIONS_FILE,
    RAW_CONFIGS,
    card_configs,
    data_folder,
    file_source,
    hub_revision,
    parse_hub_spec,
)
from oab_bench.whole_file import replace_whole

UPSTREAM_DATASET = "maritaca-ai/oab-bench"
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
INSTEAD = (
    "pass --dataset FOLDER: a folder made by `oab-bench build`, or upstream's files (question.jsonl "
    "and reference_answer/, e.g. a clone of github.com/maritaca-ai/oab-bench)"
)


class Unreachable(Exception):
    """The Hub could not be asked (offline mode, no network, a timeout)."""


def builds_dir() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "oab-bench" / "builds"


def resolve_dataset(given: str, origin: str = "--dataset") -> str:
    """The absolute folder for `given`, a path (from the working folder) or a Hub id; `origin` names it."""
    where, spec = f"{origin} {given}", given.removeprefix(HF_PREFIX)
    path = Path.cwd() / Path(spec).expanduser()
    if path.exists():
        return prepare_dataset(given)  # (its errors name the dataset as the user gave it)
    repo, _, revision = spec.partition("@")
    if (given.startswith(HF_PREFIX) and Path(spec).is_absolute()) or not HUB_ID.match(repo):
        raise SourceError(f"no such folder {path}", file=where)
    could_be_a_folder = not given.startswith(HF_PREFIX) and repo != UPSTREAM_DATASET
    local = f"no folder {given} in {Path.cwd()}, and " if could_be_a_folder else ""
    try:
        return _hub_folder(repo, revision or None)
    except Unreachable as e:
        why = f"{repo} is a Hugging Face Hub dataset, which cannot be reached from here ({e})"
        raise SourceError(f"{local}{why} and was never resolved here before: {INSTEAD}", file=where) from None
    except SourceError as e:
        raise (SourceError(f"{local}{e.message}", file=where) if local else e.at(file=where)) from None


@functools.cache  # one lookup per Hub id and process; a failure is not kept
def _hub_folder(repo: str, revision: str | None) -> str:
    record = builds_dir() / "hub" / (re.sub(r"[^\w.-]+", "_", f"{repo}@{revision or 'main'}") + ".json")
    try:
        info = _info(repo, revision)
    except Unreachable:
        if last := _last_resolution(record, repo):
            return last
        raise
    files = [s.rfilename for s in info.siblings or []]
    if any(re.fullmatch(r"data/test-.*\.parquet", f) for f in files):  # our built layout, pushed
        from huggingface_hub import snapshot_download

        only = ["README.md", "data/*"]
        folder = snapshot_download(repo, repo_type="dataset", revision=info.sha, allow_patterns=only)
    elif all(any(f.startswith(f"{c}/") for f in files) for c in RAW_CONFIGS) or repo == UPSTREAM_DATASET:
        folder = prepare_dataset(f"{HF_PREFIX}{repo}@{info.sha}")  # upstream's raw layout: built
    else:
        why = "no data/test-*.parquet (made by `oab-bench build`) and no questions/ and guidelines/ configs"
        raise SourceError(f"the Hub dataset {repo} is in neither layout: {why} (upstream's)")
    # a read-only cache: the next offline start cannot use it, nothing more
    with contextlib.suppress(OSError):
        record.parent.mkdir(parents=True, exist_ok=True)
        replace_whole(record, [json.dumps({"revision": info.sha, "folder": folder}).encode()], mode=0o644)
    return folder


def _info(repo: str, revision: str | None):
    """The Hub's description of the dataset: one request, no retries."""
    from huggingface_hub import HfApi, errors

    try:
        return HfApi().dataset_info(repo, revision=revision, timeout=10.0)
    except errors.GatedRepoError:
        raise SourceError(f"{repo} is gated on the Hub: accept its terms and set HF_TOKEN") from None
    except errors.RevisionNotFoundError:
        raise SourceError(f"the Hub dataset {repo} has no revision {revision}") from None
    except errors.RepositoryNotFoundError:
        why = "on the Hugging Face Hub (or it is private: set HF_TOKEN)"
        raise SourceError(f"no dataset {repo} {why}") from None
    except errors.HfHubHTTPError as e:
        status = getattr(e.response, "status_code", None)
        if status is not None and status < 500 and status != 429:
            raise SourceError(f"the Hub refused to describe {repo}: {str(e).splitlines()[0]}") from None
        raise Unreachable(str(e).splitlines()[0]) from None
    except Exception as e:  # offline mode, no network, DNS, a timeout
        raise Unreachable(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None


def _last_resolution(record: Path, repo: str) -> str | None:
    """Offline: the folder this Hub id resolved to when it was last reachable, if it is still there."""
    try:
        seen = json.loads(record.read_text(encoding="utf-8"))
        folder = Path(seen["folder"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not any(folder.glob("data/test-*.parquet")):
        return None
    said = f"using {repo} as last resolved here (revision {str(seen.get('revision', ''))[:12]}), at {folder}"
    print(f"oab_bench: the Hub cannot be reached: {said}", file=sys.stderr, flush=True)
    return str(folder)


def raw_source(dataset: str) -> str | None:
    """`--source` for upstream's raw layout (`dataset` an existing folder, or `hf:...`); None otherwise."""
    if dataset.startswith(HF_PREFIX):
        return dataset
    path = Path(dataset).expanduser().resolve()
    if (data_folder(path) / QUESTIONS_FILE).is_file():  # upstream's JSONL files, or a clone of its repo
        return str(path)
    return f"{HF_PREFIX}{path}" if set(RAW_CONFIGS) <= card_configs(path) else None


_SAID: set[Path] = set()  # builds announced by this process: lighteval imports the task file twice


def prepare_dataset(dataset: str, errata: Path = DEFAULT_ERRATA) -> str:
    """The built folder for `dataset` (a folder or `hf:...`); a raw layout is built once into the cache."""
    from oab_bench.dataset_builder.build import build_rows
    from oab_bench.dataset_builder.publish import is_our_build, write_dataset

    source = raw_source(dataset)
    if source is None:
        path = Path(dataset).expanduser().resolve()
        if not any(path.glob("data/test-*.parquet")):
            theirs = "question.jsonl and reference_answer/, or a README.md declaring the configs questions"
            why = "neither a folder made by `oab-bench build` (data/test-*.parquet) nor upstream's layout"
            raise SourceError(f"not a dataset: {why} ({theirs} and guidelines)", file=dataset)
        return str(path)
    spec = parse_hub_spec(source) if source.startswith(HF_PREFIX) else None
    revision = hub_revision(spec) if spec else file_source(Path(source)).provenance.revision
    name = (spec.repo or str(spec.folder)) if spec else source  # a Hub id: the sha says which revision
    key = hashlib.sha256(f"{name}\0{revision}\0".encode() + errata.read_bytes())
    code = sorted(p for p in Path(__file__).parent.iterdir() if p.suffix in (".py", ".j2"))  # the card's too
    for p in code:  # a new builder never reuses an old builder's build
        key.update(p.name.encode() + b"\0" + p.read_bytes())
    folder = builds_dir() / key.hexdigest()[:20]
    short = revision.removeprefix("sha256:")[:12]
    said = f"oab_bench: {dataset} is upstream's raw layout (revision {short}): "
    if is_our_build(folder):
        said += f"using the build cached at {folder}"
    else:
        if spec and spec.repo:  # the commit the key names, even if the Hub's main moves meanwhile
            source = f"{HF_PREFIX}{spec.repo}@{revision}"
        rows, report = build_rows(source, errata)
        try:
            write_dataset(rows, report, folder)
        except FileExistsError:
            if not is_our_build(folder):  # another process finished the same build first: that one is fine
                raise
        said += f"built {len(rows)} questions in memory with the checked-in errata, cached at {folder}"
    if folder not in _SAID:
        print(said, file=sys.stderr, flush=True)
    _SAID.add(folder)
    return str(folder)
