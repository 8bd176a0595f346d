"""One judge call through litellm: retried on transient errors, classified, usage and cost counted.

Retries: 429 waits what Retry-After says (capped), 5xx/timeouts/connection errors wait an
exponential backoff with jitter; other 4xx fail at once. The key comes from
OAB_JUDGE_API_KEY, else litellm reads the provider's usual variable; it is passed to
litellm and nowhere else.

Lean per call: we price every call from its usage (prices looked up once per model), so for
our calls litellm skips its own cost calculation and its success logging (`no-log`, and its
internal-call signal): with a fast judge, CPU per call is wall time (docs/performance.md).
The retry loop is a plain loop for the same reason.

Longer than most modules on purpose: a call's retry, classification and accounting are one
sequence read top to bottom; split, each part would need the others' private state.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import os
import random
import re
from typing import Any, NamedTuple

# litellm's bundled cost map, not a fetch from GitHub at import: offline-safe and reproducible.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
from litellm.litellm_core_utils.litellm_logging import Logging as _LitellmLogging

from oab_bench.judge.grading.loop import INLINE_SETUP
from oab_bench.judge.records import Usage
from oab_bench.judge.redact import redact
from oab_bench.judge.settings import JudgeSettings

logger = logging.getLogger(__name__)

API_KEY_ENV = "OAB_JUDGE_API_KEY"

litellm.suppress_debug_info = True
litellm.telemetry = False
for _name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
    logging.getLogger(_name).setLevel(logging.ERROR)

# litellm has no switch for its per-call cost calculation; this wraps it so that, inside our calls
# only (a context variable), it returns None at once. Any other litellm use in the process is untouched.
_OWN_PRICING: contextvars.ContextVar[bool] = contextvars.ContextVar("oab_own_pricing", default=False)


def _skip_cost_in_our_calls() -> None:
    original = getattr(_LitellmLogging, "response_cost_calculator", None)
    if original is None or getattr(original, "_oab_wrapped", False):
        return

    @functools.wraps(original)
    def calculator(self, *args, **kwargs):
        return None if _OWN_PRICING.get() else original(self, *args, **kwargs)

    calculator._oab_wrapped = True  # type: ignore[attr-defined]
    _LitellmLogging.response_cost_calculator = calculator


_skip_cost_in_our_calls()

try:
    from litellm._internal_context import is_internal_call as _INTERNAL
except ImportError:  # another litellm: nothing to suppress this way
    _INTERNAL = contextvars.ContextVar("oab_internal", default=False)

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
    """OAB_JUDGE_API_KEY without surrounding blanks (a pasted key often ends in a newline, which no
    HTTP header may carry); blank counts as unset."""
    return (os.environ.get(API_KEY_ENV) or "").strip() or None


def missing_keys(model: str) -> tuple[str, ...]:
    """The provider key variables `model` needs and the environment lacks (empty: none missing).
    A blank variable (`OPENAI_API_KEY=' '`) is missing, as an empty one is."""
    present = tuple(sorted(k for k, v in os.environ.items() if v.strip() and "KEY" in k))
    blank = tuple(sorted(k for k, v in os.environ.items() if v and not v.strip() and "KEY" in k))
    return _missing_keys(model, present, blank)  # cached, but never across a change of the environment


@functools.cache
def _missing_keys(model: str, present: tuple[str, ...], blank: tuple[str, ...]) -> tuple[str, ...]:
    # litellm counts any non-empty value as a key: hide the blank ones while it looks (rare, brief)
    hidden = {k: os.environ.pop(k) for k in blank if k in os.environ}
    try:
        found = litellm.validate_environment(model)
    finally:
        os.environ.update(hidden)
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


def malformed_header(exc: BaseException) -> bool:
    """A key (or header) holding a control character: refused before sending, the same every time."""
    text = str(exc)
    return "Forbidden control character" in text or "Illegal header value" in text


# What describe_error records for an error every other call would meet too: the key, model name or URL
# (litellm reports some 403s from OpenAI-compatible servers as a plain APIError: the status says it).
_FOR_GOOD = ("AuthenticationError", "PermissionDeniedError", "NotFoundError", "APIConnectionError")
_REFUSED = re.compile(r"^(\w+)(?: \((\d{3})\))?:")
REFUSED_STATUSES = (401, 403, 404)
UNREACHABLE = "judge server unreachable"


def refused_for_good(error: str | None) -> bool:
    """A judgment's recorded error (as describe_error and Breaker.why write it) that says the judge
    cannot be called at all: a rejected or missing key, no such model, nothing answering."""
    text = error or ""
    head = _REFUSED.match(text)
    if head and (head.group(1) in _FOR_GOOD or int(head.group(2) or 0) in REFUSED_STATUSES):
        return True
    return text.startswith(UNREACHABLE) or "Missing credentials" in text or "Connection error" in text


def permanent(exc: BaseException) -> bool:
    """An error every retry would meet again: the key, the model name or the URL is wrong, or the
    request itself is refused. A prompt too long for the context or a content filter is one
    question's problem, not the run's."""
    if isinstance(exc, (litellm.ContextWindowExceededError, litellm.ContentPolicyViolationError)):
        return False
    if getattr(exc, "status_code", None) in (401, 403, 404):  # litellm calls some of them APIError
        return True
    return isinstance(
        exc,
        (
            litellm.AuthenticationError,
            litellm.PermissionDeniedError,
            litellm.NotFoundError,
            litellm.BadRequestError,
        ),
    )


def transient(exc: BaseException) -> bool:
    return isinstance(exc, _TRANSIENT) and not missing_credentials(exc) and not malformed_header(exc)


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
            self.last = describe_error(exc)

    def why(self) -> str:
        return (
            f"{UNREACHABLE}: {self.failures} connection failures in a row "
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


def describe_error(exc: BaseException) -> str:
    """An error message for records; scrubbed of every key, since providers may echo one."""
    status = getattr(exc, "status_code", None)
    name = f"{type(exc).__name__} ({status})" if isinstance(status, int) else type(exc).__name__
    text = f"{name}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if missing_credentials(exc):
        text += f" (set {API_KEY_ENV} or the provider's key variable, or give an api_base)"
    elif malformed_header(exc):
        text += " (the API key holds a control character: check the key variable)"
    return redact(text)[:500]


def usage_of(resp: Any) -> Usage:
    u = getattr(resp, "usage", None)
    if u is None:
        return Usage()
    details_in = getattr(u, "prompt_tokens_details", None)
    details_out = getattr(u, "completion_tokens_details", None)
    cached = int(getattr(details_in, "cached_tokens", 0) or 0) if details_in else 0
    cached = cached or int(getattr(u, "cache_read_input_tokens", 0) or 0)  # Anthropic's name for it
    return Usage(
        prompt_tokens=int(getattr(u, "prompt_tokens", 0) or 0),
        cached_tokens=cached,
        completion_tokens=int(getattr(u, "completion_tokens", 0) or 0),
        reasoning_tokens=int(getattr(details_out, "reasoning_tokens", 0) or 0) if details_out else 0,
    )


class Prices(NamedTuple):
    """USD per token: input, cached input, output (None: unknown)."""

    input: float | None
    cached_input: float | None
    output: float | None


@functools.cache
def map_prices(model: str) -> Prices:
    """litellm's bundled cost map for `model`, looked up once per model (not once per call)."""
    try:
        info = litellm.get_model_info(model)
    except Exception:  # not in the map: unknown, never zero
        return Prices(None, None, None)
    fresh, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    cached = info.get("cache_read_input_token_cost")
    return Prices(fresh, cached if cached is not None else fresh, out)


def prices(settings: JudgeSettings) -> Prices:
    """Per token: each price given (USD per 1M tokens) wins, each one not given is the cost map's
    (never $0: a price given alone must not make the others free). Cached input without its own
    price costs the map's cached price when the map's input price is used, else the input price."""
    known = map_prices(settings.judge_model)

    def given(value: float | None) -> float | None:
        return None if value is None else value / 1e6

    fresh = given(settings.price_input)
    cached = given(settings.price_cached_input)
    if cached is None:
        cached = known.cached_input if fresh is None else fresh
    fresh = known.input if fresh is None else fresh
    output = given(settings.price_output)
    return Prices(fresh, cached if cached is not None else fresh, known.output if output is None else output)


def cost(settings: JudgeSettings, usage: Usage, resp: Any = None) -> float | None:
    """Dollars for `usage`, cached prompt tokens at the cached price; None when the price is unknown."""
    p = prices(settings)
    if p.input is None or p.output is None:
        value = (getattr(resp, "_hidden_params", None) or {}).get("response_cost")
        return float(value) if value is not None else None
    fresh = usage.prompt_tokens - usage.cached_tokens
    cached = p.cached_input if p.cached_input is not None else p.input
    return fresh * p.input + usage.cached_tokens * cached + usage.completion_tokens * p.output


def backoff(settings: JudgeSettings, attempt: int, exc: BaseException) -> float:
    """Seconds before retry `attempt` + 1: Retry-After when the server gave one (capped), else
    exponential with jitter, min(initial * 2^(attempt-1) + U(0, initial), max)."""
    after = retry_after(exc)
    if after is not None:
        return min(after, settings.backoff_max)
    wait = settings.backoff_initial * 2 ** (attempt - 1) + random.uniform(0, settings.backoff_initial)
    return max(0.0, min(wait, settings.backoff_max))


# Providers whose litellm request setup is parameter mapping only (no credential files, no token
# fetches): on our own loops it runs inline instead of in a worker thread (loop.py).
_PURE_SETUP = frozenset({"openai", "hosted_vllm"})


@functools.cache
def _setup_is_pure(model: str) -> bool:
    try:
        return litellm.get_llm_provider(model)[1] in _PURE_SETUP
    except Exception:
        return False


async def _complete(kwargs: dict[str, Any]) -> Any:
    # We price from usage and log nothing through litellm: no per-call cost calculation (our
    # wrapper) and no async success logging (litellm's own "internal call" signal, meant for
    # calls whose logging and billing are done elsewhere).
    marks = (
        (_OWN_PRICING, _INTERNAL, INLINE_SETUP)
        if _setup_is_pure(kwargs["model"])
        else (_OWN_PRICING, _INTERNAL)
    )
    tokens = [(var, var.set(True)) for var in marks]
    try:
        return await litellm.acompletion(**kwargs)
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


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
        "no-log": True,  # no litellm logging callbacks: we record what we need ourselves
    }
    if settings.api_base:
        kwargs["api_base"] = settings.api_base
    key = call_key(settings)
    if key:
        kwargs["api_key"] = key

    breaker = breaker or Breaker()
    if breaker.open:  # it opened while this judgment waited for its call slot: no call
        return CallResult("api_error", "", Usage(), None, breaker.why(), 0)
    attempts = 0
    while True:  # a plain loop: a retry library's bookkeeping cost ~0.3 ms of CPU per call
        attempts += 1
        try:
            resp = await _complete(kwargs)
            breaker.record(None)
            break
        except litellm.ContentPolicyViolationError as e:
            breaker.record(e)
            return CallResult("refused", "", Usage(), None, describe_error(e), attempts)
        except Exception as e:
            breaker.record(e)
            if attempts >= settings.max_attempts or not transient(e) or breaker.open:
                error = breaker.why() if breaker.open else describe_error(e)
                return CallResult("api_error", "", Usage(), None, error, attempts)
            await asyncio.sleep(backoff(settings, attempts, e))

    usage = usage_of(resp)
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
