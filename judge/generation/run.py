"""`oab-bench run`: generate with lighteval's litellm backend, judge, score, print the leaderboard row.

lighteval 0.13 has sharp edges (docs/lighteval-and-vllm.md): its response cache
is keyed by model and task only and replays failed calls as empty answers, and a run
whose calls all failed still exits 0. So each run gets a fresh lighteval cache, and this
command exits non-zero, naming the questions, when an answer is empty or a judgment failed.

Never pay twice: good answers are kept in the answer store (answer_store.py; served
inside lighteval by lighteval_compat.py) and judgments in the judgment cache, so a rerun
or a resume pays only for what is missing. Never wait on a dead end: tasks, keys and one
minimal real call per remote model are checked before any vLLM server starts. Nothing
outlives the run (processes.py): however it ends, the lighteval child and the vLLM
servers are stopped, and an interrupted run says what it kept and how to resume.

Its steps, each in its own module: the arguments read as settings (run_settings.py), the caches
checked and counted (run_caches.py), the remote checks (run_preflight.py), the local vLLM servers
(local_servers.py), the lighteval child (lighteval_child.py), and what the run writes and says
once the child has ended (run_summary.py). This module runs them in order and turns a signal into
the line and the exit code an interrupted run ends with.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

from oab_bench import folders
from oab_bench.conventions import JUDGMENTS_FILE, PANEL_JUDGMENTS_FILE, RUN_MARKER, SUMMARY_FILE
from oab_bench.judge.generation.lighteval_child import run_lighteval
from oab_bench.judge.generation.local_servers import start_local_servers
from oab_bench.judge.generation.places import check_hf_caches, check_output_folder
from oab_bench.judge.generation.preflight import check_tasks, drop_empty_keys, trim_keys
from oab_bench.judge.generation.processes import Stopped, raise_if_stopped, stop_signals
from oab_bench.judge.generation.references import resolve_references
from oab_bench.judge.generation.run_caches import (
    check_cache_folders,
    check_caches,
    run_answers,
    run_judge,
    stopped_line,
)
from oab_bench.judge.generation.run_preflight import check_remote, preflight
from oab_bench.judge.generation.run_settings import (
    judge_cache,
    judge_settings,
    litellm_name,
    selected_rows,
)
from oab_bench.judge.generation.run_summary import summarize
from oab_bench.judge.settings import JudgeSettings


def run(args: argparse.Namespace) -> int:
    check_tasks(args.tasks)  # a typo fails now, not 20 s into lighteval
    for name in drop_empty_keys():
        print(f"oab-bench run: note: {name} is set but empty: treated as not set", file=sys.stderr)
    trim_keys()
    settings = judge_settings(args)  # a bad setting fails here, before any generation
    check_cache_folders(args)  # a cache given as a file: named by its flag, before the dataset is read
    check_hf_caches(args.dataset)  # the dataset is read (and a raw one built) under HF_HOME
    resolve_references(args, settings)  # dataset, editions, Batch API: now, not as lighteval's traceback
    panel = run_panel(args)  # --panel: fetched, read and checked before any call
    if getattr(args, "estimate", False):  # the judging bill, before generating anything
        from oab_bench.judge.generation.run_estimate import estimate_run
        from oab_bench.judge.grading.judgment_store import JudgmentStore

        rows, texts = run_answers(args)
        judge = run_judge(
            settings, JudgmentStore(judge_cache(args), access="read")
        )  # an estimate writes nothing
        return estimate_run(judge, litellm_name(args.model), rows, texts, args.format, panel)
    out = Path(args.output_dir).resolve()
    # a run replaces files in it: never in someone else's folder (oab_bench/folders.py)
    folders.check_folder(out, RUN, "--output-dir", args.output_dir)
    check_output_folder(out, args.output_dir)  # the task writes judgments.jsonl last: fail now, not then
    args.read_only_caches = check_caches(args, settings, panel)
    state = argparse.Namespace(args=args, settings=settings)
    try:
        with stop_signals(), contextlib.ExitStack() as servers:  # local servers stop however the run ends
            check_remote(args, settings, panel)  # before any local server loads
            folders.claim(out, RUN)  # not before: a refused run leaves nothing behind
            args, settings = start_local_servers(args, settings, out, servers)
            state.args, state.settings = args, settings
            preflight(args, settings)
            return generate_and_judge(args, settings, out, state, panel)
    except KeyboardInterrupt as e:
        signame = e.signame if isinstance(e, Stopped) else "SIGINT"
        if getattr(state, "finished", False):  # the summary was written: nothing to resume
            print(
                f"oab-bench run: stopped ({signame}) after the run had finished: {out / SUMMARY_FILE}",
                file=sys.stderr,
            )
        else:
            print(stopped_line(state.args, state.settings, signame), file=sys.stderr)
        return 128 + {"SIGINT": 2, "SIGHUP": 1}.get(signame, 15)


def run_panel(args: argparse.Namespace):
    """(Panel, its (row, answer) pairs) for --panel, None without it. A candidate named as a panel
    model, by its name or the one litellm gets, is an error naming both."""
    if not getattr(args, "panel", None):
        return None
    from oab_bench.judge.panel.runs import prepare

    return prepare(
        args.panel,
        selected_rows(args.dataset, args.tasks, args.max_samples),
        {args.model, litellm_name(args.model)},
    )


RUN = folders.Writer("oab-bench run", RUN_MARKER)


def generate_and_judge(
    args: argparse.Namespace,
    settings: JudgeSettings,
    out: Path,
    state: argparse.Namespace | None = None,
    panel=None,
) -> int:
    """lighteval generates and judges in its child (lighteval_child.py); we write the summary (then
    `state.finished`), the leaderboard row and the report (run_summary.py)."""
    raise_if_stopped()  # a signal during the preflight whose Stopped was lost: nothing to start
    (out / JUDGMENTS_FILE).unlink(missing_ok=True)
    (out / PANEL_JUDGMENTS_FILE).unlink(missing_ok=True)  # an earlier run's panel is not this one's
    started = time.time()
    returncode = run_lighteval(args, settings, out)
    raise_if_stopped()  # the child ended as we were stopped: stopped, not finished
    return summarize(args, settings, out, started, returncode, state, panel)
