"""Judgment sources to compare: anything the leaderboard reads, plus human grading CSVs.

A source is one judge's (or one group of graders') scores per (model, question), with item
scores where the source has them. Machine sources are read by judge.leaderboard.inputs (one reader,
the same checks and statuses, item scores with the scores). A human CSV
(`exam_id,question_id,item_id,score,grader`, optional `model`) gives item grades (summed into
the question's score) or question grades (`item_id` empty); several graders are averaged into
the source, and each grader is also kept apart for the human-human baseline.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.dataset_builder.schema import PECA_MAX, QUESTAO_MAX, QuestionRow, money
from oab_bench.judge.leaderboard.inputs import load_records
from oab_bench.judge.leaderboard.tables import one_each
from oab_bench.judge.results_source import open_shared

CSV_COLUMNS = ("exam_id", "question_id", "item_id", "score", "grader")


class Graded(BaseModel):
    """One (model, question) as a source graded it. Only status `ok` carries a score."""

    model: str | None  # None: a human grade naming no model (pairs with the one model the other side has)
    question_id: str
    exam_id: str
    status: str
    score: float | None
    max_score: float
    items: dict[str, float] | None = None  # item id -> score, where the source has item scores

    @classmethod
    def of_member(cls, record: dict, member: dict) -> Graded:
        """A jury member's (or one repeat's) grading, from the record of the jury (or repeated run)."""
        return cls(
            model=record["model"],
            question_id=record["question_id"],
            exam_id=record["exam_id"],
            status=member["status"],
            score=member["score"] if member["status"] == "ok" else None,
            max_score=record["max_score"],
            items=member.get("items") or None,
        )


Key = tuple[str | None, str]  # (model, question id)


class Source(BaseModel):
    name: str  # "A", "B"...: sources are named by position (the same file may come twice)
    path: str
    judge: str  # the judge label, "human (N graders)", or "repeat K"
    graded: dict[Key, Graded]
    graders: dict[str, Source] = {}  # a human CSV with several graders: each one alone
    notes: list[str] = []  # what reading it decided (copies counted once...), for the report

    @property
    def label(self) -> str:
        return f"{self.name} ({self.judge}; {self.path})"


def load_judgments(name: str, path: Path, dataset: dict[str, QuestionRow]) -> Source:
    """One judge's judgments; one per (model, question) chosen as the leaderboard chooses (copies
    are one, an `ok` one is used over failures, two different scores stop naming both lines)."""
    records = load_records(path, dataset)
    judges = sorted({r.judge for r in records})
    if len(judges) != 1:
        raise SourceError(
            f"holds {len(judges)} judges ({', '.join(judges[:3])}): compare one judge per source",
            file=str(path),
        )
    chosen, notes = one_each(records)
    graded = {}
    for model, by_question in chosen[judges[0]].items():
        for question_id, r in by_question.items():
            graded[(model, question_id)] = Graded(
                model=r.model,
                question_id=r.question_id,
                exam_id=r.exam_id,
                status=r.status,
                score=r.score,
                max_score=r.max_score,
                items=r.items if r.status == "ok" else None,
            )
    return Source(name=name, path=str(path), judge=judges[0], graded=graded, notes=notes)


def _max_of(question_id: str, dataset: dict[str, QuestionRow]) -> float:
    if question_id in dataset:
        return dataset[question_id].max_score
    return PECA_MAX if parse_question_id(question_id).kind == "peca" else QUESTAO_MAX


def _check_item(row: QuestionRow | None, item_id: str, score: float, where: dict) -> None:
    if row is None:
        return
    rubric = {r.item_id: r for r in row.rubric}
    if item_id not in rubric:
        raise SourceError(f"{row.question_id} has no item {item_id!r} (items {sorted(rubric)})", **where)
    if score > rubric[item_id].max_score + 1e-6:
        raise SourceError(f"{score} is above the item's {rubric[item_id].max_score}", **where)


def _csv_text(path: Path) -> str:
    """The file as text: UTF-8 (a BOM allowed); another encoding is named with its line."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise SourceError(e.strerror or str(e), file=str(path)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        byte = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
        hint = "UTF-16 (Excel's Unicode text?)" if utf16 else "Latin-1 or Windows-1252?"
        raise SourceError(
            f"not UTF-8 (byte {byte}: {hint}): save it as CSV UTF-8", file=str(path), line=line
        ) from None


def _check_header(fields: list[str], path: Path) -> None:
    """Every column there, else what is wrong with the header: another separator, blanks or
    capitals around the names, rather than every column "missing"."""
    missing = [c for c in CSV_COLUMNS if c not in fields]
    if not missing:
        return
    hint = ""
    separators = {";": "semicolons", "\t": "tabs", "|": "bars"}
    if len(fields) == 1 and (sep := next((s for s in separators if s in fields[0]), None)):
        hint = f": the header is one column, separated by {separators[sep]}; separate the columns with commas"
    elif all(c in {f.strip().lower() for f in fields} for c in missing):
        odd = [f for f in fields if f.strip().lower() in missing]
        hint = f": column names {odd} have blanks or capitals; write them as {list(CSV_COLUMNS)}"
    raise SourceError(
        f"missing columns {missing} (need {','.join(CSV_COLUMNS)}){hint}", file=str(path), line=1
    )


def _read_csv(path: Path, dataset: dict[str, QuestionRow]):
    """grader -> (model, question) -> {"items": {id: score}, "score": question score or None, "line":
    its last line}, exam ids."""
    grades: dict[str, dict[Key, dict]] = defaultdict(
        lambda: defaultdict(lambda: {"items": {}, "score": None})
    )
    exams: dict[str, str] = {}
    reader = csv.DictReader(io.StringIO(_csv_text(path), newline=""))
    _check_header(reader.fieldnames or [], path)
    for raw in reader:
        n = reader.line_num  # a blank line is skipped, not counted out of the line numbers
        at = {"file": str(path), "line": n}
        qid, exam = (raw["question_id"] or "").strip(), (raw["exam_id"] or "").strip()
        try:
            parsed = parse_question_id(qid)
        except ValueError:
            raise SourceError(f"{qid!r} is not a question id", **at, field="question_id") from None
        if exam != parsed.exam_id:
            raise SourceError(f"{exam!r} is not the exam of {qid}", **at, field="exam_id")
        try:
            score = float((raw["score"] or "").strip().replace(",", "."))
        except ValueError:
            score = math.nan
        if not math.isfinite(score) or score < 0:
            raise SourceError(f"{raw['score']!r} is not a score (a number >= 0)", **at, field="score")
        grader = (raw["grader"] or "").strip()
        if not grader:
            raise SourceError("empty grader", **at, field="grader")
        model = (raw.get("model") or "").strip() or None
        item = (raw["item_id"] or "").strip()
        slot = grades[grader][(model, qid)]
        slot["line"] = n
        if item:
            _check_item(dataset.get(qid), item, score, {**at, "field": "item_id"})
            if item in slot["items"] or slot["score"] is not None:
                raise SourceError(f"{grader} graded {qid} {item} twice", **at, field="item_id")
            slot["items"][item] = score
        else:
            if slot["items"] or slot["score"] is not None:
                raise SourceError(f"{grader} graded {qid} twice", **at, field="item_id")
            slot["score"] = score
        if score > _max_of(qid, dataset) + 1e-6:
            raise SourceError(f"{score} is above the question's {_max_of(qid, dataset)}", **at, field="score")
        exams[qid] = exam
    if not grades:
        raise SourceError("no grades in it", file=str(path))
    return grades, exams


def _graded(key: Key, score: float, items: dict[str, float] | None, exam: str, maximum: float) -> Graded:
    return Graded(
        model=key[0],
        question_id=key[1],
        exam_id=exam,
        status="ok",
        score=round(score, 6),  # graders' mean unrounded: cents would bias every figure (0.625 -> 0.62)
        max_score=maximum,
        items=items or None,
    )


def load_human(name: str, path: Path, dataset: dict[str, QuestionRow]) -> Source:
    """Item grades add up to the question's score; several graders are averaged, per item and per
    question. With the dataset, what FGV annulled counts in full, as for the judges (trust.py,
    scoring.py): an annulled item graded below full is raised to it, with a note, and one not
    graded is added."""
    grades, exams = _read_csv(path, dataset)
    per_grader: dict[str, dict[Key, Graded]] = {}
    raised = 0
    for grader, by_key in grades.items():
        mine = {}
        for key, slot in by_key.items():
            items = dict(slot["items"])
            row = dataset.get(key[1])
            if items and row is not None:
                full = {r.item_id: r.max_score for r in row.rubric if r.annulled}
                raised += sum(1 for i, v in items.items() if i in full and v < full[i] - 1e-6)
                items |= full
            score = math.fsum(items.values()) if items else slot["score"]
            maximum = _max_of(key[1], dataset)
            if score > maximum + 1e-6:
                raise SourceError(
                    f"{grader}'s item grades of {key[1]} add up to {money(score)}, above the question's {maximum}",
                    file=str(path),
                    line=slot["line"],
                    field="score",
                )
            mine[key] = _graded(key, score, items, exams[key[1]], maximum)
        per_grader[grader] = mine
    keys = sorted({k for g in per_grader.values() for k in g}, key=lambda k: (k[0] or "", k[1]))
    graded = {}
    for key in keys:
        got = [g[key] for g in per_grader.values() if key in g]
        item_ids = set.intersection(*(set(g.items or {}) for g in got))
        items = (
            {i: math.fsum(g.items[i] for g in got) / len(got) for i in sorted(item_ids)} if item_ids else None
        )
        score = math.fsum(g.score for g in got) / len(got)
        graded[key] = _graded(key, score, items, got[0].exam_id, got[0].max_score)
    graders = {
        g: Source(name=f"{name}:{g}", path=str(path), judge=f"human {g}", graded=v)
        for g, v in sorted(per_grader.items())
    }
    judge = f"human, {len(graders)} grader{'s' if len(graders) > 1 else ''}"
    notes = [
        f"{raised} item grade(s) of items FGV annulled were below full: counted in full, as for the judges"
    ]
    return Source(
        name=name,
        path=str(path),
        judge=judge,
        graded=graded,
        graders=graders if len(graders) > 1 else {},
        notes=notes if raised else [],
    )


def load_source(name: str, path: str | Path, dataset: dict[str, QuestionRow] | None = None) -> Source:
    if open_shared(path) is not None:
        return load_judgments(name, Path(path), dataset or {})
    path = Path(path)
    if not path.exists():
        raise SourceError("not found", file=str(path))
    if path.suffix.lower() == ".csv":
        return load_human(name, path, dataset or {})
    return load_judgments(name, path, dataset or {})


def source_names(n: int) -> list[str]:
    """A, B, ..., Z, S27, S28...: named by position."""
    return [chr(ord("A") + i) if i < 26 else f"S{i + 1}" for i in range(n)]


def shared_judges(sources: list[str]) -> list[str]:
    """One source naming a shared results dataset of several judges: each judge's config, to compare."""
    shared = open_shared(sources[0]) if len(sources) == 1 else None
    if shared is None or len(shared.configs) < 2:
        return []
    return [f"{shared.name}#{config}" for config in shared.configs]
