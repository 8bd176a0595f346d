"""Upstream's rows -> checked QuestionRows: normalised, score tables parsed, errata applied, every item's
rubric adding up to its value and every exam to 10.00."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from pydantic import BaseModel

from oab_bench.dataset_builder import schema
from oab_bench.dataset_builder import source as upstream
from oab_bench.dataset_builder.errata import DEFAULT_ERRATA, Correction, ErrataEntry, load_errata
from oab_bench.dataset_builder.errors import BuildError, SourceError
from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.dataset_builder.schema import QuestionRow, RubricItem, UpstreamText, money
from oab_bench.dataset_builder.source import ReferenceAnswer, SourceQuestion, validate_objects
from oab_bench.dataset_builder.text import clean_question, parse_reference


class BuildReport(BaseModel):
    """What a build did, each list sorted by question: input in another order prints the same bytes."""

    questions: int = 0
    exams: int = 0
    corrections: list[str] = []  # errata applied, one line each
    normalisations: list[str] = []
    warnings: list[str] = []

    def lines(self) -> list[str]:
        out = [f"{self.questions} questions, {self.exams} exams of {schema.EXAM_MAX:.2f} points"]
        out += [f"errata applied: {c}" for c in self.corrections]
        out += [f"normalised: {n}" for n in self.normalisations]
        return out + [f"warning: {w}" for w in self.warnings]


def _read(raw: upstream.RawSource) -> tuple[dict, dict]:
    """Questions and references by id with their lines: ids once each, parsed, agreeing with the category."""
    questions: dict[str, tuple[int, SourceQuestion]] = {}
    for line, q in validate_objects(raw.questions, SourceQuestion, label=raw.questions_label):
        where = {"file": raw.questions_label, "line": line, "field": "question_id"}
        if q.question_id in questions:
            first = questions[q.question_id][0]
            raise SourceError(f"duplicate question id {q.question_id!r} (first at line {first})", **where)
        try:
            exam = parse_question_id(q.question_id).exam_id
        except ValueError as e:
            raise SourceError(str(e), **where) from None
        if q.category != exam:
            why = f"category {q.category!r} disagrees with the id's exam {exam!r}"
            raise SourceError(why, **{**where, "field": "category"})
        questions[q.question_id] = (line, q)
    if not questions:
        raise SourceError("no questions (empty file)", file=raw.questions_label, line=1)
    refs: dict[str, tuple[int, ReferenceAnswer]] = {}
    for line, a in validate_objects(raw.guidelines, ReferenceAnswer, label=raw.guidelines_label):
        where = {"file": raw.guidelines_label, "line": line, "field": "question_id"}
        if a.question_id in refs:
            first = refs[a.question_id][0]
            raise SourceError(f"duplicate reference for {a.question_id!r} (first at line {first})", **where)
        if a.question_id not in questions:
            raise SourceError(f"reference for unknown question {a.question_id!r}", **where)
        refs[a.question_id] = (line, a)
    return questions, refs


def _rubric(
    name: str, ref: ReferenceAnswer, labels: list[str], fix: Correction, report: BuildReport, errata: str
) -> tuple[list[str], list[RubricItem]]:
    """Each part's commented answer and rubric, errata applied; a row outscoring its (x,xx) parts: warned."""
    references, rows = [], []
    for i, (label, text) in enumerate(zip(labels, ref.turns, strict=True)):
        try:
            answer, table = parse_reference(text)
        except SourceError as e:
            raise SourceError(e.message, field=f"choices[0].turns[{i}]") from None  # the guidelines' field
        references.append(answer)
        number = itertools.count(1)  # ids count a part's rows: the source's labels repeat
        rows += [(f"{label or 'P'}{next(number)}", label, row) for row in table]
    fixes = {f.item_id: f for f in fix.scores}
    missing = [i for i in [*fixes, *fix.annulled] if i not in {item_id for item_id, _, _ in rows}]
    if missing:
        raise BuildError(f"{name}: errata names rubric item {missing[0]!r}, which the source does not have")
    detected = sorted(item_id for item_id, _, row in rows if row.annulled)
    if set(detected) != set(fix.annulled):
        why = f"the source marks items {detected} as annulled, the errata records {sorted(fix.annulled)}"
        raise BuildError(f"{name}: {why}; record every annulment in the errata")
    rubric = []
    for item_id, part, row in rows:
        allowed = row.scores
        if item_id in fixes:
            if " ".join(fixes[item_id].was.split()) != row.cell:
                why = f"expects {item_id} to read {fixes[item_id].was!r}, the source reads {row.cell!r}"
                raise BuildError(f"{name}: errata {why}")
            allowed = sorted({money(v) for v in fixes[item_id].now})
            if allowed == row.scores:
                why = f"sets the scores of {item_id} to {allowed}, which the source already has"
                raise BuildError(f"{name}: {errata} {why}: the fix changes nothing (stale entry?)")
        if allowed is None:
            why = f"item row has no score cell ({row.cell!r}), likely under a merged cell"
            raise BuildError(f"{name} {item_id}: {why}")
        if allowed[0] != 0.0:
            raise BuildError(f"{name} {item_id}: score cell {row.cell!r} does not start at 0")
        checked = item_id not in fixes and not row.annulled and " OU " not in row.description
        parts = re.findall(r"\((\d+[.,]\d+)\)", row.description) if checked else []
        total = money(sum(float(p.replace(",", ".")) for p in parts))
        if parts and total < allowed[-1]:
            why = f"max {allowed[-1]:.2f} exceeds its parenthesised parts ({total:.2f})"
            report.warnings.append(f"{name} {item_id}: {why}")
        ours = {"item_id": item_id, "part": part, "max_score": allowed[-1], "allowed_scores": allowed}
        rubric.append(RubricItem(**ours, **row._asdict()))  # the row's cell and scores are no field of it
    return references, rubric


def _question(
    q: SourceQuestion, ref: ReferenceAnswer, entry: ErrataEntry | None, report: BuildReport, errata: str
) -> QuestionRow:
    """A SourceError names its field (the caller adds file, line, provenance), a BuildError the question."""
    qid, name = parse_question_id(q.question_id), q.question_id
    fix = entry.correction if entry else Correction()
    labels = [""] if qid.kind == "peca" else ["A", "B"]
    if len(q.turns) != len(labels):
        raise SourceError(f"a {qid.kind} has {len(labels)} turn(s), got {len(q.turns)}", field="turns")
    if len(q.values) != len(q.turns):
        raise SourceError(f"{len(q.values)} values for {len(q.turns)} turns", field="values")
    empty = [i for i, turn in enumerate(q.turns) if qid.kind == "questao" and not turn.strip()]
    if empty:
        raise SourceError("a questão's item prompt is empty", field=f"turns.{empty[0]}")
    if len(ref.turns) != len(q.turns):
        why = f"reference has {len(ref.turns)} turn(s) but the question has {len(q.turns)}"
        raise SourceError(why, field="turns")
    upstream_values = values = [money(v) for v in q.values]
    if fix.values is not None:
        values = [money(v) for v in fix.values]
        if values == upstream_values:
            why = f"sets values {values}, which the source already has (stale entry?)"
            raise BuildError(f"{name}: {errata} {why}")
        if len(values) != len(upstream_values):
            raise BuildError(f"{name}: errata gives {len(values)} values for {len(upstream_values)} turns")
        report.corrections.append(f"{name}: values {upstream_values} -> {values}: {entry.summary()}")
    try:
        body, prompts, notes, settled = clean_question(q.statement, q.turns, values, qid, fix.wrong_valor)
    except SourceError as e:
        hint = " (if the written value is the wrong one, say so in the errata: correction.wrong_valor)"
        message = f"{name}: {e.message}{hint if 'Valor' in e.message else ''}"
        raise SourceError(message, field=e.field) from None
    stale = sorted(set(fix.wrong_valor) - set(settled))
    if stale:
        why = f"the (Valor: ...) of {stale} is wrong, but it agrees with the values or is not there"
        raise BuildError(f"{name}: errata says {why} (stale entry?)")
    if settled:
        what = f"kept values over the written (Valor: ...) of {', '.join(settled)}"
        report.corrections.append(f"{name}: {what}: {entry.summary()}")
    report.normalisations += [f"{name} {n}" for n in notes]
    expected = schema.PECA_MAX if qid.kind == "peca" else schema.QUESTAO_MAX
    if money(sum(values)) != expected:
        why = f"item values {values} total {sum(values):.2f}, a {qid.kind} is worth {expected:.2f}"
        raise BuildError(f"{name}: {why}")
    references, rubric = _rubric(name, ref, labels, fix, report, errata)
    what = ["scores of " + ", ".join(f.item_id for f in fix.scores)] if fix.scores else []
    what += [f"annulled {', '.join(fix.annulled)} (full marks to every candidate)"] if fix.annulled else []
    if what:
        report.corrections.append(f"{name}: {'; '.join(what)}: {entry.summary()}")
    parts = zip(labels, prompts, values, strict=True)
    items = [schema.Item(label=a, prompt=p, max_score=v) for a, p, v in parts]
    for item in items:
        total = money(sum(r.max_score for r in rubric if r.part == item.label))
        if total != item.max_score:
            which = f"item {item.label}" if item.label else "the peça"
            why = f"score table totals {total:.2f} but the item is worth {item.max_score:.2f}"
            raise BuildError(f"{name}, {which}: {why}")
    up = UpstreamText(statement=q.statement, turns=q.turns, values=upstream_values, reference_turns=ref.turns)
    row = dict(question_id=name, exam_id=qid.exam_id, system_prompt=q.system, statement=body, items=items)
    row |= dict(max_score=expected, reference=references, rubric=rubric, upstream=up)
    applied = [entry.summary()] if entry else []
    return QuestionRow(**row, **qid._asdict(), errata=applied)


def build_rows(
    source: Path | str, errata_path: Path = DEFAULT_ERRATA
) -> tuple[list[QuestionRow], BuildReport]:
    """Read and check everything: SourceError for bad input, BuildError for numbers that do not add up."""
    errata = load_errata(errata_path)
    raw = upstream.open_source(source)
    questions, refs = _read(raw)
    stale = [question_id for question_id in errata if question_id not in questions]
    if stale:
        raise BuildError(f"errata entry for {stale[0]}, which is not in {raw.questions_label} (stale entry?)")
    report, rows, problems = BuildReport(), [], []
    for question_id, (line, q) in questions.items():
        if question_id not in refs:
            why = f"no reference answer for {question_id!r} in {raw.guidelines_label}"
            raise SourceError(why, file=raw.questions_label, line=line, field="question_id")
        ref_line, ref = refs[question_id]
        try:
            row = _question(q, ref, errata.get(question_id), report, errata_path.name)
            rows.append(row.model_copy(update={"provenance": raw.provenance}))
        except SourceError as e:
            theirs = (e.field or "").startswith("choices")  # the guidelines'
            file = raw.guidelines_label if theirs else raw.questions_label
            raise e.at(file=file, line=ref_line if theirs else line) from None
        except BuildError as e:
            problems.append(str(e))
    exams = {r.exam_id: sorted(s.number for s in rows if s.exam_id == r.exam_id) for r in rows}
    # a peça (5.00) and questões 1-4 (1.25 each, every row's max_score checked above) total 10.00
    problems = problems or [
        f"exam {exam} is incomplete: has {n}, needs the peça (0) and questões 1-4"
        for exam, n in sorted(exams.items())
        if n != [0, 1, 2, 3, 4]
    ]
    if problems:
        raise BuildError("\n".join(problems))
    rows.sort(key=lambda r: (r.edition, r.area, r.number))
    for lines in (report.corrections, report.normalisations, report.warnings):  # by question id, then line
        lines.sort(key=lambda line: (re.split(r"[\s:]", line, maxsplit=1)[0], line))
    report.questions, report.exams = len(rows), len(exams)
    return rows, report
