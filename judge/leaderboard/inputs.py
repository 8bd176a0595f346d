"""Read judged results from any of our inputs into one record type (judged.py's `Record`).

Inputs: our judgment files (`oab-bench judge`, `oab-bench run`), lighteval output folders
of the oab_bench task (details parquet), shared results datasets (`hf:...`), and upstream
judgment files (`model_judgment/<judge>_single.jsonl`, one record per question turn, summed in
upstream_turns.py). The format is told by the keys; nothing is skipped silently: an unparsed
upstream score (-1) is a failed judgment of its question, a missing turn leaves the question unjudged.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ValidationError

from oab_bench.conventions import JUDGMENTS_FILE, PANEL_JUDGMENTS_FILE, SUMMARY_FILE
from oab_bench.conventions import PROBE_REPORT_FILE as PROBE_REPORT
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.dataset_builder.source import plain, read_objects
from oab_bench.judge.grading.judgment_reader import read_judgment
from oab_bench.judge.judge_label import judge_label, our_prompt
from oab_bench.judge.leaderboard.judged import Facts, Record, facts_of_rows, record_of
from oab_bench.judge.leaderboard.upstream_turns import UPSTREAM_KEYS, from_upstream
from oab_bench.judge.results_layout import judgment_record, upstream_lines
from oab_bench.judge.results_source import Shared, open_shared

OURS_KEYS = {"question_id", "exam_id", "model", "judge_model", "status", "score", "max_score"}


def _jsonl(path: Path) -> list[tuple[int, dict]]:
    return list(read_objects(path))


def _judged(v: dict, source: str, line: int, rows: dict[str, QuestionRow]) -> Record:
    """A record from one of our judgment dicts (a judgments file line or a details metric value).

    An impossible judgment (a wrong shape, NaN, out of range, items not the rubric's) stops the
    report; one that disagrees with the dataset on the question's value or exam is kept as
    `mismatch`, so its exam is left out and shows in coverage.
    """
    got = read_judgment(v, file=source, line=line, rows=rows)
    try:  # the settings that change grading are part of the judge (judge_label.py)
        judge = judge_label(got.judge_model or "unknown", our_prompt(v), v.get("settings"))
    except ValueError as e:
        field, _, why = str(e).partition(": ")
        raise SourceError(why, file=source, line=line, field=field) from None
    status = got.status
    repeats = sorted(got.repeats or [], key=lambda m: m.repeat or 0)
    return record_of(
        got.question_id,
        got.max_score,
        judge=judge,
        model=got.model,
        exam_id=got.exam_id,
        status=status,
        score=got.score if status == "ok" else None,
        items={i.item_id: i.score for i in got.items} if status == "ok" and got.items else None,
        source=source,
        line=line,
        repeat_scores=[m.score if m.status == "ok" else None for m in repeats] or None,
        panel=got.panel,
    )


def _from_ours(path: Path, rows: list[tuple[int, dict]], dataset: dict[str, QuestionRow]) -> list[Record]:
    return [_judged(r, str(path), lineno, dataset) for lineno, r in rows]


def _from_lighteval(path: Path, dataset: dict[str, QuestionRow]) -> list[Record]:
    import pandas as pd

    from oab_bench.judge.answers import model_of, one_run

    out: list[Record] = []  # two runs of one model: both, chosen between as any two inputs (tables.one_each)
    for file in one_run(path):  # one run per folder: a folder holding several is refused
        df = pd.read_parquet(file, columns=["metric"])
        model = model_of(file)
        for n, metric in enumerate(df["metric"], start=1):
            v = plain(metric.get("oab_judgment") if isinstance(metric, dict) else None)
            if not v or not isinstance(v, dict):
                raise SourceError(
                    "no oab_judgment metric: not an oab_bench details file", file=str(file), line=n
                )
            out.append(_judged({**v, "model": model}, str(file), n, dataset))
    return out


def from_shared(
    shared: Shared, dataset: dict[str, QuestionRow], only: tuple[str, str | None] | None = None
) -> list[Record]:
    """Records of a shared results dataset (results_source.py), read as the files they came from are:
    our records through the same checks, upstream's turns summed again. `only`: the rows of one
    input the export read, as (input, its recorded dataset)."""
    ours, upstream, judges = defaultdict(list), defaultdict(list), {}
    for label, n, row in shared.judgments():
        if only is not None and (row.source, row.dataset) != only:
            continue
        if row.source_kind == "upstream":
            upstream[label] += upstream_lines(row, n)
        else:
            record = judgment_record(row)
            ours[label].append((n, record))
            # an export made before settings were part of the judge says the label without them
            older = judge_label(row.judge_model or "unknown", our_prompt(record))
            judges[(str(Path(label)), n)] = (row.judge, older)
    out = [r for label, rows in ours.items() for r in _from_ours(Path(label), rows, dataset)]
    for r in out:
        said, older = judges[(r.source, r.line)]
        if r.judge != said and said != older:
            raise SourceError(
                f"says {said!r}, its judge_model, prompt_version, mode and settings make {r.judge!r}",
                file=r.source,
                line=r.line,
                field="judge",
            )
    return out + [r for label, rows in upstream.items() for r in from_upstream(Path(label), rows, dataset)]


class NoResults(SourceError):
    """A folder with nothing judged in it (a run killed early, or one that failed)."""


def load_records(path: Path, dataset: dict[str, QuestionRow] | None = None) -> list[Record]:
    """Records from one input; the format is told by its keys (or its being a folder/parquet).

    `dataset`: the rows by question id, when known: values and rubrics to check against.
    """
    dataset = dataset or {}
    shared = open_shared(path)
    if shared is not None:
        return from_shared(shared, dataset)
    path = Path(path)
    if not path.exists():
        raise SourceError("not found", file=str(path))
    if is_probe_folder(path):  # its judgments file (a killed run's partial judgments are not read)
        path = path / JUDGMENTS_FILE
    try:
        if path.is_dir() and not any(p.name.startswith("details_") for p in path.rglob("*.parquet")):
            raise NoResults(
                "no oab_bench results in this folder (an unfinished or failed run?)", file=str(path)
            )
        if path.is_dir():  # a run's folder: its candidate's details, and the panel judged beside it
            panel = path / PANEL_JUDGMENTS_FILE
            return _from_lighteval(path, dataset) + (load_records(panel, dataset) if panel.is_file() else [])
        if path.suffix == ".parquet":
            return _from_lighteval(path, dataset)
        rows = _jsonl(path)
        if not rows:
            raise SourceError("empty file", file=str(path))
        keys = set(rows[0][1])
        if keys >= UPSTREAM_KEYS and "judgment" in keys:
            return from_upstream(path, rows, dataset)
        if keys >= OURS_KEYS:
            return _from_ours(path, rows, dataset)
        raise SourceError(
            f"unknown format (keys {sorted(keys)[:8]}...): expected our judgments or upstream's",
            file=str(path),
            line=rows[0][0],
        )
    except (ValidationError, ValueError) as e:
        if isinstance(e, SourceError):
            raise
        raise SourceError(str(e).splitlines()[0], file=str(path)) from None


def is_probe_folder(path: Path) -> bool:
    """`oab-bench probe`'s folder: its report beside its judgments."""
    path = Path(path)
    return path.is_dir() and (path / PROBE_REPORT).is_file() and (path / JUDGMENTS_FILE).is_file()


def recorded_dataset(path: Path) -> str | None:
    """The dataset a run folder (or the judgments file in one) was made with, if it says.

    `oab-bench run` may record it in its summary (`dataset`); lighteval's results JSON
    always does, as the task's `hf_repo`.
    """
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    found: set[str] = set()
    try:
        summary = json.loads((folder / SUMMARY_FILE).read_text(encoding="utf-8"))
        if isinstance(summary, dict) and isinstance(summary.get("dataset"), str):
            found.add(summary["dataset"])
    except (OSError, ValueError):
        pass
    if not found and (folder / "results").is_dir():
        for file in sorted((folder / "results").rglob("results_*.json")):
            try:
                tasks = json.loads(file.read_text(encoding="utf-8")).get("config_tasks") or {}
            except (OSError, ValueError, AttributeError):
                continue
            found |= {
                t["hf_repo"]
                for name, t in tasks.items()
                if "oab_bench" in name and isinstance(t, dict) and isinstance(t.get("hf_repo"), str)
            }
    if len(found) > 1:
        raise SourceError(
            f"made with several datasets ({', '.join(sorted(found))}): pass --dataset", file=str(path)
        )
    return next(iter(found), None)


class Inputs(BaseModel):
    records: list[Record]
    expected: set[str] | None  # every question of --dataset; None: those the inputs judged
    truth: dict[str, Facts]  # from --dataset, else from the datasets the run folders recorded
    notes: list[str]
    origins: list[tuple[str, str | None]] = []  # per record: its input, and the dataset that recorded


def read_inputs(paths: list[str], dataset: str | None = None) -> Inputs:
    """Every input's records, with the facts to check them against.

    `--dataset` is the truth for every input; without it, a run folder's recorded dataset (a
    local folder) is the truth for its questions, and two such datasets must agree.
    """
    from oab_bench.judge.dataset import load_rows

    loaded: dict[str, dict[str, QuestionRow]] = {}

    def rows_of(source: str) -> dict[str, QuestionRow]:
        if source not in loaded:
            loaded[source] = {r.question_id: r for r in load_rows(source)}
        return loaded[source]

    truth: dict[str, Facts] = facts_of_rows(rows_of(dataset).values()) if dataset else {}
    records, notes, origins = [], [], []
    for path, recorded, load in (part for given in paths for part in _parts(given)):
        rows = rows_of(dataset) if dataset else {}
        source = _quiet(recorded) if dataset else recorded()  # with --dataset, said for export only
        if not dataset:
            if source and Path(source).is_dir():
                rows = rows_of(source)
                for qid, facts in facts_of_rows(rows.values()).items():
                    if truth.setdefault(qid, facts) != facts:
                        raise SourceError(
                            f"its dataset {source} and another input's disagree on {qid}: pass --dataset",
                            file=str(path),
                        )
            elif source:
                notes.append(
                    f"{path} was made with {source} (not a local folder): pass --dataset to check against it"
                )
        try:
            got = load(rows)
        except NoResults as e:
            notes.append(f"skipped {e}")
            continue
        records += got
        origins += [(path, source)] * len(got)
    if not records:
        raise ValueError("no judged results in any input")
    return Inputs(  # notes sorted: the output never depends on the order of the inputs
        records=records,
        expected=set(loaded[dataset]) if dataset else None,
        truth=truth,
        notes=sorted(notes),
        origins=origins,
    )


def _quiet(recorded: Callable[[], str | None]) -> str | None:
    try:
        return recorded()
    except SourceError:  # several datasets: --dataset settles it
        return None


def _parts(path: str) -> list[tuple[str, Callable[[], str | None], Callable[[dict], list[Record]]]]:
    """(name, the dataset it recorded, its records given the rows to check against) of an input; a
    shared results dataset gives one per input it was exported from, each with the dataset that
    input recorded, so reading it back reads as its inputs did."""
    shared = open_shared(path)
    if shared is None:
        return [(path, lambda: recorded_dataset(Path(path)), lambda rows: load_records(Path(path), rows))]
    return [
        (name, lambda d=d: d, lambda rows, key=(name, d): from_shared(shared, rows, only=key))
        for name, d in shared.sources()
    ]


def read_for_command(command: str, inputs: list[str], dataset: str | None):
    """Every input's records with the facts to check them against; notes (skipped inputs...) on stderr."""
    import sys

    got = read_inputs(inputs, dataset)
    for note in got.notes:
        print(f"oab-bench {command}: note: {note}", file=sys.stderr)
    return got
