"""Where upstream's raw rows come from: a folder of its JSONL files, or a dataset in its Hub layout.

`hf:OWNER/NAME[@REVISION]` is upstream's Hub dataset (`maritaca-ai/oab-bench`): two configs,
`questions` and `guidelines`, one `train` split each, with the columns of `question.jsonl` and
`reference_answer/guidelines.jsonl`. `hf:/abs/folder` is the same layout on disk (README.md with a
`configs:` block, `questions/train-*.parquet`, `guidelines/train-*.parquet`). Both are read through
`datasets`; rows are numbered from 1 in error messages, like lines of a file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import yaml

from oab_bench.conventions import BUILD_MARKER
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.schema import Provenance
from oab_bench.dataset_builder.source import GUIDELINES_FILE, QUESTIONS_FILE, read_objects

HF_PREFIX = "hf:"
QUESTIONS_CONFIG = "questions"
GUIDELINES_CONFIG = "guidelines"
RAW_CONFIGS = (QUESTIONS_CONFIG, GUIDELINES_CONFIG)


class RawSource(NamedTuple):
    questions: Iterable[tuple[int, dict]]  # (line or row number, raw object)
    guidelines: Iterable[tuple[int, dict]]
    questions_label: str  # what error messages call them: a file name, or `SOURCE:questions`
    guidelines_label: str
    provenance: Provenance


class HubSpec(NamedTuple):
    """`hf:OWNER/NAME[@REVISION]` (repo) or `hf:/abs/folder` (folder)."""

    spec: str
    repo: str | None
    revision: str | None
    folder: Path | None


def parse_hub_spec(spec: str) -> HubSpec:
    body = spec.removeprefix(HF_PREFIX)
    path = Path(body).expanduser()
    if path.is_absolute() or body.startswith("."):
        return HubSpec(spec, None, None, path.resolve())
    repo, _, revision = body.partition("@")
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise SourceError(
            "expected hf:OWNER/NAME[@REVISION] or hf:/absolute/folder", file=spec, field="--source"
        )
    return HubSpec(spec, repo, revision or None, None)


def card_configs(folder: Path) -> set[str]:
    """Config names in a folder's README.md front matter (empty when there is none)."""
    readme = Path(folder) / "README.md"
    if not readme.is_file():
        return set()
    text = readme.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return set()
    try:
        meta = yaml.safe_load(text.split("---", 2)[1]) or {}
    except yaml.YAMLError:
        return set()
    configs = meta.get("configs") if isinstance(meta, dict) else None
    return {str(c.get("config_name")) for c in configs or [] if isinstance(c, dict)}


def files_hash(paths: Iterable[Path], root: Path) -> str:
    """`sha256:` of the files' names and bytes: the revision of a local folder in the Hub layout."""
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return f"sha256:{h.hexdigest()[:16]}"


def content_hash(**tables: Iterable[tuple[int, dict]]) -> str:
    """`sha256:` of the parsed rows in canonical form (each table's rows as sorted-key JSON, sorted): the
    revision of a folder of JSONL files. Line order, line endings and JSON spacing do not change it."""
    h = hashlib.sha256()
    for name in sorted(tables):
        rows = sorted(json.dumps(obj, sort_keys=True, separators=(",", ":")) for _, obj in tables[name])
        h.update(json.dumps([name, rows]).encode())
    return f"sha256:{h.hexdigest()[:16]}"


def data_folder(folder: Path) -> Path:
    """A clone of upstream's repository stands for its one `data/*/` folder with a question file."""
    folder = Path(folder)
    if folder.is_dir() and not (folder / QUESTIONS_FILE).exists():
        found = sorted(p.parent for p in folder.glob(f"data/*/{QUESTIONS_FILE}"))
        if len(found) > 1:
            names = ", ".join(str(p.relative_to(folder)) for p in found)
            raise SourceError(f"several upstream data folders ({names}): pass one of them", file=str(folder))
        if found:
            return found[0]
    return folder


def _looks_built(folder: Path) -> bool:
    """Our own output (`oab-bench build`'s marker or `data/test-*.parquet`) rather than upstream's files."""
    return (folder / BUILD_MARKER).is_file() or any(folder.glob("data/test-*.parquet"))


def file_source(folder: Path) -> RawSource:
    given = Path(folder)
    folder = data_folder(given)
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is a file"
        raise SourceError(
            f"{what}: expected the upstream data folder (with {QUESTIONS_FILE})", file=str(folder)
        )
    if not (folder / QUESTIONS_FILE).exists() and _looks_built(folder):
        raise SourceError(
            f"looks like a dataset folder built by `oab-bench build`, not upstream's source: pass upstream's "
            f"data folder (with {QUESTIONS_FILE} and {GUIDELINES_FILE}), or use the built folder as --dataset",
            file=str(given),
        )
    # errors name files as the user can find them: inside a clone of upstream's repository, by the
    # path from the folder they passed (`data/oab_bench/question.jsonl`)
    prefix = folder.relative_to(given).as_posix() + "/" if folder != given else ""
    questions_label, guidelines_label = prefix + QUESTIONS_FILE, prefix + GUIDELINES_FILE
    questions = list(read_objects(folder / QUESTIONS_FILE, label=questions_label))
    guidelines = list(read_objects(folder / GUIDELINES_FILE, label=guidelines_label))
    return RawSource(
        questions,
        guidelines,
        questions_label,
        guidelines_label,
        Provenance(
            source=f"files:{folder.name}", revision=content_hash(questions=questions, guidelines=guidelines)
        ),
    )


def resolve_revision(spec: HubSpec) -> str:
    """The commit sha a Hub revision (default: main) stands for; a local folder's content hash."""
    if spec.folder is not None:
        if not spec.folder.is_dir():
            raise SourceError(
                "is a file, not a folder" if spec.folder.exists() else "folder not found", file=spec.spec
            )
        if not (spec.folder / "README.md").is_file():
            jsonl = (spec.folder / QUESTIONS_FILE).is_file() or (spec.folder / "data").is_dir()
            hint = "; upstream's JSONL files are read without hf: (--source FOLDER)" if jsonl else ""
            raise SourceError(
                "no README.md: not upstream's Hub layout (a README.md declaring the configs "
                f"{' and '.join(RAW_CONFIGS)}, their parquet files under {'/ and '.join(RAW_CONFIGS)}/){hint}",
                file=spec.spec,
            )
        files = [p for c in RAW_CONFIGS for p in (spec.folder / c).rglob("*") if p.is_file()]
        return files_hash([spec.folder / "README.md", *files], spec.folder)
    import datasets

    try:
        return datasets.load_dataset_builder(spec.repo, QUESTIONS_CONFIG, revision=spec.revision).hash
    except ValueError as e:  # no such config: not upstream's layout
        raise SourceError(f"not upstream's Hub layout: {e}", file=spec.spec) from None
    except (ConnectionError, FileNotFoundError) as e:  # DatasetNotFoundError is a FileNotFoundError
        raise SourceError(f"cannot read the Hub dataset: {e}", file=spec.spec) from None


@contextlib.contextmanager
def quiet(datasets):
    """No "Generating train split" bars for a local folder's few hundred rows (a task's log stays short)."""
    was_on = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was_on:
            datasets.enable_progress_bars()


def _load_config(spec: HubSpec, config: str, revision: str) -> list[dict]:
    import datasets
    from datasets.exceptions import DatasetGenerationError

    try:
        if spec.folder is not None:
            if config not in card_configs(spec.folder):
                raise SourceError(
                    f"no '{config}' config in README.md: not upstream's Hub layout", file=spec.spec
                )
            # A local folder with `configs:` is cached by its name alone (datasets 5.2): a fresh cache
            # each time, or a changed folder would load the old rows.
            with tempfile.TemporaryDirectory(prefix="oab-bench-raw-") as cache, quiet(datasets):
                ds = datasets.load_dataset(str(spec.folder), config, split="train", cache_dir=cache)
                return ds.to_list()
        return datasets.load_dataset(spec.repo, config, split="train", revision=revision).to_list()
    except SourceError:
        raise
    except (ValueError, ConnectionError, FileNotFoundError, DatasetGenerationError) as e:
        cause = (
            e.__cause__ if isinstance(e, DatasetGenerationError) and e.__cause__ else e
        )  # say why, not "an error occurred"
        raise SourceError(f"cannot read config '{config}': {cause}", file=spec.spec) from None


def hub_source(source: str) -> RawSource:
    spec = parse_hub_spec(source)
    revision = resolve_revision(spec)
    questions = _load_config(spec, QUESTIONS_CONFIG, revision)
    guidelines = _load_config(spec, GUIDELINES_CONFIG, revision)
    name = f"{HF_PREFIX}{spec.folder.name}" if spec.folder else f"{HF_PREFIX}{spec.repo}"
    return RawSource(
        list(enumerate(questions, start=1)),
        list(enumerate(guidelines, start=1)),
        f"{name}:{QUESTIONS_CONFIG}",
        f"{name}:{GUIDELINES_CONFIG}",
        Provenance(source=name, revision=revision),
    )


def open_source(source: str | Path) -> RawSource:
    """`hf:...` through `datasets`; anything else is a folder of upstream's JSONL files."""
    if isinstance(source, str) and source.startswith(HF_PREFIX):
        return hub_source(source)
    return file_source(Path(source))
