"""`oab-bench probe`: judge answers of known worth built from the dataset and say whether the judge
orders them (see probes.py for each probe and probe_report.py for the checks).

The probes go through the normal judge path (cache, retries, statuses, cost); their answers
and judgments are written to the output folder, readable by `oab-bench judge` and `leaderboard`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

from ..redact import redact
from ..report.inputs import JUDGMENTS_FILE, PROBE_ANSWERS
from ..report.inputs import PROBE_REPORT as REPORT_FILE
from .command import whole
from .probes import DEFAULT_SEED, PROBE_KINDS

ANSWERS_DIR = PROBE_ANSWERS


def add_arguments(p: argparse.ArgumentParser) -> None:
    from judge import settings as judge_settings

    p.add_argument("--dataset", required=True, help="folder made by `oab-bench build`, or a Hub id")
    p.add_argument("--questions", nargs="+", help="only these question or exam ids (glob patterns)")
    p.add_argument(
        "--probes",
        default=",".join(PROBE_KINDS),
        help=f"comma-separated probes (default {','.join(PROBE_KINDS)})",
    )
    p.add_argument(
        "--format", choices=["text", "json"], default="text", help="report (or estimate) format on stdout"
    )
    p.add_argument(
        "--estimate",
        action="store_true",
        help="print calls, tokens and cost of the probe judgments still to make (direct and batch), call nothing",
    )
    p.add_argument(
        "--output", help="folder for the probe answers and judgments (default runs/probe_<judge model>)"
    )
    p.add_argument("--strict", action="store_true", help="exit 1 when the verdict is `does not discriminate`")
    p.add_argument("--cache", help="judgment cache folder (default ~/.cache/oab-bench/judge)")
    p.add_argument("--no-cache", action="store_true", help="judge again even what the cache holds")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--seed", type=whole(0), default=DEFAULT_SEED, help="choice of swapped answers and bootstrap"
    )
    p.add_argument("--resamples", type=whole(1), default=10_000, help="bootstrap resamples of whole exams")
    judge_settings.add_arguments(p)


def parse_kinds(text: str) -> list[str]:
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in PROBE_KINDS]
    if unknown or not kinds:
        raise ValueError(f"--probes {text!r}: choose among {', '.join(PROBE_KINDS)}")
    return [k for k in PROBE_KINDS if k in kinds]


def default_output(judge_model: str) -> Path:
    return Path("runs") / ("probe_" + re.sub(r"[^A-Za-z0-9._-]+", "_", judge_model))


def run_probe_command(args: argparse.Namespace) -> int:
    from ..answers import load_answers
    from ..command import command_judge, pair_answers, print_outcome
    from ..dataset import load_rows, select_rows
    from ..output import check_output, write_atomic
    from ..runner import dump_jsonl, run_judge_all
    from ..settings import settings_from
    from .probe_report import build_report, render_json, render_text
    from .probes import build_probes, write_answer_files

    settings = settings_from(args, os.environ)
    kinds = parse_kinds(args.probes)
    pool = load_rows(args.dataset)
    rows = select_rows(pool, args.questions)
    if not rows:
        raise ValueError(f"no questions in {args.dataset} match {args.questions}")
    probes = build_probes(rows, pool, kinds, seed=args.seed)
    judge = command_judge(args, settings)  # bad judge settings fail before anything is written
    out = Path(args.output) if args.output else default_output(settings.judge_model)
    if not args.estimate:  # a folder in the way fails now, not after paying for the judgments
        for name in (JUDGMENTS_FILE, REPORT_FILE):
            check_output(out / name)
    answers = []
    with tempfile.TemporaryDirectory(prefix="oab-bench-probe-") as scratch:  # --estimate writes nothing
        for path in write_answer_files(probes, Path(scratch) if args.estimate else out / ANSWERS_DIR):
            answers += load_answers(path)  # what is judged is what the files hold
    pairs, missing, _ = pair_answers(rows, answers)

    members = getattr(judge, "members", [judge])  # a jury: each member grades every probe
    wanted = [(m, row, a) for m in members for row, a in pairs]
    cached = sum(m.store.get(m.key(row, a.text)) is not None for m, row, a in wanted)
    print(
        f"oab-bench probe: {len(kinds)} probes x {len(rows)} questions = {len(pairs)} judgments, "
        f"{cached} of {len(wanted)} member gradings already in the cache: {len(wanted) - cached} calls to "
        f"{redact(settings.judge_model)} "  # a member's api_base may carry a credential
        "(more if replies need retries)",
        file=sys.stderr,
    )
    if args.estimate:
        from ..estimate.core import estimate, print_estimate

        return print_estimate(estimate(judge, pairs), args.format)
    judgments = run_judge_all(judge, pairs, progress=not args.no_progress)
    judgments += [judge.unanswered(row, model, "no probe answer") for row, model in missing]
    write_atomic(out / JUDGMENTS_FILE, dump_jsonl(judgments))
    print_outcome(judgments)

    name = getattr(judge, "name", settings.judge_model)  # a jury's own name, as in its records
    label = f"{name} [{judge.prompt_version}, {judge.mode}]"  # as the leaderboard names it
    variants = {p.question_id: p.variant for p in probes if p.kind == "injection"}
    report = build_report(label, rows, judgments, variants, resamples=args.resamples, seed=args.seed)
    write_atomic(out / REPORT_FILE, render_json(report))
    sys.stdout.write(render_json(report) if args.format == "json" else render_text(report))
    print(f"wrote {out / ANSWERS_DIR}, {out / JUDGMENTS_FILE}, {out / REPORT_FILE}", file=sys.stderr)
    return 1 if args.strict and report.verdict != "discriminates" else 0
