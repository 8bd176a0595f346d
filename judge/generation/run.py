"""`oab-bench run`: every check first (run_checks.py), local vLLM servers if asked (vllm_server.py),
lighteval's pipeline in this process (lighteval_run.py), then the summary, the leaderboard row,
the report and the exit code.

lighteval 0.13 exits 0 even when every call failed, so the exit code is ours: non-zero, naming the
questions, when an answer is empty or a judgment failed. Never pay twice: answers and judgments are
kept in their stores, so a rerun or a resume pays only for what is missing. A signal becomes one
"stopped" line (what was kept, the command that resumes) and the signal's exit code.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sys
import time
from pathlib import Path

from oab_bench import folders
from oab_bench.conventions import BATCH_FILE, JUDGMENTS_FILE, PANEL_JUDGMENTS_FILE, SUMMARY_FILE
from oab_bench.judge.generation import lighteval_run, task_run
from oab_bench.judge.generation.run_checks import (
    RUN,
    check_caches,
    check_context,
    check_keys,
    check_output,
    check_places,
    check_remote,
    resolve_references,
    run_judge,
    stored_state,
)
from oab_bench.judge.generation.run_settings import RunSettings, selected_rows
from oab_bench.judge.generation.vllm_server import start_local_servers
from oab_bench.judge.grading.loop import Stopped
from oab_bench.judge.output import write_atomic
from oab_bench.judge.redact import redact

__all__ = ["RUN", "run"]


def run(s: RunSettings) -> int:
    finished: list[Path] = []  # the summary, once written: a later signal finds the run done
    with task_run.stop_signals():
        try:
            return steps(s, finished)
        except KeyboardInterrupt as e:
            signame = e.signame if isinstance(e, Stopped) else "SIGINT"
            if finished:
                print(
                    f"oab-bench run: stopped ({signame}) after the run had finished: {finished[0]}",
                    file=sys.stderr,
                )
            else:
                print(
                    f"oab-bench run: stopped ({signame}); {kept(s)}; resume with: {s.resume_command()}",
                    file=sys.stderr,
                )
            code = 128 + signal.Signals[signame]
            if lighteval_run.HUNG:  # calls that outlived the grace: they are not waited for
                sys.stderr.flush()
                os._exit(code)
            return code


def steps(s: RunSettings, finished: list[Path]) -> int:
    check_keys()
    check_places(s)
    s = resolve_references(s)
    task_run.checkpoint()
    panel = None
    if s.panel:  # fetched, read and checked before any call
        from oab_bench.judge.panel.runs import prepare

        panel = prepare(s.panel, selected_rows(s), {s.model, s.litellm_model})
    if s.estimate:
        return estimate(s, panel)
    check_output(s)
    s = check_caches(s, panel)
    check_remote(s, panel)  # before any local server loads
    task_run.checkpoint()
    folders.claim(s.output_dir, RUN)  # not before: a refused run leaves nothing behind
    with contextlib.ExitStack() as stack:  # local servers stop however the run ends
        s, servers = start_local_servers(s, stack)
        s = check_context(s)
        task_run.checkpoint()
        for stale in (JUDGMENTS_FILE, PANEL_JUDGMENTS_FILE):  # an earlier run's are not this one's
            (s.output_dir / stale).unlink(missing_ok=True)
        started = time.time()
        judged = lighteval_run.evaluate(s, servers)
        return summarize(s, judged, lighteval_run.newest_results(s.output_dir, started), panel, finished)


def kept(s: RunSettings) -> str:
    """What an interrupted run kept, in words."""
    answers, judges = s.answer_cache or "no answer store", s.judge_cache
    try:
        state = stored_state(s)
    except BaseException:  # the dataset does not load, a second Ctrl-C: the line without numbers
        return f"answers kept in {answers}, judgments in {judges or '(no judgment cache)'}"
    judged = (
        f" and {state.judged} judgments ({judges})" if judges else ", judgments not kept (--judge-cache off)"
    )
    return f"kept {state.answered} of {state.questions} answers ({answers}){judged}"


def estimate(s: RunSettings, panel) -> int:
    """`run --estimate`: the judging bill, stored answers judged as they are (their cached judgments
    cost nothing), answers still to generate assumed of DEFAULT_ANSWER_TOKENS; writes nothing."""
    from oab_bench.judge.answers import Answer
    from oab_bench.judge.generation.answer_store import stored_texts
    from oab_bench.judge.grading.estimate.core import (
        DEFAULT_ANSWER_TOKENS,
        estimate,
        placeholder_pairs,
        print_estimate,
    )
    from oab_bench.judge.grading.judgment_store import JudgmentStore

    rows, model = selected_rows(s), s.litellm_model
    texts = stored_texts(None if s.fresh_answers else s.answer_cache, model, s.generation(), rows)
    judge = run_judge(s.judge, JudgmentStore(s.judge_cache, access="read"))
    stored = [
        (r, Answer(model=model, question_id=r.question_id, turns=[t]))
        for r, t in zip(rows, texts, strict=True)
        if t is not None
    ]
    missing = [r for r, t in zip(rows, texts, strict=True) if t is None]
    est = estimate(judge, stored + placeholder_pairs(missing, model, judge))
    est.generations_cached, est.generations_to_pay = len(stored), len(missing)
    note = f"Answers to generate assumed of {DEFAULT_ANSWER_TOKENS} tokens." if missing else ""
    if panel is None:
        return print_estimate(est, s.format, note)
    from oab_bench.judge.panel.estimate import print_with_panel

    return print_with_panel(est, estimate(judge, panel[1]), panel[0], s.format, note)


def leaderboard(out: Path) -> tuple[str, list]:
    """The run's row (and the panel's), as `oab-bench leaderboard` prints them, and the tables."""
    from oab_bench.judge.leaderboard.formats import render_markdown
    from oab_bench.judge.leaderboard.inputs import load_records
    from oab_bench.judge.leaderboard.tables import build_tables

    records = load_records(out / JUDGMENTS_FILE)
    if (out / PANEL_JUDGMENTS_FILE).is_file():
        records += load_records(out / PANEL_JUDGMENTS_FILE)
    tables, notes = build_tables(records)
    return render_markdown(tables, notes), tables


def summarize(s: RunSettings, judged: list, results: Path | None, panel, finished: list[Path]) -> int:
    """The summary (written whole, then the run counts as finished), the leaderboard row, the
    report, and the exit code."""
    from oab_bench.judge.aggregate import QuestionResult, task_figures
    from oab_bench.judge.grading.runner import dump_jsonl
    from oab_bench.judge.records import total_cost

    out = s.output_dir
    if results is None or not judged:
        print(f"oab-bench run: error: lighteval left no results or judgments in {out}", file=sys.stderr)
        if s.judge.batch and batches_open(s.judge_cache):  # --judge-batch-wait ran out
            print(
                f"oab-bench run: the judge's batches go on running (recorded in {s.judge_cache / BATCH_FILE}); "
                f"answers are kept: resume with: {s.resume_command()}",
                file=sys.stderr,
            )
        return 1
    write_atomic(out / JUDGMENTS_FILE, dump_jsonl(judged))
    records = [j.record() for j in judged]
    panel_records = []
    if panel is not None:
        from oab_bench.judge.grading.batch.submit import BatchPending
        from oab_bench.judge.panel.runs import judge_beside

        try:
            panel_records = judge_beside(s.judge, s.judge_cache, *panel, records, out, access=s.cache_access)
        except BatchPending as e:  # --judge-batch-wait ran out: the batches keep running
            print(f"oab-bench run: the panel: {e}", file=sys.stderr)
            print(
                f"oab-bench run: answers and judgments are kept: resume with: {s.resume_command()}",
                file=sys.stderr,
            )
            return 3
    figures = task_figures([QuestionResult.model_validate(j.sample()) for j in judged])
    empty = [j.question_id for j in judged if j.status == "no_answer"]
    failed = [
        f"{j.question_id} ({j.status}: {j.error or ''})"
        for j in judged
        if j.status not in ("ok", "no_answer")
    ]
    summary = {
        "model": s.model,
        "api_base": s.api_base,
        "judge_model": s.judge.judge_model,
        "results": str(results),
        "figures": {k: None if math.isnan(v) else v for k, v in figures.items()},  # NaN: unknown
        "cost_usd_total": total_cost([j.cost_usd for j in judged]),
        "empty_answers": empty,
        "failed_judgments": failed,
    }
    board = None
    if panel is not None:  # the panel's ranking goes into the summary: its leaderboard first
        from oab_bench.judge.panel.runs import rank_line, ranking

        board, tables = leaderboard(out)
        summary["panel"] = ranking(tables, s.model, panel[0], out, panel_records)
        failed = failed + [f"panel: {x}" for x in summary["panel"]["failed_judgments"]]
    task_run.checkpoint()  # a signal now: stopped, not finished
    write_atomic(out / SUMMARY_FILE, json.dumps(summary, indent=2, ensure_ascii=False))
    finished.append(out / SUMMARY_FILE)
    print(board if board is not None else leaderboard(out)[0])
    print(
        f"judge cost: {dollars(summary['figures']['cost_usd'])} this run, {dollars(summary['cost_usd_total'])} in all",
        file=sys.stderr,
    )
    if panel is not None:
        print(rank_line(summary["panel"], s.model), file=sys.stderr)
    from oab_bench.judge.audit.write import write_run_report
    from oab_bench.judge.validity.jury_report import jury_lines

    for line in jury_lines(records):  # a jury: its members' costs and agreement
        print(line, file=sys.stderr)
    write_run_report(out, s.dataset)  # report.html: never fails the run
    print(f"results: {results}\njudgments: {out / JUDGMENTS_FILE}", file=sys.stderr)
    task_run.checkpoint()
    if empty:
        print(
            f"oab-bench run: {len(empty)} empty answers (failed generations?): {', '.join(empty)}",
            file=sys.stderr,
        )
        if s.api_base:
            print(f"oab-bench run: {empty[0]}: {why_empty(s, empty[0])}", file=sys.stderr)
    if failed:
        print(f"oab-bench run: {len(failed)} failed judgments: {'; '.join(failed)}", file=sys.stderr)
    if empty or failed:
        print("oab-bench run: the exams of these questions have no score (see coverage)", file=sys.stderr)
    return 1 if empty or failed else 0


def batches_open(folder: Path | None) -> bool:
    """The judgment cache's batch log has batches still to collect ("they go on running" is true)."""
    from oab_bench.judge.grading.batch.state import BatchLog

    return folder is not None and (folder / BATCH_FILE).is_file() and bool(BatchLog(folder).open_keys())


def dollars(cost: float | None) -> str:
    return "unknown (no price)" if cost is None else f"${cost:.4f}"


def why_empty(s: RunSettings, question_id: str) -> str:
    """The failed question asked once more, and what the server says: lighteval drops the text of
    an error (a 400 from vLLM, say) and returns an empty answer."""
    import httpx

    from oab_bench.judge.generation.task_prompt import candidate_messages

    row = next((r for r in selected_rows(s) if r.question_id == question_id), None)
    if row is None:
        return "not asked again (not in the selected tasks)"
    body = {
        "model": s.model.removeprefix("openai/"),
        "messages": candidate_messages(row),
        "max_tokens": s.max_new_tokens,
    }
    headers = {"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY') or 'EMPTY'}"}
    try:
        resp = httpx.post(
            f"{s.api_base.rstrip('/')}/chat/completions", json=body, headers=headers, timeout=60
        )
    except httpx.HTTPError as e:
        return f"asked again: no answer ({type(e).__name__}: {e})"
    if resp.status_code >= 400:
        return redact(f"asked again, the server answered {resp.status_code}: {resp.text[:500]}")
    return "asked again, the server answered (the failure was transient, or the answer was empty)"
