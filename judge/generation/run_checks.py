"""Everything `oab-bench run` checks before its first paid call, so a doomed run fails in seconds,
in one line, having written nothing: the tasks, the keys (an empty one is none; a pasted line
break fails), the places it writes (Hugging Face caches, the output folder, the answer and judgment
caches, read-only ones served or refused), the dataset and the editions and areas the tasks need,
the judge's Batch API, servers that answer, one minimal real call per remote model it will pay
for, and, once local servers run, an answer budget and prompts that fit the context.

Counting what the caches hold (`stored_state`) is shared with the estimate and the stopped line:
they look entries up as the generation and the judge will.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NamedTuple

from oab_bench import folders
from oab_bench.conventions import ANSWERS_FILE, BATCH_FILE, JUDGMENTS_FILE, RUN_MARKER
from oab_bench.judge.generation.run_settings import (
    DEFAULT_MAX_MODEL_LENGTH,
    RunSettings,
    selected_rows,
    vllm_target,
)
from oab_bench.judge.generation.task_run import checkpoint
from oab_bench.judge.settings import JudgeSettings, member_settings
from oab_bench.keyed_store import allowed, unwritable

RUN = folders.Writer("oab-bench run", RUN_MARKER)  # a run writes only in a folder it made or marked
MAKE_WRITABLE = "make it writable (group write: chmod g+w, and umask 002 for what runs create)"


class PreflightError(ValueError):
    pass


def drop_empty_keys(env=None) -> list[str]:
    """Key variables set to nothing (`OPENAI_API_KEY=`) removed: litellm counts them as present."""
    env = os.environ if env is None else env
    empty = [k for k, v in env.items() if "KEY" in k.upper() and not v.strip()]
    for k in empty:
        del env[k]
    return empty


def check_keys() -> None:
    """`*API_KEY` variables lose surrounding blanks (a key pasted from a file ends in a line break,
    which no HTTP header may carry); one with a control character inside fails, its value unshown."""
    for name in drop_empty_keys():
        print(f"oab-bench run: note: {name} is set but empty: treated as not set", file=sys.stderr)
    for name, value in list(os.environ.items()):
        if name.upper().endswith("API_KEY"):
            if any(ord(c) < 32 or ord(c) == 127 for c in value.strip()):
                raise PreflightError(
                    f"{name} holds a line break or another control character: fix the variable"
                )
            os.environ[name] = value.strip()


def check_places(s: RunSettings) -> None:
    """The caches' folders as the stores will open them, and the Hugging Face caches the dataset is
    read (and a raw one built) under: named by flag or variable, before the dataset is read."""
    from oab_bench.judge.generation import answer_store
    from oab_bench.judge.grading import judgment_store

    for folder, name, check in (
        (s.judge_cache, "--judge-cache (OAB_JUDGE_CACHE)", judgment_store.check_folder),
        (s.answer_cache, "--answer-cache (OAB_ANSWER_CACHE)", answer_store.check_folder),
    ):
        if folder is not None:
            try:
                check(folder)
            except ValueError as e:
                raise PreflightError(f"{name}: {e}") from None
    problems = [
        f"{name} {path}: {why}: {fix}"
        for name, path, fix in hf_places(s.dataset)
        if (why := unwritable(path))
    ]
    if problems:
        raise PreflightError("\n".join(problems))


def hf_places(dataset: str) -> list[tuple[str, Path, str]]:
    """(name, folder, fix) of the Hugging Face caches a run writes: HF_HOME, and the datasets and
    Hub caches where a variable moves them (the Hub's only for a dataset that is not a folder)."""
    env, fix = os.environ, f"set HF_HOME to a folder you can write, or {MAKE_WRITABLE}"
    if env.get("HF_HOME"):
        places = [("HF_HOME", Path(env["HF_HOME"]).expanduser(), fix)]
    elif env.get("XDG_CACHE_HOME"):
        places = [
            (
                "HF_HOME (not set: $XDG_CACHE_HOME/huggingface)",
                Path(env["XDG_CACHE_HOME"]) / "huggingface",
                fix,
            )
        ]
    else:
        home = env.get("HOME") or str(Path("~").expanduser())
        if not Path(home).is_dir():
            fix = "set HOME to your home folder, or HF_HOME to a folder you can write"
        places = [
            (
                f"HF_HOME (not set: $HOME/.cache/huggingface, HOME={home})",
                Path(home) / ".cache" / "huggingface",
                fix,
            )
        ]
    wanted = ["HF_DATASETS_CACHE"] + (
        [] if Path(dataset).expanduser().is_dir() else ["HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"]
    )
    for var in (v for v in wanted if env.get(v)):
        places.append(
            (var, Path(env[var]).expanduser(), f"set {var} to a folder you can write, or {MAKE_WRITABLE}")
        )
        if var != "HF_DATASETS_CACHE":
            break
    return places


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
        raise PreflightError(advised(e, "oab-bench")) from None
    if s.judge.batch and not vllm_target(s.judge.judge_model):  # a vllm: judge's server is not up yet
        from oab_bench.judge.grading.batch.api import check_batch_api

        check_batch_api(s.judge)
    return s


def check_task_rows(names: list[str], rows: list, dataset: str) -> None:
    """Each task selects questions of this dataset: an edition or area it lacks fails, listing those
    it has (lighteval would fail after loading, with "has no documents")."""
    for name in names:
        what = name.partition(":")[2]
        if what and not any(what in (r.area, str(r.edition)) for r in rows):
            kind = "edition" if what.isdigit() else "area"
            have = sorted({str(r.edition) if what.isdigit() else r.area for r in rows})
            raise PreflightError(
                f"--tasks {name}: the dataset {dataset} has no questions of {kind} {what}; "
                f"its {kind}s: {', '.join(have) or 'none'}"
            )


def check_output(s: RunSettings) -> None:
    """The run folder (ours, oab_bench/folders.py) is writable, and so are lighteval's results and
    details folders an earlier run made there (a teammate's, under another umask)."""
    given = s.output_given
    folders.check_folder(s.output_dir, RUN, "--output-dir", given)
    if why := unwritable(s.output_dir):
        raise PreflightError(f"--output-dir {given}: {why}: {MAKE_WRITABLE}, or give another --output-dir")
    for top in (s.output_dir / "results", s.output_dir / "details"):
        for folder in [top, *top.rglob("*")] if top.is_dir() else []:
            if folder.is_dir() and not allowed(folder, os.W_OK | os.X_OK):
                raise PreflightError(
                    f"--output-dir {given}: {folder} is not writable by this user (lighteval writes "
                    f"there): {MAKE_WRITABLE}, or give another --output-dir"
                )


class Stored(NamedTuple):
    questions: int
    answered: int  # answers stored
    judged: int | None  # stored answers needing no judge call (None: the judge cache is off)
    answers_missing: int
    judgments_missing: int  # to make and keep (every grader's of an answer not stored yet; the panel's)


def stored_state(s: RunSettings, panel=None) -> Stored:
    """What the caches hold for this run, looked up as the generation and the judge will, without
    creating or writing anything; a `--panel`'s judgments count among those missing."""
    from oab_bench.judge.answers import Answer, strip_reasoning
    from oab_bench.judge.generation.answer_store import AnswerStore, answer_key
    from oab_bench.judge.generation.task_prompt import candidate_messages
    from oab_bench.judge.grading.judgment_store import JudgmentStore
    from oab_bench.judge.panel.judging import unstored

    rows = selected_rows(s)
    model, generation = s.litellm_model, s.generation()
    use = s.answer_cache is not None and not s.fresh_answers and (s.answer_cache / ANSWERS_FILE).exists()
    answers = AnswerStore(s.answer_cache, access="read") if use else None
    store = JudgmentStore(s.judge_cache, access="read") if s.judge_cache else None
    judge = run_judge(s.judge, store or JudgmentStore(None))
    graders = len(getattr(judge, "runs", None) or getattr(judge, "members", None) or [judge])
    stored = judged = missing = 0
    for row in rows:
        found = (
            answers.get(answer_key(model=model, messages=candidate_messages(row), generation=generation))
            if answers
            else None
        )
        if found is None:
            missing += graders
            continue
        stored += 1
        lacking = unstored(
            judge,
            [
                (
                    row,
                    Answer(model=model, question_id=row.question_id, turns=[strip_reasoning(found.texts[0])]),
                )
            ],
        )
        missing += lacking
        judged += not lacking
    if panel is not None and store is not None:
        missing += unstored(judge, panel[1])
    return Stored(len(rows), stored, judged if store is not None else None, len(rows) - stored, missing)


def run_judge(settings: JudgeSettings, store=None):
    """The judge (jury, repeats) the run's task makes, named as litellm is called (`vllm:X` is
    `openai/<served name>`): the same cache keys."""
    from oab_bench.judge.generation.run_settings import litellm_name
    from oab_bench.judge.grading.jury import make_judge

    if vllm_target(settings.judge_model):
        settings = settings.model_copy(update={"judge_model": litellm_name(settings.judge_model)})
    return make_judge(settings, store)


def check_caches(s: RunSettings, panel=None) -> RunSettings:
    """The answer and judgment caches readable, and writable, or read-only and allowed: served when
    nothing new must be kept there, else refused (how much would be lost) unless --cache-read-only."""
    read_only = []
    for kind, name, path, files in (
        ("answers", s.answer_cache_name, s.answer_cache, (ANSWERS_FILE,)),
        ("judgments", s.judge_cache_name, s.judge_cache, (JUDGMENTS_FILE, BATCH_FILE)),
    ):
        if path is None:
            continue
        files = [path / f for name_ in files for f in (name_, str(Path(name_).with_suffix(".lock")))]
        for file in files:
            if file.exists() and not allowed(file, os.R_OK):
                raise PreflightError(
                    f"{name} {path}: {file} is not readable by this user: make it readable (chmod g+r) or use another folder"
                )
        if why := unwritable(path, tuple(files)):
            read_only.append((kind, name, path, why))
    if not read_only:
        return s
    state = stored_state(s, panel)
    kinds = {kind for kind, *_ in read_only}
    answers = state.answers_missing if "answers" in kinds else 0
    judgments = state.judgments_missing if "judgments" in kinds else 0
    lines = [f"this cache is read-only: {answers} answers / {judgments} judgments would not be kept"]
    lines += [f"  {name} {path}: {why}" for _, name, path, why in read_only]
    if s.judge.batch and judgments:
        raise PreflightError(
            "\n".join(lines) + "\n--judge-batch records its batches in the judgment cache: "
            f"{MAKE_WRITABLE}, or give another --judge-cache, or judge without --judge-batch"
        )
    if (answers or judgments) and not s.cache_read_only:
        raise PreflightError(
            "\n".join(lines) + "\nto go on without keeping them, add --cache-read-only; to keep them, "
            f"{MAKE_WRITABLE}, or give another --answer-cache / --judge-cache"
        )
    lines.append(
        "going on (--cache-read-only): what is new serves this run only"
        if answers or judgments
        else "nothing new to keep: its entries are served as they are"
    )
    for line in lines:
        print(f"oab-bench run: {line}", file=sys.stderr)
    return s.model_copy(update={"cache_access": "either"})


def check_credentials(candidate: str, api_base: str | None, judge: JudgeSettings) -> None:
    """The candidate and every judge each need a key, or a local server that takes any."""
    from oab_bench.judge.grading.client import missing_keys
    from oab_bench.judge.grading.lighteval_judge import missing_judge_keys

    problems = missing_judge_keys(judge, "--judge-api-base")
    if not api_base and not vllm_target(candidate) and (missing := missing_keys(candidate)):
        problems.insert(
            0, f"the candidate {candidate} needs {' or '.join(missing)} (or --api-base for a local server)"
        )
    if problems:
        raise PreflightError("no API key: " + "; ".join(problems))


def check_reachable(api_base: str | None, who: str) -> None:
    """A server that refuses connections fails now, not after every retry of every call."""
    import httpx

    if api_base:
        try:
            httpx.get(f"{api_base.rstrip('/')}/models", timeout=10)
        except httpx.TransportError as e:
            raise PreflightError(
                f"the {who} server at {api_base} does not answer ({type(e).__name__}: {e})"
            ) from None


def check_remote(s: RunSettings, panel=None) -> None:
    """Keys, servers that answer, and one minimal real call to each remote model this run will pay
    (`--no-check-call` skips it; none when everything is stored, the panel's judgments included)."""
    from oab_bench.judge.grading.check_call import check_call, check_judges

    check_credentials(s.model, s.api_base, s.judge)
    if not vllm_target(s.model):
        check_reachable(s.api_base, "candidate")
    judges = [m for m in member_settings(s.judge) if not vllm_target(m.judge_model)]
    if judges:
        check_reachable(s.judge.api_base, "judge")
    if not s.check_call:
        return
    state = stored_state(s, panel)
    if not vllm_target(s.model) and state.answered < state.questions:
        local = s.api_base and s.model.startswith("openai/")  # any key will do
        checkpoint()
        check_call(
            "candidate",
            s.model,
            api_base=s.api_base,
            api_key=(os.environ.get("OPENAI_API_KEY") or "EMPTY") if local else None,
        )
    if state.judged is None or state.judgments_missing:
        checkpoint()
        check_judges(judges)


def check_context(s: RunSettings) -> RunSettings:
    """Once local servers run: they answer, the context length is known (the server's, else the
    default), the answer budget fits it, and every prompt fits with room to answer (counted by the
    server's own tokenizer, vLLM's /tokenize). Fails in seconds, not after an hour of retries."""
    import httpx

    from oab_bench.judge.generation.task_prompt import candidate_messages

    check_reachable(s.api_base, "candidate")
    check_reachable(s.judge.api_base, "judge")
    served = s.model.removeprefix("openai/")
    server_len = None
    if s.api_base:
        try:
            cards = httpx.get(f"{s.api_base.rstrip('/')}/models", timeout=30).json().get("data", [])
            server_len = next(
                (int(c["max_model_len"]) for c in cards if c.get("id") == served and c.get("max_model_len")),
                None,
            )
        except (httpx.HTTPError, ValueError, AttributeError, TypeError):
            pass
    if s.max_model_length is not None:
        fits(s.max_new_tokens, s.max_model_length, "--max-model-length")
    s = s.model_copy(
        update={"max_model_length": s.max_model_length or server_len or DEFAULT_MAX_MODEL_LENGTH}
    )
    if not server_len:
        return s
    limit = min(server_len, s.max_model_length)
    fits(s.max_new_tokens, limit, "server's")
    root = s.api_base.rstrip("/").removesuffix("/v1")
    too_long, tight, counted = [], [], 0
    for row in selected_rows(s, sampled=False):
        checkpoint()
        body = {"model": served, "messages": candidate_messages(row), "add_generation_prompt": True}
        resp = httpx.post(f"{root}/tokenize", json=body, timeout=120)
        if resp.status_code == 404:  # no /tokenize: nothing counted
            break
        resp.raise_for_status()
        n, counted = int(resp.json()["count"]), counted + 1
        if n >= limit:
            too_long.append(f"{row.question_id}: prompt {n} tokens, context {limit} tokens")
        elif n + s.max_new_tokens > limit:
            tight.append(
                f"{row.question_id}: prompt {n} tokens leaves {limit - n} of {s.max_new_tokens} to answer"
            )
    if too_long:
        raise PreflightError(
            f"{len(too_long)} prompts do not fit the model's context; start the server with a longer "
            "--max-model-len (--vllm-args) or use another model:\n" + "\n".join(too_long)
        )
    if counted:
        print(f"preflight: {counted} prompts fit in the model's {limit} tokens", file=sys.stderr)
    for line in tight[:10] + ([f"... and {len(tight) - 10} more"] if len(tight) > 10 else []):
        print(f"preflight: warning: {line}", file=sys.stderr)
    return s


def fits(max_new_tokens: int, context: int, where: str) -> None:
    """An answer budget the context cannot hold makes every generation fail: said before any."""
    if max_new_tokens >= context:
        raise PreflightError(
            f"--max-new-tokens {max_new_tokens} does not fit the {where} context of {context} tokens "
            "(prompt included): lower --max-new-tokens or raise the context (vLLM: --max-model-len)"
        )
