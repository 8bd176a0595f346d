"""A shared results dataset as an input: `hf:OWNER/NAME[@REV]`, `hf:/abs/folder` or such a folder,
`#CONFIG` one judge's config. Only a card with our marker is read (an `hf:` without one is an error);
rows are checked against the layout's types, then by the readers of any judgments file."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.source import HF_PREFIX, parse_hub_spec, read_objects, validate_objects
from oab_bench.hub_guard import CARD, card_data
from oab_bench.judge import results_layout as layout
from oab_bench.judge.results_layout import AnswerRow, JudgmentRow


class Shared(NamedTuple):
    name: str  # the spec or folder as given, without `#CONFIG`: how its files are named
    folder: Path
    configs: list[str]  # the judges' configs to read (all, or the one picked)

    def judgments(self) -> list[tuple[str, int, JudgmentRow]]:
        """(file label, row number, row) of every judgment, config by config."""
        return [row for config in self.configs for row in _rows(self, layout.judge_file(config), JudgmentRow)]

    def answers(self) -> list[tuple[str, int, AnswerRow]]:
        found = (self.folder / layout.ANSWERS_FILE).is_file()
        return _rows(self, layout.ANSWERS_FILE, AnswerRow) if found else []

    def sources(self) -> list[tuple[str, str | None]]:
        """Each input the export read, with the dataset it recorded, as (label, dataset)."""
        return sorted(
            {(r.source, r.dataset) for _, _, r in self.judgments()}, key=lambda s: (s[0], s[1] or "")
        )


def _rows(shared: Shared, rel: str, model: type[BaseModel]) -> list:
    """(label, row number, row) of one file, validated; read once while the file is unchanged (each
    input an export read is read back from the same files)."""
    try:
        stat = (shared.folder / rel).stat()
    except OSError as e:
        raise SourceError(f"cannot read it: {e.strerror or e}", file=f"{shared.name}:{rel}") from None
    return _read_rows(shared.folder / rel, stat.st_mtime_ns, f"{shared.name}:{rel}", model)


@functools.lru_cache(maxsize=32)
def _read_rows(path: Path, _mtime: int, label: str, model: type[BaseModel]) -> list:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as e:  # ArrowInvalid is a ValueError
        raise SourceError(f"cannot read it as parquet: {e}", file=label) from None
    missing = [c for c in model.model_fields if c not in table.column_names]
    if missing:
        raise SourceError(f"missing columns {missing}: not an oab-bench results file", file=label)
    rows = validate_objects(enumerate(table.to_pylist(), start=1), model, label=label)
    return [(label, n, row) for n, row in rows]


@functools.cache
def _download(repo: str, revision: str | None) -> Path:
    """The repo's card and data files, from the Hub cache or downloaded into it."""
    from huggingface_hub import snapshot_download

    patterns = [CARD, f"{layout.JUDGMENTS_DIR}/*/*.parquet", "answers/*.parquet"]
    return Path(snapshot_download(repo, repo_type="dataset", revision=revision, allow_patterns=patterns))


def _spec(name: str):
    try:
        return parse_hub_spec(name)
    except SourceError as e:  # said for `build --source`: named here without that flag
        raise SourceError(e.message, file=name) from None


def open_shared(path: str | Path) -> Shared | None:
    """The shared results dataset `path` names, or None (a plain file or folder). `hf:...` must be
    one (an error otherwise); a local folder is one when its card says so."""
    given = str(path)
    name, _, picked = given.partition("#")
    name = name.rstrip("/") or name
    if given.startswith(HF_PREFIX):
        spec = _spec(name)
        folder = spec.folder
        if folder is None:
            try:
                folder = _download(spec.repo, spec.revision)
            except Exception as e:  # every Hub failure (offline and not cached, no such repo, no access)
                why = str(e).splitlines()[0] if str(e) else type(e).__name__
                raise SourceError(f"cannot read the Hub dataset: {why}", file=name) from None
        elif not folder.is_dir():
            raise SourceError("folder not found", file=name)
    elif Path(name).is_dir() and (Path(name) / CARD).is_file():
        folder = Path(name)
    else:
        return None
    try:
        meta = card_data((folder / CARD).read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError):
        meta = {}
    mark = meta.get(layout.CARD_KEY)
    if not isinstance(mark, dict) or mark.get("kind") != layout.KIND:
        if not given.startswith(HF_PREFIX):
            return None
        raise SourceError(
            f"not an oab-bench results dataset: its {CARD} has no `oab_bench: {{kind: results}}` in its "
            "front matter (`oab-bench export` writes one)",
            file=name,
        )
    made = mark.get("format", layout.FORMAT)
    if not isinstance(made, int) or made > layout.FORMAT:
        raise SourceError(
            f"written in layout format {made!r}; this oab-bench reads up to {layout.FORMAT}", file=name
        )
    configs = sorted(
        str(c["config_name"])
        for c in meta.get("configs") or []
        if isinstance(c, dict) and c.get("config_name") not in layout.RESERVED | {None}
    )
    if picked and picked not in configs:
        raise SourceError(f"no judge config {picked!r} (configs: {', '.join(configs) or 'none'})", file=name)
    return Shared(name, folder, [picked] if picked else configs)


def rows_at(label: str) -> dict[int, JudgmentRow] | None:
    """The rows of the judgments file a record names as its source; None when it names no such file."""
    name, sep, rel = label.rpartition(":")
    if not sep or not rel.startswith(f"{layout.JUDGMENTS_DIR}/"):
        return None
    try:
        shared = open_shared(name)
    except SourceError:
        return None
    if shared is None:
        return None
    return {n: r for _, n, r in shared._replace(configs=[rel.split("/")[1]]).judgments()}


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
            yield label, n, layout.judgment_record(row)


def local_path(path: str) -> Path | None:
    """The local folder an `hf:/abs/folder` spec names (what an output must not overwrite)."""
    return _spec(path.partition("#")[0]).folder if path.startswith(HF_PREFIX) else None
