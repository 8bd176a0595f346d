"""`oab-bench judge-sweep`: each judge probed, compared with the reference and priced; then decide.py."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import NamedTuple

from oab_bench import conventions as names
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.folders import Writer, check_folder, claim
from oab_bench.judge.panel.published import UPSTREAM
from oab_bench.judge.panel.upstream import PanelUnavailable
from oab_bench.judge.redact import redact

SWEEP = Writer("oab-bench judge-sweep", names.SWEEP_MARKER)
CALL_FAILURES = {"api_error", "budget"}  # the calls did not happen: nothing about the judge's grading


class Measured(NamedTuple):
    spec: str  # as written, redacted
    judge: object
    probes: list  # its probe judgments
    graded: list  # (the judge that called, its judgment) per grading of probes and answers
    calls: int  # made by this run, retries counted (cached gradings made none)
    seconds: float
    failed: str | None


def say(line: str) -> None:
    print(f"oab-bench judge-sweep: {line}", file=sys.stderr)


def parse_judges(args: argparse.Namespace) -> list[tuple[str, object]]:
    """(spec, settings) of the reference, then each candidate; one judge given twice is refused."""
    from oab_bench.judge.settings import member_settings
    from oab_bench.judge.sweep.spec import parse_spec

    parsed, same = [], []
    for spec in [args.reference_judge, *args.candidate]:
        parsed.append((spec, parse_spec(spec, os.environ)))
        try:
            members = sorted(member_settings(parsed[-1][1]), key=lambda m: m.judge_model)
        except ValueError as e:
            raise ValueError(f"judge {spec!r}: {e}") from None
        if members in same:
            one = parsed[same.index(members)][0]
            raise ValueError(f"judges {one!r} and {spec!r} are one judge: every setting is the same")
        same.append(members)
    return parsed


def load_material(args: argparse.Namespace):
    """(every row, the chosen rows, pairs to agree on, missing answers, panel sources), all checked first."""
    from oab_bench.judge.answers import read_answer_files
    from oab_bench.judge.panel.published import resolve_panel

    answers = read_answer_files(args.answers or [])
    specs = list(args.panel or ([] if args.answers else [UPSTREAM]))
    try:
        panel = resolve_panel(specs) if specs else None  # first: a missing panel fails fast
    except PanelUnavailable as e:
        if args.panel:
            raise
        raise PanelUnavailable(
            f"neither --answers nor --panel was given, so the answers to agree on are the default "
            f"--panel upstream, and {e}; or pass --answers FILE... (two models or more)"
        ) from None
    from oab_bench.judge.dataset import dataset_argument, load_rows, select_rows
    from oab_bench.judge.grading.judge_answers import pairs_to_grade  # (imports litellm: seconds)
    from oab_bench.judge.panel.published import panel_pairs, print_notes

    dataset, origin = dataset_argument(args)
    pool = load_rows(dataset, origin=origin)
    rows = select_rows(pool, args.questions)
    if not rows:
        raise ValueError(f"no questions in {dataset} ({origin}) match {args.questions}")
    pairs, missing = pairs_to_grade(rows, answers, args.questions)
    n = len(args.answers or [])
    sources, notes = [f"--answers ({n} file{'s' * (n > 1)})"] if n else [], []
    if panel is not None:
        got, notes = panel_pairs(panel, rows, {a.model for a in answers}, "the --answers model")
        pairs, answers = pairs + got, answers + panel.answers
        sources.append(f"--panel {' '.join(specs)}: {panel.label()}")
    probe = next((a for a in answers if a.model.startswith("probe:")), None)
    if probe is not None:
        why = f"model {probe.model!r}: the probe: prefix is the sweep's own"
        raise SourceError(why, file=probe.source or None, line=probe.line or None)
    if len({a.model for _, a in pairs}) < 2:
        why = "the agreement needs the answers of two models or more to the questions chosen"
        raise ValueError(f"{why} (--answers, --panel)")
    print_notes([f"answers to agree on: {'; '.join(sources)}", *notes], "judge-sweep")
    return pool, rows, pairs, missing, dict(panel.sources) if panel else {}


def share_budget(judges, cap: float | None) -> None:
    """One --max-cost-usd across the sweep: every judge (each jury member) reserves against it."""
    from oab_bench.judge.grading.grader import Budget

    if cap is None:
        return
    leaves = [m for _, j in judges for m in getattr(j, "members", [j])]
    for leaf in leaves:
        if leaf.settings.batch:
            raise ValueError(
                f"--max-cost-usd and batch=true ({leaf.settings.judge_model}) do not go together "
                "(a batch is submitted whole): check the bill with --estimate, then sweep without a cap"
            )
        Budget(leaf, cap)  # every judge needs a known price under a cap (an error names it)
    shared = Budget(leaves[0], cap)
    for leaf in leaves:
        leaf.budget = shared


def print_bill(judges, pairs, fmt: str) -> int:
    """--estimate: the sweep's whole bill, per judge; nothing is called or written."""
    from oab_bench.judge.grading.bill import added, estimate
    from oab_bench.judge.sweep.decide import text_table

    bills = [estimate(judge, pairs) for _, judge in judges]
    totals = [b.total.model_dump(exclude={"model"}) for b in bills]
    lines = [{"judge": spec, **t} for (spec, _), t in zip(judges, totals, strict=True)]
    total = added(bills, "").total.model_dump(exclude={"model"})
    if fmt == "json":
        print(json.dumps({"judges": lines, "total": total}, indent=2))
        return 0
    keys, usd = ("judge", "calls", "prompt_tokens", "completion_tokens"), ("cost_usd", "cost_usd_batch")
    rows = [
        (*(x[k] for k in keys), *("unknown" if x[k] is None else f"${x[k]:.4f}" for k in usd))
        for x in [*lines, {"judge": "total", **total}]
    ]
    header = ("judge", "calls", "prompt tokens", "completion tokens", "cost", "cost batch")
    title = "estimate for the sweep; nothing was called (cached gradings cost nothing)"
    print(title, *text_table(header, rows), sep="\n")
    return 0


def gradings(judge, judgments) -> list:
    """(the judge that called, its judgment) per grading; a jury's members each on their own."""
    if getattr(judge, "members", None) is None:
        return [(judge, j) for j in judgments]
    models = {j.model for j in judgments}
    pairs = zip(judge.members, judge.graded, strict=True)
    return [(m, j) for m, got in pairs for j in got if j.model in models]


def failure(graded) -> str | None:
    """Why a judge's figures would say nothing about it: too many gradings whose calls failed."""
    from oab_bench.judge.validity.probe_report import JUDGED_MIN

    bad = [j for _, j in graded if j.status in CALL_FAILURES]
    if not bad or len(bad) <= (1 - JUDGED_MIN) * len(graded):
        return None
    why = f"{len(bad)} of {len(graded)} gradings not made ({bad[0].status}): {bad[0].error or ''}"
    return redact(why).strip()


def cost_per_model(graded, judged, dataset) -> tuple[float | None, float | None, str]:
    """(direct, batch) dollars per model for the whole `dataset`, scaled per question kind, and how."""
    kind = {r.question_id: r.kind for r in judged}
    costs: dict[str, list[tuple]] = defaultdict(list)  # kind -> (direct, batch) per grading
    models: dict[str, set[str]] = defaultdict(set)
    for who, j in graded:
        if j.question_id in kind:
            cost, batch, discount = j.cost_usd, who.settings.batch, who.settings.price_batch_discount
            if cost is None and j.usage.prompt_tokens == 0 and j.usage.completion_tokens == 0:
                cost = 0.0  # no call billed
            direct = cost if not batch or cost is None else cost / discount if discount else None
            costs[kind[j.question_id]].append((direct, cost if batch or cost is None else cost * discount))
            models[j.question_id].add(j.model)
    n_judged, wanted = Counter(kind[q] for q in models), Counter(r.kind for r in dataset)
    n_models = max((len(m) for m in models.values()), default=0)
    if not n_models:
        return None, None, "no answer judged: no cost to scale"
    out = []
    for side in (0, 1):
        every = [c[side] for cs in costs.values() for c in cs]
        if None in every:  # a grading without a price: no total
            out.append(None)
            continue
        mean = {k: sum(c[side] for c in cs) / n_models / n_judged[k] for k, cs in costs.items()}
        fallback = sum(every) / n_models / sum(n_judged.values())
        out.append(sum(n * mean.get(k, fallback) for k, n in wanted.items()))
    counts = ", ".join(f"{k} {n_judged[k]} of {wanted[k]}" for k in sorted(wanted))
    how = f"scaled: {sum(n_judged.values())} of {len(dataset)} questions judged ({counts}), {n_models} models"
    return out[0], out[1], how


def measure(judges, folders, probe_pairs, probe_missing, pairs, missing, *, progress: bool, panel: dict):
    """Each judge's probes and answers graded in one pool of calls and written; pending batches set apart."""
    from oab_bench.judge.grading.batch.submit import BatchPending
    from oab_bench.judge.grading.runner import dump_jsonl, run_judge_all
    from oab_bench.judge.output import write_atomic
    from oab_bench.judge.panel.judging import dump_records, marked_records

    measured, pending = [], []
    for (spec, judge), folder in zip(judges, folders, strict=True):
        say(f"{spec}: {len(probe_pairs)} probe and {len(pairs)} answer judgments")
        start = time.monotonic()
        try:
            done = run_judge_all(judge, [*probe_pairs, *pairs], progress=progress)
        except BatchPending as e:
            pending.append(f"{spec}: {e}")
            continue
        seconds = time.monotonic() - start
        n, no_answer = len(probe_pairs), "the answer files have no answer to this question"
        probes = done[:n] + [judge.unanswered(r, m, "no probe answer") for r, m in probe_missing]
        answers = done[n:] + [judge.unanswered(r, m, no_answer) for r, m in missing]
        write_atomic(folder / names.PROBE_JUDGMENTS_FILE, dump_jsonl(probes))
        write_atomic(folder / names.JUDGMENTS_FILE, dump_records(marked_records(answers, panel)))
        graded = gradings(judge, done)
        calls, failed = sum(j.attempts for _, j in graded if not j.cached), failure(graded)  # retries counted
        say(f"{spec}: {calls} calls, {seconds:.1f} s" + (f"; FAILED: {failed}" if failed else ""))
        measured.append(Measured(spec, judge, probes, graded, calls, seconds, failed))
    return measured, pending


def run_sweep_command(args: argparse.Namespace) -> int:
    from oab_bench.judge.grading.judgment_store import JudgmentStore, StoreError, default_cache_dir

    try:
        store = JudgmentStore(Path(args.cache) if args.cache else default_cache_dir(), read=not args.no_cache)
    except StoreError as e:
        raise StoreError(f"--cache {e}") from None
    parsed = parse_judges(args)
    pool, rows, pairs, missing, panel = load_material(args)  # the panel fetched and verified: before any call
    # the judging machinery (litellm: seconds) only once the input is known to be good
    from oab_bench.judge.grading.jury import make_judge
    from oab_bench.judge.output import check_output, write_atomic
    from oab_bench.judge.sweep.decide import JudgeRow, Rule, decide, render_text
    from oab_bench.judge.validity.agreement import compare_two
    from oab_bench.judge.validity.probe_report import probe_report
    from oab_bench.judge.validity.probes import build_probes, parse_kinds, probe_pairs
    from oab_bench.judge.validity.sources import load_source

    judges = []
    for spec, settings in parsed:
        try:
            judges.append((redact(spec.strip()), make_judge(settings, store)))
        except ValueError as e:
            raise ValueError(f"judge {spec!r}: {e}") from None
    probes = build_probes(rows, pool, parse_kinds(args.probes), seed=args.seed)
    out = Path(args.output or "runs/judge_sweep")
    folders = [out / f"{i:02d}_{re.sub(r'[^A-Za-z0-9._-]+', '_', s)[:60]}" for i, (s, _) in enumerate(judges)]
    page = out / names.SWEEP_PAGE_FILE
    if not args.estimate:  # anything in the way fails now, before a paid call
        check_folder(out, SWEEP, "--output")  # it replaces files there: never in someone else's folder
        for f in [*(f / names.PROBE_JUDGMENTS_FILE for f in folders), out / names.SWEEP_FILE, page]:
            check_output(f)
        claim(out, SWEEP)
    p_pairs, p_missing = probe_pairs(rows, probes, None if args.estimate else out / names.PROBE_ANSWERS_DIR)
    if args.estimate:
        return print_bill(judges, [*p_pairs, *pairs], args.format)
    share_budget(judges, args.max_cost_usd)
    progress = not args.no_progress
    measured, pending = measure(
        judges, folders, p_pairs, p_missing, pairs, missing, progress=progress, panel=panel
    )
    if pending:  # batches still running: the other judges are judged and cached; a rerun reattaches
        for line in pending:
            say(line)
        print(f"resume: oab-bench {shlex.join(sys.argv[1:])}", file=sys.stderr)
        return 3

    dataset, models, built = {r.question_id: r for r in pool}, {a.model for _, a in pairs}, []
    options = {"resamples": args.resamples, "seed": args.seed}
    reference = None if measured[0].failed else load_source("A", folders[0] / names.JUDGMENTS_FILE, dataset)
    for m, folder in zip(measured, folders, strict=True):
        direct, batch, scaled = cost_per_model([g for g in m.graded if g[1].model in models], rows, pool)
        probe = agreement = None
        if not m.failed:
            report = probe_report(m.judge, rows, probes, m.probes, **options)
            pct = {k: s.mean_pct for k, s in report.probes.items()}
            probe = {"verdict": report.verdict, "ordering": report.ordering}
            probe |= {"reference_pct": pct.get("reference"), "swapped_pct": pct.get("swapped")}
        if m is not measured[0] and not m.failed and reference:  # on the same answers
            other = load_source("B", folder / names.JUDGMENTS_FILE, dataset)
            got = compare_two(reference, other, dataset, **options)
            exam = got["exam"]
            flip_rate = exam["flips"] / exam["n"] if exam["n"] else None
            agreement = {"exam_ccc": exam["ccc"], "kappa_pass": exam["kappa_pass"], "exam_mae": exam["mae"]}
            agreement |= {"flips": exam["flips"], "flip_rate": flip_rate, "ranking_tau": got["ranking_tau"]}
        costs = {"cost_usd_per_model": direct, "cost_usd_per_model_batch": batch}
        measures = {"calls": m.calls, "seconds": round(m.seconds, 3), "failed": m.failed}
        built.append(JudgeRow(judge=m.spec, probe=probe, agreement=agreement, **costs, **measures))
    rule = Rule(min_kappa=args.min_kappa, kappa_on=args.kappa_on, max_flip_rate=args.max_flip_rate)
    report, why = decide(built[0], built[1:], rule)
    text = report.model_dump_json(indent=2) + "\n"
    page.unlink(missing_ok=True)  # an earlier sweep's page never stands beside this sweep.json
    write_atomic(out / names.SWEEP_FILE, text)
    every = [j for m in measured for _, j in m.graded]
    cached = f"{sum(j.cached for j in every)} of {len(every)} gradings came from the cache (no call)"
    counted = f"{sum(m.calls for m in measured)} calls made; {cached}"
    sys.stdout.write(text if args.format == "json" else render_text(report, why, scaled, counted))
    write_page(report, why, scaled, out)
    print(f"wrote {out / names.SWEEP_FILE} and each judge's judgments under {out}", file=sys.stderr)
    return 1 if args.strict and report.recommended is None else 0


def write_page(report, why: dict[str, str], scaled: str, out: Path) -> None:
    """sweep.html beside sweep.json; a page that cannot be written is a note, never a failed sweep."""
    try:  # its imports too (matplotlib, jinja2): a page that cannot be made never fails the sweep
        from oab_bench.judge.sweep.sweep_page import sweep_view, write_sweep_page

        view = sweep_view(report, why=why, scaled=scaled, name=str(out))
        path = write_sweep_page([view], out / names.SWEEP_PAGE_FILE, f"OAB-Bench judge sweep: {out.name}")
    except Exception as e:  # a page is a by-product of the sweep
        say(f"note: no {names.SWEEP_PAGE_FILE} ({type(e).__name__}: {redact(str(e))})")
        return
    print(f"page: {path}", file=sys.stderr)
