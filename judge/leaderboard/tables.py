"""Per judge, per model: exam scores, intervals, coverage, shared ranks; markdown, CSV, JSON, compare."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal
from statistics import fmean

from pydantic import BaseModel

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.ids import AREAS
from oab_bench.dataset_builder.schema import EXAM_MAX, PASS_MARK, money
from oab_bench.judge.intervals import DEFAULT_SEED, LEADERBOARD_RESAMPLES, bootstrap_ci, repeats_ci
from oab_bench.judge.leaderboard.inputs import Facts, Record, facts_of_id

FAMILIES = {
    "openai": r"\b(gpt|o1|o3|o4|chatgpt|davinci)\b|^o\d",
    "anthropic": r"claude",
    "google": r"gemini|gemma|palm",
    "meta": r"llama",
    "qwen": r"qwen|qwq",
    "deepseek": r"deepseek",
    "mistral": r"mistral|mixtral|magistral|ministral",
    "maritaca": r"sabi[aá]",
    "xai": r"grok",
}
PANEL_MARK = "(panel)"
MD_HEADER = "| Model | Average Score | Passing Rate | Best Area | 95% CI | Coverage |"


def family(model: str) -> str | None:
    """The vendor family of a model name, to flag a judge grading its own family."""
    name = model.lower().split("/")[-1].split(" [")[0]
    return next((fam for fam, pattern in FAMILIES.items() if re.search(pattern, name)), None)


def cents(x: float | None, sign: bool = False) -> str:
    """A score to the cent, halves up (9.075 -> 9.08, where the float 9.07499... rounds down)."""
    if x is None:
        return "n/a"
    value = Decimal(f"{x:.9f}").quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) + 0  # + 0: no "-0.00"
    return f"{value:+}" if sign else f"{value}"


def area_name(slug: str) -> str:
    return AREAS.get(slug, slug)


def ordered_areas(slugs) -> list[str]:
    """Areas in upstream's order (that of `AREAS`) everywhere, unknown ones last."""
    known = list(AREAS)
    return sorted(set(slugs), key=lambda a: (known.index(a) if a in known else len(known), a))


class Row(BaseModel):
    model: str
    judge: str
    exams: int  # complete exams: every question judged ok
    passed: int
    mean_exam_score: float | None
    ci_low: float | None
    ci_high: float | None
    coverage: float
    per_area: dict[str, float]
    per_edition: dict[str, float]
    best_area: str | None  # the area above every other one; None for one area or a tie at the top
    complete: bool  # coverage 1.0: every expected question judged ok
    same_family_as_judge: bool
    exam_totals: dict[str, float]  # exam id -> total, complete exams only
    panel: str | None = None  # published answers judged beside a candidate (`--panel`): their source
    rank: int = 0  # models with the same exam score (to the cent) share the best rank
    tied: bool = False


class Table(BaseModel):
    judge: str
    rows: list[Row]
    expected: dict[str, Facts] = {}  # the questions the table expects
    chosen: dict[str, dict[str, Record]] = {}  # model -> question -> the record that counts


def _best(per_area: dict[str, float]) -> str | None:
    top = sorted(per_area.items(), key=lambda kv: -kv[1])
    return top[0][0] if len(top) > 1 and top[0][1] > top[1][1] + 1e-9 else None


def exams_of(expected: dict[str, Facts]) -> tuple[dict[str, list[str]], set[str]]:
    """Exam -> its questions, and the exams that can count (their questions worth 10.00)."""
    by_exam: dict[str, list[str]] = defaultdict(list)
    for qid, f in expected.items():
        by_exam[f.exam_id].append(qid)
    worth = {e: money(sum(expected[q].max_score for q in qids)) for e, qids in by_exam.items()}
    return by_exam, {e for e, w in worth.items() if abs(w - EXAM_MAX) < 1e-6}


def model_row(model: str, judge: str, mine: dict[str, Record], expected: dict, **bootstrap) -> Row:
    """An exam counts when every question is `ok` and it is worth 10.00; coverage counts only those."""
    by_exam, countable = exams_of(expected)
    ok = {q for q, r in mine.items() if q in expected and r.status == "ok" and r.score is not None}
    complete = [e for e, qs in by_exam.items() if e in countable and ok >= set(qs)]
    totals = {e: money(sum(mine[q].score for q in by_exam[e])) for e in complete}
    by_repeat = repeat_totals(mine, by_exam, countable)  # a run with --repeats K: the mean of its repeats
    if by_repeat:
        totals = {e: money(fmean(v)) for e, v in by_repeat.items()}
    ci = repeats_ci(by_repeat, **bootstrap) if by_repeat else bootstrap_ci(list(totals.values()), **bootstrap)
    per = {"area": defaultdict(list), "edition": defaultdict(list)}
    for exam, total in totals.items():
        f = expected[by_exam[exam][0]]
        per["area"][f.area].append(total)
        per["edition"][str(f.edition)].append(total)
    per_area = {a: fmean(v) for a, v in sorted(per["area"].items())}
    covered = sum(expected[q].exam_id in countable for q in ok)
    return Row(
        model=model,
        judge=judge,
        exams=len(totals),
        passed=sum(t >= PASS_MARK for t in totals.values()),
        mean_exam_score=fmean(totals.values()) if totals else None,
        ci_low=ci[0],
        ci_high=ci[1],
        coverage=covered / len(expected) if expected else 0.0,
        per_area=per_area,
        per_edition={e: fmean(v) for e, v in sorted(per["edition"].items(), key=lambda kv: int(kv[0]))},
        best_area=_best(per_area),
        complete=covered == len(expected),
        same_family_as_judge=family(model) is not None and family(model) == family(judge),
        exam_totals=totals,
        panel=min((r.panel for r in mine.values() if r.panel), default=None),
    )


def repeat_totals(mine: dict[str, Record], by_exam: dict[str, list[str]], countable: set[str]):
    """Exam -> its total in each repeat (exams complete in every repeat); None when not a repeated run."""
    if not any(r.repeat_scores for r in mine.values()):
        return None
    out = {}
    for exam, qids in by_exam.items():
        rows = [mine.get(q) for q in qids]
        if exam not in countable or any(not r or not r.repeat_scores or r.status == "mismatch" for r in rows):
            continue
        totals = [[r.repeat_scores[i] for r in rows] for i in range(min(len(r.repeat_scores) for r in rows))]
        if totals and all(s is not None for t in totals for s in t):
            out[exam] = [money(sum(t)) for t in totals]
    return out


def one_each(records: list[Record]) -> tuple[dict[str, dict[str, dict[str, Record]]], list[str]]:
    """One record per (judge, model, question): copies are one, `ok` beats failures, two `ok`s an error."""
    groups: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for r in records:
        groups[(r.judge, r.model, r.question_id)].append(r)
    out: dict = defaultdict(lambda: defaultdict(dict))
    copies = retried = 0
    for (judge, model, qid), rs in sorted(groups.items()):
        rs = sorted(rs, key=lambda r: (r.status != "ok", r.status, r.source, r.line))
        scores = sorted({(r.source, r.line, round(r.score, 6)) for r in rs if r.status == "ok"})
        if len({s for _, _, s in scores}) > 1:
            (fa, la, a), (fb, lb, b) = scores[0], next(x for x in scores if x[2] != scores[0][2])
            why = f"{model} on {qid} (judge {judge}) scores {a} here and {b} in {fb}:{lb}: pass one of them"
            raise SourceError(why, file=fa, line=la or None)
        if len({(r.status, r.score) for r in rs}) > 1:
            retried += 1
        else:
            copies += len(rs) - 1
        out[judge][model][qid] = rs[0]
    notes = [
        f"{copies} records repeat a (judge, model, question) with the same result: each counted once",
        f"{retried} (judge, model, question) have different outcomes in different inputs: "
        "an ok judgment, if any, is used over failures",
    ]
    return out, [note for note, n in zip(notes, (copies, retried), strict=True) if n]


def _ranked(rows: list[Row]) -> list[Row]:
    """Sorted by mean exam score, then exams passed, then name; equal scores share a rank."""
    key = [cents(r.mean_exam_score) for r in rows]
    scores = sorted((float(k) for k in key if k != "n/a"), reverse=True)
    out = []
    for r, k in zip(rows, key, strict=True):
        rank = 1 + (sum(s > float(k) for s in scores) if k != "n/a" else len(scores))
        out.append(r.model_copy(update={"rank": rank, "tied": key.count(k) > 1}))
    return sorted(out, key=lambda r: (r.rank, -r.passed, r.model))


def build_tables(
    records: list[Record],
    *,
    expected_ids: set[str] | None = None,
    truth: dict[str, Facts] | None = None,
    resamples: int = LEADERBOARD_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[list[Table], list[str]]:
    """One ranked table per judge, and notes; one disagreeing with `truth` (or its id) is a `mismatch`."""
    truth, checked = truth or {}, []
    for r in records:
        f = truth.get(r.question_id) or facts_of_id(r.question_id)
        update = {"area": f.area, "edition": f.edition}
        if r.exam_id != f.exam_id or abs(r.max_score - f.max_score) > 1e-6:
            update |= {"status": "mismatch", "score": None}
        checked.append(r.model_copy(update=update))
    by_judge, notes = one_each(checked)
    if len(by_judge) > 1:
        notes.append(
            f"the inputs come from {len(by_judge)} judges: one table each, never one ranking across judges"
        )
    tables = []
    for judge, models in sorted(by_judge.items()):
        seen = {qid for recs in models.values() for qid in recs}
        ids = seen if expected_ids is None else expected_ids
        expected = {q: truth.get(q) or facts_of_id(q) for q in sorted(ids)}
        if ids - seen:
            notes.append(f"{judge}: {len(ids - seen)} expected questions have no judgment from any model")
        by_exam, countable = exams_of(expected)
        notes += [
            f"{judge}: exam {exam}: its judged questions are worth {sum(expected[q].max_score for q in qids):.2f}, "
            f"not {EXAM_MAX:.2f}: it is left out of every model's exam figures and coverage"
            for exam, qids in sorted(by_exam.items())
            if exam not in countable
        ]
        bootstrap = {"resamples": resamples, "seed": seed}
        rows = [model_row(m, judge, recs, expected, **bootstrap) for m, recs in sorted(models.items())]
        for row in rows:
            bad = sorted(q for q, r in models[row.model].items() if q in expected and r.status == "mismatch")
            said = [
                f"{judge}: {row.model}: {len(bad)} judgments disagree with the dataset (or, without one, the "
                f"question's id) on its value or exam (e.g. {min(bad, default='')}): their exams are left "
                "out (see coverage)",
                f"{judge}: {row.model} has coverage {row.coverage:.0%}; its exam figures use its "
                f"{row.exams} complete exams only",
                f"{judge}: {row.model} is graded by a judge of its own family ({family(row.model)})",
            ]
            flags = (bad, not row.complete, row.same_family_as_judge)
            notes += [note for note, yes in zip(said, flags, strict=True) if yes]
        tables.append(Table(judge=judge, rows=_ranked(rows), expected=expected, chosen=dict(models)))
    return tables, notes


def compare(tables: list[Table], model_a: str, model_b: str, **bootstrap) -> list[str]:
    """Per judge that graded both, a line: the paired difference over the exams both completed."""
    out = []
    for t in tables:
        rows = {r.model: r.exam_totals for r in t.rows}
        if model_a not in rows or model_b not in rows:
            continue
        a, b = rows[model_a], rows[model_b]
        both = sorted(set(a) & set(b))
        diffs = [a[e] - b[e] for e in both]
        low, high = bootstrap_ci(diffs, **bootstrap)  # paired: exams resampled, their pairs kept
        ci = f"[{cents(low)}, {cents(high)}]" if low is not None else "n/a"
        out.append(
            f"judge {t.judge}: {model_a} - {model_b} = {cents(fmean(diffs) if diffs else None, sign=True)} "
            f"exam points over {len(both)} exams both completed (95% paired bootstrap CI {ci}); {model_a} "
            f"passed {sum(a[e] >= PASS_MARK > b[e] for e in both)} that {model_b} failed, {model_b} passed "
            f"{sum(b[e] >= PASS_MARK > a[e] for e in both)} that {model_a} failed\n"
        )
    return out


JSON_KEYS = [k for k in Row.model_fields if k not in ("exam_totals", "panel")]


def shown(r: Row) -> dict[str, str]:
    """A row's figures as the markdown table and the report show them, in upstream's column order."""
    return {
        "mean": cents(r.mean_exam_score),
        "rate": f"{r.passed / r.exams:.0%} ({r.passed}/{r.exams})" if r.exams else "n/a (0 exams)",
        "best": f"{area_name(r.best_area)} ({cents(r.per_area[r.best_area])})" if r.best_area else "n/a",
        "ci": f"{cents(r.ci_low)}–{cents(r.ci_high)}" if r.ci_low is not None else "n/a",
        "coverage": f"{r.coverage:.0%}",
    }


def _cell(text: str) -> str:
    return " ".join(text.split("\n")).replace("\r", " ").replace("|", "\\|")


def marks(r: Row) -> str:
    return " *" * (not r.complete) + " †" * r.same_family_as_judge + f" {PANEL_MARK}" * bool(r.panel)


def render_markdown(tables: list[Table], notes: list[str], *, by: str | None = None) -> str:
    out = []
    for t in tables:
        out += [f"### Judge: {_cell(t.judge)}", "", MD_HEADER, "| --- |" + " --- |" * 5]
        out += [f"| {_cell(r.model)}{marks(r)} | " + " | ".join(shown(r).values()) + " |" for r in t.rows]
        if by:
            seen = {k for r in t.rows for k in getattr(r, f"per_{by}")}
            keys = ordered_areas(seen) if by == "area" else sorted(seen, key=lambda k: (len(k), k))
            names = [area_name(k) if by == "area" else f"Exame {k}" for k in keys]
            out += ["", "| Model | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(keys)]
            for r in t.rows:
                name = _cell(r.model) + f" {PANEL_MARK}" * bool(r.panel)
                values = " | ".join(cents(getattr(r, f"per_{by}").get(k)) for k in keys)
                out.append(f"| {name} | {values} |")
        out.append("")
    rows = [r for t in tables for r in t.rows]
    out.append("Average Score: mean exam total (0-10) over complete exams; Passing Rate: exams >= 6.00.")
    if any(not r.complete for r in rows):
        out.append("* incomplete coverage: exam figures use complete exams only.")
    if any(r.same_family_as_judge for r in rows):
        out.append("† graded by a judge of the same model family.")
    out += [
        f"{PANEL_MARK} published answers ({source}), judged here by the same judge with the same settings."
        for source in sorted({r.panel for r in rows if r.panel})
    ]
    return "\n".join(out + [f"Note: {n}" for n in notes]) + "\n"


def _flat(r: Row) -> dict:
    return r.model_dump(include=set(JSON_KEYS)) | {"panel": r.panel is not None, "panel_source": r.panel}


def render_json(tables: list[Table], notes: list[str]) -> str:
    rows = [_flat(r) for t in tables for r in t.rows]
    return json.dumps({"rows": rows, "notes": notes}, indent=2, ensure_ascii=False) + "\n"


def render_csv(tables: list[Table]) -> str:
    import pandas as pd

    rows = [r for t in tables for r in t.rows]
    areas = sorted({a for r in rows for a in r.per_area})
    editions = sorted({e for r in rows for e in r.per_edition}, key=int)
    flat = [
        {k: v for k, v in _flat(r).items() if k not in ("per_area", "per_edition")}
        | {"panel_source": r.panel or ""}
        | {f"area_{a}": r.per_area.get(a) for a in areas}
        | {f"edition_{e}": r.per_edition.get(e) for e in editions}
        for r in rows
    ]
    return pd.DataFrame(flat).to_csv(index=False, lineterminator="\r\n")
