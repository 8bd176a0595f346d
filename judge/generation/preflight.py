"""Checks `oab-bench run` makes before generating, so a doomed run fails in seconds, saying why.

Without them a missing key surfaces only after all of lighteval's retries, as "empty answers",
a dead server after 6 attempts per judgment, and a prompt longer than a local model's context
after 8 instant retries of a 400 whose text is lost. An empty key variable (`OPENAI_API_KEY=`)
is no key: litellm would count it as present.

The check call (judge/grading/check_call.py): one real request per model that will be called (candidate,
judge) proves key, model name and base URL. `--no-check-call` skips it.
"""

from __future__ import annotations

import os

from oab_bench.dataset_builder.ids import AREAS, EDITIONS
from oab_bench.judge.settings import JudgeSettings

TASK = "oab_bench"


class PreflightError(ValueError):
    pass


def task_names() -> list[str]:
    """The tasks oab_bench_task.py defines (without importing lighteval: seconds)."""
    return [TASK, *(f"{TASK}:{a}" for a in AREAS), *(f"{TASK}:{e}" for e in EDITIONS)]


def check_tasks(tasks: str) -> list[str]:
    """`--tasks` names (lighteval's `|0` suffix allowed): an unknown one fails now, listing the valid ones."""
    names = [t.split("|")[0].strip() for t in tasks.split(",") if t.strip()]
    valid = task_names()
    unknown = [n for n in names if n not in valid]
    if unknown or not names:
        raise PreflightError(
            f"unknown task {', '.join(unknown) or repr(tasks)}; valid tasks: {', '.join(valid)}"
        )
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if _overlap(a, b):
                raise PreflightError(
                    f"tasks {a} and {b} overlap: their common questions would be generated, judged and "
                    "counted twice; give tasks with no question in common (one area or edition each), "
                    "or run them with separate --output-dir"
                )
    return names


def _overlap(a: str, b: str) -> bool:
    """Two tasks share questions: the same task, the whole set and any other, an area and an edition."""
    what_a, what_b = a.partition(":")[2], b.partition(":")[2]
    return a == b or not what_a or not what_b or what_a.isdigit() != what_b.isdigit()


def drop_empty_keys(env=None) -> list[str]:
    """Remove key variables set to nothing (`OPENAI_API_KEY=`): litellm counts them as present,
    and lighteval then retries a keyless provider for minutes. Returns their names."""
    env = os.environ if env is None else env
    empty = [k for k, v in env.items() if "KEY" in k.upper() and not v.strip()]
    for k in empty:
        del env[k]
    return empty


def trim_keys(env=None) -> None:
    """API key variables (`*API_KEY`) lose surrounding blanks (a key pasted from a file ends in a line
    break, which no HTTP header may carry: every call would fail as a 'connection error'); one with
    a control character inside fails now, naming the variable, never showing its value. (Other
    `*KEY*` variables, a multi-line PEM key say, are left as they are.)"""
    env = os.environ if env is None else env
    for name, value in list(env.items()):
        if not name.upper().endswith("API_KEY"):
            continue
        value = value.strip()
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise PreflightError(f"{name} holds a line break or another control character: fix the variable")
        env[name] = value


def check_max_new_tokens(max_new_tokens: int, context: int, where: str) -> None:
    """An answer budget the context cannot hold makes every generation fail: say so before any."""
    if max_new_tokens >= context:
        raise PreflightError(
            f"--max-new-tokens {max_new_tokens} does not fit the {where} context of {context} tokens "
            "(prompt included): lower --max-new-tokens or raise the context (vLLM: --max-model-len)"
        )


def check_credentials(candidate: str, api_base: str | None, judge: JudgeSettings) -> None:
    """The candidate and the judge each need a key, or a local server (--api-base) that takes any."""
    from oab_bench.judge.generation.vllm_server import vllm_target  # a local server of ours: no key
    from oab_bench.judge.grading.client import (  # litellm: slow to import, only `run` needs it
        API_KEY_ENV,
        api_key,
        missing_keys,
    )
    from oab_bench.judge.settings import member_settings

    problems = []
    if not api_base and not vllm_target(candidate):
        missing = missing_keys(candidate)
        if missing:
            problems.append(
                f"the candidate {candidate} needs {' or '.join(missing)} (or --api-base for a local server)"
            )
    for member in member_settings(judge):  # a jury: every member needs its key
        if member.api_base or api_key() or vllm_target(member.judge_model):  # a blank key is none
            continue
        missing = missing_keys(member.judge_model)
        if missing:
            problems.append(
                f"the judge {member.judge_model} needs {API_KEY_ENV} or {' or '.join(missing)} "
                "(or --judge-api-base for a local server)"
            )
    if problems:
        raise PreflightError("no API key: " + "; ".join(problems))


def check_reachable(api_base: str | None, who: str) -> None:
    """A server that refuses connections fails now, not after every retry of every call."""
    import httpx  # ~0.3 s: not for `run -h` or a bad --tasks

    if not api_base:
        return
    try:
        httpx.get(f"{api_base.rstrip('/')}/models", timeout=10)
    except httpx.TransportError as e:
        raise PreflightError(
            f"the {who} server at {api_base} does not answer ({type(e).__name__}: {e})"
        ) from None


def server_max_model_len(api_base: str, served: str) -> int | None:
    """The context length an OpenAI-compatible server (vLLM) reports for `served`, if it does."""
    import httpx  # ~0.3 s: not for `run -h` or a bad --tasks

    try:
        cards = httpx.get(f"{api_base.rstrip('/')}/models", timeout=30).json().get("data", [])
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    for card in cards:
        if isinstance(card, dict) and card.get("id") == served and card.get("max_model_len"):
            return int(card["max_model_len"])
    return None


def count_tokens(api_base: str, served: str, messages: list[dict]) -> int | None:
    """Tokens of a chat prompt by the server's own tokenizer and template (vLLM's /tokenize); None if
    the server has no such endpoint."""
    import httpx  # ~0.3 s: not for `run -h` or a bad --tasks

    root = api_base.rstrip("/").removesuffix("/v1")
    body = {"model": served, "messages": messages, "add_generation_prompt": True}
    resp = httpx.post(f"{root}/tokenize", json=body, timeout=120)
    if resp.status_code == 404:
        return None
    resp.raise_for_status()
    return int(resp.json()["count"])


def check_prompts_fit(
    api_base: str, served: str, prompts: list[tuple[str, list[dict]]], max_new_tokens: int, max_model_len: int
) -> tuple[int, list[str]]:
    """Every (question id, messages) must fit the context with room to answer. Returns how many were
    counted (0: the server cannot count) and warnings for prompts that leave less than
    `max_new_tokens` (vLLM then shortens the answer)."""
    too_long, tight = [], []
    counted = 0
    for question_id, messages in prompts:
        n = count_tokens(api_base, served, messages)
        if n is None:
            return counted, []
        counted += 1
        if n >= max_model_len:
            too_long.append(f"{question_id}: prompt {n} tokens, context {max_model_len} tokens")
        elif n + max_new_tokens > max_model_len:
            tight.append(
                f"{question_id}: prompt {n} tokens leaves {max_model_len - n} of {max_new_tokens} to answer"
            )
    if too_long:
        raise PreflightError(
            f"{len(too_long)} prompts do not fit the model's context; start the server with a longer "
            "--max-model-len (--vllm-args) or use another model:\n" + "\n".join(too_long)
        )
    return counted, tight
