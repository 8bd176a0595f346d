"""What a run does once its lighteval child has ended: the summary, the leaderboard row, the report
and the exit code.

lighteval 0.13 exits 0 even when every call failed, so the exit code is ours: non-zero, naming the
questions, when lighteval left no results, an answer is empty or a judgment failed. The summary is
written whole or not at all, and only after it does a signal find the run finished.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from oab_bench.conventions import BATCH_FILE, JUDGMENTS_FILE, PANEL_JUDGMENTS_FILE, SUMMARY_FILE
from oab_bench.dataset_builder.source import read_objects
from oab_bench.judge.aggregate import QuestionResult, task_figures
from oab_bench.judge.generation.run_caches import batches_running, resume_command
from oab_bench.judge.generation.run_settings import candidate_prompts, judge_cache
from oab_bench.judge.output import write_atomic
from oab_bench.judge.redact import redact
from oab_bench.judge.settings import JudgeSettings


def newest_results(out: Path, since: float) -> Path | None:
    """This run's results JSON: an older run's, left in the same folder, must not stand in for it."""
    files = sorted(
        (p for p in (out / "results").rglob("results_*.json") if p.stat().st_mtime >= since),
        key=lambda p: p.stat().st_mtime,
    )
    return files[-1] if files else None


def read_judgments(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [r for _, r in read_objects(path)]


def leaderboard(out: Path) -> tuple[str, list]:
    """The run's row (and the panel's, with --panel), as `oab-bench leaderboard` prints them (with
    their 95% intervals), and the tables."""
    from oab_bench.judge.leaderboard.inputs import load_records
    from oab_bench.judge.leaderboard.tables import build_tables, render_markdown

    records = load_records(out / JUDGMENTS_FILE)
    if (out / PANEL_JUDGMENTS_FILE).is_file():
        records += load_records(out / PANEL_JUDGMENTS_FILE)
    tables, notes = build_tables(records)
    return render_markdown(tables, notes), tables


def summarize(
    args: argparse.Namespace,
    settings: JudgeSettings,
    out: Path,
    started: float,
    returncode: int,
    state: argparse.Namespace | None = None,
    panel=None,
) -> int:
    """The child ended (`returncode`, started at `started`): the summary (then `state.finished`), the
    leaderboard row, the report, and the run's exit code."""
    judgments = read_judgments(out / JUDGMENTS_FILE)
    results = newest_results(out, started)
    if returncode != 0 or results is None or not judgments:
        print(
            f"oab-bench run: error: lighteval exited {returncode}; no results or judgments in {out}",
            file=sys.stderr,
        )
        if settings.batch and (batches := batches_running(args)) is not None:  # --judge-batch-wait ran out
            print(
                f"oab-bench run: the judge's batches go on running (recorded in {batches / BATCH_FILE}); "
                f"answers are kept: resume with: {resume_command()}",
                file=sys.stderr,
            )
        return returncode or 1

    panel_records = []
    if panel is not None:
        from oab_bench.judge.grading.batch.submit import BatchPending
        from oab_bench.judge.panel.runs import judge_beside

        try:
            access = "read" if getattr(args, "read_only_caches", False) else "write"
            panel_records = judge_beside(settings, judge_cache(args), *panel, judgments, out, access=access)
        except BatchPending as e:  # --judge-batch-wait ran out: the batches keep running
            print(f"oab-bench run: the panel: {e}", file=sys.stderr)
            print(
                f"oab-bench run: answers and judgments are kept: resume with: {resume_command()}",
                file=sys.stderr,
            )
            return 3

    figures = task_figures([QuestionResult.model_validate(j) for j in judgments])
    empty = [j["question_id"] for j in judgments if j["status"] == "no_answer"]
    failed = [
        f"{j['question_id']} ({j['status']}: {j.get('error') or ''})"
        for j in judgments
        if j["status"] not in ("ok", "no_answer")
    ]
    summary = {
        "model": args.model,
        "api_base": args.api_base,
        "judge_model": settings.judge_model,
        "results": str(results),
        "figures": {k: None if math.isnan(v) else v for k, v in figures.items()},  # NaN: unknown
        "empty_answers": empty,
        "failed_judgments": failed,
    }
    board = None
    if panel is not None:  # the panel's ranking goes into the summary: its leaderboard first
        from oab_bench.judge.panel.runs import rank_line, ranking

        board, tables = leaderboard(out)
        summary["panel"] = ranking(tables, args.model, panel[0], out, panel_records)
        failed = failed + [f"panel: {x}" for x in summary["panel"]["failed_judgments"]]  # the exit says them
    # whole or not at all: a signal while it is written leaves no half of it
    write_atomic(out / SUMMARY_FILE, json.dumps(summary, indent=2, ensure_ascii=False))
    if state is not None:
        state.finished = True
    print(board if board is not None else leaderboard(out)[0])
    if panel is not None:
        print(rank_line(summary["panel"], args.model), file=sys.stderr)
    from oab_bench.judge.validity.jury_report import jury_lines  # a jury: its members' costs and agreement

    for line in jury_lines(judgments):
        print(line, file=sys.stderr)

    from oab_bench.judge.audit.write import write_run_report

    write_run_report(out, args.dataset)  # report.html: never fails the run
    print(f"results: {results}\njudgments: {out / JUDGMENTS_FILE}", file=sys.stderr)
    if empty or failed:
        if empty:
            print(
                f"oab-bench run: {len(empty)} empty answers (failed generations?): {', '.join(empty)}",
                file=sys.stderr,
            )
            if args.api_base:
                print(f"oab-bench run: {empty[0]}: {why_empty(args, empty[0])}", file=sys.stderr)
        if failed:
            print(f"oab-bench run: {len(failed)} failed judgments: {'; '.join(failed)}", file=sys.stderr)
        print("oab-bench run: the exams of these questions have no score (see coverage)", file=sys.stderr)
        return 1
    return 0


def why_empty(args: argparse.Namespace, question_id: str) -> str:
    """Ask the candidate's server the failed question once more and report what it says: lighteval
    drops the text of an error (a 400 from vLLM, say) and returns an empty answer."""
    import httpx

    messages = dict(candidate_prompts(args.dataset, args.tasks)).get(question_id)
    if messages is None:
        return "not asked again (not in the selected tasks)"
    body = {
        "model": args.model.removeprefix("openai/"),
        "messages": messages,
        "max_tokens": args.max_new_tokens,
    }
    headers = {"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY') or 'EMPTY'}"}
    try:
        resp = httpx.post(
            f"{args.api_base.rstrip('/')}/chat/completions", json=body, headers=headers, timeout=60
        )
    except httpx.HTTPError as e:
        return f"asked again: no answer ({type(e).__name__}: {e})"
    if resp.status_code >= 400:
        return redact(f"asked again, the server answered {resp.status_code}: {resp.text[:500]}")
    return "asked again, the server answered (the failure was transient, or the answer was empty)"
