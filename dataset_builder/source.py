"""Upstream's input typed and read: a folder of its JSONL files, or its Hub layout (`hf:OWNER/NAME[@REV]`,
`hf:/abs/folder`, rows numbered from 1 like lines). Errors name file, line and field."""

from __future__ import annotations

import contextlib
import hashlib
import json
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, NamedTuple, TypeVar

import yaml
from pydantic import AfterValidator, AliasPath, BaseModel, ConfigDict, Field, ValidationError

from oab_bench.conventions import BUILD_MARKER
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.schema import Provenance

QUESTIONS_FILE = "question.jsonl"
GUIDELINES_FILE = "reference_answer/guidelines.jsonl"
HF_PREFIX = "hf:"
RAW_CONFIGS = ("questions", "guidelines")


def _unicode(text: str, non_empty: bool = True) -> str:
    """JSON's `\\ud800` escape reads as a lone surrogate, which no UTF-8 file (or parquet) can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        at = e.start
        raise ValueError(f"lone surrogate {text[at]!r} at character {at + 1}: not valid Unicode") from None
    if not text.strip() and non_empty:
        raise ValueError("empty text")
    return text


Text = Annotated[str, AfterValidator(lambda t: _unicode(t, non_empty=False))]
NonEmptyText = Annotated[str, AfterValidator(_unicode)]


class SourceQuestion(BaseModel):
    """One line of `question.jsonl`. Strict: `"0.6"` or `true` is not a value, nor NaN or infinity."""

    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False)

    question_id: NonEmptyText
    category: NonEmptyText
    statement: NonEmptyText
    turns: list[Text] = Field(min_length=1)  # a peça's one turn is "" upstream
    values: list[float] = Field(min_length=1)
    system: NonEmptyText


class ReferenceAnswer(BaseModel):
    """A line of `reference_answer/guidelines.jsonl`: its texts (the first choice's) go into the dataset."""

    model_config = ConfigDict(extra="ignore")

    question_id: str
    model_id: str
    turns: list[Text] = Field(min_length=1, validation_alias=AliasPath("choices", 0, "turns"))


M = TypeVar("M", bound=BaseModel)


def read_objects(path: Path, *, label: str | None = None) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a JSONL file split on newline bytes only; SourceError names a bad line."""
    name, path = label or str(path), Path(path)
    if path.is_dir() or not path.exists():  # (a pipe, /dev/fd/N, is read too)
        raise SourceError("is a folder, not a JSONL file" if path.is_dir() else "file not found", file=name)
    with path.open("rb") as handle:
        for lineno, raw_line in enumerate(handle, start=1):
            try:
                text = raw_line.decode("utf-8")
            except UnicodeDecodeError as e:
                raise SourceError(f"not UTF-8 (byte {e.start + 1})", file=name, line=lineno) from None
            if not text.strip():
                continue
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as e:
                where = f"{e.msg.removesuffix(' at')} at column {e.colno}"  # "starting at" ends some msgs
                raise SourceError(f"invalid JSON ({where})", file=name, line=lineno) from None
            if not isinstance(raw, dict):
                raise SourceError("expected a JSON object", file=name, line=lineno)
            yield lineno, raw


def validate_objects(
    objects: Iterable[tuple[int, dict]], model: type[M], *, label: str
) -> Iterator[tuple[int, M]]:
    """Typed rows from (line or row number, object) pairs; SourceError names the first bad one."""
    for lineno, raw in objects:
        try:
            yield lineno, model.model_validate(raw)
        except ValidationError as e:
            raise shape_error(e).at(file=label, line=lineno) from None


_KINDS = {  # pydantic's error type -> what the value should have been
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "float_type": "a number",
    "int_type": "a whole number",
    "string_type": "a string",
    "string_too_short": "a non-empty string",
    "bool_type": "true or false",
    "literal_error": "one of the known values",
    "greater_than_equal": "a number >= {ge}",
}


def plain(x):
    """Parquet gives numpy arrays and scalars where JSON had lists and numbers: plain Python."""
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple) or type(x).__name__ == "ndarray":
        return [plain(v) for v in x]
    return x.item() if hasattr(x, "item") and type(x).__module__ == "numpy" else x


def shape_error(e: ValidationError) -> SourceError:
    """A pydantic error as `field 'x': what is wrong`, for every reader of input (the caller adds where)."""
    first = e.errors()[0]
    if first["type"] == "json_invalid":
        return SourceError(f"not JSON ({first['ctx']['error']})")
    shown = repr(first.get("input"))
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    kind = _KINDS.get(first["type"], "").format(**first.get("ctx", {}))
    why = f"{shown} is not {kind}" if kind else f"{shown}: {first['msg']}"
    loc = ""
    for part in first["loc"]:
        loc += f"[{part}]" if isinstance(part, int) else (f".{part}" if loc else str(part))
    return SourceError("missing" if first["type"] == "missing" else why, field=loc or "<record>")


class RawSource(NamedTuple):
    questions: list[tuple[int, dict]]  # (line or row number, raw object)
    guidelines: list[tuple[int, dict]]
    questions_label: str  # what errors call them: a file name, or `SOURCE:questions`
    guidelines_label: str
    provenance: Provenance


class HubSpec(NamedTuple):  # `hf:OWNER/NAME[@REVISION]` (repo) or `hf:/abs/folder` (folder)
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
        expected = "expected hf:OWNER/NAME[@REVISION] or hf:/absolute/folder"
        raise SourceError(expected, file=spec, field="--source")
    return HubSpec(spec, repo, revision or None, None)


def card_configs(folder: Path) -> set[str]:
    """Config names in a folder's README.md front matter (empty when there is none)."""
    readme = folder / "README.md"
    text = readme.read_text(encoding="utf-8", errors="replace") if readme.is_file() else ""
    with contextlib.suppress(yaml.YAMLError, LookupError, TypeError, AttributeError):
        if text.startswith("---"):
            return {str(c["config_name"]) for c in yaml.safe_load(text.split("---", 2)[1])["configs"]}
    return set()


def _sha256(blobs: Iterable[bytes]) -> str:
    return f"sha256:{hashlib.sha256(b''.join(blobs)).hexdigest()[:16]}"


def data_folder(folder: Path) -> Path:
    """A clone of upstream's repository stands for its one `data/*/` folder with a question file."""
    if not folder.is_dir() or (folder / QUESTIONS_FILE).exists():
        return folder
    found = sorted(p.parent for p in folder.glob(f"data/*/{QUESTIONS_FILE}"))
    if len(found) > 1:
        names = ", ".join(str(p.relative_to(folder)) for p in found)
        raise SourceError(f"several upstream data folders ({names}): pass one of them", file=str(folder))
    return found[0] if found else folder


def file_source(given: Path) -> RawSource:
    """A folder of upstream's JSONL files; its revision a hash of the rows (line order, spacing aside)."""
    folder = data_folder(given)
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is a file"
        why = f"{what}: expected the upstream data folder (with {QUESTIONS_FILE})"
        raise SourceError(why, file=str(folder))
    built = (folder / BUILD_MARKER).is_file() or any(folder.glob("data/test-*.parquet"))
    if built and not (folder / QUESTIONS_FILE).exists():
        why = "looks like a dataset folder built by `oab-bench build`, not upstream's source: pass upstream's"
        where = f"data folder (with {QUESTIONS_FILE} and {GUIDELINES_FILE})"
        raise SourceError(f"{why} {where}, or use the built folder as --dataset", file=str(given))
    prefix = folder.relative_to(given).as_posix() + "/" if folder != given else ""  # in a clone: data/x/
    labels = [prefix + QUESTIONS_FILE, prefix + GUIDELINES_FILE]
    tables = [list(read_objects(given / label, label=label)) for label in labels]
    canonical = [sorted(json.dumps(o, sort_keys=True, separators=(",", ":")) for _, o in t) for t in tables]
    pairs = sorted(zip(RAW_CONFIGS, canonical, strict=True))
    revision = _sha256(json.dumps([c, rows]).encode() for c, rows in pairs)
    return RawSource(*tables, *labels, Provenance(source=f"files:{folder.name}", revision=revision))


def hub_revision(spec: HubSpec) -> str:
    """The commit sha a Hub revision (default: main) stands for; a local folder's hash of its files."""
    if spec.folder is None:
        import datasets

        try:
            return datasets.load_dataset_builder(spec.repo, RAW_CONFIGS[0], revision=spec.revision).hash
        except ValueError as e:  # no such config: not upstream's layout
            raise SourceError(f"not upstream's Hub layout: {e}", file=spec.spec) from None
        except (ConnectionError, FileNotFoundError) as e:  # DatasetNotFoundError is a FileNotFoundError
            raise SourceError(f"cannot read the Hub dataset: {e}", file=spec.spec) from None
    root = spec.folder
    if not root.is_dir():
        raise SourceError("is a file, not a folder" if root.exists() else "folder not found", file=spec.spec)
    if not (root / "README.md").is_file():
        jsonl = (root / QUESTIONS_FILE).is_file() or (root / "data").is_dir()
        q, g = RAW_CONFIGS
        layout = f"a README.md declaring the configs {q} and {g}, their parquet files under {q}/ and {g}/"
        hint = "; upstream's JSONL files are read without hf: (--source FOLDER)" if jsonl else ""
        raise SourceError(f"no README.md: not upstream's Hub layout ({layout}){hint}", file=spec.spec)
    files = sorted([root / "README.md", *(p for c in RAW_CONFIGS for p in (root / c).rglob("*"))])
    return _sha256(f"{p.relative_to(root)}\0".encode() + p.read_bytes() + b"\0" for p in files if p.is_file())


@contextlib.contextmanager
def quiet(datasets):
    """No "Generating train split" bars for a few hundred rows (a task's log stays short)."""
    was_on = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was_on:
            datasets.enable_progress_bars()


def _load_config(spec: HubSpec, config: str, revision: str) -> list[tuple[int, dict]]:
    import datasets
    from datasets.exceptions import DatasetGenerationError

    if spec.folder is not None and config not in card_configs(spec.folder):
        raise SourceError(f"no '{config}' config in README.md: not upstream's Hub layout", file=spec.spec)
    try:  # a local folder in a fresh cache: `datasets` caches one with `configs:` by its name alone
        with tempfile.TemporaryDirectory(prefix="oab-bench-raw-") as cache, quiet(datasets):
            where = {"cache_dir": cache} if spec.folder else {"revision": revision}
            ds = datasets.load_dataset(str(spec.folder or spec.repo), config, split="train", **where)
            return list(enumerate(ds.to_list(), start=1))
    except (ValueError, ConnectionError, FileNotFoundError, DatasetGenerationError) as e:
        # the cause says why; DatasetGenerationError alone says "an error"
        cause = e.__cause__ if isinstance(e, DatasetGenerationError) and e.__cause__ else e
        raise SourceError(f"cannot read config '{config}': {cause}", file=spec.spec) from None


def open_source(source: str | Path) -> RawSource:
    """`hf:...` through `datasets`; anything else is a folder of upstream's JSONL files."""
    if not str(source).startswith(HF_PREFIX):
        return file_source(Path(source))
    spec = parse_hub_spec(str(source))
    revision = hub_revision(spec)
    name = HF_PREFIX + (spec.folder.name if spec.folder else spec.repo)
    questions, guidelines = (_load_config(spec, c, revision) for c in RAW_CONFIGS)
    labels = (f"{name}:{c}" for c in RAW_CONFIGS)
    return RawSource(questions, guidelines, *labels, Provenance(source=name, revision=revision))
