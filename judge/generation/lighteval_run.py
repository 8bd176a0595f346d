"""lighteval in `oab-bench run`'s own process: its public Python API (`Pipeline`, `PipelineParameters`,
`EvaluationTracker`, `LiteLLMModelConfig`, as `lighteval endpoint litellm` builds them) on the task
file, with only our tasks loaded and the task handed the run's settings (task_run.py).

The pipeline runs in a thread; the main thread watches it. A signal (recorded, task_run.py), a
local server that dies or a permanent error from the candidate stops it: no new candidate call or
judgment starts, those in flight finish and are stored within the grace period, and the run then
says why. Each run gets a fresh lighteval response cache (lighteval 0.13 keys it by model and task
only and replays failed calls as empty answers), removed when the run ends; lighteval works in the
output folder, so whatever it and litellm write lands there.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import shutil
import sys
import threading
import traceback
from pathlib import Path

import yaml

from oab_bench.conventions import CHILD_STOP_GRACE_S
from oab_bench.judge.generation import task_run
from oab_bench.judge.generation.run_checks import run_judge
from oab_bench.judge.generation.run_settings import RunSettings
from oab_bench.judge.output import write_atomic
from oab_bench.judge.redact import redact

HUNG: list[bool] = []  # calls outlived the grace after a stop: the process must exit without them


class CandidateRefused(ValueError):
    """The candidate's provider answered with a permanent error (401, 403, 404, a hopeless 400)."""


class _Redacted(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def model_config(s: RunSettings, cache: Path) -> dict:
    """What lighteval's litellm client is given (never an api_key from the environment: lighteval
    copies it into the results JSON; a local server without one gets a dummy)."""
    import os

    params = {
        "model_name": s.model,
        "max_model_length": s.max_model_length,
        "concurrent_requests": s.concurrency,
        "cache_dir": str(cache),
        "api_max_retry": s.candidate_retries,
        "api_retry_sleep": s.candidate_retry_sleep,
        "timeout": s.candidate_timeout,
        "generation_parameters": s.generation_parameters(),
    }
    if s.api_base:
        params["base_url"] = s.api_base
        if s.model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
            params["api_key"] = "EMPTY"  # local OpenAI-compatible servers (vLLM) take any key
    return {"model_parameters": params}


def evaluate(s: RunSettings, servers: list) -> list:
    """Generate and judge the run's tasks in lighteval's pipeline; every judgment made."""
    from oab_bench.judge.generation.answer_store import AnswerStore
    from oab_bench.judge.grading.judgment_store import JudgmentStore

    judge = run_judge(s.judge, JudgmentStore(s.judge_cache, access=s.cache_access))
    answers = None
    if s.answer_cache is not None:
        answers = AnswerStore(s.answer_cache, read=not s.fresh_answers, access=s.cache_access)
    run = task_run.TaskRun(s.dataset, s.max_new_tokens, judge, s.model, answers)
    cache = s.output_dir / f".lighteval-cache-{secrets.token_hex(4)}"  # fresh: no replayed failures
    cache.mkdir()  # (mkdtemp's 0700 would shut a teammate out of what a killed run leaves)
    config = write_atomic(
        s.output_dir / "model_config.yaml", yaml.safe_dump(model_config(s, cache), sort_keys=False)
    )
    failed: list[BaseException] = []

    def pipeline() -> None:
        try:
            run_pipeline(s, config)
        except BaseException as e:  # the main thread says what it was
            failed.append(e)

    task_run.start(run)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Redacted("[%(asctime)s] [%(levelname)8s]: %(message)s (%(filename)s:%(lineno)s)"))
    logging.getLogger().addHandler(handler)
    logging.getLogger("lighteval").setLevel(logging.INFO)
    print(f"running: lighteval's pipeline on {', '.join(s.tasks)} in this process", file=sys.stderr)
    worker = threading.Thread(target=pipeline, name="oab-bench-lighteval", daemon=True)
    try:
        with contextlib.chdir(s.output_dir):
            worker.start()
            try:
                while worker.is_alive() and not task_run.SIGNALLED and not task_run.REFUSED:
                    for server in servers:
                        server.check_alive()  # ServerError, with its log's last lines
                    worker.join(0.2)
            finally:
                task_run.STOPPING.set()  # whatever still runs: no new call
                worker.join(CHILD_STOP_GRACE_S)
                if worker.is_alive():
                    HUNG.append(True)
    finally:
        logging.getLogger().removeHandler(handler)
        task_run.start(None)
        shutil.rmtree(cache, ignore_errors=True)
    task_run.checkpoint()  # a signal: Stopped
    if task_run.REFUSED:
        raise CandidateRefused(
            f"the candidate's server refused the request, so the run stopped: {task_run.REFUSED[0]}"
        )
    if failed and not isinstance(failed[0], Exception):
        raise failed[0]
    if failed:  # lighteval's own failure: its traceback, then no results (the run says so, exit 1)
        trace = "".join(traceback.format_exception(failed[0]))
        print(redact(trace), file=sys.stderr)
    return run.judged


def run_pipeline(s: RunSettings, config: Path) -> None:
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.endpoints.litellm_model import LiteLLMModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    from oab_bench.judge.generation.lighteval_compat import load_only_custom_tasks

    load_only_custom_tasks()
    params = PipelineParameters(
        launcher_type=ParallelismManager.NONE,
        custom_tasks_directory="oab_bench_task",
        max_samples=s.max_samples,
    )
    pipeline = Pipeline(
        tasks=",".join(f"{t}|0" for t in s.tasks),
        pipeline_parameters=params,
        evaluation_tracker=EvaluationTracker(output_dir=str(s.output_dir), save_details=True),
        model_config=LiteLLMModelConfig.from_path(str(config)),
    )
    pipeline.evaluate()
    pipeline.save_and_push_results()


def newest_results(out: Path, since: float) -> Path | None:
    """This run's results JSON: an older run's, left in the same folder, must not stand in for it."""
    found = [p for p in (out / "results").rglob("results_*.json") if p.stat().st_mtime >= since]
    return max(found, key=lambda p: p.stat().st_mtime, default=None)
