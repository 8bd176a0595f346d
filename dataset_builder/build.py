"""Upstream folder -> validated QuestionRows: read, normalise, parse rubrics, apply errata, check sums."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, Field

from oab_bench.dataset_builder.errata import DEFAULT_ERRATA, ErrataEntry, load_errata
from oab_bench.dataset_builder.errors import BuildError, SourceError
from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.dataset_builder.origin import RawSource, open_source
from oab_bench.dataset_builder.rubric import TableRow, parse_reference
from oab_bench.dataset_builder.schema import (
    EXAM_MAX,
    PECA_MAX,
    QUESTAO_MAX,
    Item,
    Provenance,
    QuestionRow,
    RubricItem,
    UpstreamText,
    money,
)
from oab_bench.dataset_builder.source import (
    GUIDELINES_FILE,
    ReferenceAnswer,
    SourceAnswer,
    SourceQuestion,
    validate_objects,
)
from oab_bench.dataset_builder.text import clean_question

_PART_RE = re.compile(r"\((\d+[.,]\d+)\)")


def _by_question(line: str) -> tuple[str, str]:
    """A report line (`QUESTION_ID: what`, `QUESTION_ID P2: what`) -> (question id, line) for sorting."""
    return re.split(r"[\s:]", line, maxsplit=1)[0], line


class BuildReport(BaseModel):
    questions: int = 0
    exams: int = 0
    corrections: list[str] = Field(default_factory=list)  # errata applied, one line each
    normalisations: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    def sort(self) -> None:
        """Order every list by question (the id each line starts with), then text: the same input in
        another order prints and writes the same bytes."""
        for lines in (self.corrections, self.normalisations, self.warnings):
            lines.sort(key=_by_question)

    def sorted_corrections(self) -> list[str]:
        """The corrections in `sort()`'s order, whether or not `sort()` ran (the card is public API)."""
        return sorted(self.corrections, key=_by_question)

    def lines(self) -> list[str]:
        out = [f"{self.questions} questions, {self.exams} exams of {EXAM_MAX:.2f} points"]
        out += [f"errata applied: {c}" for c in self.corrections]
        out += [f"normalised: {n}" for n in self.normalisations]
        out += [f"warning: {w}" for w in self.warnings]
        return out


def _read_questions(raw: RawSource) -> dict[str, tuple[int, SourceQuestion]]:
    label = raw.questions_label
    questions: dict[str, tuple[int, SourceQuestion]] = {}
    for lineno, q in validate_objects(raw.questions, SourceQuestion, label=label):
        if q.question_id in questions:
            first = questions[q.question_id][0]
            raise SourceError(
                f"duplicate question id {q.question_id!r} (first at line {first})",
                file=label,
                line=lineno,
                field="question_id",
            )
        try:
            qid = parse_question_id(q.question_id)
        except ValueError as e:
            raise SourceError(str(e), file=label, line=lineno, field="question_id") from None
        if q.category != qid.exam_id:
            raise SourceError(
                f"category {q.category!r} disagrees with the id's exam {qid.exam_id!r}",
                file=label,
                line=lineno,
                field="category",
            )
        questions[q.question_id] = (lineno, q)
    if not questions:
        raise SourceError("no questions (empty file)", file=label, line=1)
    return questions


def _read_references(raw: RawSource, questions: dict) -> dict[str, tuple[int, SourceAnswer]]:
    refs: dict[str, tuple[int, SourceAnswer]] = {}
    label = raw.guidelines_label
    for lineno, a in validate_objects(raw.guidelines, ReferenceAnswer, label=label):
        where = {"file": label, "line": lineno, "field": "question_id"}
        if a.question_id in refs:
            raise SourceError(
                f"duplicate reference for {a.question_id!r} (first at line {refs[a.question_id][0]})", **where
            )
        if a.question_id not in questions:
            raise SourceError(f"reference for unknown question {a.question_id!r}", **where)
        refs[a.question_id] = (lineno, a)
    return refs


def _scored_rows(rows: list[TableRow], prefix: str) -> list[tuple[str, str, TableRow]]:
    """(item_id, section, row) for each scored row; ids are sequential because source labels repeat."""
    section = ""
    out = []
    for row in rows:
        if not row.is_item:
            section = row.description
        else:
            out.append((f"{prefix}{len(out) + 1}", section, row))
    return out


def _rubric(
    scored: list[tuple[str, str, TableRow]],
    parts: list[str],
    entry: ErrataEntry | None,
    qid: str,
    errata_label: str = "errata.yaml",
) -> list[RubricItem]:
    """Apply the errata to the scored rows, then validate each as a RubricItem."""
    rows = {item_id: row for item_id, _, row in scored}
    fixes = {f.item_id: f for f in entry.correction.scores} if entry else {}
    annulled = set(entry.correction.annulled) if entry else set()
    for item_id in [*fixes, *annulled]:
        if item_id not in rows:
            raise BuildError(f"{qid}: errata names rubric item {item_id!r}, which the source does not have")
    detected = {item_id for item_id, row in rows.items() if row.annulled}
    if detected != annulled:
        raise BuildError(
            f"{qid}: the source marks items {sorted(detected)} as annulled, the errata records {sorted(annulled)}; "
            "record every annulment in the errata"
        )
    out = []
    for (item_id, section, row), part in zip(scored, parts, strict=True):
        scores = row.scores
        fix = fixes.get(item_id)
        if fix:
            if " ".join(fix.was.split()) != row.cell:
                raise BuildError(
                    f"{qid}: errata expects {item_id} to read {fix.was!r}, the source reads {row.cell!r}"
                )
            scores = sorted({money(v) for v in fix.now})
            if scores == row.scores:
                raise BuildError(
                    f"{qid}: {errata_label} sets the scores of {item_id} to {scores}, which the source already "
                    "has: the fix changes nothing (stale entry?)"
                )
        if scores is None:
            raise BuildError(
                f"{qid} {item_id}: item row has no score cell ({row.cell!r}), likely under a merged cell"
            )
        if scores[0] != 0.0:
            raise BuildError(f"{qid} {item_id}: score cell {row.cell!r} does not start at 0")
        out.append(
            RubricItem(
                item_id=item_id,
                part=part,
                section=section,
                label=row.label,
                description=row.description,
                max_score=scores[-1],
                allowed_scores=scores,
                annulled=row.annulled,
            )
        )
    return out


def _part_warnings(qid: str, rubric: list[RubricItem]) -> list[str]:
    """Rows whose maximum exceeds the sum of their parenthesised parts: a sign of merged cells."""
    out = []
    for r in rubric:
        parts = [float(p.replace(",", ".")) for p in _PART_RE.findall(r.description)]
        if parts and " OU " not in r.description and money(sum(parts)) < r.max_score:
            out.append(
                f"{qid} {r.item_id}: max {r.max_score:.2f} exceeds its parenthesised parts ({money(sum(parts)):.2f})"
            )
    return out


def build_question(
    q: SourceQuestion,
    ref: SourceAnswer,
    entry: ErrataEntry | None,
    report: BuildReport,
    *,
    guidelines_label: str = GUIDELINES_FILE,
    provenance: Provenance | None = None,
    errata_label: str = "errata.yaml",
) -> QuestionRow:
    """One question; SourceError fields are relative to the question's line, BuildError names the question."""
    qid = parse_question_id(q.question_id)
    n_turns = 1 if qid.kind == "peca" else 2
    if len(q.turns) != n_turns:
        raise SourceError(f"a {qid.kind} has {n_turns} turn(s), got {len(q.turns)}", field="turns")
    if len(q.values) != len(q.turns):
        raise SourceError(f"{len(q.values)} values for {len(q.turns)} turns", field="values")
    if qid.kind == "questao":
        for i, turn in enumerate(q.turns):
            if not turn.strip():
                raise SourceError("a questão's item prompt is empty", field=f"turns.{i}")
    if len(ref.turns) != len(q.turns):
        raise SourceError(
            f"reference has {len(ref.turns)} turn(s) but the question has {len(q.turns)}",
            field="turns",
        )

    values = [money(v) for v in q.values]
    if entry and entry.correction.values is not None:
        new = [money(v) for v in entry.correction.values]
        if new == values:
            raise BuildError(
                f"{q.question_id}: {errata_label} sets values {new}, which the source already has (stale entry?)"
            )
        if len(new) != len(values):
            raise BuildError(f"{q.question_id}: errata gives {len(new)} values for {len(values)} turns")
        report.corrections.append(f"{q.question_id}: values {values} -> {new}: {entry.summary()}")
        values = new

    wrong_valor = entry.correction.wrong_valor if entry else []
    try:
        clean = clean_question(
            q.statement, q.turns, values, kind=qid.kind, number=qid.number, wrong_valor=wrong_valor
        )
    except SourceError as e:
        hint = " (if the written value is the wrong one, say so in the errata: correction.wrong_valor)"
        raise SourceError(
            f"{q.question_id}: {e.message}{hint if 'Valor' in e.message else ''}", field=e.field
        ) from None
    stale = sorted(set(wrong_valor) - set(clean.settled))
    if stale:
        raise BuildError(
            f"{q.question_id}: errata says the (Valor: ...) of {stale} is wrong, but it agrees with the values "
            "or is not there (stale entry?)"
        )
    if clean.settled:
        report.corrections.append(
            f"{q.question_id}: kept values over the written (Valor: ...) of {', '.join(clean.settled)}: "
            f"{entry.summary()}"
        )
    report.normalisations += [f"{q.question_id} {n}" for n in clean.notes]

    labels = [""] if qid.kind == "peca" else ["A", "B"]
    items = [
        Item(label=lab, prompt=p, max_score=v)
        for lab, p, v in zip(labels, clean.prompts, values, strict=True)
    ]
    expected_total = PECA_MAX if qid.kind == "peca" else QUESTAO_MAX
    if money(sum(values)) != expected_total:
        raise BuildError(
            f"{q.question_id}: item values {values} total {sum(values):.2f}, a {qid.kind} is worth {expected_total:.2f}"
        )

    references: list[str] = []
    scored: list[tuple[str, str, TableRow]] = []
    parts: list[str] = []
    for i, (label, text) in enumerate(zip(labels, ref.turns, strict=True)):
        try:
            ref_i = parse_reference(text)
        except SourceError as e:
            raise SourceError(e.message, file=guidelines_label, field=f"choices.0.turns.{i}") from None
        references.append(ref_i.commented_answer)
        rows_i = _scored_rows(ref_i.rows, label or "P")
        scored += rows_i
        parts += [label] * len(rows_i)

    rubric = _rubric(scored, parts, entry, q.question_id, errata_label)
    if entry and (entry.correction.scores or entry.correction.annulled):
        what = []
        if entry.correction.scores:
            what.append("scores of " + ", ".join(f.item_id for f in entry.correction.scores))
        if entry.correction.annulled:
            what.append(
                "annulled " + ", ".join(entry.correction.annulled) + " (full marks to every candidate)"
            )
        report.corrections.append(f"{q.question_id}: {'; '.join(what)}: {entry.summary()}")
    # rows the errata rewrote are checked by their entry's evidence; every other row still warns
    corrected = (
        {f.item_id for f in entry.correction.scores} | set(entry.correction.annulled) if entry else set()
    )
    report.warnings += _part_warnings(q.question_id, [r for r in rubric if r.item_id not in corrected])

    for item in items:
        total = money(sum(r.max_score for r in rubric if r.part == item.label))
        if total != item.max_score:
            name = f"item {item.label}" if item.label else "the peça"
            raise BuildError(
                f"{q.question_id}, {name}: score table totals {total:.2f} but the item is worth {item.max_score:.2f}"
            )

    return QuestionRow(
        question_id=q.question_id,
        edition=qid.edition,
        area=qid.area,
        exam_id=qid.exam_id,
        kind=qid.kind,
        number=qid.number,
        system_prompt=q.system,
        statement=clean.statement,
        items=items,
        max_score=expected_total,
        reference=references,
        rubric=rubric,
        errata=[entry.summary()] if entry else [],
        upstream=UpstreamText(
            statement=q.statement,
            turns=q.turns,
            values=[money(v) for v in q.values],
            reference_turns=ref.turns,
        ),
        provenance=provenance,
    )


def _sort_key(row: QuestionRow) -> tuple:
    return (row.edition, row.area, row.number)


def build_rows(
    source: Path | str, errata_path: Path = DEFAULT_ERRATA
) -> tuple[list[QuestionRow], BuildReport]:
    """Read and check everything; raise SourceError (bad input) or BuildError (numbers don't add up).

    `source`: a folder of upstream's JSONL files, or `hf:OWNER/NAME[@REV]` / `hf:/abs/folder`
    (upstream's Hub layout, see origin.py); both go through the same checks.
    """
    errata = load_errata(errata_path)
    raw = open_source(source)
    questions = _read_questions(raw)
    refs = _read_references(raw, questions)
    report = BuildReport()

    for qid_str in errata:
        if qid_str not in questions:
            raise BuildError(
                f"errata entry for {qid_str}, which is not in {raw.questions_label} (stale entry?)"
            )

    rows: list[QuestionRow] = []
    problems: list[str] = []
    for question_id, (lineno, q) in questions.items():
        if question_id not in refs:
            raise SourceError(
                f"no reference answer for {question_id!r} in {raw.guidelines_label}",
                file=raw.questions_label,
                line=lineno,
                field="question_id",
            )
        ref_line, ref = refs[question_id]
        try:
            rows.append(
                build_question(
                    q,
                    ref,
                    errata.get(question_id),
                    report,
                    guidelines_label=raw.guidelines_label,
                    provenance=raw.provenance,
                    errata_label=errata_path.name,
                )
            )
        except SourceError as e:
            file = e.file or raw.questions_label
            raise e.at(file=file, line=ref_line if file == raw.guidelines_label else lineno) from None
        except BuildError as e:
            problems.append(str(e))
    if problems:
        raise BuildError("\n".join(problems))

    exams: dict[str, list[QuestionRow]] = defaultdict(list)
    for row in rows:
        exams[row.exam_id].append(row)
    for exam, members in sorted(exams.items()):
        numbers = sorted(r.number for r in members)
        if numbers != [0, 1, 2, 3, 4]:
            problems.append(f"exam {exam} is incomplete: has {numbers}, needs the peça (0) and questões 1-4")
        elif money(sum(r.max_score for r in members)) != EXAM_MAX:
            problems.append(
                f"exam {exam} totals {sum(r.max_score for r in members):.2f}, expected {EXAM_MAX:.2f}"
            )
    if problems:
        raise BuildError("\n".join(problems))

    rows.sort(key=_sort_key)
    report.sort()
    report.questions = len(rows)
    report.exams = len(exams)
    return rows, report
