"""`oab-bench probe`: answers of known worth (probes.py) through the normal judge path, then the
checks and the verdict (probe_report.py); answers, judgments and report go to the output folder."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from oab_bench.conventions import JUDGMENTS_FILE, PROBE_ANSWERS_DIR, PROBE_MARKER
from oab_bench.conventions import PROBE_REPORT_FILE as REPORT_FILE
from oab_bench.folders import Writer, check_folder, claim
from oab_bench.judge.redact import redact
from oab_bench.judge.validity.probes import PROBE_KINDS

PROBE = Writer("oab-bench probe", PROBE_MARKER)


def parse_kinds(text: str) -> list[str]:
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in PROBE_KINDS]
    if unknown or not kinds:
        raise ValueError(f"--probes {text!r}: choose among {', '.join(PROBE_KINDS)}")
    return [k for k in PROBE_KINDS if k in kinds]


def probe_pairs(rows, probes, folder: Path | None):
    """(pairs to judge, (row, model)s with no probe answer); the answer files written in `folder` if given."""
    from oab_bench.judge.answers import Answer
    from oab_bench.judge.grading.judge_answers import pair_answers
    from oab_bench.judge.validity.probes import write_answer_files

    if folder is not None:
        write_answer_files(probes, folder)
    pairs, missing, _ = pair_answers(
        rows, [Answer(model=p.model, question_id=p.question_id, turns=p.turns) for p in probes]
    )
    return pairs, missing


def probe_report(judge, rows, probes, judgments, *, resamples: int, seed: int):
    """The probe's figures and verdict for `judge` (a judge, or a jury under its own name)."""
    from oab_bench.judge.judge_label import judge_label
    from oab_bench.judge.validity.probe_report import build_report

    name = getattr(judge, "name", judge.settings.judge_model)  # a jury's own name, as in its records
    settings = next((j.settings for j in judgments if j.settings is not None), None)
    label = judge_label(name, f"{judge.prompt_version}, {judge.mode}", settings)  # as the leaderboard says
    variants = {p.question_id: p.variant for p in probes if p.kind == "injection"}
    return build_report(label, rows, judgments, variants, resamples=resamples, seed=seed)


def run_probe_command(args: argparse.Namespace) -> int:
    from oab_bench.judge.dataset import load_rows, select_rows
    from oab_bench.judge.grading.client import refused_for_good
    from oab_bench.judge.grading.judge_answers import command_judge, print_outcome
    from oab_bench.judge.grading.runner import dump_jsonl, run_judge_all
    from oab_bench.judge.output import check_output, write_atomic
    from oab_bench.judge.settings import settings_from
    from oab_bench.judge.validity.jury_report import jury_lines
    from oab_bench.judge.validity.probe_report import render_json, render_text
    from oab_bench.judge.validity.probes import build_probes, write_answer_files

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
    # a judge whose calls were refused for good (key, model name, URL) measured nothing: an error
    # with the provider's message, not a verdict about the judge; nothing is written
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
