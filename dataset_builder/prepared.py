"""Any dataset argument -> a folder or Hub id in our built layout, which `datasets` and lighteval load.

Our built layout (a folder made by `oab-bench build`, or a Hub id it was pushed to) passes through.
Upstream's raw layout (its Hub id `maritaca-ai/oab-bench`, a folder in that Hub layout, or a folder
of its JSONL files) is built here, with the checked-in errata, once per source revision: the build
is kept under the Hugging Face cache (`$HF_HOME/oab-bench/builds/<key>`, the key made of source,
revision, builder version (a hash of this package's code) and errata), so a second start only
resolves the revision. lighteval only calls `load_dataset(path=hf_repo, ...)`, hence a folder
rather than rows.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import NamedTuple

from oab_bench.dataset_builder.errata import DEFAULT_ERRATA
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.origin import (
    HF_PREFIX,
    RAW_CONFIGS,
    card_configs,
    data_folder,
    parse_hub_spec,
    resolve_revision,
)
from oab_bench.dataset_builder.source import QUESTIONS_FILE

UPSTREAM_DATASET = "maritaca-ai/oab-bench"


def builder_version() -> str:
    """A hash of this package's code: a new builder never reuses an old builder's cached rows."""
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


class Prepared(NamedTuple):
    path: str  # what load_dataset gets: an absolute folder or a Hub id
    note: str | None  # one line saying an in-memory build happened or was reused; None otherwise
    cached: bool = False


def raw_source(dataset: str) -> str | None:
    """`oab-bench build --source` for upstream's raw layout; None for our built layout."""
    path = Path(dataset).expanduser()
    if path.exists():
        path = path.resolve()
        if (data_folder(path) / QUESTIONS_FILE).is_file():  # upstream's JSONL files, or a clone of its repo
            return str(path)
        return f"{HF_PREFIX}{path}" if set(RAW_CONFIGS) <= card_configs(path) else None
    if dataset.startswith(HF_PREFIX):
        return dataset
    repo = dataset.partition("@")[0]
    if repo == UPSTREAM_DATASET:
        return f"{HF_PREFIX}{dataset}"
    if repo.count("/") != 1:
        return None
    try:
        import datasets

        configs = set(datasets.get_dataset_config_names(repo, revision=dataset.partition("@")[2] or None))
    except Exception:  # unreachable or unknown: let load_dataset report it as it does for any dataset
        return None
    return f"{HF_PREFIX}{dataset}" if set(RAW_CONFIGS) <= configs else None


def check_built_layout(path: Path, given: str) -> None:
    """A local dataset that is not upstream's layout must be ours: a folder with the test split's
    parquet under data/ (`oab-bench build`, or a copy of a pushed dataset). Anything else is refused
    by name here, not by `datasets` (an unknown split) or lighteval (a traceback) later."""
    if path.is_dir() and any(path.glob("data/test-*.parquet")):
        return
    raise SourceError(
        "not a dataset: neither a folder made by `oab-bench build` (data/test-*.parquet) nor upstream's "
        "layout (question.jsonl and reference_answer/, or a README.md declaring the configs questions "
        "and guidelines)",
        file=given,
    )


def builds_dir() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "oab-bench" / "builds"


def build_key(source: str, revision: str, errata: Path = DEFAULT_ERRATA) -> str:
    spec = source.removeprefix(HF_PREFIX)
    name = spec if Path(spec).is_absolute() else spec.partition("@")[0]  # a Hub id: the sha says which
    blob = "\0".join([name, revision, builder_version(), errata.read_text(encoding="utf-8")])
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def source_revision(source: str) -> str:
    if source.startswith(HF_PREFIX):
        return resolve_revision(parse_hub_spec(source))
    from oab_bench.dataset_builder.origin import file_source

    return file_source(Path(source)).provenance.revision or "unknown"


_SEEN: dict[Path, Prepared] = {}  # this process's builds: lighteval imports the task file twice


def prepare_dataset(dataset: str, *, announce: bool = True, errata: Path = DEFAULT_ERRATA) -> Prepared:
    """Resolve `dataset`; build upstream's raw layout into the cache if it is not there yet.

    Said once per process, on stderr, when the raw layout was built or a cached build is used.
    """
    from oab_bench.dataset_builder.publish import is_our_build

    source = raw_source(dataset)
    if source is None:
        path = Path(dataset).expanduser()
        if not path.exists():
            return Prepared(dataset, None)  # a Hub id
        check_built_layout(path, dataset)
        return Prepared(str(path.resolve()), None)
    revision = source_revision(source)
    folder = builds_dir() / build_key(source, revision, errata)
    short = revision.removeprefix("sha256:")[:12]
    cached = is_our_build(folder)
    if cached and folder in _SEEN:
        return _SEEN[folder]
    if cached:
        note = f"oab_bench: {dataset} is upstream's raw layout (revision {short}): using the build cached at {folder}"
    else:
        spec = parse_hub_spec(source) if source.startswith(HF_PREFIX) else None
        if spec is not None and spec.repo:  # build the commit the key names, even if main moves meanwhile
            source = f"{HF_PREFIX}{spec.repo}@{revision}"
        n = _build_into(source, folder, errata)
        note = (
            f"oab_bench: {dataset} is upstream's raw layout (revision {short}): built {n} questions in memory "
            f"with the checked-in errata, cached at {folder}"
        )
    if announce:
        print(note, file=sys.stderr, flush=True)
    _SEEN[folder] = Prepared(str(folder), note, cached)
    return _SEEN[folder]


def _build_into(source: str, folder: Path, errata: Path) -> int:
    from oab_bench.dataset_builder.build import build_rows
    from oab_bench.dataset_builder.publish import is_our_build, write_dataset

    rows, report = build_rows(source if source.startswith(HF_PREFIX) else Path(source), errata)
    try:
        write_dataset(rows, report, folder)
    except FileExistsError:
        if not is_our_build(folder):  # another process finished the same build first: that one is fine
            raise
    return len(rows)
