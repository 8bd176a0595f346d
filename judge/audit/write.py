"""`oab-bench report` and a run's report.html: one file, each judgment a JSON blob rendered on demand."""

from __future__ import annotations

import base64
import functools
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import jinja2

from oab_bench.conventions import HTML_REPORT_FILE, PROBE_PREFIX
from oab_bench.dataset_builder.schema import PASS_MARK, QuestionRow
from oab_bench.judge.audit.collect import Inputs, read_inputs
from oab_bench.judge.dataset import load_rows
from oab_bench.judge.leaderboard import tables as lb
from oab_bench.judge.leaderboard.inputs import Record, Trail, facts_of_rows
from oab_bench.judge.output import write_atomic
from oab_bench.judge.records import total_cost
from oab_bench.judge.redact import redact

TOP_DISAGREEMENTS = 100
SHOWN = {"judge", "model", "question_id", "status", "score", "max_score", "source"}


def _q_order(r: Record) -> tuple[bool, str]:
    return ("peca" not in r.question_id, r.question_id)  # the peça first, then questões 1-4


def _exams(t: lb.Table, model: str, totals: dict) -> list[dict]:
    """A model's exams, each with its questions as (short name, the record that counts or None, max)."""
    by_exam, out = lb.exams_of(t.expected)[0], []
    for exam, qids in sorted(by_exam.items(), key=lambda e: (t.expected[e[1][0]].area, e[0])):
        short = [(q.removeprefix(exam + "_").replace("peca_praticoprofissional", "peça"), q) for q in qids]
        qs = [(s, t.chosen[model].get(q), t.expected[q].max_score) for s, q in sorted(short)]
        total, f = totals.get(exam), t.expected[qids[0]]
        v = "incomplete" if total is None else "pass" if total >= PASS_MARK else "fail"
        view = dict(exam=exam, area=lb.area_name(f.area), edition=f.edition, total=total)
        out.append(view | dict(verdict=v, questions=qs))
    return out


def _table_view(t: lb.Table, anchors: dict) -> dict:
    areas = sorted({a for r in t.rows for a in r.per_area})
    editions = sorted({e for r in t.rows for e in r.per_edition}, key=int)
    rows = [
        dict(
            row=r,
            anchor=anchors[(t.judge, r.model)],
            rank=f"={r.rank}" if r.tied else r.rank,
            marks="*" * (not r.complete) + "†" * r.same_family_as_judge,
            **lb.shown(r),
            per_area=[lb.cents(r.per_area.get(a)) for a in areas],
            per_edition=[lb.cents(r.per_edition.get(e)) for e in editions],
        )
        for r in t.rows
    ]
    return {"judge": t.judge, "rows": rows, "areas": [lb.area_name(a) for a in areas], "editions": editions}


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


def cost_text(costs: list[float | None], what: str) -> str | None:
    """A total of recorded costs; where some are not recorded, how many it covers."""
    known = [c for c in costs if c is not None]
    total = f"${sum(known):.4f}" if known else "unknown"
    part = f" for {len(known)} of its {what} with a recorded cost" if len(known) < len(costs) else ""
    return total + part if costs else None


def judging_cost(inputs: Inputs, t: lb.Table, model: str) -> str | None:
    """What judging a model's answers cost in all: its run folder's summary, else (no run folder, or
    several, whose totals share the judgments a later run took from the cache) its judgments' costs."""
    if len(folders := inputs.paid.get((t.judge, model), {})) == 1:
        total = total_cost(list(folders.values()))
        return "unknown (no price)" if total is None else f"${total:.4f}"
    costs = [r.cost_usd for r in t.chosen[model].values()]
    return cost_text(costs, "judgments") if any(c is not None for c in costs) else None


@functools.cache  # its templates compiled once a process
def environment() -> jinja2.Environment:
    """The templates' environment: inputs' text escaped, |tojson safe inside a <script> element."""
    options = dict(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env = jinja2.Environment(loader=jinja2.PackageLoader("oab_bench.judge.audit", "templates"), **options)
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "separators": (",", ":")}
    env.filters["cents"] = lb.cents
    return env


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


def report_html(
    inputs: list[Path],
    answers: list[Path],
    rows: dict[str, QuestionRow],
    *,
    expected_ids: set[str] | None = None,
    title: str = "OAB-Bench: audit report",
    sweeps: Sequence[dict] = (),
    **bootstrap,
) -> str:
    """The report from the inputs and the question rows by id; no clock: the same inputs, the same bytes."""
    from oab_bench.judge.leaderboard.plot import plot_png_bytes

    data = read_inputs(list(inputs), list(answers), rows)
    graded = [r for r in data.records if not r.model.startswith(PROBE_PREFIX)]
    truth = facts_of_rows(rows.values())
    tables, notes = lb.build_tables(graded, expected_ids=expected_ids, truth=truth, **bootstrap)  # none: none
    probes, _ = lb.one_each([r for r in data.records if r.model.startswith(PROBE_PREFIX)])
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
            judged = set(t.chosen[r.model])
            made = [u.get("cost") for (m, q), u in data.generation.items() if m == r.model and q in judged]
            view = {"row": r, "anchor": anchors[(t.judge, r.model)], "exams": exams}
            view |= {"generation": cost_text(made, "answers"), "judging": judging_cost(data, t, r.model)}
            models.append(view | {"counts": Counter(e["verdict"] for e in exams)})
    all_rows = [r for t in tables for r in t.rows]
    pairs = {(r.model, r.question_id) for r in counted}
    texts = {"statement", "items", "reference", "rubric"}
    blobs = {
        "judgments": [r.model_dump(include=SHOWN) | (r.trail or Trail()).model_dump() for r in counted],
        "questions": {
            q: rows[q].model_dump(include=texts) for q in sorted({r.question_id for r in counted} & set(rows))
        },
        "answers": {f"{m}\t{q}": text for (m, q), text in data.answers.items() if (m, q) in pairs},
        "generation": {f"{m}\t{q}": u for (m, q), u in data.generation.items() if (m, q) in pairs},
    }
    drawn = any(r.mean_exam_score is not None for r in all_rows)
    template = environment().get_template("report.html.j2")
    html = template.render(
        title=title,
        inputs=sorted({str(p) for p in [*inputs, *answers]}),
        plot=data_url(plot_png_bytes(tables)) if drawn else None,
        blobs=blobs,
        sweeps=list(sweeps),
        tables=[_table_view(t, anchors) for t in tables],
        incomplete=any(not r.complete for r in all_rows),
        panel_sources=sorted({r.panel for r in all_rows if r.panel}),
        same_family=any(r.same_family_as_judge for r in all_rows),
        models=models,
        failures=[r for r in sorted(counted, key=lambda r: (r.model, r.question_id)) if r.status != "ok"],
        disagreements=_disagreements(counted),
        probes=_probes(probes),
        notes=notes + data.notes,
        anchors={f"{j}\t{m}": a for (j, m), a in anchors.items()},
        pass_mark=PASS_MARK,
        n_judgments=len(counted),
        n_answers=len(data.answers),
        jid=lambda r: ids[id(r)],  # a record's place in the judgments blob: its page is #j<jid>
    )
    return redact(html)  # a key an error or an answer quoted never reaches the file


def write_report(
    inputs: list[Path], output: Path, *, answers=(), dataset=None, expect_dataset: bool = True, **options
) -> Path:
    """One self-contained HTML file; with `expect_dataset`, coverage counts the unjudged questions."""
    rows = {r.question_id: r for r in load_rows(dataset)} if dataset else {}
    expected = set(rows) if dataset and expect_dataset else None
    html = report_html(inputs, answers, rows, expected_ids=expected, **options)
    return write_atomic(Path(output), html)


def write_run_report(out_dir: Path, dataset: str | None = None) -> Path | None:
    """`report.html` beside a run's results; a failure is a printed note, never a failed run."""
    options = dict(dataset=dataset, title=f"OAB-Bench run: {Path(out_dir).name}", expect_dataset=False)
    try:
        path = write_report([out_dir], Path(out_dir) / HTML_REPORT_FILE, **options)
    except Exception as e:  # a report is a by-product of the run
        print(f"oab-bench run: note: no report.html ({type(e).__name__}: {redact(str(e))})", file=sys.stderr)
        return None
    print(f"report: {path}", file=sys.stderr)
    return path
