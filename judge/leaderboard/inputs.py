"""Judged results from any input, told by their keys -> `Record`s; nothing skipped silently."""

from __future__ import annotations

import functools
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, StrictInt, StringConstraints, ValidationError

from oab_bench.conventions import JUDGMENTS_FILE, PANEL_JUDGMENTS_FILE, PROBE_REPORT_FILE
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.dataset_builder.schema import PECA_MAX, QUESTAO_MAX, QuestionRow, money
from oab_bench.dataset_builder.source import plain, read_objects
from oab_bench.judge import inspect_log
from oab_bench.judge.grading.judgment_reader import read_judgment
from oab_bench.judge.judge_label import judge_label, our_prompt
from oab_bench.judge.results_layout import Shared, judgment_record, open_shared, upstream_lines
from oab_bench.judge.scoring import annulled_part

OURS_KEYS = {"question_id", "exam_id", "model", "judge_model", "status", "score", "max_score"}
UPSTREAM_KEYS = {"question_id", "model", "judge", "score", "turn", "judgment"}
ITEM_MAX = 0.65  # the larger of a questão's two items: the most a turn can be without the dataset


class Trail(BaseModel):
    """What the audit report shows beyond the score: items with analyses, free text, error, members."""

    items: list[dict] = []
    texts: list[str] = []  # the judge's free text (one per upstream turn)
    error: str | None = None
    members: list[dict] = []


class Facts(BaseModel):
    """What a question is worth and where it belongs: the dataset's word, else the inputs' majority."""

    question_id: str
    exam_id: str
    area: str
    edition: int
    max_score: float


class Record(Facts):
    judge: str  # judge model and prompt (and settings): rankings never mix two of them
    model: str
    status: str
    score: float | None
    source: str
    line: int = 0  # in `source`; 0 when it has no lines
    repeat_scores: list[float | None] | None = None  # --repeats K: each repeat's score (None: failed)
    panel: str | None = None  # a panel's published answer (`--panel`): where the answers came from
    items: dict[str, float] | None = None  # item id -> score, where an ok judgment has item scores
    trail: Trail | None = None
    cost_usd: float | None = None  # what judging it cost, where its record says (details: this run's)


def facts_of_rows(rows) -> dict[str, Facts]:
    return {r.question_id: Facts.model_validate(r, from_attributes=True) for r in rows}


def facts_of_id(question_id: str) -> Facts:
    """What the id alone says (a peça is worth 5.00, a questão 1.25): the tie-breaker without a dataset."""
    q = parse_question_id(question_id)
    worth = PECA_MAX if q.kind == "peca" else QUESTAO_MAX
    return Facts(question_id=question_id, exam_id=q.exam_id, area=q.area, edition=q.edition, max_score=worth)


def record_of(question_id: str, max_score: float | None = None, **fields) -> Record:
    facts = facts_of_id(question_id).model_dump()
    return Record(**facts | {"max_score": max_score or facts["max_score"]} | fields)


def _structured(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _ours(v: dict, source: str, line: int, rows: dict[str, QuestionRow]) -> Record:
    """One of our judgment dicts; one that disagrees with the dataset comes back as `mismatch`."""
    got = read_judgment(v, file=source, line=line, rows=rows)
    try:  # the settings that change grading are part of the judge (judge_label.py)
        judge = judge_label(got.judge_model or "unknown", our_prompt(v), v.get("settings"))
    except ValueError as e:
        field, _, why = str(e).partition(": ")
        raise SourceError(why, file=source, line=line, field=field) from None
    ok, text = got.status == "ok", got.judge_text or ""
    trail = Trail(
        items=[i.model_dump() for i in got.items or []],
        texts=[text] if text and not (got.items and _structured(text)) else [],  # structured: shown by item
        error=got.error,
        members=[m.model_dump(mode="json") for m in got.members or []],
    )
    repeats, cost = sorted(got.repeats or [], key=lambda m: m.repeat or 0), v.get("cost_usd")
    return record_of(
        got.question_id,
        got.max_score,
        **got.model_dump(include={"exam_id", "model", "status", "panel"}),
        judge=judge,
        score=got.score if ok else None,
        items={i.item_id: i.score for i in got.items} if ok and got.items else None,
        repeat_scores=[m.score if m.status == "ok" else None for m in repeats] or None,
        source=source,
        line=line,
        trail=trail,
        cost_usd=cost if isinstance(cost, float | int) and math.isfinite(cost) else None,  # NaN: no price
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
                why = "no oab_judgment metric: not an oab_bench details file"
                raise SourceError(why, file=str(file), line=n)
            out.append(_ours({**v, "model": model}, str(file), n, dataset))
    return out


Text = Annotated[str, StringConstraints(strict=True, min_length=1)]


class UpstreamTurn(BaseModel):
    """A line of upstream's judgment files: one turn (a questão's item) of one question."""

    question_id: Annotated[Text, AfterValidator(lambda qid: facts_of_id(qid).question_id)]
    model: Text
    judge: tuple[Text] | tuple[Text, str | None]  # [judge model, prompt name]
    score: Annotated[float, Field(strict=True, allow_inf_nan=False)]  # -1: upstream found no score
    turn: StrictInt
    judgment: str | None = None


def from_upstream(path: Path, rows: list[tuple[int, dict]], dataset: dict[str, QuestionRow]) -> list[Record]:
    """Upstream's turns, each checked against its value, summed per question (an annulled turn in full)."""

    def bad(why: str, line: int, field: str = "score") -> SourceError:
        return SourceError(why, file=str(path), line=line, field=field)

    groups: dict[tuple, dict[int, tuple[UpstreamTurn, int]]] = defaultdict(dict)
    for lineno, r in rows:
        try:
            t = UpstreamTurn.model_validate(r)
        except ValidationError as e:
            err = e.errors()[0]
            raise SourceError(err["msg"], file=str(path), line=lineno, field=str(err["loc"][0])) from None
        if not 1 <= t.turn <= (n := 1 if "peca" in t.question_id else 2):
            raise bad(f"{t.turn} is not a turn of {t.question_id} (1..{n})", lineno, "turn")
        if t.score < 0 and t.score != -1:
            raise bad(f"{t.score} is negative (only -1, upstream's 'no score found', is allowed)", lineno)
        row, key = dataset.get(t.question_id), (t.judge[0], t.model, t.question_id)
        value = ITEM_MAX if "peca" not in t.question_id else PECA_MAX
        value = row.items[t.turn - 1].max_score if row and len(row.items) >= t.turn else value
        if t.score > value + 1e-6:
            raise bad(f"{t.score} is above turn {t.turn}'s value {value}", lineno)
        before, where = groups[key].setdefault(t.turn, (t, lineno))  # the same line twice: one judgment
        if before.score != t.score:
            raise bad(
                f"{t.model} on {t.question_id} turn {t.turn} (judge {key[0]}) scores {t.score} here "
                f"and {before.score} on line {where}: keep one of them",
                lineno,
            )
    out = []
    for (judge_model, model, qid), turns in sorted(groups.items()):
        row, first = dataset.get(qid), min(n for _, n in turns.values())
        scores = [turns[n][0].score if n in turns else None for n in (1, 2)[: 1 if "peca" in qid else 2]]
        if row is not None:  # a turn FGV annulled whole is everyone's, whatever the judge said
            full = [item.max_score if annulled_part(row, item.label) else None for item in row.items]
            scores = [s if s is None or f is None else f for s, f in zip(scores, full, strict=True)]
        score = money(sum(scores)) if None not in scores and min(scores) >= 0 else None
        limit = row.max_score if row else facts_of_id(qid).max_score
        if score is not None and score > limit + 1e-6:
            raise bad(f"turns add up to {score}, above {limit}", first)
        prompts = {t.judge[1] for t, _ in turns.values() if len(t.judge) > 1 and t.judge[1]}
        prompt = ",".join(sorted({p.removesuffix("-multi-turn") for p in prompts})) or None
        status = "missing_turn" if None in scores else "parse_error" if score is None else "ok"
        trail = Trail(texts=[turns[n][0].judgment or "" for n in sorted(turns)])
        said = dict(judge=judge_label(judge_model, prompt), model=model, status=status, score=score)
        out.append(record_of(qid, row and row.max_score, **said, source=str(path), line=first, trail=trail))
    return out


def from_shared(shared: Shared, dataset: dict[str, QuestionRow], only: tuple | None = None) -> list[Record]:
    """A shared results dataset's records; `only`: one input's rows, as (input, its recorded dataset)."""
    out, upstream = [], defaultdict(list)
    for label, n, row in shared.judgments():
        if only is not None and (row.source, row.dataset) != only:
            continue
        if row.source_kind == "upstream":
            upstream[label] += upstream_lines(row, n)
            continue
        r = _ours(judgment_record(row), str(Path(label)), n, dataset)
        if r.judge != row.judge:
            why = f"says {row.judge!r}, its judge_model, prompt_version, mode and settings make {r.judge!r}"
            raise SourceError(why, file=r.source, line=n, field="judge")
        out.append(r)
    return out + [r for label, rows in upstream.items() for r in from_upstream(Path(label), rows, dataset)]


class NoResults(SourceError):
    """A folder with nothing judged in it (a run killed early, or one that failed)."""


def is_probe_folder(path: Path) -> bool:
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
    if inspect_log.is_log(path):  # inspect's logs: the judgment each score carries
        return [
            _ours(s.judgment, s.file, s.line, dataset) for s in inspect_log.log_samples(path) if s.judgment
        ]
    if is_probe_folder(path):  # its judgments file (a killed run's partial judgments are not read)
        path = path / JUDGMENTS_FILE
    try:
        if path.is_dir():  # a run's folder: its candidate's details, and the panel judged beside it
            if not any(p.name.startswith("details_") for p in path.rglob("*.parquet")):
                why = "no oab_bench results in this folder (an unfinished or failed run?)"
                raise NoResults(why, file=str(path))
            panel = path / PANEL_JUDGMENTS_FILE
            return _from_lighteval(path, dataset) + (load_records(panel, dataset) if panel.is_file() else [])
        if path.suffix == ".parquet":
            return _from_lighteval(path, dataset)
        rows = list(read_objects(path))
        if not rows:
            raise SourceError("empty file", file=str(path))
        keys = set(rows[0][1])
        if keys >= UPSTREAM_KEYS:
            return from_upstream(path, rows, dataset)
        if keys >= OURS_KEYS:
            return [_ours(r, str(path), n, dataset) for n, r in rows]
        why = f"unknown format (keys {sorted(keys)[:8]}...): expected our judgments or upstream's"
        raise SourceError(why, file=str(path), line=rows[0][0])
    except SourceError:
        raise
    except ValueError as e:  # pydantic's ValidationError too
        raise SourceError(str(e).splitlines()[0], file=str(path)) from None


def recorded_dataset(path: Path) -> str | None:
    """The dataset a run folder was made with: its results JSON's `hf_repo`."""
    if inspect_log.is_log(path):
        return inspect_log.recorded_dataset(path)
    found: set[str] = set()
    for file in sorted(((path if path.is_dir() else path.parent) / "results").rglob("results_*.json")):
        try:
            tasks = json.loads(file.read_text(encoding="utf-8")).get("config_tasks") or {}
        except (OSError, ValueError, AttributeError):
            continue
        repos = [t.get("hf_repo") for name, t in tasks.items() if "oab_bench" in name and isinstance(t, dict)]
        found |= {r for r in repos if isinstance(r, str)}
    if len(found) > 1:
        why = f"made with several datasets ({', '.join(sorted(found))}): pass --dataset"
        raise SourceError(why, file=str(path))
    return next(iter(found), None)


class Inputs(BaseModel):
    records: list[Record]
    expected: set[str] | None  # every question of --dataset; None: those the inputs judged
    truth: dict[str, Facts]  # from --dataset, else from the datasets the run folders recorded
    notes: list[str]
    origins: list[tuple[str, str | None]] = []  # per record: its input, and the dataset it recorded


def read_inputs(paths: list[str], dataset: str | None = None) -> Inputs:
    """Every input's records, checked against `--dataset`, else against the run folders' recorded datasets."""
    from oab_bench.judge.dataset import load_rows

    @functools.cache
    def rows_of(source: str) -> dict[str, QuestionRow]:
        return {r.question_id: r for r in load_rows(source)}

    truth = facts_of_rows(rows_of(dataset).values()) if dataset else {}
    records, notes, origins = [], [], []
    for given in paths:
        shared = open_shared(given)
        for path, recorded in [(given, None)] if shared is None else shared.sources():
            try:
                source = recorded if shared else recorded_dataset(Path(path))
            except SourceError:
                if not dataset:
                    raise
                source = None  # several datasets: --dataset settles it (said for export only)
            rows = rows_of(dataset) if dataset else {}
            if not dataset and source and Path(source).is_dir():
                rows = rows_of(source)
                for qid, facts in facts_of_rows(rows.values()).items():
                    if truth.setdefault(qid, facts) != facts:
                        why = f"its dataset {source} and another input's disagree on {qid}: pass --dataset"
                        raise SourceError(why, file=str(path))
            elif not dataset and source:
                why = "(not a local folder): pass --dataset to check against it"
                notes.append(f"{path} was made with {source} {why}")
            try:
                got = from_shared(shared, rows, (path, recorded)) if shared else load_records(path, rows)
            except NoResults as e:
                notes.append(f"skipped {e}")
                continue
            records += got
            origins += [(path, source)] * len(got)
    if not records:
        raise ValueError("no judged results in any input")
    expected = set(rows_of(dataset)) if dataset else None
    # notes sorted: the output never depends on the order of the inputs
    return Inputs(records=records, expected=expected, truth=truth, notes=sorted(notes), origins=origins)


def read_for_command(command: str, inputs: list[str], dataset: str | None) -> Inputs:
    got = read_inputs(inputs, dataset)
    for note in got.notes:
        print(f"oab-bench {command}: note: {note}", file=sys.stderr)
    return got
