"""Everything `oab-bench run` checks before its first paid call (a doomed run fails in seconds, in one
line, having written nothing), and what the caches hold, looked up as the generation and judge will."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import NamedTuple

from oab_bench import folders
from oab_bench.conventions import ANSWERS_FILE, JUDGMENT_CACHE_FILE, RUN_MARKER
from oab_bench.judge.generation.run_settings import RunSettings, litellm_name, selected_rows, vllm_target
from oab_bench.judge.generation.task_run import checkpoint
from oab_bench.judge.output import MAKE_WRITABLE
from oab_bench.judge.settings import JudgeSettings, member_settings
from oab_bench.keyed_store import allowed, check_store, unwritable

RUN = folders.Writer("oab-bench run", RUN_MARKER)  # a run writes only in a folder it made or marked
KEEP_THEM = "to go on without keeping them, add --cache-read-only; to keep them, "


def check_keys() -> None:
    """Keys set to nothing removed (litellm counts them as present); `*API_KEY` ones lose surrounding
    blanks (a pasted key's line break, which no HTTP header may carry), or fail on a control character."""
    for name, value in list(os.environ.items()):
        if "KEY" in name.upper() and not value.strip():
            print(f"oab-bench run: note: {name} is set but empty: treated as not set", file=sys.stderr)
            del os.environ[name]
        elif name.upper().endswith("API_KEY"):
            if any(ord(c) < 32 or ord(c) == 127 for c in value.strip()):
                raise ValueError(f"{name} holds a line break or another control character: fix the variable")
            os.environ[name] = value.strip()


def check_places(s: RunSettings) -> None:
    """The caches' folders as their stores will open them, and the Hugging Face caches the dataset is
    read (and a raw one built) under, each named by its flag or variable."""
    from oab_bench.judge.grading import judgment_store

    for folder, name, check in (
        (s.judge_cache, "--judge-cache (OAB_JUDGE_CACHE)", judgment_store.check_folder),
        (s.answer_cache and s.answer_cache / ANSWERS_FILE, "--answer-cache (OAB_ANSWER_CACHE)", check_store),
    ):
        try:
            if folder is not None:
                check(folder)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    env, home = os.environ, os.environ.get("HOME") or str(Path("~").expanduser())
    if env.get("HF_HOME"):
        places = [("HF_HOME", env["HF_HOME"])]
    elif xdg := env.get("XDG_CACHE_HOME"):
        places = [("HF_HOME (not set: $XDG_CACHE_HOME/huggingface)", f"{xdg}/huggingface")]
    else:
        places = [(f"HF_HOME (not set: $HOME/.cache/huggingface, HOME={home})", f"{home}/.cache/huggingface")]
    places.append(("HF_DATASETS_CACHE", env.get("HF_DATASETS_CACHE")))
    if not Path(s.dataset).expanduser().is_dir():  # a Hub id: the Hub's cache too
        places += [(v, env[v]) for v in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE") if env.get(v)][:1]
    problems = []
    for name, path in places:
        fix = f"set {name.split()[0]} to a folder you can write, or {MAKE_WRITABLE}"
        if "HOME=" in name and not Path(home).is_dir():
            fix = "set HOME to your home folder, or HF_HOME to a folder you can write"
        if path and (why := unwritable(Path(path).expanduser())):
            problems.append(f"{name} {path}: {why}: {fix}")
    if problems:
        raise ValueError("\n".join(problems))


def resolve_references(s: RunSettings) -> RunSettings:
    """The dataset resolved to a folder on disk, the tasks checked against the editions and areas it
    holds, the judge's Batch API asked: now, not as lighteval's traceback."""
    from oab_bench.dataset_builder.errors import SourceError
    from oab_bench.dataset_builder.resolve import resolve_dataset
    from oab_bench.judge.dataset import advised, load_rows

    try:
        s = s.model_copy(update={"dataset": resolve_dataset(s.dataset, s.dataset_origin)})
        check_task_rows(s.tasks, load_rows(s.dataset), s.dataset)
    except SourceError as e:
        raise ValueError(advised(e, "oab-bench")) from None
    if s.judge.batch and not vllm_target(s.judge.judge_model):  # a vllm: judge's server is not up yet
        from oab_bench.judge.grading.batch.api import check_batch_api

        check_batch_api(s.judge)
    return s


def check_task_rows(names: list[str], rows: list, dataset: str) -> None:
    """An edition or area a task needs and the dataset lacks fails, listing those it has."""
    for name in names:
        what = name.partition(":")[2]
        if what and not any(what in (r.area, str(r.edition)) for r in rows):
            kind = "edition" if what.isdigit() else "area"
            have = ", ".join(sorted({str(r.edition) if what.isdigit() else r.area for r in rows})) or "none"
            lacks = f"the dataset {dataset} has no questions of {kind} {what}"
            raise ValueError(f"--tasks {name}: {lacks}; its {kind}s: {have}")


def check_output(s: RunSettings) -> None:
    """The run folder is ours (oab_bench/folders.py) and writable, and so are the results and details
    folders an earlier run left there (a teammate's, under another umask), where lighteval writes."""
    folders.check_folder(s.output_dir, RUN, "--output-dir", s.output_given)
    fix = f"{MAKE_WRITABLE}, or give another --output-dir"
    if why := unwritable(s.output_dir):
        raise ValueError(f"--output-dir {s.output_given}: {why}: {fix}")
    for top in (s.output_dir / "results", s.output_dir / "details"):
        for folder in [top, *top.rglob("*")] if top.is_dir() else []:
            if folder.is_dir() and not allowed(folder, os.W_OK | os.X_OK):
                why = f"{folder} is not writable by this user (lighteval writes there)"
                raise ValueError(f"--output-dir {s.output_given}: {why}: {fix}")


class Stored(NamedTuple):
    questions: int
    answered: int  # answers stored
    judged: int | None  # stored answers needing no judge call (None: the judge cache is off)
    answers_missing: int
    judgments_missing: int  # to make and keep (every grader's of an answer not stored yet; the panel's)


def stored_answers(s: RunSettings) -> tuple[list, list]:
    """The stored answers as (row, Answer) pairs, as the judge reads them (reasoning removed), and the
    rows without one: looked up as the generation will, creating nothing."""
    from oab_bench.judge.answers import Answer, strip_reasoning
    from oab_bench.judge.generation.answer_store import AnswerStore, answer_key
    from oab_bench.judge.generation.task_prompt import candidate_messages

    model, generation = s.litellm_model, s.generation()
    store = AnswerStore(s.answer_cache, access="read") if s.answer_cache and not s.fresh_answers else None
    pairs, missing = [], []
    for row in selected_rows(s):
        key = answer_key(model=model, messages=candidate_messages(row), generation=generation)
        if found := store and store.get(key):
            text = strip_reasoning(found.texts[0])
            pairs.append((row, Answer(model=model, question_id=row.question_id, turns=[text])))
        else:
            missing.append(row)
    return pairs, missing


def stored_state(s: RunSettings, panel=None) -> Stored:
    """What the caches hold for this run, creating and writing nothing; a `--panel`'s judgments count
    among those missing."""
    from oab_bench.judge.grading.judgment_store import JudgmentStore
    from oab_bench.judge.panel.judging import unstored

    pairs, missing = stored_answers(s)
    store = JudgmentStore(s.judge_cache, access="read") if s.judge_cache else None
    judge = run_judge(s.judge, store or JudgmentStore(None))
    graders = len(getattr(judge, "runs", None) or getattr(judge, "members", None) or [judge])
    lacking = [unstored(judge, [pair]) for pair in pairs]
    to_judge = sum(lacking) + graders * len(missing)
    to_judge += unstored(judge, panel[1]) if panel and store is not None else 0
    judged = lacking.count(0) if store is not None else None
    return Stored(len(pairs) + len(missing), len(pairs), judged, len(missing), to_judge)


def run_judge(settings: JudgeSettings, store):
    """The judge (jury, repeats) the run's task makes, named as litellm is called (`vllm:X` is
    `openai/<served name>`): the same cache keys."""
    from oab_bench.judge.grading.jury import make_judge

    return make_judge(settings.model_copy(update={"judge_model": litellm_name(settings.judge_model)}), store)


def check_caches(s: RunSettings, panel=None) -> RunSettings:
    """The answer and judgment caches readable, and writable, or read-only and allowed: served when
    nothing new must be kept there, else refused (how much would be lost) unless --cache-read-only."""
    read_only = {}
    for kind, name, path, store in (
        ("answers", s.answer_cache_name, s.answer_cache, ANSWERS_FILE),
        ("judgments", s.judge_cache_name, s.judge_cache, JUDGMENT_CACHE_FILE),  # batches: its tables
    ):
        if path is None:
            continue
        files = (path / store, path / Path(store).with_suffix(".lock").name)
        if unreadable := [f for f in files if f.exists() and not allowed(f, os.R_OK)]:
            fix = "make it readable (chmod g+r) or use another folder"
            raise ValueError(f"{name} {path}: {unreadable[0]} is not readable by this user: {fix}")
        if why := "--cache-read-only" if s.cache_read_only else unwritable(path, files):
            read_only[kind] = f"  {name} {path}: {why}"  # no write to any cache, whatever the permissions
    if not read_only:
        return s
    state = stored_state(s, panel)
    answers = state.answers_missing if "answers" in read_only else 0
    judgments = state.judgments_missing if "judgments" in read_only else 0
    lines = [f"this cache is read-only: {answers} answers / {judgments} judgments would not be kept"]
    lines += read_only.values()
    batch = bool(s.judge.batch and judgments)  # the one refusal --cache-read-only does not lift
    if batch or ((answers or judgments) and not s.cache_read_only):
        lead = "--judge-batch records its batches in the judgment cache: " if batch else KEEP_THEM
        other = "--judge-cache, or judge without --judge-batch" if batch else "--answer-cache / --judge-cache"
        raise ValueError("\n".join([*lines, f"{lead}{MAKE_WRITABLE}, or give another {other}"]))
    going = "going on (--cache-read-only): what is new serves this run only"
    lines.append(going if answers or judgments else "nothing new to keep: its entries are served as they are")
    print("\n".join(f"oab-bench run: {line}" for line in lines), file=sys.stderr)
    return s.model_copy(update={"cache_access": "read"})


def check_credentials(candidate: str, api_base: str | None, judge: JudgeSettings) -> None:
    """The candidate and every judge each need a key, or a local server that takes any."""
    from oab_bench.judge.dataset import knob
    from oab_bench.judge.grading.client import missing_keys
    from oab_bench.judge.grading.lighteval_judge import missing_judge_keys

    problems = missing_judge_keys(judge, knob("judge_api_base"))
    if not api_base and not vllm_target(candidate) and (missing := missing_keys(candidate)):
        local = f"(or {knob('api_base')} for a local server)"
        problems.insert(0, f"the candidate {candidate} needs {' or '.join(missing)} {local}")
    if problems:
        raise ValueError("no API key: " + "; ".join(problems))


def check_reachable(api_base: str | None, who: str) -> None:
    """A server that refuses connections fails now, not after every retry of every call."""
    import httpx

    try:
        if api_base:
            httpx.get(f"{api_base.rstrip('/')}/models", timeout=10, verify=not api_base.startswith("http:"))
    except httpx.TransportError as e:
        why = f"{type(e).__name__}: {e}"
        raise ValueError(f"the {who} server at {api_base} does not answer ({why})") from None


def check_remote(s: RunSettings, panel=None) -> None:
    """Keys, servers that answer, and one minimal real call to each remote model this run will pay
    (`--no-check-call` skips it; none when everything is stored, the panel's judgments included)."""
    from oab_bench.judge.grading.client import check_call, check_judges

    check_credentials(s.model, s.api_base, s.judge)
    check_reachable(None if vllm_target(s.model) else s.api_base, "candidate")
    judges = [m for m in member_settings(s.judge) if not vllm_target(m.judge_model)]
    check_reachable(s.judge.api_base if judges else None, "judge")
    state = stored_state(s, panel) if s.check_call else None
    if state and not vllm_target(s.model) and state.answered < state.questions:
        checkpoint()
        check_call("candidate", s.model, api_base=s.api_base, api_key=s.dummy_key)
    if state and (state.judged is None or state.judgments_missing):
        checkpoint()
        check_judges(judges)


def check_context(s: RunSettings) -> RunSettings:
    """Once local servers run: they answer, the context is known (the server's, else 32768), the answer
    budget and every prompt fit it, counted by the server's tokenizer (vLLM's /tokenize), in seconds."""
    import httpx

    from oab_bench.judge.generation.task_prompt import candidate_messages

    check_reachable(s.api_base, "candidate")
    check_reachable(s.judge.api_base, "judge")
    served, limit, base = s.model.removeprefix("openai/"), None, (s.api_base or "").rstrip("/")
    verify = not base.startswith("http:")  # plain http has no TLS: no CA bundle loaded (~30 ms of CPU)
    with contextlib.suppress(httpx.HTTPError, ValueError, LookupError, TypeError, AttributeError):
        cards = httpx.get(f"{base}/models", timeout=30, verify=verify).json()["data"] if base else []
        limit = next((int(c["max_model_len"]) for c in cards if c.get("id") == served), None)
    for context, where in ((s.max_model_length, "--max-model-length"), (limit, "server's")):
        if context and s.max_new_tokens >= context:
            raise ValueError(
                f"--max-new-tokens {s.max_new_tokens} does not fit the {where} context of {context} tokens "
                "(prompt included): lower --max-new-tokens or raise the context (vLLM: --max-model-len)"
            )
    s = s.model_copy(update={"max_model_length": s.max_model_length or limit or 32768})
    limit, too_long, tight, counted = limit and min(limit, s.max_model_length), [], [], 0
    with httpx.Client(timeout=120, verify=verify) as client:  # one client, not one a prompt
        for row in selected_rows(s, sampled=False) if limit else []:
            checkpoint()
            body = {"model": served, "messages": candidate_messages(row), "add_generation_prompt": True}
            resp = client.post(f"{base.removesuffix('/v1')}/tokenize", json=body)
            if resp.status_code == 404:  # no /tokenize: nothing counted
                break
            n, counted = int(resp.raise_for_status().json()["count"]), counted + 1
            if n >= limit:
                too_long.append(f"{row.question_id}: prompt {n} tokens, context {limit} tokens")
            elif n + s.max_new_tokens > limit:
                leaves = f"leaves {limit - n} of {s.max_new_tokens} to answer"
                tight.append(f"{row.question_id}: prompt {n} tokens {leaves}")
    if too_long:
        raise ValueError(
            f"{len(too_long)} prompts do not fit the model's context; start the server with a longer "
            "--max-model-len (--vllm-args) or use another model:\n" + "\n".join(too_long)
        )
    if counted:
        print(f"preflight: {counted} prompts fit in the model's {limit} tokens", file=sys.stderr)
    for line in tight[:10] + [f"... and {len(tight) - 10} more"] * (len(tight) > 10):
        print(f"preflight: warning: {line}", file=sys.stderr)
    return s
