"""`oab-bench run`: every check (run_checks.py), local vLLM servers, lighteval's pipeline in a thread the main
thread watches, then summary, leaderboard row, report and exit code (lighteval 0.13 exits 0 if every call failed)."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import secrets
import shutil
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

import yaml

from oab_bench import conventions, folders
from oab_bench.conventions import JUDGMENTS_FILE, PANEL_JUDGMENTS_FILE, SUMMARY_FILE
from oab_bench.judge.generation import run_checks as checks
from oab_bench.judge.generation import task_run
from oab_bench.judge.generation.run_checks import RUN, run_judge, stored_answers, stored_state
from oab_bench.judge.generation.run_settings import RunSettings, selected_rows
from oab_bench.judge.generation.vllm_server import start_local_servers
from oab_bench.judge.grading.loop import Stopped
from oab_bench.judge.output import write_atomic
from oab_bench.judge.redact import redact

HUNG: list[bool] = []  # calls outlived the grace after a stop: the process exits without them


def run(s: RunSettings) -> int:
    finished: list[Path] = []  # the summary, once written: a later signal finds the run done
    with task_run.stop_signals():
        try:
            return steps(s, finished)
        except KeyboardInterrupt as e:
            name = e.signame if isinstance(e, Stopped) else "SIGINT"
            if finished:
                said = f" after the run had finished: {finished[0]}"
            else:
                said = f"; {kept(s)}; resume with: {s.resume_command()}"
            print(f"oab-bench run: stopped ({name}){said}", file=sys.stderr)
            if HUNG:  # calls that outlived the grace are not waited for
                sys.stderr.flush()
                os._exit(128 + signal.Signals[name])
            return 128 + signal.Signals[name]


def steps(s: RunSettings, finished: list[Path]) -> int:
    checks.check_keys()
    checks.check_places(s)
    s = checks.resolve_references(s)
    task_run.checkpoint()
    panel = None
    if s.panel:  # fetched, read and checked before any call
        from oab_bench.judge.panel.published import prepare

        panel = prepare(s.panel, selected_rows(s), {s.model, s.litellm_model}, "run")
    if s.estimate:
        return estimate(s, panel)
    checks.check_output(s)
    s = checks.check_caches(s, panel)
    checks.check_remote(s, panel)  # before any local server loads
    task_run.checkpoint()
    folders.claim(s.output_dir, RUN)  # not before: a refused run leaves nothing behind
    with contextlib.ExitStack() as stack:  # local servers stop however the run ends
        s, servers = start_local_servers(s, stack)
        s = checks.check_context(s)
        task_run.checkpoint()
        for stale in (JUDGMENTS_FILE, PANEL_JUDGMENTS_FILE):  # an earlier run's are not this one's
            (s.output_dir / stale).unlink(missing_ok=True)
        t0 = time.time()
        judged, errors = evaluate(s, servers)
        found = [p for p in (s.output_dir / "results").rglob("results_*.json") if p.stat().st_mtime >= t0]
        results = max(found, key=lambda p: p.stat().st_mtime, default=None)  # this run's, not an older one's
        return summarize(s, judged, errors, results, panel, finished)


def kept(s: RunSettings) -> str:
    """What an interrupted run kept, in words."""
    answers, judges = s.answer_cache or "no answer store", s.judge_cache
    try:
        state = stored_state(s)
    except BaseException:  # the dataset does not load, a second Ctrl-C: the line without numbers
        return f"answers kept in {answers}, judgments in {judges or '(no judgment cache)'}"
    off = ", judgments not kept (--judge-cache off)"
    judged = f" and {state.judged} judgments ({judges})" if judges else off
    return f"kept {state.answered} of {state.questions} answers ({answers}){judged}"


def estimate(s: RunSettings, panel) -> int:
    """`run --estimate`: the judging bill, stored answers judged as they are, answers still to generate
    assumed of DEFAULT_ANSWER_TOKENS; calls and writes nothing."""
    from oab_bench.judge.grading import bill
    from oab_bench.judge.grading.judgment_store import JudgmentStore

    pairs, missing = stored_answers(s)
    judge = run_judge(s.judge, JudgmentStore(s.judge_cache, access="read"))
    est = bill.estimate(judge, pairs + bill.placeholder_pairs(missing, s.litellm_model, judge))
    est.generations_cached, est.generations_to_pay = len(pairs), len(missing)
    note = f"Answers to generate assumed of {bill.DEFAULT_ANSWER_TOKENS} tokens." if missing else ""
    if panel is None:
        return bill.print_estimate(est, s.format, note)
    from oab_bench.judge.panel.judging import print_with_panel

    return print_with_panel(est, bill.estimate(judge, panel[1]), panel[0], s.format, note)


def evaluate(s: RunSettings, servers: list) -> tuple[list, dict[str, str]]:
    """lighteval's pipeline, stopped by a signal, a dead local server or a permanent candidate error:
    every judgment made, and the last error of each candidate prompt that failed."""
    from oab_bench.judge.generation.answer_store import AnswerStore
    from oab_bench.judge.grading.judgment_store import JudgmentStore

    judge = run_judge(s.judge, JudgmentStore(s.judge_cache, access=s.cache_access))
    run = task_run.TaskRun(s.dataset, s.max_new_tokens, judge, s.model)
    if s.answer_cache:
        run.answers = AnswerStore(s.answer_cache, read=not s.fresh_answers, access=s.cache_access)
    # lighteval's response cache, fresh: 0.13 keys it by model and task only and replays failed calls
    cache = s.output_dir / f".lighteval-cache-{secrets.token_hex(4)}"
    cache.mkdir()  # (mkdtemp's 0700 would shut a teammate out of what a killed run leaves)
    write_atomic(s.output_dir / "model_config.yaml", yaml.safe_dump(model_config(s, cache), sort_keys=False))
    failed: list[BaseException] = []
    worker = threading.Thread(target=pipeline, args=(s, failed), name="oab-bench-lighteval", daemon=True)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(Redacted("[%(asctime)s] [%(levelname)8s]: %(message)s (%(filename)s:%(lineno)s)"))
    logging.getLogger().addHandler(handler)
    logging.getLogger("lighteval").setLevel(logging.INFO)
    print(f"running: lighteval's pipeline on {', '.join(s.tasks)}, in this process", file=sys.stderr)
    task_run.start(run)
    try:
        with contextlib.chdir(s.output_dir):  # where lighteval and litellm write their own files
            worker.start()
            try:
                while worker.is_alive() and not task_run.SIGNALLED and not task_run.REFUSED:
                    for check_alive in servers:
                        check_alive()  # ServerError, with its log's last lines
                    worker.join(0.2)
            finally:
                task_run.STOPPING.set()  # whatever still runs starts no new call
                worker.join(conventions.CHILD_STOP_GRACE_S)
                if worker.is_alive():
                    HUNG.append(True)
    finally:
        logging.getLogger().removeHandler(handler)
        refused, errors = task_run.REFUSED[:1], dict(task_run.ERRORS)
        task_run.start(None)
        shutil.rmtree(cache, ignore_errors=True)
    task_run.checkpoint()  # a signal: Stopped
    if refused:
        raise ValueError(f"the candidate's server refused the request, so the run stopped: {refused[0]}")
    if failed and not isinstance(failed[0], Exception):
        raise failed[0]
    if failed:  # lighteval's own failure: its traceback, then no results (summarize says so, exit 1)
        print(redact("".join(traceback.format_exception(failed[0]))), file=sys.stderr)
    return run.judged, errors


def pipeline(s: RunSettings, failed: list[BaseException]) -> None:
    """As `lighteval endpoint litellm` builds it, on the task file with only our tasks loaded."""
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.endpoints.litellm_model import LiteLLMModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    from oab_bench.judge.generation.lighteval_compat import load_only_custom_tasks

    try:
        load_only_custom_tasks()
        params = PipelineParameters(ParallelismManager.NONE, custom_tasks_directory="oab_bench_task")
        params.max_samples = s.max_samples
        tracker = EvaluationTracker(output_dir=str(s.output_dir), save_details=True)
        config = LiteLLMModelConfig.from_path(str(s.output_dir / "model_config.yaml"))
        run = Pipeline(",".join(f"{t}|0" for t in s.tasks), params, tracker, model_config=config)
        run.evaluate()
        run.save_and_push_results()
    except BaseException as e:  # the main thread says what it was
        failed.append(e)


def model_config(s: RunSettings, cache: Path) -> dict:
    """lighteval's model config: never an api_key from the environment (lighteval copies it into the
    results JSON); a local server without one gets a dummy."""
    params = dict(model_name=s.model, max_model_length=s.max_model_length, concurrent_requests=s.concurrency)
    params |= dict(cache_dir=str(cache), api_max_retry=s.candidate_retries, timeout=s.candidate_timeout)
    params |= dict(api_retry_sleep=s.candidate_retry_sleep, generation_parameters=s.generation_parameters())
    params |= {k: v for k, v in (("base_url", s.api_base), ("api_key", s.dummy_key)) if v}
    return {"model_parameters": params}


class Redacted(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def summarize(s: RunSettings, judged: list, errors: dict, results: Path | None, panel, finished: list) -> int:
    """The judgments and the summary written whole (then the run counts as finished), the leaderboard
    row, the report, and the exit code."""
    from oab_bench.judge.aggregate import QuestionResult, task_figures
    from oab_bench.judge.audit.write import write_run_report
    from oab_bench.judge.grading.batch.state import BatchLog
    from oab_bench.judge.grading.runner import dump_jsonl
    from oab_bench.judge.leaderboard.inputs import load_records
    from oab_bench.judge.leaderboard.tables import build_tables, render_markdown
    from oab_bench.judge.records import total_cost
    from oab_bench.judge.validity.jury_report import jury_lines

    out, say = s.output_dir, lambda line: print(f"oab-bench run: {line}", file=sys.stderr)
    if results is None or not judged:
        say(f"error: lighteval left no results or judgments in {out}")
        batches = s.judge_cache / conventions.BATCH_FILE if s.judge.batch and s.judge_cache else None
        if batches and batches.is_file() and BatchLog(s.judge_cache).open_keys():
            resume = f"answers are kept: resume with: {s.resume_command()}"
            say(f"the judge's batches go on running (recorded in {batches}); {resume}")
        return 1
    write_atomic(out / JUDGMENTS_FILE, dump_jsonl(judged))
    records = [j.record() for j in judged]
    figures = task_figures([QuestionResult.model_validate(j.sample()) for j in judged])
    empty = [j.question_id for j in judged if j.status == "no_answer"]
    bad = [j for j in judged if j.status not in ("ok", "no_answer")]
    failed = [f"{j.question_id} ({j.status}: {j.error or ''})" for j in bad]
    summary = dict(model=s.model, api_base=s.api_base, judge_model=s.judge.judge_model, results=str(results))
    summary["figures"] = {k: None if math.isnan(v) else v for k, v in figures.items()}  # NaN: unknown
    summary["cost_usd_total"] = total_cost([j.cost_usd for j in judged])
    summary |= dict(empty_answers=empty, failed_judgments=failed)
    if panel is not None:  # judged after the candidate, ranked beside it in the summary
        from oab_bench.judge.grading.batch.submit import BatchPending
        from oab_bench.judge.panel.judging import judge_beside, rank_line, ranking

        try:
            panel_records = judge_beside(s.judge, s.judge_cache, *panel, records, out, access=s.cache_access)
        except BatchPending as e:  # --judge-batch-wait ran out: the batches keep running
            say(f"the panel: {e}")
            say(f"answers and judgments are kept: resume with: {s.resume_command()}")
            return 3
    judged_files = [out / JUDGMENTS_FILE] + [out / PANEL_JUDGMENTS_FILE] * (panel is not None)
    tables, notes = build_tables([r for f in judged_files for r in load_records(f)])
    if panel is not None:
        summary["panel"] = ranking(tables, s.model, panel[0], out, panel_records)
        failed = failed + [f"panel: {x}" for x in summary["panel"]["failed_judgments"]]
    task_run.checkpoint()  # a signal now: stopped, not finished
    write_atomic(out / SUMMARY_FILE, json.dumps(summary, indent=2, ensure_ascii=False))
    finished.append(out / SUMMARY_FILE)
    print(render_markdown(tables, notes))
    costs = (summary["figures"]["cost_usd"], summary["cost_usd_total"])
    paid, total = (f"${x:.4f}" if x is not None else "unknown (no price)" for x in costs)
    print(f"judge cost: {paid} this run, {total} in all", file=sys.stderr)
    if panel is not None:
        print(rank_line(summary["panel"], s.model), file=sys.stderr)
    for line in jury_lines(records):  # a jury: its members' costs and agreement
        print(line, file=sys.stderr)
    write_run_report(out, s.dataset)  # report.html: never fails the run
    print(f"results: {results}\njudgments: {out / JUDGMENTS_FILE}", file=sys.stderr)
    task_run.checkpoint()
    if empty:
        from oab_bench.judge.generation.task_prompt import candidate_prompt

        say(f"{len(empty)} empty answers (failed generations?): {', '.join(empty)}")
        for row in (r for r in selected_rows(s) if r.question_id in empty):
            error = errors.get(candidate_prompt(row))  # lighteval drops it: ours kept it
            said = f"its last call failed: {error}" if error else "the answer came back empty"
            say(f"{row.question_id}: {said}")
    if failed:
        say(f"{len(failed)} failed judgments: {'; '.join(failed)}")
    if empty or failed:
        say("the exams of these questions have no score (see coverage)")
    return 1 if empty or failed else 0
