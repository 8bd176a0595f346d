"""`oab-bench judge-sweep`: which judge? validity per dollar (judge/sweep/)."""

from __future__ import annotations

import argparse

from oab_bench.judge.intervals import AGREEMENT_RESAMPLES
from oab_bench.judge.panel.published import add_panel_argument
from oab_bench.judge.validity.probes import DEFAULT_SEED
from oab_bench.scripts.arguments import add_cache_arguments, add_probe_arguments, number, whole

HELP = "which judge? probe, agreement with a reference judge and cost per judge; the cheapest valid one"
SPEC = (
    "a judge: MODEL[,SETTING=VALUE...] with any judge setting by name (effort=low, api_base=URL, "
    "temperature=0, max_tokens=8000, prompt=oab, price_input=..., batch=true), e.g. "
    "openai/gpt-5-mini,effort=low; a jury: jury:JUDGE|JUDGE|JUDGE (median; jury-mean:, jury-min:)"
)


def main(args: argparse.Namespace) -> int:
    from oab_bench.judge.sweep.sweep import run_sweep_command

    return run_sweep_command(args)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--reference-judge", required=True, metavar="SPEC", help=f"the judge to agree with; {SPEC}"
    )
    p.add_argument(
        "--candidate", action="append", required=True, metavar="SPEC", help="a judge to try (repeat it)"
    )
    p.add_argument(
        "--dataset",
        help="a folder made by `oab-bench build`, upstream's raw layout, or a Hub id; default: "
        "OAB_BENCH_DATASET, else maritaca-ai/oab-bench",
    )
    p.add_argument("--questions", nargs="+", help="only these question or exam ids (glob patterns)")
    what = "published answers every judge grades for the agreement; by default (with no --answers) 'upstream'"
    add_panel_argument(p, what)
    p.add_argument(
        "--answers", nargs="+", help="answers of your own to agree on, instead of the panel or beside it"
    )
    add_probe_arguments(p)
    p.add_argument("--output", help="folder for the judgments and sweep.json (default runs/judge_sweep)")
    p.add_argument(
        "--min-kappa",
        type=number(float, -1.0),
        default=0.8,
        help="kappa on exam pass/fail a candidate needs (default 0.8)",
    )
    p.add_argument(
        "--kappa-on",
        choices=["lower", "value"],
        default="lower",
        help="compare --min-kappa with the lower end of kappa's 95%% interval (default) or its value",
    )
    p.add_argument(
        "--max-flip-rate",
        type=number(float, 0.0),
        default=0.1,
        help="share of exams whose pass/fail may differ (default 0.1)",
    )
    p.add_argument("--strict", action="store_true", help="exit 1 when no candidate is recommended")
    p.add_argument("--estimate", action="store_true", help="print the sweep's bill per judge, call nothing")
    p.add_argument("--max-cost-usd", type=number(float, 0.0), help="one cost cap for the whole sweep")
    add_cache_arguments(p)
    p.add_argument("--seed", type=whole(0), default=DEFAULT_SEED, help="swapped answers and bootstrap")
    p.add_argument(
        "--resamples", type=whole(1), default=AGREEMENT_RESAMPLES, help="bootstrap resamples of exams"
    )
