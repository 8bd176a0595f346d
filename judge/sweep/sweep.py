"""`oab-bench judge-sweep`: the reference judge and every candidate probed, compared with the
reference on the same real answers, priced; then the decision (decide.py). Every call goes
through the normal judge path: one judgment cache (a rerun calls nothing, a new candidate pays
only for itself), `--estimate` before anything, one `--max-cost-usd` for the whole sweep."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
from pathlib import Path

from oab_bench.conventions import (
    PROBE_ANSWERS_DIR,
    PROBE_JUDGMENTS_FILE,
    SWEEP_FILE,
    SWEEP_MARKER,
    SWEEP_PAGE_FILE,
)
from oab_bench.folders import Writer, check_folder, claim
from oab_bench.judge.redact import redact

SWEEP = Writer("oab-bench judge-sweep", SWEEP_MARKER)


def _folder(i: int, spec: str) -> str:
    return f"{i:02d}_" + re.sub(r"[^A-Za-z0-9._-]+", "_", redact(spec))[:60]


def parse_judges(args: argparse.Namespace) -> list[tuple[str, object]]:
    """(spec as written, its settings) for the reference, then each candidate: no judge made yet
    (that imports litellm), so a bad spec, and then bad material, are refused at once."""
    from oab_bench.judge.settings import member_settings
    from oab_bench.judge.sweep.spec import parse_spec

    specs = [args.reference_judge, *args.candidate]
    seen = [s.strip() for s in specs]
    twice = sorted({s for s in seen if seen.count(s) > 1})
    if twice:
        raise ValueError(f"judge {twice[0]!r} is given twice (as the reference or a candidate)")
    parsed = [(spec, parse_spec(spec, os.environ)) for spec in specs]
    # written two ways (effort= or reasoning_effort=, a jury's members in another order): one judge
    same = []
    for spec, settings in parsed:
        try:
            same.append(sorted(member_settings(settings), key=lambda m: m.judge_model))
        except ValueError as e:
            raise ValueError(f"judge {spec!r}: {e}") from None
    for i, (spec, _) in enumerate(parsed):
        first = same.index(same[i])
        if first < i:
            raise ValueError(
                f"judges {parsed[first][0]!r} and {spec!r} are one judge: every setting is the same"
            )
    return parsed


def make_judges(parsed: list[tuple[str, object]], store) -> list[tuple[str, object]]:
    """(spec as written, redacted; its judge or jury)."""
    from oab_bench.judge.grading.jury import make_judge

    judges = []
    for spec, settings in parsed:
        try:
            judges.append((redact(spec.strip()), make_judge(settings, store)))
        except ValueError as e:
            raise ValueError(f"judge {spec!r}: {e}") from None
    return judges


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


def print_bill(judges, probe_pairs, answer_pairs, fmt: str) -> int:
    """--estimate: the sweep's whole bill, per judge; nothing is called or written."""
    import json

    from oab_bench.judge.grading.estimate.core import estimate

    lines = []
    for spec, judge in judges:
        est = estimate(judge, [*probe_pairs, *answer_pairs]).total
        lines.append({"judge": spec, **est.model_dump(exclude={"model"})})
    total = {k: sum(x[k] for x in lines) for k in ("calls", "prompt_tokens", "completion_tokens")}
    for k in ("cost_usd", "cost_usd_batch"):
        total[k] = None if any(x[k] is None for x in lines) else sum(x[k] for x in lines)
    if fmt == "json":
        sys.stdout.write(json.dumps({"judges": lines, "total": total}, indent=2) + "\n")
        return 0

    def usd(x):
        return "unknown" if x is None else f"${x:.4f}"

    print("estimate for the sweep; nothing was called (cached gradings cost nothing)")
    header = ("judge", "calls", "prompt tokens", "completion tokens", "cost", "cost batch")
    rows = [
        (
            x["judge"],
            x["calls"],
            x["prompt_tokens"],
            x["completion_tokens"],
            usd(x["cost_usd"]),
            usd(x["cost_usd_batch"]),
        )
        for x in [*lines, {"judge": "total", **total}]
    ]
    width = [max(len(str(v)) for v in col) for col in zip(header, *rows, strict=True)]
    for line in [header, *rows]:
        print("  ".join(str(v).ljust(w) for v, w in zip(line, width, strict=True)).rstrip())
    return 0


def agreement_figures(reference, candidate, dataset: dict, *, resamples: int, seed: int):
    """The candidate against the reference on the same answers (validity/agreement.py's figures)."""
    from oab_bench.judge.sweep.decide import AgreementFigures
    from oab_bench.judge.validity.agreement import compare_two
    from oab_bench.judge.validity.sources import load_source
    from oab_bench.judge.validity.stats import Figure

    a = load_source("A", reference.answers_file, dataset)
    b = load_source("B", candidate.answers_file, dataset)
    report = compare_two(a, b, dataset, resamples=resamples, seed=seed)
    exam = report["exam"]
    return AgreementFigures(
        exam_ccc=Figure(**exam["ccc"]),
        kappa_pass=Figure(**exam["kappa_pass"]),
        flips=exam["flips"],
        flip_rate=exam["flips"] / exam["n"] if exam["n"] else None,
        exam_mae=Figure(**exam["mae"]),
        ranking_tau=Figure(**report["ranking_tau"]),
    )


def write_page(report, why: dict[str, str], scaled: str, out: Path) -> None:
    """sweep.html beside sweep.json: a page that cannot be written never fails the sweep (its
    figures are on disk already); the reason is printed."""
    from oab_bench.judge.sweep.sweep_page import sweep_view, write_sweep_page

    try:
        view = sweep_view(report, why=why, scaled=scaled, name=str(out))
        path = write_sweep_page([view], out / SWEEP_PAGE_FILE, title=f"OAB-Bench judge sweep: {out.name}")
    except Exception as e:  # a page is a by-product of the sweep
        print(
            f"oab-bench judge-sweep: note: no {SWEEP_PAGE_FILE} ({type(e).__name__}: {redact(str(e))})",
            file=sys.stderr,
        )
        return
    print(f"page: {path}", file=sys.stderr)


def run_sweep_command(args: argparse.Namespace) -> int:
    from oab_bench.judge.grading.judgment_store import JudgmentStore, StoreError, default_cache_dir
    from oab_bench.judge.sweep.material import load_material, print_notes

    try:
        store = JudgmentStore(Path(args.cache) if args.cache else default_cache_dir(), read=not args.no_cache)
    except StoreError as e:
        raise StoreError(f"--cache {e}") from None
    parsed = parse_judges(args)
    material = load_material(args)  # the panel fetched and verified here: before anything is called
    # the judging machinery (litellm: seconds) only once the input is known to be good
    from oab_bench.judge.output import check_output, write_atomic
    from oab_bench.judge.sweep.cost import per_model
    from oab_bench.judge.sweep.decide import JudgeRow, ProbeFigures, Rule, decide
    from oab_bench.judge.sweep.measure import measure_all, say
    from oab_bench.judge.sweep.sweep_table import render_text
    from oab_bench.judge.validity.probe import parse_kinds, probe_pairs, probe_report
    from oab_bench.judge.validity.probes import build_probes

    rule = Rule(min_kappa=args.min_kappa, kappa_on=args.kappa_on, max_flip_rate=args.max_flip_rate)
    judges = make_judges(parsed, store)
    pool, rows, answer_pairs, answer_missing = material.pool, material.rows, material.pairs, material.missing
    probes = build_probes(rows, pool, parse_kinds(args.probes), seed=args.seed)
    out = Path(args.output or "runs/judge_sweep")
    folders = [out / _folder(i, spec) for i, (spec, _) in enumerate(judges)]
    if not args.estimate:  # anything in the way fails now, before a paid call
        check_folder(out, SWEEP, "--output")  # it replaces files there: never in someone else's folder
        for f in folders:
            check_output(f / PROBE_JUDGMENTS_FILE)
        check_output(out / SWEEP_FILE)
        check_output(out / SWEEP_PAGE_FILE)
        claim(out, SWEEP)
    p_pairs, p_missing = probe_pairs(rows, probes, None if args.estimate else out / PROBE_ANSWERS_DIR)
    print_notes(material)
    if args.estimate:
        return print_bill(judges, p_pairs, answer_pairs, args.format)
    share_budget(judges, args.max_cost_usd)

    measured, pending = measure_all(
        judges,
        folders,
        (p_pairs, p_missing),
        (answer_pairs, answer_missing),
        progress=not args.no_progress,
        panel=material.panel,
    )
    if pending:  # batches still running: the other judges are judged and cached; a rerun reattaches
        for line in pending:
            say(line)
        print(f"resume: oab-bench {shlex.join(sys.argv[1:])}", file=sys.stderr)
        return 3

    dataset = {r.question_id: r for r in pool}
    answer_models = {a.model for _, a in answer_pairs}
    scaled = ""
    built = []
    for i, m in enumerate(measured):
        direct, batch, scaled = per_model([g for g in m.gradings if g[1].model in answer_models], rows, pool)
        probe = None
        if not m.failed:
            report = probe_report(m.judge, rows, probes, m.probes, resamples=args.resamples, seed=args.seed)
            stats = report.probes
            probe = ProbeFigures(
                verdict=report.verdict,
                reference_pct=stats["reference"].mean_pct if "reference" in stats else None,
                swapped_pct=stats["swapped"].mean_pct if "swapped" in stats else None,
                ordering=report.ordering,
            )
        agreement = None
        if i and not m.failed and not measured[0].failed:
            agreement = agreement_figures(measured[0], m, dataset, resamples=args.resamples, seed=args.seed)
        built.append(
            JudgeRow(
                judge=m.spec,
                probe=probe,
                agreement=agreement,
                cost_usd_per_model=direct,
                cost_usd_per_model_batch=batch,
                calls=m.calls,
                seconds=round(m.seconds, 3),
                pareto=False,
                failed=m.failed,
            )
        )
    report, why = decide(built[0], built[1:], rule)
    text = report.model_dump_json(indent=2) + "\n"
    # an earlier sweep's page never stands beside this sweep.json (a stop or a failed page between them)
    (out / SWEEP_PAGE_FILE).unlink(missing_ok=True)
    write_atomic(out / SWEEP_FILE, text)
    sys.stdout.write(text if args.format == "json" else render_text(report, why, scaled))
    write_page(report, why, scaled, out)
    print(f"wrote {out / SWEEP_FILE} and each judge's judgments under {out}", file=sys.stderr)
    return 1 if args.strict and report.recommended is None else 0
