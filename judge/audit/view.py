"""The report's content as plain data: what the template shows (the leaderboard, per area and
edition, each (judge, model)'s exams, failures, disagreements, probes) and JSON blobs the page's
script renders on demand (each judgment with its long texts), so a large report opens fast.
Each (judge, model, question) shows the judgment the leaderboard counts."""

from __future__ import annotations

from collections import Counter, defaultdict

from oab_bench.conventions import PROBE_PREFIX
from oab_bench.dataset_builder.schema import PASS_MARK, QuestionRow
from oab_bench.judge.audit.collect import Inputs
from oab_bench.judge.leaderboard.inputs import Record, Trail, facts_of_rows
from oab_bench.judge.leaderboard.tables import Table, area_name, build_tables, cents, one_each, shown

TOP_DISAGREEMENTS = 100
SHOWN = {"judge", "model", "question_id", "status", "score", "max_score", "source"}


def _q_order(r: Record) -> tuple[bool, str]:
    return ("peca" not in r.question_id, r.question_id)  # the peça first, then questões 1-4


def _exams(t: Table, model: str, totals: dict) -> list[dict]:
    """A model's exams, each with its questions as (short name, the record that counts or None, max)."""
    by_exam: dict[str, list[str]] = defaultdict(list)
    for qid, f in t.expected.items():
        by_exam[f.exam_id].append(qid)
    out = []
    for exam, qids in sorted(by_exam.items(), key=lambda e: (t.expected[e[1][0]].area, e[0])):
        short = [(q.removeprefix(exam + "_").replace("peca_praticoprofissional", "peça"), q) for q in qids]
        qs = [(s, t.chosen[model].get(q), t.expected[q].max_score) for s, q in sorted(short)]
        total, f = totals.get(exam), t.expected[qids[0]]
        v = "incomplete" if total is None else "pass" if total >= PASS_MARK else "fail"
        out.append(
            dict(exam=exam, area=area_name(f.area), edition=f.edition, total=total, verdict=v, questions=qs)
        )
    return out


def _table_view(t: Table, anchors: dict) -> dict:
    areas = sorted({a for r in t.rows for a in r.per_area})
    editions = sorted({e for r in t.rows for e in r.per_edition}, key=int)
    rows = [
        dict(
            row=r,
            anchor=anchors[(t.judge, r.model)],
            rank=f"={r.rank}" if r.tied else r.rank,
            marks="*" * (not r.complete) + "†" * r.same_family_as_judge,
            **shown(r),
            per_area=[cents(r.per_area.get(a)) for a in areas],
            per_edition=[cents(r.per_edition.get(e)) for e in editions],
        )
        for r in t.rows
    ]
    return {"judge": t.judge, "rows": rows, "areas": [area_name(a) for a in areas], "editions": editions}


def _disagreements(counted: list[Record]) -> list[dict]:
    by_pair: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for r in counted:
        if r.status == "ok" and not r.model.startswith(PROBE_PREFIX):
            by_pair[(r.model, r.question_id)].append(r)
    out = [
        dict(model=m, qid=q, spread=max(r.score for r in rs) - min(r.score for r in rs), records=rs)
        for (m, q), rs in by_pair.items()
        if len(rs) > 1
    ]
    out.sort(key=lambda d: (-d["spread"] / d["records"][0].max_score, d["model"], d["qid"]))
    return out[:TOP_DISAGREEMENTS]


def _probes(probes: dict) -> list[dict]:
    out = []
    for judge, models in sorted(probes.items()):
        for model, recs in sorted(models.items()):
            rs = sorted(recs.values(), key=_q_order)
            ok = [r for r in rs if r.status == "ok"]
            pct = f"{100 * sum(r.score for r in ok) / sum(r.max_score for r in ok):.0f}%" if ok else "n/a"
            statuses = ", ".join(f"{k}: {v}" for k, v in sorted(Counter(r.status for r in rs).items()))
            kind = model.removeprefix(PROBE_PREFIX)
            out.append(dict(judge=judge, kind=kind, mean_pct=pct, statuses=statuses, records=rs))
    return out


def generation_cost(inputs: Inputs, model: str, judged: set[str]) -> str | None:
    """What generating a model's answers to the `judged` questions cost, where its answer files say."""
    costs = [u.get("cost") for (m, q), u in inputs.generation.items() if m == model and q in judged]
    known = [c for c in costs if c is not None]
    if not costs:
        return None
    total = f"${sum(known):.4f}" if known else "unknown"
    return (
        f"{total} for {len(known)} of its answers with a recorded cost" if len(known) < len(costs) else total
    )


def build_view(
    inputs: Inputs, rows: dict[str, QuestionRow], *, expected_ids=None, resamples: int = 10_000, seed: int = 0
) -> tuple[dict, dict, list[Table]]:
    """(what the template renders, the JSON blobs the page's script reads, the leaderboard tables)."""
    graded = [r for r in inputs.records if not r.model.startswith(PROBE_PREFIX)]
    tables, notes = [], []
    if graded:
        truth = facts_of_rows(rows.values())
        tables, notes = build_tables(
            graded, expected_ids=expected_ids, truth=truth, resamples=resamples, seed=seed
        )
    probes, _ = one_each([r for r in inputs.records if r.model.startswith(PROBE_PREFIX)])
    chosen = [*(t.chosen for t in tables), *probes.values()]
    counted = [
        r for c in chosen for _, recs in sorted(c.items()) for r in sorted(recs.values(), key=_q_order)
    ]
    ids = {id(r): i for i, r in enumerate(counted)}
    anchors = {(t.judge, r.model): f"m{n}" for n, (t, r) in enumerate((t, r) for t in tables for r in t.rows)}
    models = []
    for t in tables:
        for r in t.rows:
            exams = _exams(t, r.model, r.exam_totals)
            cost = generation_cost(inputs, r.model, set(t.chosen[r.model]))
            counts = Counter(e["verdict"] for e in exams)
            models.append(
                dict(row=r, anchor=anchors[(t.judge, r.model)], exams=exams, counts=counts, generation=cost)
            )
    all_rows = [r for t in tables for r in t.rows]
    view = {
        "tables": [_table_view(t, anchors) for t in tables],
        "incomplete": any(not r.complete for r in all_rows),
        "panel_sources": sorted({r.panel for r in all_rows if r.panel}),
        "same_family": any(r.same_family_as_judge for r in all_rows),
        "models": models,
        "failures": [r for r in sorted(counted, key=lambda r: (r.model, r.question_id)) if r.status != "ok"],
        "disagreements": _disagreements(counted),
        "probes": _probes(probes),
        "notes": notes + inputs.notes,
        "anchors": {f"{j}\t{m}": a for (j, m), a in anchors.items()},
        "pass_mark": PASS_MARK,
        "n_judgments": len(counted),
        "n_answers": len(inputs.answers),
        "jid": lambda r: ids[id(r)],  # a record's place in the judgments blob: its page is #j<jid>
    }
    pairs = {(r.model, r.question_id) for r in counted}
    used = {r.question_id for r in counted} & set(rows)
    blobs = {
        "judgments": [r.model_dump(include=SHOWN) | (r.trail or Trail()).model_dump() for r in counted],
        "questions": {
            q: rows[q].model_dump(include={"statement", "items", "reference", "rubric"}) for q in sorted(used)
        },
        "answers": {f"{m}\t{q}": text for (m, q), text in inputs.answers.items() if (m, q) in pairs},
        "generation": {f"{m}\t{q}": u for (m, q), u in inputs.generation.items() if (m, q) in pairs},
    }
    return view, blobs, tables
