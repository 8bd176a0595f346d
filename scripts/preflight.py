"""Checks `oab-bench run` makes before generating, so a doomed run fails in seconds, saying why.

Without them a missing key surfaces after lighteval's retries (~36 minutes) as "empty answers",
a dead server after 6 attempts per judgment, and a prompt longer than a local model's context
after 8 instant retries of a 400 whose text is lost.
"""

from __future__ import annotations

import os

import httpx

from judge.settings import JudgeSettings


class PreflightError(ValueError):
    pass


def check_credentials(candidate: str, api_base: str | None, judge: JudgeSettings) -> None:
    """The candidate and the judge each need a key, or a local server (--api-base) that takes any."""
    from judge.client import API_KEY_ENV, missing_keys  # litellm: slow to import, only `run` needs it

    problems = []
    if not api_base:
        missing = missing_keys(candidate)
        if missing:
            problems.append(
                f"the candidate {candidate} needs {' or '.join(missing)} (or --api-base for a local server)"
            )
    if not judge.api_base and not os.environ.get(API_KEY_ENV):
        missing = missing_keys(judge.judge_model)
        if missing:
            problems.append(
                f"the judge {judge.judge_model} needs {API_KEY_ENV} or {' or '.join(missing)} "
                "(or --judge-api-base for a local server)"
            )
    if problems:
        raise PreflightError("no API key: " + "; ".join(problems))


def check_reachable(api_base: str | None, who: str) -> None:
    """A server that refuses connections fails now, not after every retry of every call."""
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
