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
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

import yaml

from oab_bench import folders
from oab_bench.conventions import (
    CHILD_STOP_GRACE_S,
    JUDGMENTS_FILE,
    PANEL_JUDGMENTS_FILE,
    RUN_MARKER,
    SUMMARY_FILE,
)
from oab_bench.dataset_builder.schema import dataset_source
from oab_bench.dataset_builder.source import read_objects
from oab_bench.judge.aggregate import QuestionResult, task_figures
from oab_bench.judge.generation.answer_store import CACHE_ENV
from oab_bench.judge.generation.defaults import API_CONCURRENCY, DEFAULT_MAX_MODEL_LENGTH, LOCAL_CONCURRENCY
from oab_bench.judge.generation.lighteval_compat import (
    PERMANENT_EXIT,
    PERMANENT_PREFIX,
    ensure_offline_safe,
)
from oab_bench.judge.generation.places import (
    READ_ONLY_ENV,
    cache_name,
    check_cache,
    check_hf_caches,
    check_output_folder,
    check_read_only,
)
from oab_bench.judge.generation.preflight import (
    check_credentials,
    check_max_new_tokens,
    check_prompts_fit,
    check_reachable,
    check_tasks,
    drop_empty_keys,
    server_max_model_len,
    trim_keys,
)
from oab_bench.judge.generation.processes import (
    Stopped,
    die_with_parent,
    end_reaper,
    held_stops,
    kill_group,
    raise_if_stopped,
    reap_if_orphaned,
    stop_group,
    stop_signals,
)
from oab_bench.judge.generation.references import dataset_argument, resolve_references
from oab_bench.judge.generation.vllm_server import VllmServer, served_name, vllm_target
from oab_bench.judge.grading.check_call import check_call, check_judges
from oab_bench.judge.grading.judgment_store import StoreError, check_folder
from oab_bench.judge.output import write_atomic
from oab_bench.judge.redact import redact
from oab_bench.judge.settings import JudgeSettings, env_var, member_settings, settings_env, settings_from

DEFAULT_JUDGE = "openai/gpt-5.2"


def task_file() -> str:
    spec = importlib.util.find_spec("oab_bench_task")
    if spec is None or not spec.origin:
        raise FileNotFoundError("oab_bench_task.py is not importable: install the project (pip install -e .)")
    return spec.origin


def task_spec(tasks: str) -> str:
    return ",".join(t if "|" in t else f"{t}|0" for t in (x.strip() for x in tasks.split(",")) if t)


def model_config(args: argparse.Namespace, cache_dir: Path) -> dict:
    params: dict = {
        "model_name": args.model,
        "max_model_length": args.max_model_length,
        "concurrent_requests": args.concurrency,
        "cache_dir": str(cache_dir),
        "api_max_retry": args.candidate_retries,
        "api_retry_sleep": args.candidate_retry_sleep,
        "timeout": args.candidate_timeout,
        "generation_parameters": {"temperature": args.temperature}
        | ({"seed": args.seed} if args.seed is not None else {}),
    }
    if args.api_base:
        params["base_url"] = args.api_base
    return {"model_parameters": params}  # never an api_key: lighteval copies it into the results JSON


def judge_settings(args: argparse.Namespace) -> JudgeSettings:
    """Flags over OAB_JUDGE_* over defaults; the judge defaults to upstream's recommended GPT-5.2."""
    settings = settings_from(args, os.environ, prefix="judge-", defaults={"judge_model": DEFAULT_JUDGE})
    members = member_settings(settings)
    if len(members) > 1 and any(vllm_target(m.judge_model) for m in members):
        raise ValueError(
            "a jury member cannot be vllm:...: start its server yourself (python -m "
            "vllm.entrypoints.openai.api_server) and name it openai/<served name> with --judge-api-base"
        )
    return settings


def child_env(args: argparse.Namespace, out: Path, settings: JudgeSettings | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["OAB_BENCH_DATASET"] = dataset_source(args.dataset or dataset_argument(args)[0])  # resolved by run()
    if Path(env["OAB_BENCH_DATASET"]).is_absolute():  # a local folder: nothing to fetch
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("HF_DATASETS_OFFLINE", "1")
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["OAB_BENCH_GENERATION_SIZE"] = str(args.max_new_tokens)
    env["OAB_CANDIDATE_MODEL"] = args.model
    env["OAB_JUDGE_OUTPUT"] = str(out / JUDGMENTS_FILE)
    for var, value in settings_env(settings or judge_settings(args)).items():
        if value is None:
            env.pop(var, None)
        else:
            env[var] = value
    judges = judge_cache(args)
    env["OAB_JUDGE_CACHE"] = str(judges) if judges else "off"  # absolute: lighteval runs in `out`
    answers = answer_cache(args)
    env["OAB_ANSWER_CACHE"] = str(answers) if answers else "off"
    env.pop("OAB_FRESH_ANSWERS", None)
    if getattr(args, "fresh_answers", False):
        env["OAB_FRESH_ANSWERS"] = "1"
    env.pop(READ_ONLY_ENV, None)
    if getattr(args, "read_only_caches", False):  # a read-only cache the run goes on with: serve it
        env[READ_ONLY_ENV] = "1"
    if args.api_base and args.model.startswith("openai/") and not env.get("OPENAI_API_KEY"):
        env["OPENAI_API_KEY"] = "EMPTY"  # local OpenAI-compatible servers (vLLM) take any key
    return env


class CandidateRefused(ValueError):
    """The candidate's provider answered with a permanent error (401, 403, 404, a hopeless 400)."""


def run_redacted(cmd: list[str], *, env: dict[str, str], cwd: Path, watch: list[VllmServer] = ()) -> int:
    """Run `cmd`, passing its output on with every API key masked (lighteval logs raw API errors).

    The child has its own process group and dies with us. If a server in `watch` dies meanwhile,
    stop `cmd` at once: lighteval would retry a dead server for many minutes and then report
    empty answers. On Ctrl-C, SIGTERM or SIGHUP the child gets SIGTERM (it finishes and keeps
    its calls in flight, lighteval_compat.py) and SIGKILL after the grace period; its
    output (a traceback) is no longer shown. A permanent candidate error becomes CandidateRefused.
    """
    with held_stops():  # a signal now is raised below, once the child is ours to stop
        proc = subprocess.Popen(
            cmd,
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent(ctrl_c=True),
        )
        reaper = reap_if_orphaned(proc, grace=CHILD_STOP_GRACE_S + 5)  # if we are SIGKILLed and it hangs
    quiet = threading.Event()
    refused: list[str] = []

    def pump(src, dst) -> None:
        for raw in iter(src.readline, b""):
            line = redact(raw.decode("utf-8", errors="replace"))
            if line.startswith(PERMANENT_PREFIX):
                refused.append(line[len(PERMANENT_PREFIX) :].strip())
            if not quiet.is_set():
                dst.write(line)
                dst.flush()

    threads = [
        threading.Thread(target=pump, args=(proc.stdout, sys.stdout), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, sys.stderr), daemon=True),
    ]
    try:
        for t in threads:
            t.start()
        while (code := proc.poll()) is None:
            raise_if_stopped()
            for server in watch:
                server.check_alive()  # raises ServerError, with the server's last log lines
            time.sleep(0.2)
    except BaseException:
        quiet.set()
        stop_group(proc, grace=CHILD_STOP_GRACE_S + 5)
        raise
    finally:
        kill_group(proc)  # anything the child left in its group
        end_reaper(reaper)
    for t in threads:
        t.join(timeout=10)
    if code == PERMANENT_EXIT and refused:
        raise CandidateRefused(
            f"the candidate's server refused the request, so the run stopped: {refused[-1]}"
        )
    return code


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
    from oab_bench.judge.leaderboard.formats import render_markdown
    from oab_bench.judge.leaderboard.inputs import load_records
    from oab_bench.judge.leaderboard.tables import build_tables

    records = load_records(out / JUDGMENTS_FILE)
    if (out / PANEL_JUDGMENTS_FILE).is_file():
        records += load_records(out / PANEL_JUDGMENTS_FILE)
    tables, notes = build_tables(records)
    return render_markdown(tables, notes), tables


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
    args.read_only_caches = check_caches(args, settings)
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
        args.panel, selected_rows(args.dataset, args.tasks), {args.model, litellm_name(args.model)}
    )


def check_caches(args: argparse.Namespace, settings: JudgeSettings) -> bool:
    """The answer and judgment caches: ours, readable, and writable or allowed to be read-only
    (True: a read-only cache is used; the child opens its stores so)."""
    if (judges := judge_cache(args)) is not None:  # the task opens the store: its refusal, now
        try:
            check_folder(judges)
        except StoreError as e:
            raise ValueError(f"--judge-cache (OAB_JUDGE_CACHE): {e}") from None
    caches = [
        check_cache(
            "answers", cache_name("--answer-cache", args.answer_cache, CACHE_ENV), answer_cache(args)
        ),
        check_cache("judgments", cache_name("--judge-cache", args.judge_cache, "OAB_JUDGE_CACHE"), judges),
    ]
    return check_read_only(
        [c for c in caches if c is not None],
        lambda: stored_state(args, settings),
        go_on=args.cache_read_only,
        batch=settings.batch,
    )


def _summary_of_an_older_run(out: Path) -> bool:
    """A run folder from before the marker: it holds our summary (model, judge, figures), so a
    rerun there resumes as it always did (and marks it)."""
    return folders.json_with_keys(out / SUMMARY_FILE, {"model", "judge_model", "results", "figures"})


RUN = folders.Writer("oab-bench run", RUN_MARKER, older=_summary_of_an_older_run)


def answer_cache(args: argparse.Namespace) -> Path | None:
    from oab_bench.judge.generation.answer_store import CACHE_ENV, default_cache_dir

    where = getattr(args, "answer_cache", None) or os.environ.get(CACHE_ENV)
    if where and where.lower() == "off":
        return None
    return Path(where).expanduser().resolve() if where else default_cache_dir()


def check_cache_folders(args: argparse.Namespace) -> None:
    """The task opens both stores: their refusals now, naming the flag, not as lighteval's traceback."""
    from oab_bench.judge.generation import answer_store
    from oab_bench.judge.generation.answer_store import CACHE_ENV

    if (judges := judge_cache(args)) is not None:
        try:
            check_folder(judges)
        except StoreError as e:
            raise ValueError(f"--judge-cache (OAB_JUDGE_CACHE): {e}") from None
    if (answers := answer_cache(args)) is not None:
        try:
            answer_store.check_folder(answers)
        except ValueError as e:
            raise ValueError(f"--answer-cache ({CACHE_ENV}): {e}") from None


def judge_cache(args: argparse.Namespace) -> Path | None:
    from oab_bench.judge.grading.judgment_store import default_cache_dir

    where = args.judge_cache if args.judge_cache is not None else os.environ.get("OAB_JUDGE_CACHE")
    if where and where.lower() == "off":
        return None
    return Path(where).expanduser().resolve() if where else default_cache_dir()


def litellm_name(model: str) -> str:
    """The name litellm gets: `vllm:X` becomes `openai/<served name>` (its server's)."""
    target = vllm_target(model)
    return f"openai/{served_name(target)}" if target else model


def selected_rows(dataset: str, tasks: str) -> list:
    """The dataset rows `tasks` ask for (names checked by check_tasks), as the task file selects them."""
    from oab_bench.judge.dataset import load_rows

    names = check_tasks(tasks)
    keep = []
    for row in load_rows(dataset):
        for name in names:
            what = name.partition(":")[2]
            if not what or what == row.area or what == str(row.edition):
                keep.append(row)
                break
    return keep


class Stored(NamedTuple):
    questions: int
    answered: int  # answers stored
    judged: int | None  # questions whose every judgment is stored (None: the judge cache is off)
    answers_missing: int
    judgments_missing: int  # not stored (every judgment of an answer not stored yet)


def run_answers(args: argparse.Namespace) -> tuple[list, list[str | None]]:
    """The questions this run asks and, for each, the answer the answer store already holds for its
    model and generation settings (None: to generate), looked up as the generation will look it up."""
    from lighteval.models.model_input import GenerationParameters

    from oab_bench.judge.generation.answer_store import generation_settings, stored_texts

    rows = selected_rows(args.dataset, args.tasks)
    params = GenerationParameters(**model_config(args, Path())["model_parameters"]["generation_parameters"])
    generation = generation_settings(params.model_dump(exclude_none=True), args.max_new_tokens)
    folder = None if args.fresh_answers else answer_cache(args)
    return rows, stored_texts(folder, litellm_name(args.model), generation, rows)


def run_judge(settings: JudgeSettings, store=None):
    """The judge (jury, repeats) the run's task will make, named as litellm is called (`vllm:X` is
    `openai/<served name>`): the same cache keys."""
    from oab_bench.judge.grading.jury import make_judge

    if vllm_target(settings.judge_model):
        settings = settings.model_copy(update={"judge_model": litellm_name(settings.judge_model)})
    return make_judge(settings, store)


def stored_progress(args: argparse.Namespace, settings: JudgeSettings) -> tuple[int, int, int | None] | None:
    """(questions, answers already stored, judgments of those already cached or None when the judge
    cache is off) for this run; None when that cannot be told (the dataset does not load here)."""
    state = stored_state(args, settings)
    return None if state is None else (state.questions, state.answered, state.judged)


def stored_state(args: argparse.Namespace, settings: JudgeSettings) -> Stored | None:
    """What the caches hold for this run, looked at without creating or writing anything."""
    from lighteval.models.model_input import GenerationParameters

    from oab_bench.judge.answers import Answer, strip_reasoning
    from oab_bench.judge.generation.answer_store import AnswerStore, answer_key, generation_settings
    from oab_bench.judge.generation.task_prompt import candidate_messages
    from oab_bench.judge.grading.grader import Judge
    from oab_bench.judge.grading.judgment_store import JudgmentStore
    from oab_bench.judge.grading.repeats import RepeatJudge

    try:
        rows = selected_rows(args.dataset, args.tasks)
    except Exception:  # lighteval will say what is wrong with the dataset
        return None
    model = litellm_name(args.model)
    folder = answer_cache(args)
    answers = AnswerStore(folder, access="read") if folder and not args.fresh_answers else None
    params = GenerationParameters(**model_config(args, Path())["model_parameters"]["generation_parameters"])
    generation = generation_settings(params.model_dump(exclude_none=True), args.max_new_tokens)
    judges = judge_cache(args)
    members = [
        m.model_copy(update={"judge_model": litellm_name(m.judge_model)}) for m in member_settings(settings)
    ]
    graders = (  # each judgment a question needs has its own key: a jury's members, or each repeat
        [RepeatJudge(members[0], None, k) for k in range(settings.repeats)]
        if settings.repeats > 1
        else [Judge(m) for m in members]
    )
    store = JudgmentStore(judges, access="read") if judges else None
    stored = judged = missing = 0
    for row in rows:
        key = answer_key(model=model, messages=candidate_messages(row), generation=generation)
        answer = answers.get(key) if answers else None
        if answer is None:
            missing += len(graders)
            continue
        stored += 1
        text = Answer(model=model, question_id=row.question_id, turns=[strip_reasoning(answer.texts[0])]).text
        lacking = sum(store is None or store.get(g.key(row, text)) is None for g in graders)
        missing += lacking
        judged += not lacking
    return Stored(len(rows), stored, judged if store is not None else None, len(rows) - stored, missing)


def check_remote(args: argparse.Namespace, settings: JudgeSettings, panel=None) -> None:
    """Keys, servers that answer, and one minimal real call to each remote model that this run
    will call (`--no-check-call` skips it; nothing is called when everything is stored, the
    panel's judgments included)."""
    check_credentials(args.model, args.api_base, settings)
    if not vllm_target(args.model):
        check_reachable(args.api_base, "candidate")
    judges = [m for m in member_settings(settings) if not vllm_target(m.judge_model)]  # a jury: each member
    if judges:
        check_reachable(settings.api_base, "judge")
    if args.no_check_call:
        return
    progress = stored_progress(args, settings)
    questions, answered, judged = progress or (1, 0, None)
    if not vllm_target(args.model) and answered < questions:
        local = args.api_base and args.model.startswith("openai/")  # as child_env: any key will do
        key = (os.environ.get("OPENAI_API_KEY") or "EMPTY") if local else None
        check_call("candidate", args.model, api_base=args.api_base, api_key=key)
    calls_judge = judged is None or judged < questions
    if not calls_judge and panel is not None:  # the panel's judgments: all stored, or some to make
        from oab_bench.judge.panel.runs import pending_in

        calls_judge = pending_in(settings, judge_cache(args), panel[1])
    if calls_judge:
        check_judges(judges)


def stopped_line(args: argparse.Namespace, settings: JudgeSettings, signame: str) -> str:
    """One line: what an interrupted run kept, and the command that resumes it."""
    try:
        progress = stored_progress(args, settings)
    except BaseException:  # a second Ctrl-C, say: the line without numbers
        progress = None
    answers, judges = answer_cache(args), judge_cache(args)
    if progress is None:
        kept = f"answers kept in {answers or '(no answer store)'}, judgments in {judges or '(no judgment cache)'}"
    else:
        questions, answered, judged = progress
        kept = f"kept {answered} of {questions} answers ({answers or 'no answer store'})"
        kept += (
            f" and {judged} judgments ({judges})"
            if judged is not None
            else ", judgments not kept (--judge-cache off)"
        )
    return f"oab-bench run: stopped ({signame}); {kept}; resume with: {resume_command()}"


def resume_command() -> str:
    """This run's own command line (less --fresh-answers: a resume keeps what was generated)."""
    argv = [a for a in sys.argv[1:] if a != "--fresh-answers"]
    return (
        shlex.join(["oab-bench", *argv]) if argv and argv[0] == "run" else "the same `oab-bench run` command"
    )


def start_local_servers(
    args: argparse.Namespace, settings: JudgeSettings, out: Path, stack: contextlib.ExitStack
) -> tuple[argparse.Namespace, JudgeSettings]:
    """`vllm:MODEL` candidate or judge: start vLLM's server (one when both are the same model) and
    point litellm at it; local servers batch continuously, so more requests at a time."""
    args = argparse.Namespace(**vars(args))
    started: dict[str, VllmServer] = {}
    args.local_servers = []

    def server(target: str, extra: str | None) -> VllmServer:
        if target not in started:
            started[target] = stack.enter_context(
                VllmServer(target, out, extra_args=extra or "", start_timeout=args.vllm_start_timeout)
            )
            args.local_servers.append(started[target])
        return started[target]

    candidate = vllm_target(args.model)
    if candidate:
        s = server(candidate, args.vllm_args)
        args.model, args.api_base = f"openai/{s.name}", s.api_base
        args.concurrency = args.concurrency or LOCAL_CONCURRENCY
    judge = vllm_target(settings.judge_model)
    if judge:
        s = server(judge, args.judge_vllm_args if args.judge_vllm_args is not None else args.vllm_args)
        update = {"judge_model": f"openai/{s.name}", "api_base": s.api_base}
        if args.judge_concurrency is None and not os.environ.get(env_var("concurrency")):
            update["concurrency"] = LOCAL_CONCURRENCY
        settings = settings.model_copy(update=update)
    args.concurrency = args.concurrency or API_CONCURRENCY
    return args, settings


def preflight(args: argparse.Namespace, settings: JudgeSettings) -> None:
    """Servers that answer, an answer budget and prompts that fit: fail in seconds, not after an
    hour of retries (keys and remote models were checked by check_remote)."""
    check_reachable(args.api_base, "candidate")
    check_reachable(settings.api_base, "judge")
    served = args.model.removeprefix("openai/")
    server_len = server_max_model_len(args.api_base, served) if args.api_base else None
    if args.max_model_length is not None:
        check_max_new_tokens(args.max_new_tokens, args.max_model_length, "--max-model-length")
    if args.max_model_length is None:
        args.max_model_length = server_len or DEFAULT_MAX_MODEL_LENGTH
    if server_len:
        limit = min(server_len, args.max_model_length)
        check_max_new_tokens(args.max_new_tokens, limit, "server's")
        counted, tight = check_prompts_fit(
            args.api_base, served, candidate_prompts(args.dataset, args.tasks), args.max_new_tokens, limit
        )
        if counted:
            print(f"preflight: {counted} prompts fit in the model's {limit} tokens", file=sys.stderr)
        for line in tight[:10]:
            print(f"preflight: warning: {line}", file=sys.stderr)
        if len(tight) > 10:
            print(f"preflight: warning: ... and {len(tight) - 10} more", file=sys.stderr)


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


def candidate_prompts(dataset: str, tasks: str) -> list[tuple[str, list[dict]]]:
    """(question id, messages) the task will send for `tasks`, as lighteval builds them."""
    from oab_bench.judge.generation.task_prompt import candidate_messages

    return [(row.question_id, candidate_messages(row)) for row in selected_rows(dataset, tasks)]


def batches_running(args: argparse.Namespace) -> Path | None:
    """The judgment cache folder when its batch log has batches still to collect (else None: no
    batch was ever created, or all were collected, and "they go on running" would be untrue)."""
    from oab_bench.conventions import BATCH_FILE
    from oab_bench.judge.grading.batch.state import BatchLog

    folder = judge_cache(args)
    if folder is None or not (folder / BATCH_FILE).is_file():
        return None
    return folder if BatchLog(folder).open_keys() else None


def generate_and_judge(
    args: argparse.Namespace,
    settings: JudgeSettings,
    out: Path,
    state: argparse.Namespace | None = None,
    panel=None,
) -> int:
    """lighteval generates and judges in its child; we write the summary (then `state.finished`), the
    leaderboard row and the report."""
    raise_if_stopped()  # a signal during the preflight whose Stopped was lost: nothing to start
    (out / JUDGMENTS_FILE).unlink(missing_ok=True)
    (out / PANEL_JUDGMENTS_FILE).unlink(missing_ok=True)  # an earlier run's panel is not this one's
    started = time.time()
    ensure_offline_safe()
    cache_dir = out / f".lighteval-cache-{secrets.token_hex(4)}"  # fresh: no replayed failures
    cache_dir.mkdir()  # (mkdtemp's 0700 would shut a teammate out of what a killed run leaves)
    config = write_atomic(
        out / "model_config.yaml", yaml.safe_dump(model_config(args, cache_dir), sort_keys=False)
    )
    # lighteval's own `endpoint` command, started without its other backends (lighteval_endpoint.py)
    cmd = [
        sys.executable,
        "-m",
        "oab_bench.judge.generation.lighteval_endpoint",
        "endpoint",
        "litellm",
        str(config),
        task_spec(args.tasks),
    ]
    cmd += ["--custom-tasks", task_file(), "--output-dir", str(out), "--save-details"]
    if args.max_samples:
        cmd += ["--max-samples", str(args.max_samples)]
    print("running:", " ".join(cmd), file=sys.stderr)
    try:
        # in the output folder: whatever lighteval and litellm write lands there, not in the checkout
        returncode = run_redacted(cmd, env=child_env(args, out, settings), cwd=out, watch=args.local_servers)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)

    raise_if_stopped()  # the child ended as we were stopped: stopped, not finished
    judgments = read_judgments(out / JUDGMENTS_FILE)
    results = newest_results(out, started)
    if returncode != 0 or results is None or not judgments:
        print(
            f"oab-bench run: error: lighteval exited {returncode}; no results or judgments in {out}",
            file=sys.stderr,
        )
        if settings.batch and (batches := batches_running(args)) is not None:  # --judge-batch-wait ran out
            print(
                f"oab-bench run: the judge's batches go on running (recorded in {batches / 'batches.jsonl'}); "
                f"answers are kept: resume with: {resume_command()}",
                file=sys.stderr,
            )
        return returncode or 1

    panel_records = []
    if panel is not None:
        from oab_bench.judge.grading.batch.submit import BatchPending
        from oab_bench.judge.panel.runs import judge_beside

        try:
            panel_records = judge_beside(settings, judge_cache(args), *panel, judgments, out)
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
