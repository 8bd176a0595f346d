"""The report's content as plain data: tables for the template, JSON blobs for the page's script.

Server-side (the template): the leaderboard, per area and edition, each (judge, model)'s exams with
pass/fail, failures, disagreements and probes: small. Client-side (rendered on demand from JSON):
each judgment's page with the long texts, so a 12 x 210 report opens fast.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from oab_bench.conventions import PROBE_PREFIX
from oab_bench.dataset_builder.ids import AREAS
from oab_bench.dataset_builder.schema import PASS_MARK, QuestionRow
from oab_bench.judge.audit.collect import Inputs, trail_key
from oab_bench.judge.leaderboard.formats import points
from oab_bench.judge.leaderboard.judged import Record, facts_of_rows, unjudged
from oab_bench.judge.leaderboard.tables import Table, build_tables

TOP_DISAGREEMENTS = 100


def _q_order(qid: str) -> tuple[bool, str]:
    return ("peca" not in qid, qid)  # the peça first, then questões 1-4


def _f(x: float | None) -> str:
    return "n/a" if x is None else points(x)


def _order(r: Record) -> tuple:
    """Records in one order whatever the order of the inputs; per (judge, model, question) the one
    that counts first: an `ok` over failures, then by status and place, as the tables choose it."""
    return (r.judge, r.model, r.question_id, r.status != "ok", r.status, r.source, r.line)


def _latest(records: list[Record]) -> dict[tuple[str, str, str], int]:
    """(judge, model, question) -> index of the record that counts (`records` sorted by _order)."""
    out: dict[tuple[str, str, str], int] = {}
    for i, r in enumerate(records):
        out.setdefault((r.judge, r.model, r.question_id), i)
    return out


def judgment_blob(records: list[Record], inputs: Inputs) -> list[dict]:
    out = []
    for r in records:
        t = inputs.trails.get(trail_key(r))
        out.append(
            {
                "judge": r.judge,
                "model": r.model,
                "q": r.question_id,
                "status": r.status,
                "score": r.score,
                "max": r.max_score,
                "source": r.source,
                "error": t.error if t else None,
                "items": t.items if t else [],
                "texts": t.texts if t else [],
                "members": t.members if t else [],
            }
        )
    return out


def question_blob(rows: dict[str, QuestionRow], ids: set[str]) -> dict[str, dict]:
    out = {}
    for qid in sorted(ids & set(rows)):
        row = rows[qid]
        out[qid] = {
            "statement": row.statement,
            "items": [{"label": i.label, "prompt": i.prompt, "max": i.max_score} for i in row.items],
            "reference": row.reference,
            "rubric": [
                {
                    "id": r.item_id,
                    "part": r.part,
                    "section": r.section,
                    "label": r.label,
                    "description": r.description,
                    "max": r.max_score,
                    "allowed": r.allowed_scores,
                    "annulled": r.annulled,
                }
                for r in row.rubric
            ],
        }
    return out


def _exams(
    judge: str, model: str, expected: dict[str, Record], latest: dict, records: list[Record], totals: dict
) -> list[dict]:
    by_exam: dict[str, list[str]] = defaultdict(list)
    for qid, ref in expected.items():
        by_exam[ref.exam_id].append(qid)
    out = []
    for exam in sorted(by_exam, key=lambda e: (expected[by_exam[e][0]].area, e)):
        questions = []
        for qid in sorted(by_exam[exam], key=_q_order):
            i = latest.get((judge, model, qid))
            r = records[i] if i is not None else None
            questions.append(
                {
                    "qid": qid,
                    "short": qid.removeprefix(exam + "_").replace("peca_praticoprofissional", "peça"),
                    "status": r.status if r else "missing",
                    "score": r.score if r else None,
                    "max": expected[qid].max_score,
                    "jid": i,
                }
            )
        total = totals.get(exam)
        ref = expected[by_exam[exam][0]]
        out.append(
            {
                "exam": exam,
                "area": AREAS.get(ref.area, ref.area),
                "edition": ref.edition,
                "total": total,
                "verdict": "incomplete" if total is None else ("pass" if total >= PASS_MARK else "fail"),
                "questions": questions,
            }
        )
    return out


def _expected(records: list[Record], judge: str, expected_ids: set[str] | None) -> dict[str, Record]:
    out: dict[str, Record] = {}
    for r in records:
        if r.judge == judge and (expected_ids is None or r.question_id in expected_ids):
            out.setdefault(r.question_id, r)
    for qid in sorted((expected_ids or set()) - set(out)):
        out[qid] = unjudged(qid, judge)
    return out


def _table_view(t: Table, anchors: dict) -> dict:
    areas = sorted({a for r in t.rows for a in r.per_area})
    editions = sorted({e for r in t.rows for e in r.per_edition}, key=int)
    rows = []
    for r in t.rows:
        rows.append(
            {
                "anchor": anchors[(t.judge, r.model)],
                "model": r.model,
                "marks": ("*" if not r.complete else "") + ("†" if r.same_family_as_judge else ""),
                "panel": r.panel,
                "mean": _f(r.mean_exam_score),
                "ci": f"{_f(r.ci_low)}–{_f(r.ci_high)}" if r.ci_low is not None else "n/a",
                "passed": r.passed,
                "exams": r.exams,
                "rate": f"{r.passed / r.exams:.0%}" if r.exams else "n/a",
                "best": f"{AREAS.get(r.best_area, r.best_area)} ({points(r.per_area[r.best_area])})"
                if r.best_area
                else "n/a",
                "coverage": f"{r.coverage:.0%}",
                "per_area": [_f(r.per_area.get(a)) for a in areas],
                "per_edition": [_f(r.per_edition.get(e)) for e in editions],
            }
        )
    return {
        "judge": t.judge,
        "rows": rows,
        "areas": [AREAS.get(a, a) for a in areas],
        "editions": editions,
    }


def _disagreements(records: list[Record], latest: dict) -> list[dict]:
    by_pair: dict[tuple[str, str], list[int]] = defaultdict(list)
    for (_, model, qid), i in latest.items():
        if records[i].status == "ok":
            by_pair[(model, qid)].append(i)
    out = []
    for (model, qid), ids in by_pair.items():
        if len(ids) < 2:
            continue
        scores = [records[i].score for i in ids]
        spread = max(scores) - min(scores)
        out.append(
            {
                "model": model,
                "qid": qid,
                "spread": spread,
                "share": spread / records[ids[0]].max_score,
                "max": records[ids[0]].max_score,
                "judges": [
                    {"judge": records[i].judge, "score": records[i].score, "jid": i}
                    for i in sorted(ids, key=lambda i: records[i].judge)
                ],
            }
        )
    out.sort(key=lambda d: (-d["share"], d["model"], d["qid"]))
    return out[:TOP_DISAGREEMENTS]


def _probes(records: list[Record], latest: dict) -> list[dict]:
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for (judge, model, _), i in sorted(latest.items()):
        if model.startswith(PROBE_PREFIX):
            groups[(judge, model.removeprefix(PROBE_PREFIX))].append(i)
    out = []
    for (judge, kind), ids in sorted(groups.items()):
        ok = [records[i] for i in ids if records[i].status == "ok"]
        pct = 100 * sum(r.score for r in ok) / sum(r.max_score for r in ok) if ok else None
        out.append(
            {
                "judge": judge,
                "kind": kind,
                "n": len(ids),
                "mean_pct": "n/a" if pct is None else f"{pct:.0f}%",
                "statuses": ", ".join(
                    f"{k}: {v}" for k, v in sorted(Counter(records[i].status for i in ids).items())
                ),
                "questions": [
                    {
                        "qid": records[i].question_id,
                        "status": records[i].status,
                        "score": records[i].score,
                        "max": records[i].max_score,
                        "jid": i,
                    }
                    for i in sorted(ids, key=lambda i: _q_order(records[i].question_id))
                ],
            }
        )
    return out


def generation_cost(inputs: Inputs, model: str, judged: set[str]) -> str | None:
    """What generating a model's answers to the `judged` questions cost, when its answer files say
    (the newer release's usage)."""
    costs = [u.get("cost") for (m, q), u in inputs.generation.items() if m == model and q in judged]
    if not costs:
        return None
    known = [c for c in costs if c is not None]
    total = f"${sum(known):.4f}" if known else "unknown"
    return (
        f"{total} for {len(known)} of its answers with a recorded cost" if len(known) < len(costs) else total
    )


def _error(inputs: Inputs, r: Record) -> str | None:
    t = inputs.trails.get(trail_key(r))
    return t.error if t else None


def build_view(
    inputs: Inputs,
    rows: dict[str, QuestionRow],
    *,
    expected_ids: set[str] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[dict, dict, list[Table]]:
    """(what the template renders, the JSON blobs the page's script reads, the leaderboard tables)."""
    records = sorted(inputs.records, key=_order)
    latest = _latest(records)
    graded = [r for r in records if not r.model.startswith(PROBE_PREFIX)]
    notes = list(inputs.notes)
    tables: list[Table] = []
    if graded:
        tables, table_notes = build_tables(
            graded,
            expected_ids=expected_ids,
            truth=facts_of_rows(rows.values()),
            resamples=resamples,
            seed=seed,
        )
        notes = table_notes + notes
    anchors = {(t.judge, r.model): f"m{n}" for n, (t, r) in enumerate((t, r) for t in tables for r in t.rows)}
    models = []
    for t in tables:
        expected = _expected(graded, t.judge, expected_ids)
        for r in t.rows:
            exams = _exams(t.judge, r.model, expected, latest, records, r.exam_totals)
            models.append(
                {
                    "anchor": anchors[(t.judge, r.model)],
                    "model": r.model,
                    "judge": t.judge,
                    "mean": _f(r.mean_exam_score),
                    "passed": r.passed,
                    "exams_done": r.exams,
                    "coverage": f"{r.coverage:.0%}",
                    "counts": Counter(e["verdict"] for e in exams),
                    "exams": exams,
                    "panel": r.panel,
                    "generation": generation_cost(
                        inputs, r.model, {q for j, m, q in latest if (j, m) == (t.judge, r.model)}
                    ),
                }
            )
    failures = [
        {
            "jid": i,
            "judge": r.judge,
            "model": r.model,
            "qid": r.question_id,
            "status": r.status,
            "error": _error(inputs, r),
        }
        for i, r in sorted(
            ((i, records[i]) for i in latest.values()), key=lambda x: (x[1].model, x[1].question_id)
        )
        if r.status != "ok"
    ]
    view = {
        "tables": [_table_view(t, anchors) for t in tables],
        "incomplete": any(not r.complete for t in tables for r in t.rows),
        "panel_sources": sorted({r.panel for t in tables for r in t.rows if r.panel}),
        "same_family": any(r.same_family_as_judge for t in tables for r in t.rows),
        "models": models,
        "failures": failures,
        "disagreements": _disagreements(
            records, {k: i for k, i in latest.items() if not k[1].startswith(PROBE_PREFIX)}
        ),
        "probes": _probes(records, latest),
        "notes": notes,
        "anchors": {f"{j}\t{m}": a for (j, m), a in anchors.items()},
        "pass_mark": PASS_MARK,
        "n_judgments": len(latest),
        "n_answers": len(inputs.answers),
    }
    ids = {r.question_id for r in records}
    pairs = {(r.model, r.question_id) for r in records}
    blobs = {
        "judgments": judgment_blob(records, inputs),
        "questions": question_blob(rows, ids),
        "answers": {f"{m}\t{q}": text for (m, q), text in inputs.answers.items() if (m, q) in pairs},
        "generation": {f"{m}\t{q}": u for (m, q), u in inputs.generation.items() if (m, q) in pairs},
    }
    return view, blobs, tables
