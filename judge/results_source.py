"""A shared results dataset as an input: `hf:OWNER/NAME[@REV]`, `hf:/abs/folder`, or such a folder.

`#CONFIG` after either picks one judge's config (`hf:org/results#openai-gpt-5.2-oab-pt-v1-structured`).
A Hub repo is downloaded once into the Hub cache (`huggingface_hub`; offline, the cache is used). Only
a dataset whose card carries our marker (`oab_bench: {kind: results}`) is read: anything else that is
named with `hf:` is an error, never a guess. Rows are checked against the layout's types; what they
say is checked by the same readers as any judgments file. Files are named in messages as
`SPEC:judgments/CONFIG/train-00000-of-00001.parquet`, rows counted from 1 like lines.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import yaml
from pydantic import BaseModel, ValidationError

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.source import HF_PREFIX, parse_hub_spec, read_objects
from oab_bench.judge.results_layout import (
    ANSWERS_FILE,
    CARD_KEY,
    FORMAT,
    JUDGMENTS_DIR,
    KIND,
    RESERVED,
    AnswerRow,
    JudgmentRow,
    judge_file,
    judgment_record,
)

CARD = "README.md"


def front_matter(text: str) -> dict | None:
    """A card's YAML front matter (`---` ... `---`), None when it has none or it is not a mapping."""
    head, sep, rest = text.partition("---\n")
    front, sep2, _ = rest.partition("\n---\n")
    if head or not sep or not sep2:
        return None
    try:
        meta = yaml.safe_load(front)
    except yaml.YAMLError:
        return None
    return meta if isinstance(meta, dict) else None


def card_meta(folder: Path) -> dict | None:
    """The front matter of `folder`'s card when it marks a results dataset of ours, else None."""
    try:
        meta = front_matter((folder / CARD).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    mark = (meta or {}).get(CARD_KEY)
    return meta if isinstance(mark, dict) and mark.get("kind") == KIND else None


class Shared(NamedTuple):
    name: str  # the spec or folder as given, without `#CONFIG`: how its files are named
    folder: Path
    configs: list[str]  # the judges' configs to read (all, or the one picked)

    def label(self, rel: str) -> str:
        return f"{self.name}:{rel}"

    def judgments(self) -> list[tuple[str, int, JudgmentRow]]:
        """(file label, row number, row) of every judgment, config by config."""
        out = []
        for config in self.configs:
            rel = judge_file(config)
            out += [
                (self.label(rel), n, r) for n, r in _rows(self.folder / rel, self.label(rel), JudgmentRow)
            ]
        return out

    def answers(self) -> list[tuple[str, int, AnswerRow]]:
        if not (self.folder / ANSWERS_FILE).is_file():
            return []
        label = self.label(ANSWERS_FILE)
        return [(label, n, r) for n, r in _rows(self.folder / ANSWERS_FILE, label, AnswerRow)]

    def sources(self) -> list[tuple[str, str | None]]:
        """Each input the export read, with the dataset it recorded, as (label, dataset)."""
        return sorted(
            {(r.source, r.dataset) for _, _, r in self.judgments()}, key=lambda s: (s[0], s[1] or "")
        )


def _rows(path: Path, label: str, model: type[BaseModel]) -> list[tuple[int, BaseModel]]:
    """The file's rows, validated; read once while the file is unchanged (each input an export read
    is read back from the same files)."""
    try:
        stat = path.stat()
    except OSError as e:
        raise SourceError(f"cannot read it: {e.strerror or e}", file=label) from None
    return _read_rows(path, stat.st_mtime_ns, stat.st_size, label, model)


@functools.lru_cache(maxsize=32)
def _read_rows(
    path: Path, _mtime: int, _size: int, label: str, model: type[BaseModel]
) -> list[tuple[int, BaseModel]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as e:  # ArrowInvalid is a ValueError
        raise SourceError(f"cannot read it as parquet: {e}", file=label) from None
    missing = [c for c in model.model_fields if c not in table.column_names]
    if missing:
        raise SourceError(f"missing columns {missing}: not an oab-bench results file", file=label)
    out = []
    for n, raw in enumerate(table.to_pylist(), start=1):
        try:
            out.append((n, model.model_validate(raw)))
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise SourceError(
                f"{first['input']!r}: {first['msg']}", file=label, line=n, field=where
            ) from None
    return out


@functools.cache
def _download(repo: str, revision: str | None) -> Path:
    """The repo's card and data files, from the Hub cache or downloaded into it."""
    from huggingface_hub import snapshot_download

    patterns = [CARD, f"{JUDGMENTS_DIR}/*/*.parquet", "answers/*.parquet"]
    return Path(snapshot_download(repo, repo_type="dataset", revision=revision, allow_patterns=patterns))


def _fetch(spec: str, repo: str, revision: str | None) -> Path:
    try:
        return _download(repo, revision)
    except Exception as e:  # every Hub failure (offline and not cached, no such repo, no access) says so
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise SourceError(f"cannot read the Hub dataset: {why}", file=spec) from None


def _configs(meta: dict, picked: str | None, name: str) -> list[str]:
    configs = sorted(
        str(c["config_name"])
        for c in meta.get("configs") or []
        if isinstance(c, dict) and c.get("config_name") not in RESERVED | {None}
    )
    if picked is None:
        return configs
    if picked not in configs:
        raise SourceError(f"no judge config {picked!r} (configs: {', '.join(configs) or 'none'})", file=name)
    return [picked]


def _spec(name: str):
    try:
        return parse_hub_spec(name)
    except SourceError as e:  # said for `build --source`: named here without that flag
        raise SourceError(e.message, file=name) from None


def open_shared(path: str | Path) -> Shared | None:
    """The shared results dataset `path` names, or None when it names none (a plain file or folder).

    `hf:...` must be one (an error otherwise); a local folder is one when its card says so.
    """
    given = str(path)
    name, _, picked = given.partition("#")
    name = name.rstrip("/") or name
    if given.startswith(HF_PREFIX):
        spec = _spec(name)
        if spec.folder is not None:
            folder = spec.folder
            if not folder.is_dir():
                raise SourceError("folder not found", file=name)
        else:
            folder = _fetch(name, spec.repo, spec.revision)
    elif Path(name).is_dir() and (Path(name) / CARD).is_file():
        folder = Path(name)
    else:
        return None
    meta = card_meta(folder)
    if meta is None:
        if not given.startswith(HF_PREFIX):
            return None
        raise SourceError(
            f"not an oab-bench results dataset: its {CARD} has no `{CARD_KEY}: {{kind: {KIND}}}` in its "
            "front matter (`oab-bench export` writes one)",
            file=name,
        )
    made = meta[CARD_KEY].get("format", FORMAT)
    if not isinstance(made, int) or made > FORMAT:
        raise SourceError(
            f"written in layout format {made!r}; this oab-bench reads up to {FORMAT}", file=name
        )
    return Shared(name, folder, _configs(meta, picked or None, name))


def rows_at(label: str) -> dict[int, JudgmentRow] | None:
    """The rows of the judgments file a record names as its source; None when it names no such file."""
    name, sep, rel = label.rpartition(":")
    if not sep or not rel.startswith(f"{JUDGMENTS_DIR}/"):
        return None
    try:
        shared = open_shared(name)
    except SourceError:
        return None
    if shared is None:
        return None
    config = rel.split("/")[1]
    return {n: r for _, n, r in shared._replace(configs=[config]).judgments()}


def judgment_objects(path: str | Path) -> Iterator[tuple[str, int, dict]]:
    """(file, line, our judgment record) of a judgments file, or of a shared dataset's rows that
    hold our records (upstream's turns are not such records)."""
    shared = open_shared(path)
    if shared is None:
        for n, obj in read_objects(Path(path)):
            yield str(path), n, obj
        return
    for label, n, row in shared.judgments():
        if row.source_kind != "upstream":
            yield label, n, judgment_record(row)


def local_path(path: str) -> Path | None:
    """The local folder an `hf:/abs/folder` spec names (what an output must not overwrite)."""
    return _spec(path.partition("#")[0]).folder if path.startswith(HF_PREFIX) else None
