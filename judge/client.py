"""One judge call through litellm: retried on transient errors, classified, usage and cost counted.

Retries: 429 waits what Retry-After says (capped), 5xx/timeouts/connection errors wait an
exponential backoff with jitter; other 4xx fail at once. The key comes from
OAB_JUDGE_API_KEY, else litellm reads the provider's usual variable; it is passed to
litellm and nowhere else.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from typing import Any, NamedTuple

# litellm's bundled cost map, not a fetch from GitHub at import: offline-safe and reproducible.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from .records import Usage
from .redact import redact
from .settings import JudgeSettings

logger = logging.getLogger(__name__)

API_KEY_ENV = "OAB_JUDGE_API_KEY"

litellm.suppress_debug_info = True
litellm.telemetry = False
for _name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
    logging.getLogger(_name).setLevel(logging.ERROR)

_TRANSIENT = (
    litellm.RateLimitError,
    litellm.Timeout,
    litellm.APIConnectionError,
    litellm.InternalServerError,
    litellm.ServiceUnavailableError,
    litellm.BadGatewayError,
    asyncio.TimeoutError,
)


class CallResult(NamedTuple):
    status: str  # ok | api_error | truncated | refused | parse_error (empty reply)
    content: str
    usage: Usage
    cost_usd: float | None
    error: str | None
    attempts: int


def api_key() -> str | None:
    return os.environ.get(API_KEY_ENV) or None


def missing_keys(model: str) -> tuple[str, ...]:
    """The provider key variables `model` needs and the environment lacks (empty: none missing)."""
    present = tuple(sorted(k for k, v in os.environ.items() if v and "KEY" in k))
    return _missing_keys(model, present)  # cached, but never across a change of the environment


@functools.cache
def _missing_keys(model: str, present: tuple[str, ...]) -> tuple[str, ...]:
    found = litellm.validate_environment(model)
    return () if found.get("keys_in_environment") else tuple(found.get("missing_keys") or ())


def call_key(settings: JudgeSettings) -> str | None:
    """OAB_JUDGE_API_KEY, else litellm reads the provider's variable; a local server with neither
    gets a dummy key (vLLM and most local servers take any)."""
    key = api_key()
    if key:
        return key
    if settings.api_base and missing_keys(settings.judge_model):
        return "EMPTY"
    return None


def missing_credentials(exc: BaseException) -> bool:
    """litellm reports a missing key as a 500 ("Missing credentials"): it is permanent, not transient."""
    text = str(exc)
    return "Missing credentials" in text or "api_key client option must be set" in text


def connection_failed(exc: BaseException) -> bool:
    """Nothing answered (refused, reset, DNS): litellm reports it as a 500 "Connection error"."""
    return isinstance(exc, litellm.APIConnectionError) or "Connection error" in str(exc)


def transient(exc: BaseException) -> bool:
    return isinstance(exc, _TRANSIENT) and not missing_credentials(exc)


class Breaker:
    """Stops calling a judge server that is clearly down: after `limit` connection failures in a
    row, across all calls, every call fails at once instead of retrying (state shared by a run)."""

    def __init__(self, limit: int = 8):
        self.limit = limit
        self.failures = 0
        self.last = ""

    @property
    def open(self) -> bool:
        return self.failures >= self.limit

    def record(self, exc: BaseException | None) -> None:
        if exc is None:
            self.failures = 0
        elif connection_failed(exc):
            self.failures += 1
            self.last = _describe(exc)

    def why(self) -> str:
        return (
            f"judge server unreachable: {self.failures} connection failures in a row "
            f"(last: {self.last}); not called again in this run"
        )


def retry_after(exc: BaseException) -> float | None:
    """Seconds from a Retry-After header carried by a litellm/openai exception, if any."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return None


def _describe(exc: BaseException) -> str:
    """An error message for records; scrubbed of every key, since providers may echo one."""
    text = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if missing_credentials(exc):
        text += f" (set {API_KEY_ENV} or the provider's key variable, or give an api_base)"
    return redact(text)[:500]


def _usage(resp: Any) -> Usage:
    u = getattr(resp, "usage", None)
    if u is None:
        return Usage()
    details_in = getattr(u, "prompt_tokens_details", None)
    details_out = getattr(u, "completion_tokens_details", None)
    return Usage(
        prompt_tokens=int(getattr(u, "prompt_tokens", 0) or 0),
        cached_tokens=int(getattr(details_in, "cached_tokens", 0) or 0) if details_in else 0,
        completion_tokens=int(getattr(u, "completion_tokens", 0) or 0),
        reasoning_tokens=int(getattr(details_out, "reasoning_tokens", 0) or 0) if details_out else 0,
    )


def cost(settings: JudgeSettings, usage: Usage, resp: Any) -> float | None:
    """Dollars: explicit prices when given, else what litellm's cost map gave this response; None when unknown."""
    if settings.price_input is not None or settings.price_output is not None:
        cached_price = (
            settings.price_cached_input if settings.price_cached_input is not None else settings.price_input
        )
        fresh = usage.prompt_tokens - usage.cached_tokens
        return (
            fresh * (settings.price_input or 0.0)
            + usage.cached_tokens * (cached_price or 0.0)
            + usage.completion_tokens * (settings.price_output or 0.0)
        ) / 1e6
    # litellm already priced the response while handling it; pricing it again costs ~1 ms of CPU per call
    value = (getattr(resp, "_hidden_params", None) or {}).get("response_cost")
    return float(value) if value is not None else None


def _wait(settings: JudgeSettings):
    backoff = wait_exponential_jitter(
        multiplier=settings.backoff_initial, max=settings.backoff_max, jitter=settings.backoff_initial
    )

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = retry_after(exc) if exc else None
        if after is not None:
            return min(after, settings.backoff_max)
        return backoff(state)

    return wait


def request_params(settings: JudgeSettings, messages: list[dict], response_format: dict | None) -> dict:
    """What a judge request asks for (messages, budget, sampling, schema): the same for a direct
    call and a Batch API line, which litellm maps to the provider's parameters alike."""
    params: dict[str, Any] = {"messages": messages, "max_tokens": settings.max_tokens}
    if settings.temperature is not None:
        params["temperature"] = settings.temperature
    if settings.reasoning_effort:
        params["reasoning_effort"] = settings.reasoning_effort
    if response_format is not None:
        params["response_format"] = response_format
    return params


async def call_judge(
    settings: JudgeSettings,
    messages: list[dict],
    response_format: dict | None,
    breaker: Breaker | None = None,
) -> CallResult:
    kwargs: dict[str, Any] = {
        "model": settings.judge_model,
        **request_params(settings, messages, response_format),
        "timeout": settings.timeout,
        "num_retries": 0,
        "max_retries": 0,
        "drop_params": True,
    }
    if settings.api_base:
        kwargs["api_base"] = settings.api_base
    key = call_key(settings)
    if key:
        kwargs["api_key"] = key

    breaker = breaker or Breaker()
    attempts = 0
    try:
        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(settings.max_attempts),
            wait=_wait(settings),
            retry=retry_if_exception(lambda e: transient(e) and not breaker.open),
            reraise=True,
        ):
            with attempt:
                attempts += 1
                try:
                    resp = await litellm.acompletion(**kwargs)
                except Exception as e:
                    breaker.record(e)
                    raise
                breaker.record(None)
    except litellm.ContentPolicyViolationError as e:
        return CallResult("refused", "", Usage(), None, _describe(e), attempts)
    except Exception as e:
        error = breaker.why() if breaker.open else _describe(e)
        return CallResult("api_error", "", Usage(), None, error, attempts)

    usage = _usage(resp)
    return classify(resp, usage, cost(settings, usage, resp), attempts)


def classify(resp: Any, usage: Usage, price: float | None, attempts: int) -> CallResult:
    """A judge reply as a status: the one rule for direct calls and Batch API results alike."""
    choice = resp.choices[0]
    message = choice.message
    content = message.content or ""
    refusal = getattr(message, "refusal", None)
    finish = choice.finish_reason
    if refusal or finish == "content_filter":
        return CallResult("refused", content, usage, price, f"refusal: {refusal or finish}", attempts)
    if finish == "length":
        return CallResult(
            "truncated", content, usage, price, "finish_reason=length (max_tokens reached)", attempts
        )
    if not content.strip():
        if usage.reasoning_tokens:
            return CallResult("truncated", "", usage, price, "empty content after reasoning tokens", attempts)
        return CallResult("parse_error", "", usage, price, "empty reply", attempts)
    return CallResult("ok", content, usage, price, None, attempts)
