"""`oab-bench probe`: does the judge fail a failing answer? (judge/validity/probes.py, probe_report.py)"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from oab_bench.conventions import JUDGMENTS_FILE, PROBE_ANSWERS_DIR, PROBE_MARKER
from oab_bench.conventions import PROBE_REPORT_FILE as REPORT_FILE
from oab_bench.folders import Writer, check_folder, claim
from oab_bench.judge import settings as judge_settings
from oab_bench.judge.intervals import LEADERBOARD_RESAMPLES
from oab_bench.judge.redact import redact
from oab_bench.judge.validity.probes import DEFAULT_SEED
from oab_bench.scripts.arguments import add_cache_arguments, add_check_call, add_probe_arguments, whole

PROBE = Writer("oab-bench probe", PROBE_MARKER)
HELP = "does the judge fail a failing answer? answers of known worth from the dataset"


def main(args: argparse.Namespace) -> int:
    from oab_bench.judge.dataset import load_rows, select_rows
    from oab_bench.judge.grading.client import refused_for_good
    from oab_bench.judge.grading.judge_answers import command_judge, print_outcome
    from oab_bench.judge.grading.runner import dump_jsonl, run_judge_all
    from oab_bench.judge.output import check_output, write_atomic
    from oab_bench.judge.settings import settings_from
    from oab_bench.judge.validity.jury_report import jury_lines
    from oab_bench.judge.validity.probe_report import probe_report, render_json, render_text
    from oab_bench.judge.validity.probes import build_probes, parse_kinds, probe_pairs, write_answer_files

    settings = settings_from(args, os.environ)
    kinds = parse_kinds(args.probes)
    pool = load_rows(args.dataset)
    rows = select_rows(pool, args.questions)
    if not rows:
        raise ValueError(f"no questions in {args.dataset} match {args.questions}")
    probes = build_probes(rows, pool, kinds, seed=args.seed)
    judge = command_judge(args, settings)  # bad judge settings fail before anything is written
    out = Path(args.output or "runs/probe_" + re.sub(r"[^A-Za-z0-9._-]+", "_", settings.judge_model))
    if not args.estimate:  # a folder in the way fails now, not after paying for the judgments
        check_folder(out, PROBE, "--output")  # it replaces files there: never in someone else's folder
        for name in (JUDGMENTS_FILE, REPORT_FILE):
            check_output(out / name)
    pairs, _ = probe_pairs(rows, probes, None)  # each question has every probe; the files: once judged
    members = getattr(judge, "members", [judge])  # a jury: each member grades every probe
    wanted = [(m, row, a) for m in members for row, a in pairs]
    cached = sum(m.store.get(m.key(row, a.text)) is not None for m, row, a in wanted)
    to = f"{len(wanted) - cached} calls to {redact(settings.judge_model)}"  # its api_base may hold a key
    print(
        f"oab-bench probe: {len(kinds)} probes x {len(rows)} questions = {len(pairs)} judgments, {cached} of "
        f"{len(wanted)} member gradings already in the cache: {to} (more if replies need retries)",
        file=sys.stderr,
    )
    if args.estimate:
        from oab_bench.judge.grading.bill import estimate, print_estimate

        return print_estimate(estimate(judge, pairs), args.format)
    if cached < len(wanted) and not args.no_check_call:  # a refused key fails now, with its message
        from oab_bench.judge.grading.client import check_judges
        from oab_bench.judge.settings import member_settings

        check_judges(member_settings(settings))
    judgments = run_judge_all(judge, pairs, progress=not args.no_progress)
    # calls refused for good (key, model name, URL) measured nothing: an error, not a verdict; nothing written
    if refused := [j for j in judgments if j.status == "api_error" and refused_for_good(j.error)]:
        raise ValueError(
            f"the judge refused {len(refused)} of {len(judgments)} calls, so nothing was written: "
            f"{refused[0].error}; the judgments made are cached: fix it and run the same command again"
        )
    claim(out, PROBE)  # now, not before: a refused judge leaves no folder
    write_answer_files(probes, out / PROBE_ANSWERS_DIR)
    write_atomic(out / JUDGMENTS_FILE, dump_jsonl(judgments))
    print_outcome(judgments, jury_lines)
    report = probe_report(judge, rows, probes, judgments, resamples=args.resamples, seed=args.seed)
    write_atomic(out / REPORT_FILE, render_json(report))
    sys.stdout.write(render_json(report) if args.format == "json" else render_text(report))
    print(f"wrote {out / PROBE_ANSWERS_DIR}, {out / JUDGMENTS_FILE}, {out / REPORT_FILE}", file=sys.stderr)
    return 1 if args.strict and report.verdict != "discriminates" else 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, help="folder made by `oab-bench build`, or a Hub id")
    p.add_argument("--questions", nargs="+", help="only these question or exam ids (glob patterns)")
    add_probe_arguments(p)
    p.add_argument(
        "--estimate",
        action="store_true",
        help="print calls, tokens and cost of the probe judgments still to make (direct and batch), call nothing",
    )
    p.add_argument(
        "--output", help="folder for the probe answers and judgments (default runs/probe_<judge model>)"
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 unless the verdict is `discriminates` (`does not discriminate`, `incomplete`)",
    )
    add_cache_arguments(p)
    add_check_call(p)
    p.add_argument(
        "--seed", type=whole(0), default=DEFAULT_SEED, help="choice of swapped answers and bootstrap"
    )
    p.add_argument(
        "--resamples", type=whole(1), default=LEADERBOARD_RESAMPLES, help="bootstrap resamples of whole exams"
    )
    judge_settings.add_arguments(p)
