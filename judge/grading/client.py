"""One judge call through litellm (its sync `completion`, on a daemon thread): retried (tenacity),
classified, priced; the breaker for a dead server; the minimal check call before spending. The key
(OAB_JUDGE_API_KEY, else the provider's variable) goes to litellm and nowhere else."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
import queue
import re
import sys
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import litellm
import tenacity

from oab_bench.judge.records import Usage, priced, total_cost
from oab_bench.judge.redact import redact
from oab_bench.judge.settings import JudgeSettings

API_KEY_ENV = "OAB_JUDGE_API_KEY"
CHECK_PROMPT = "Responda apenas: ok"  # the check call's whole prompt (tests tell check calls by it)
UNREACHABLE = "judge server unreachable"
REFUSED_STATUSES = (401, 403, 404)
# litellm reports a missing key as a 500: permanent, as is a key holding a control character
NO_KEY = ("Missing credentials", "api_key client option must be set")
BAD_HEADER = ("Forbidden control character", "Illegal header value")
_FOR_GOOD = ("AuthenticationError", "PermissionDeniedError", "NotFoundError", "APIConnectionError")
_REFUSED = re.compile(r"^(\w+)(?: \((\d{3})\))?:")
_CALLS: queue.SimpleQueue = queue.SimpleQueue()  # (future, call) for the threads of in_thread
_IDLE = threading.Semaphore(0)  # one per idle thread
_NO_RETRIES = {"num_retries": 0, "max_retries": 0, "drop_params": True}  # retries are ours (tenacity)
litellm.suppress_debug_info = True
litellm.telemetry = False
for _name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
    logging.getLogger(_name).setLevel(logging.ERROR)


class CallResult(NamedTuple):  # a judge call (retried), or one judgment's calls until its reply parsed
    status: str  # ok | api_error | truncated | refused | parse_error
    content: str
    usage: Usage
    cost_usd: float | None
    error: str | None
    attempts: int
    parsed: Any = None  # what the reply parsed to (Judge.call)


def merged(results: list[CallResult], parsed: Any = None) -> CallResult:
    """Several calls as one: the last one's reply; their usage, cost and attempts added."""
    cost = total_cost([priced(r.cost_usd, r.usage) for r in results])
    usage, attempts = sum((r.usage for r in results), Usage()), sum(r.attempts for r in results)
    return results[-1]._replace(usage=usage, cost_usd=cost, attempts=attempts, parsed=parsed)


class Prices(NamedTuple):  # USD per token (None: unknown)
    input: float | None
    cached_input: float | None
    output: float | None


def api_key() -> str | None:
    """OAB_JUDGE_API_KEY without surrounding blanks (a pasted key often ends in a newline); blank is unset."""
    return (os.environ.get(API_KEY_ENV) or "").strip() or None


def missing_keys(model: str) -> tuple[str, ...]:
    """The provider key variables `model` needs and the environment lacks; a blank one is missing."""
    keys = tuple(sorted((k, not v.strip()) for k, v in os.environ.items() if v and "KEY" in k))
    return _missing_keys(model, keys)  # cached, but never across a change of the environment


@functools.cache
def _missing_keys(model: str, keys: tuple[tuple[str, bool], ...]) -> tuple[str, ...]:
    hidden = {k: os.environ.pop(k) for k, blank in keys if blank}  # litellm takes a blank key as one
    try:
        found = litellm.validate_environment(model)
    finally:
        os.environ.update(hidden)
    return () if found.get("keys_in_environment") else tuple(found.get("missing_keys") or ())


def call_key(settings: JudgeSettings) -> str | None:
    """OAB_JUDGE_API_KEY, else the provider's variable (litellm's); a local server with neither: a dummy."""
    if key := api_key():
        return key
    return "EMPTY" if settings.api_base and missing_keys(settings.judge_model) else None


def says(exc: BaseException | None, phrases: tuple[str, ...]) -> bool:
    """`exc`, or an error behind it (litellm wraps the one that tells the cause), says one of `phrases`."""
    for _ in range(8):
        if exc is None or any(p in str(exc) for p in phrases):
            return exc is not None
        exc = exc.__cause__ or exc.__context__
    return False


def connection_failed(exc: BaseException) -> bool:
    """Nothing answered (refused, reset, DNS): litellm reports it as a 500 "Connection error"."""
    nothing = isinstance(exc, litellm.APIConnectionError) or "Connection error" in str(exc)
    return nothing and not says(exc, BAD_HEADER)


def refused_for_good(error: str | None) -> bool:
    """A recorded error saying the judge cannot be called at all (key, model, nothing answering)."""
    text = error or ""
    head = _REFUSED.match(text)
    if head and (head.group(1) in _FOR_GOOD or int(head.group(2) or 0) in REFUSED_STATUSES):
        return True
    return text.startswith(UNREACHABLE) or "Missing credentials" in text or "Connection error" in text


def permanent(exc: BaseException) -> bool:
    """An error every retry would meet again (a prompt too long or a content filter is one question's)."""
    if isinstance(exc, (litellm.ContextWindowExceededError, litellm.ContentPolicyViolationError)):
        return False
    refused = (litellm.AuthenticationError, litellm.PermissionDeniedError, litellm.NotFoundError)
    status = getattr(exc, "status_code", None)  # litellm calls some of them APIError
    return status in REFUSED_STATUSES or isinstance(exc, (*refused, litellm.BadRequestError))


def transient(exc: BaseException) -> bool:
    """A 429, a 5xx, a timeout or a connection error: worth another try (a missing or malformed key is not)."""
    status = getattr(exc, "status_code", None)
    waited = isinstance(exc, (litellm.Timeout, litellm.APIConnectionError, asyncio.TimeoutError))
    retry = waited or status == 429 or (isinstance(status, int) and status >= 500)
    return retry and not says(exc, NO_KEY + BAD_HEADER)


class Breaker:
    """After `limit` connection failures in a row across a run's calls, every call fails at once."""

    def __init__(self, limit: int = 8):
        self.limit, self.failures, self.last = limit, 0, ""

    @property
    def open(self) -> bool:
        return self.failures >= self.limit

    def record(self, exc: BaseException | None) -> None:
        if exc is None:
            self.failures = 0
        elif connection_failed(exc):
            self.failures += 1
            self.last = describe_error(exc)

    def why(self) -> str:
        why = f"{self.failures} connection failures in a row (last: {self.last})"
        return f"{UNREACHABLE}: {why}; not called again in this run"


def describe_error(exc: BaseException) -> str:
    """An error message for records, scrubbed of every key (providers may echo one)."""
    status = getattr(exc, "status_code", None)
    name = f"{type(exc).__name__} ({status})" if isinstance(status, int) else type(exc).__name__
    text = f"{name}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if says(exc, NO_KEY):
        text += f" (set {API_KEY_ENV} or the provider's key variable, or give an api_base)"
    elif says(exc, BAD_HEADER):
        text += " (the API key holds a control character: check the key variable)"
    return redact(text)[:500]


def backoff(settings: JudgeSettings, state: tenacity.RetryCallState) -> float:
    """Retry-After when the server gave one (capped), else exponential with jitter."""
    exc = state.outcome.exception()
    headers = getattr(exc, "litellm_response_headers", None) or getattr(exc, "response", None)
    headers = getattr(headers, "headers", headers) or {}
    try:
        wait = float(headers.get("retry-after") or headers.get("Retry-After"))
    except (TypeError, ValueError):
        first, most = settings.backoff_initial, settings.backoff_max
        return tenacity.wait_exponential_jitter(multiplier=first, max=most, jitter=first)(state)
    return min(max(0.0, wait), settings.backoff_max)


def usage_of(resp: Any) -> Usage:
    u = getattr(resp, "usage", None)
    cached = getattr(getattr(u, "prompt_tokens_details", None), "cached_tokens", 0)
    return Usage(
        prompt_tokens=getattr(u, "prompt_tokens", 0) or 0,
        cached_tokens=cached or getattr(u, "cache_read_input_tokens", 0) or 0,  # or Anthropic's
        completion_tokens=getattr(u, "completion_tokens", 0) or 0,
        reasoning_tokens=getattr(getattr(u, "completion_tokens_details", None), "reasoning_tokens", 0) or 0,
    )


@functools.cache
def map_prices(model: str) -> Prices:
    """litellm's bundled cost map for `model`, looked up once per model."""
    try:
        info = litellm.get_model_info(model)
    except Exception:  # not in the map: unknown, never zero
        return Prices(None, None, None)
    fresh, cached = info.get("input_cost_per_token"), info.get("cache_read_input_token_cost")
    return Prices(fresh, fresh if cached is None else cached, info.get("output_cost_per_token"))


def prices(settings: JudgeSettings) -> Prices:
    """Each price given (USD per 1M tokens) wins over the cost map's; cached input without its own price:
    the map's cached price with the map's input price, else the input price."""
    known = map_prices(settings.judge_model)
    given = [None if p is None else p / 1e6 for p in (settings.price_input, settings.price_cached_input)]
    fresh = known.input if given[0] is None else given[0]
    cached = given[1] if given[1] is not None else known.cached_input if given[0] is None else fresh
    output = known.output if settings.price_output is None else settings.price_output / 1e6
    return Prices(fresh, fresh if cached is None else cached, output)


def cost(settings: JudgeSettings, usage: Usage) -> float | None:
    """Dollars for `usage`, cached prompt tokens at the cached price; None when a price is unknown."""
    p = prices(settings)
    if p.input is None or p.output is None:
        return None
    fresh = (usage.prompt_tokens - usage.cached_tokens) * p.input
    return fresh + usage.cached_tokens * p.cached_input + usage.completion_tokens * p.output


def request_params(settings: JudgeSettings, messages: list[dict], response_format: dict | None) -> dict:
    """What a judge request asks for: the same for a direct call and a Batch API line."""
    params = {"messages": messages, "max_tokens": settings.max_tokens, "temperature": settings.temperature}
    params |= {"reasoning_effort": settings.reasoning_effort or None, "response_format": response_format}
    return {k: v for k, v in params.items() if v is not None}


def _worker() -> None:
    while True:
        future, call = _CALLS.get()
        if future.set_running_or_notify_cancel():  # not cancelled before it began
            try:
                future.set_result(call())
            except BaseException as e:
                future.set_exception(e)
        _IDLE.release()


async def in_thread(call: Callable[[], Any]) -> Any:
    """`call()` on daemon threads (one more when none is idle): a stopped run never waits for a call."""
    future: concurrent.futures.Future = concurrent.futures.Future()
    if not _IDLE.acquire(blocking=False):
        threading.Thread(target=_worker, name="oab-judge-call", daemon=True).start()
    _CALLS.put((future, call))
    return await asyncio.wrap_future(future)


async def call_judge(
    settings: JudgeSettings, messages: list[dict], fmt: dict | None, breaker: Breaker | None = None
) -> CallResult:
    breaker = breaker or Breaker()
    if breaker.open:  # it opened while this judgment waited for its call slot: no call
        return CallResult("api_error", "", Usage(), None, breaker.why(), 0)
    kwargs = {"model": settings.judge_model, **request_params(settings, messages, fmt)}
    kwargs |= {"timeout": settings.timeout, "api_base": settings.api_base, "api_key": call_key(settings)}
    kwargs |= {**_NO_RETRIES, "no-log": True}  # no litellm logging callbacks: we record what we need

    async def attempt() -> Any:
        try:
            resp = await in_thread(functools.partial(litellm.completion, **kwargs))
        except Exception as e:
            breaker.record(e)
            raise
        breaker.record(None)
        return resp

    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(settings.max_attempts),
        wait=functools.partial(backoff, settings),
        retry=tenacity.retry_if_exception(lambda e: transient(e) and not breaker.open),
        reraise=True,
    )
    try:
        resp = await retrying(attempt)
    except Exception as e:
        status = "refused" if isinstance(e, litellm.ContentPolicyViolationError) else "api_error"
        why = breaker.why() if breaker.open else describe_error(e)
        return CallResult(status, "", Usage(), None, why, retrying.statistics["attempt_number"])
    usage = usage_of(resp)
    return classify(resp, usage, cost(settings, usage), retrying.statistics["attempt_number"])


def classify(resp: Any, usage: Usage, price: float | None, attempts: int) -> CallResult:
    """A judge reply as a status: the one rule for direct calls and Batch API results alike."""
    choice = resp.choices[0]
    content = choice.message.content or ""
    refusal = getattr(choice.message, "refusal", None)
    status, error = "ok", None
    if refusal or choice.finish_reason == "content_filter":
        status, error = "refused", f"refusal: {refusal or choice.finish_reason}"
    elif choice.finish_reason == "length":
        status, error = "truncated", "finish_reason=length (max_tokens reached)"
    elif not content.strip() and usage.reasoning_tokens:
        status, error = "truncated", "empty content after reasoning tokens"
    elif not content.strip():
        status, error = "parse_error", "empty reply"
    return CallResult(status, content, usage, price, error, attempts)


def check_call(who: str, model: str, *, api_base: str | None, api_key: str | None) -> None:
    """One minimal call (1 output token, 16 for a reasoning model) before spending on `model`: refused
    for good or unreachable is an error, a transient failure a warning."""
    reasoning = litellm.supports_reasoning(model)  # False for a model litellm does not know
    messages = [{"role": "user", "content": CHECK_PROMPT}]
    kwargs = {"model": model, "messages": messages, "max_tokens": 16 if reasoning else 1, "timeout": 60}
    kwargs |= {"api_base": api_base, "api_key": api_key, **_NO_RETRIES}
    where = api_base or "its provider"
    for attempt in range(2):
        try:
            litellm.completion(**kwargs)
            return
        except Exception as e:
            text = redact(f"{type(e).__name__}: {e}".replace("\n", " "))[:1000]
            if isinstance(e, litellm.BadRequestError) and not attempt:  # a budget too small: once more
                kwargs["max_tokens"] = 256
                continue
            if permanent(e) or says(e, NO_KEY + BAD_HEADER):
                raise ValueError(f"the {who} {model} at {where} refused the check call: {text}") from None
            if connection_failed(e):
                raise ValueError(f"the {who} {model} at {where} does not answer: {text}") from None
            print(f"preflight: warning: the {who}'s check call failed ({text}); going on", file=sys.stderr)
            return


def check_judges(members: list[JudgeSettings]) -> None:
    """The check call to each judge (each member of a jury) with the key its calls will carry."""
    for m in members:
        check_call("judge", m.judge_model, api_base=m.api_base, api_key=call_key(m))
