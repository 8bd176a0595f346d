"""Judgment sources to compare: what the leaderboard reads, records with `members`/`repeats`, human CSVs."""

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
from oab_bench.judge.answers import one_copy_each
from oab_bench.judge.grading.judgment_reader import read_judgment
from oab_bench.judge.leaderboard.inputs import load_records
from oab_bench.judge.leaderboard.tables import one_each
from oab_bench.judge.results_layout import judgment_objects, open_shared

CSV_COLUMNS = ("exam_id", "question_id", "item_id", "score", "grader")

RECORD_FIELDS = {"model", "question_id", "exam_id", "status", "score", "max_score"}  # Graded's, of a record
Key = tuple[str | None, str]  # (model, question id); model None: a human grade naming no model


class Graded(BaseModel):
    model: str | None  # None pairs with the one model the other side graded on the question
    question_id: str
    exam_id: str
    status: str
    score: float | None
    max_score: float
    items: dict[str, float] | None = None  # item id -> score, where the source has item scores


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
    """One judge's judgments, one per (model, question) chosen as the leaderboard chooses."""
    records = load_records(path, dataset)
    judges = sorted({r.judge for r in records})
    if len(judges) != 1:
        why = f"holds {len(judges)} judges ({', '.join(judges[:3])}): compare one judge per source"
        raise SourceError(why, file=str(path))
    chosen, notes = one_each(records)
    records = [r for by_question in chosen[judges[0]].values() for r in by_question.values()]
    graded = {
        (r.model, r.question_id): Graded(**r.model_dump(include=RECORD_FIELDS | {"items"})) for r in records
    }
    return Source(name=name, path=str(path), judge=judges[0], graded=graded, notes=notes)


def read_nested_lines(path: Path, key: str, rows: dict | None = None) -> list[tuple[int, dict]]:
    """(line, record) of each record of `path` carrying `key`, checked by the judgment reader."""
    out = []
    for file, n, r in judgment_objects(path):
        if r.get(key):
            got = getattr(read_judgment(r, file=file, line=n, rows=rows), key)
            out.append((n, {**r, key: [m.model_dump(mode="json") for m in got]}))
    return out


def one_record_each(lines: list[tuple[int, dict]], path: Path) -> list[dict]:
    """One record per (model, question) of `lines`, sorted (answers.one_copy_each)."""
    keyed = [((str(r["model"]), str(r["question_id"])), r, str(path), n, r) for n, r in lines]
    return list(one_copy_each(keyed, "is graded on").values())


def nested_graded(records: list[dict], key: str, name) -> dict:
    """name(record, grading) -> (model, question) -> that grading, for each nested grading of `key`."""
    graded: dict = defaultdict(dict)
    for r in records:
        fields = {k: r[k] for k in RECORD_FIELDS - {"status", "score"}}
        for m in r.get(key) or []:
            score = m["score"] if m["status"] == "ok" else None
            got = Graded(**fields, status=m["status"], score=score, items=m.get("items") or None)
            graded[name(r, m)][(r["model"], r["question_id"])] = got
    return dict(sorted(graded.items()))


def _max_of(question_id: str, dataset: dict[str, QuestionRow]) -> float:
    if row := dataset.get(question_id):
        return row.max_score
    return PECA_MAX if parse_question_id(question_id).kind == "peca" else QUESTAO_MAX


def _csv_text(path: Path) -> str:
    """The file as text: UTF-8 (a BOM allowed); another encoding is named with its line and byte."""
    data = path.read_bytes()  # an OSError names the file (the CLI says it in one line)
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
    """Every column there, else what is wrong with the header rather than every column "missing"."""
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


def load_human(name: str, path: Path, dataset: dict[str, QuestionRow]) -> Source:
    """Item grades add up to the question's score; graders are averaged per item and per question,
    unrounded. With the dataset, items are checked and annulled ones count in full, as for judges."""
    grades: dict = defaultdict(dict)  # grader -> (model, question) -> {items, score, line}
    reader = csv.DictReader(io.StringIO(_csv_text(path), newline=""))
    _check_header(reader.fieldnames or [], path)
    for raw in reader:
        raw = {k: (v or "").strip() for k, v in raw.items() if k is not None}  # None: cells beyond the header
        at = {"file": str(path), "line": reader.line_num}  # a blank line is skipped, not out of the count
        qid, item, grader = raw["question_id"], raw["item_id"], raw["grader"]
        try:
            exam = parse_question_id(qid).exam_id
        except ValueError:
            raise SourceError(f"{qid!r} is not a question id", **at, field="question_id") from None
        if raw["exam_id"] != exam:
            raise SourceError(f"{raw['exam_id']!r} is not the exam of {qid}", **at, field="exam_id")
        try:
            score = float(raw["score"].replace(",", "."))
        except ValueError:
            score = math.nan
        if not math.isfinite(score) or score < 0:
            raise SourceError(f"{raw['score']!r} is not a score (a number >= 0)", **at, field="score")
        if not grader:
            raise SourceError("empty grader", **at, field="grader")
        rubric = {r.item_id: r.max_score for r in dataset[qid].rubric} if qid in dataset else {}
        if item and rubric and item not in rubric:
            raise SourceError(f"{qid} has no item {item!r} (items {sorted(rubric)})", **at, field="item_id")
        if item and rubric and score > rubric[item] + 1e-6:
            raise SourceError(f"{score} is above the item's {rubric[item]}", **at, field="item_id")
        slot = grades[grader].setdefault((raw.get("model") or None, qid), {"items": {}, "score": None})
        if slot["score"] is not None or (item in slot["items"] if item else slot["items"]):
            raise SourceError(f"{grader} graded {qid} {item}".rstrip() + " twice", **at, field="item_id")
        slot["line"] = at["line"]
        if item:
            slot["items"][item] = score
        else:
            slot["score"] = score
        if score > (top := _max_of(qid, dataset)) + 1e-6:
            raise SourceError(f"{score} is above the question's {top}", **at, field="score")
    if not grades:
        raise SourceError("no grades in it", file=str(path))

    def graded(key: Key, score: float, items: dict[str, float] | None) -> Graded:
        exam, top = parse_question_id(key[1]).exam_id, _max_of(key[1], dataset)
        of_key = {"model": key[0], "question_id": key[1], "exam_id": exam, "status": "ok", "max_score": top}
        return Graded(**of_key, score=round(score, 6), items=items or None)

    per_grader: dict[str, dict[Key, Graded]] = {}
    raised = 0
    for grader, by_key in sorted(grades.items()):
        per_grader[grader] = {}
        for key, slot in by_key.items():
            items = dict(slot["items"])
            if items and key[1] in dataset:
                full = {r.item_id: r.max_score for r in dataset[key[1]].rubric if r.annulled}
                raised += sum(1 for i, v in items.items() if i in full and v < full[i] - 1e-6)
                items |= full
            score, top = math.fsum(items.values()) if items else slot["score"], _max_of(key[1], dataset)
            if score > top + 1e-6:
                why = f"{grader}'s item grades of {key[1]} add up to {money(score)}, above its {top}"
                raise SourceError(why, file=str(path), line=slot["line"], field="score")
            per_grader[grader][key] = graded(key, score, items)
    mean = {}
    for key in sorted({k for g in per_grader.values() for k in g}, key=lambda k: (k[0] or "", k[1])):
        got = [g[key] for g in per_grader.values() if key in g]
        common = sorted(set.intersection(*(set(g.items or {}) for g in got)))
        items = {i: math.fsum(g.items[i] for g in got) / len(got) for i in common}
        mean[key] = graded(key, math.fsum(g.score for g in got) / len(got), items)
    graders = {
        g: Source(name=f"{name}:{g}", path=str(path), judge=f"human {g}", graded=v)
        for g, v in per_grader.items()
    }
    judge = f"human, {len(graders)} grader{'s' if len(graders) > 1 else ''}"
    note = f"{raised} item grade(s) of items FGV annulled were below full: counted in full, as for the judges"
    alone = graders if len(graders) > 1 else {}
    return Source(
        name=name, path=str(path), judge=judge, graded=mean, graders=alone, notes=[note] if raised else []
    )


def load_source(name: str, path: str | Path, dataset: dict[str, QuestionRow] | None = None) -> Source:
    if open_shared(path) is None:
        if not Path(path).exists():
            raise SourceError("not found", file=str(path))
        if Path(path).suffix.lower() == ".csv":
            return load_human(name, Path(path), dataset or {})
    return load_judgments(name, Path(path), dataset or {})


def source_names(n: int) -> list[str]:
    """A, B, ..., Z, S27, S28...: named by position."""
    return [chr(ord("A") + i) if i < 26 else f"S{i + 1}" for i in range(n)]


def shared_judges(sources: list[str]) -> list[str]:
    """One source naming a shared results dataset of several judges: each judge's config, to compare."""
    shared = open_shared(sources[0]) if len(sources) == 1 else None
    if shared is None or len(shared.configs) < 2:
        return []
    return [f"{shared.name}#{config}" for config in shared.configs]
