"""Judged results from any input -> one record type (`Record`: one judged question).

Inputs, told by their keys: our judgment files, run folders (lighteval details, and the panel judged
beside), probe folders, shared results datasets (`hf:...`), and upstream's judgment files (one line
per turn, summed per question). Nothing is skipped silently: upstream's -1 is a failed judgment, a
missing turn leaves its question unjudged, never a zero.
"""

from __future__ import annotations

import json
import math
import sys
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, ValidationError

from oab_bench.conventions import JUDGMENTS_FILE, PANEL_JUDGMENTS_FILE, PROBE_REPORT_FILE
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.dataset_builder.schema import PECA_MAX, QUESTAO_MAX, QuestionRow, money
from oab_bench.dataset_builder.source import plain, read_objects
from oab_bench.judge.grading.judgment_reader import read_judgment
from oab_bench.judge.judge_label import judge_label, our_prompt
from oab_bench.judge.results_layout import judgment_record, upstream_lines
from oab_bench.judge.results_source import Shared, open_shared
from oab_bench.judge.scoring import annulled_part

OURS_KEYS = {"question_id", "exam_id", "model", "judge_model", "status", "score", "max_score"}
UPSTREAM_KEYS = {"question_id", "model", "judge", "score", "turn"}
ITEM_MAX = 0.65  # the larger of a questão's two items: the most a turn can be without the dataset


class Trail(BaseModel):
    """What the audit report shows beyond the score: items with analyses, free text, error, members."""

    items: list[dict] = []
    texts: list[str] = []  # the judge's free text (one per upstream turn)
    error: str | None = None
    members: list[dict] = []


class Record(BaseModel):
    """One judged (judge, model, question)."""

    judge: str  # judge model and prompt (and settings): rankings never mix two of them
    model: str
    question_id: str
    exam_id: str
    area: str
    edition: int
    status: str
    score: float | None
    max_score: float
    source: str
    line: int = 0  # in `source`; 0 when it has no lines
    repeat_scores: list[float | None] | None = None  # --repeats K: each repeat's score (None: failed)
    panel: str | None = None  # a panel's published answer (`--panel`): where the answers came from
    items: dict[str, float] | None = None  # item id -> score, where an ok judgment has item scores
    trail: Trail | None = None


class Facts(BaseModel):
    """What a question is worth and where it belongs: the dataset's word, else the inputs' majority."""

    question_id: str
    exam_id: str
    area: str
    edition: int
    max_score: float


def facts_of_rows(rows) -> dict[str, Facts]:
    return {r.question_id: Facts.model_validate(r, from_attributes=True) for r in rows}


def facts_of_id(question_id: str) -> Facts:
    """What the id alone says (a peça is worth 5.00, a questão 1.25): the tie-breaker without a dataset."""
    q = parse_question_id(question_id)
    return Facts(
        question_id=question_id,
        exam_id=q.exam_id,
        area=q.area,
        edition=q.edition,
        max_score=PECA_MAX if q.kind == "peca" else QUESTAO_MAX,
    )


def record_of(question_id: str, max_score: float | None = None, **fields) -> Record:
    """A record whose exam, area and edition come from its question id."""
    f = facts_of_id(question_id)
    fields.setdefault("exam_id", f.exam_id)
    return Record(
        question_id=question_id, area=f.area, edition=f.edition, max_score=max_score or f.max_score, **fields
    )


def _structured(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _ours(v: dict, source: str, line: int, rows: dict[str, QuestionRow]) -> Record:
    """One of our judgment dicts. An impossible one stops the report; one that disagrees with the
    dataset on its question's value or exam comes back as `mismatch` (its exam is left out)."""
    got = read_judgment(v, file=source, line=line, rows=rows)
    try:  # the settings that change grading are part of the judge (judge_label.py)
        judge = judge_label(got.judge_model or "unknown", our_prompt(v), v.get("settings"))
    except ValueError as e:
        field, _, why = str(e).partition(": ")
        raise SourceError(why, file=source, line=line, field=field) from None
    ok = got.status == "ok"
    text = got.judge_text or ""
    if got.items and _structured(text):  # a structured reply is shown item by item, not twice
        text = ""
    return record_of(
        got.question_id,
        got.max_score,
        judge=judge,
        model=got.model,
        exam_id=got.exam_id,
        status=got.status,
        score=got.score if ok else None,
        items={i.item_id: i.score for i in got.items} if ok and got.items else None,
        source=source,
        line=line,
        repeat_scores=[
            m.score if m.status == "ok" else None
            for m in sorted(got.repeats or [], key=lambda m: m.repeat or 0)
        ]
        or None,
        panel=got.panel,
        trail=Trail(
            items=[i.model_dump() for i in got.items or []],
            texts=[text] if text else [],
            error=got.error,
            members=[m.model_dump(mode="json") for m in got.members or []],
        ),
    )


def _from_lighteval(path: Path, dataset: dict[str, QuestionRow]) -> list[Record]:
    import pandas as pd

    from oab_bench.judge.answers import model_of, one_run

    out: list[Record] = []
    for file in one_run(path):  # a folder holding several runs is refused
        model = model_of(file)
        for n, metric in enumerate(pd.read_parquet(file, columns=["metric"])["metric"], start=1):
            v = plain(metric.get("oab_judgment") if isinstance(metric, dict) else None)
            if not v or not isinstance(v, dict):
                raise SourceError(
                    "no oab_judgment metric: not an oab_bench details file", file=str(file), line=n
                )
            out.append(_ours({**v, "model": model}, str(file), n, dataset))
    return out


def _turn_of(r: dict, path: Path, lineno: int) -> tuple[str, str | None, float, int]:
    """An upstream line checked: (judge model, prompt, score, turn)."""

    def bad(field: str, why: str) -> SourceError:
        return SourceError(why, file=str(path), line=lineno, field=field)

    missing = UPSTREAM_KEYS - set(r)
    if missing:
        raise SourceError(f"missing keys {sorted(missing)}", file=str(path), line=lineno)
    for key in ("question_id", "model"):  # a number or a list here would become a model of its own
        if not isinstance(r[key], str) or not r[key]:
            raise bad(key, f"{r[key]!r} is not a non-empty string")
    judge = r["judge"]
    if not (
        isinstance(judge, list)
        and 1 <= len(judge) <= 2
        and isinstance(judge[0], str)
        and judge[0]
        and all(x is None or isinstance(x, str) for x in judge[1:])
    ):
        raise bad("judge", f"{judge!r} is not [judge model, prompt name]")
    qid = r["question_id"]
    try:
        facts_of_id(qid)
    except ValueError as e:
        raise bad("question_id", str(e)) from None
    try:
        score = math.nan if isinstance(r["score"], bool) else float(r["score"])
    except (TypeError, ValueError):
        score = math.nan
    if not math.isfinite(score):
        raise bad("score", f"{r['score']!r} is not a number")
    turn, n_turns = r["turn"], 1 if "peca" in qid else 2
    if isinstance(turn, str) and turn.strip().isdigit():
        turn = int(turn)
    if not isinstance(turn, int) or isinstance(turn, bool) or not 1 <= turn <= n_turns:
        raise bad("turn", f"{r['turn']!r} is not a turn of {qid} (1..{n_turns})")
    if score < 0 and score != -1:
        raise bad("score", f"{score} is negative (only -1, upstream's 'no score found', is allowed)")
    return judge[0], (judge[1:] or [None])[0], score, turn


def from_upstream(path: Path, rows: list[tuple[int, dict]], dataset: dict[str, QuestionRow]) -> list[Record]:
    """Upstream's turns summed per question. Each turn is checked against its value; a turn scored
    twice differently names both lines; a turn FGV annulled whole counts in full, as in ours."""
    turns: dict[tuple, dict[int, tuple[float, int, str]]] = defaultdict(dict)
    prompts: dict[tuple, set[str]] = defaultdict(set)
    for lineno, r in rows:
        judge_model, prompt, score, turn = _turn_of(r, path, lineno)
        qid, key = r["question_id"], (judge_model, r["model"], r["question_id"])
        row = dataset.get(qid)
        value = (
            row.items[turn - 1].max_score
            if row and len(row.items) >= turn
            else PECA_MAX
            if "peca" in qid
            else ITEM_MAX
        )
        if score > value + 1e-6:
            raise SourceError(
                f"{score} is above turn {turn}'s value {value}", file=str(path), line=lineno, field="score"
            )
        before, where, _ = turns[key].get(turn, (score, lineno, ""))
        if before != score:
            raise SourceError(
                f"{r['model']} on {qid} turn {turn} (judge {judge_model}) scores {score} here "
                f"and {before} on line {where}: keep one of them",
                file=str(path),
                line=lineno,
                field="score",
            )
        turns[key].setdefault(turn, (score, lineno, str(r.get("judgment") or "")))  # a copy: one judgment
        prompts[key].add((prompt or "").removesuffix("-multi-turn"))
    out = []
    for (judge_model, model, qid), by_turn in sorted(turns.items()):
        row, first = dataset.get(qid), min(n for _, n, _ in by_turn.values())
        scores = [by_turn[t][0] if t in by_turn else None for t in range(1, 1 + (1 if "peca" in qid else 2))]
        if row is not None:  # a turn FGV annulled whole is everyone's, whatever the judge said
            scores = [
                row.items[t].max_score if s is not None and annulled_part(row, row.items[t].label) else s
                for t, s in enumerate(scores)
            ]
        status, score = "ok", None
        if None in scores:
            status = "missing_turn"
        elif any(s < 0 for s in scores):
            status = "parse_error"
        else:
            score = money(sum(scores))
            limit = row.max_score if row is not None else facts_of_id(qid).max_score
            if score > limit + 1e-6:
                raise SourceError(
                    f"turns add up to {score}, above {limit}", file=str(path), line=first, field="score"
                )
        prompt = ",".join(sorted(p for p in prompts[(judge_model, model, qid)] if p)) or None
        out.append(
            record_of(
                qid,
                row.max_score if row is not None else None,
                judge=judge_label(judge_model, prompt),
                model=model,
                status=status,
                score=score,
                source=str(path),
                line=first,
                trail=Trail(texts=[by_turn[t][2] for t in sorted(by_turn)]),
            )
        )
    return out


def from_shared(
    shared: Shared, dataset: dict[str, QuestionRow], only: tuple[str, str | None] | None = None
) -> list[Record]:
    """A shared results dataset's records, read as the files they came from are. `only`: the rows
    of one input the export read, as (input, its recorded dataset)."""
    ours, upstream = defaultdict(list), defaultdict(list)
    for label, n, row in shared.judgments():
        if only is not None and (row.source, row.dataset) != only:
            continue
        if row.source_kind == "upstream":
            upstream[label] += upstream_lines(row, n)
        else:
            ours[label].append((n, row.judge, judgment_record(row)))
    out = []
    for label, rows in ours.items():
        for n, said, record in rows:
            r = _ours(record, str(Path(label)), n, dataset)
            if r.judge != said:
                raise SourceError(
                    f"says {said!r}, its judge_model, prompt_version, mode and settings make {r.judge!r}",
                    file=r.source,
                    line=n,
                    field="judge",
                )
            out.append(r)
    return out + [r for label, rows in upstream.items() for r in from_upstream(Path(label), rows, dataset)]


class NoResults(SourceError):
    """A folder with nothing judged in it (a run killed early, or one that failed)."""


def is_probe_folder(path: Path) -> bool:
    """`oab-bench probe`'s folder: its report beside its judgments."""
    path = Path(path)
    return path.is_dir() and (path / PROBE_REPORT_FILE).is_file() and (path / JUDGMENTS_FILE).is_file()


def load_records(path: Path, dataset: dict[str, QuestionRow] | None = None) -> list[Record]:
    """Records from one input. `dataset`: the rows by question id, when known, to check against."""
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
        if path.is_dir():  # a run's folder: its candidate's details, and the panel judged beside it
            if not any(p.name.startswith("details_") for p in path.rglob("*.parquet")):
                raise NoResults(
                    "no oab_bench results in this folder (an unfinished or failed run?)", file=str(path)
                )
            panel = path / PANEL_JUDGMENTS_FILE
            return _from_lighteval(path, dataset) + (load_records(panel, dataset) if panel.is_file() else [])
        if path.suffix == ".parquet":
            return _from_lighteval(path, dataset)
        rows = list(read_objects(path))
        if not rows:
            raise SourceError("empty file", file=str(path))
        keys = set(rows[0][1])
        if keys >= UPSTREAM_KEYS and "judgment" in keys:
            return from_upstream(path, rows, dataset)
        if keys >= OURS_KEYS:
            return [_ours(r, str(path), n, dataset) for n, r in rows]
        raise SourceError(
            f"unknown format (keys {sorted(keys)[:8]}...): expected our judgments or upstream's",
            file=str(path),
            line=rows[0][0],
        )
    except (ValidationError, ValueError) as e:
        if isinstance(e, SourceError):
            raise
        raise SourceError(str(e).splitlines()[0], file=str(path)) from None


def recorded_dataset(path: Path) -> str | None:
    """The dataset a run folder (or a judgments file in one) was made with: lighteval's results
    JSON names it as the task's `hf_repo`."""
    path = Path(path)
    found: set[str] = set()
    for file in sorted(((path if path.is_dir() else path.parent) / "results").rglob("results_*.json")):
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
    origins: list[tuple[str, str | None]] = []  # per record: its input, and the dataset it recorded


def _parts(path: str) -> list[tuple]:
    """(name, the dataset it recorded, its records given the rows to check) of an input; a shared
    results dataset gives one per input it was exported from, so it reads back as its inputs did."""
    shared = open_shared(path)
    if shared is None:
        return [(path, lambda: recorded_dataset(Path(path)), lambda rows: load_records(Path(path), rows))]
    return [
        (name, lambda d=d: d, lambda rows, key=(name, d): from_shared(shared, rows, only=key))
        for name, d in shared.sources()
    ]


def read_inputs(paths: list[str], dataset: str | None = None) -> Inputs:
    """Every input's records, with the facts to check them against: `--dataset` for every input;
    without it, a run folder's recorded dataset (a local folder) for its questions, and two such
    datasets must agree."""
    from oab_bench.judge.dataset import load_rows

    loaded: dict[str, dict[str, QuestionRow]] = {}

    def rows_of(source: str) -> dict[str, QuestionRow]:
        if source not in loaded:
            loaded[source] = {r.question_id: r for r in load_rows(source)}
        return loaded[source]

    truth = facts_of_rows(rows_of(dataset).values()) if dataset else {}
    records, notes, origins = [], [], []
    for path, recorded, load in (part for given in paths for part in _parts(given)):
        try:
            source = recorded()
        except SourceError:
            if not dataset:
                raise
            source = None  # several datasets: --dataset settles it (said for export only)
        rows = rows_of(dataset) if dataset else {}
        if not dataset and source and Path(source).is_dir():
            rows = rows_of(source)
            for qid, facts in facts_of_rows(rows.values()).items():
                if truth.setdefault(qid, facts) != facts:
                    raise SourceError(
                        f"its dataset {source} and another input's disagree on {qid}: pass --dataset",
                        file=str(path),
                    )
        elif not dataset and source:
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


def read_for_command(command: str, inputs: list[str], dataset: str | None) -> Inputs:
    """read_inputs, its notes (skipped inputs...) on stderr."""
    got = read_inputs(inputs, dataset)
    for note in got.notes:
        print(f"oab-bench {command}: note: {note}", file=sys.stderr)
    return got
