"""One minimal real call to a model before a command spends on it (`run`, `probe`): a key, model
name or URL the provider rejects fails here, in seconds, with its (redacted) message, instead of
as every judgment or answer failing the same way. About 10 prompt tokens and the fewest output
tokens (1; 16 for a reasoning model): a negligible cost. `--no-check-call` skips it."""

from __future__ import annotations

import sys

from oab_bench.judge.redact import redact
from oab_bench.judge.settings import JudgeSettings

CHECK_PROMPT = "Responda apenas: ok"  # the check call's whole prompt (tests tell check calls by it)


class CheckCallError(ValueError):
    """The model refused the check call for good, or nothing answered."""


def check_call(who: str, model: str, *, api_base: str | None, api_key: str | None) -> None:
    """A transient failure (429, 5xx, timeout) is only a warning; a provider refusing a tiny
    budget (a 400) is asked once more with 256 tokens."""
    import litellm

    from oab_bench.judge.grading.client import (
        connection_failed,
        malformed_header,
        missing_credentials,
        permanent,
    )

    try:
        reasoning = bool(litellm.supports_reasoning(model))
    except Exception:  # a model litellm does not know
        reasoning = False
    kwargs = {
        "model": model,
        "messages": [{"role": "user", "content": CHECK_PROMPT}],
        "max_tokens": 16 if reasoning else 1,
        "timeout": 60,
        "num_retries": 0,
        "max_retries": 0,
        "drop_params": True,
        **({"api_base": api_base} if api_base else {}),
        **({"api_key": api_key} if api_key else {}),
    }
    where = api_base or "its provider"
    for attempt in range(2):
        try:
            litellm.completion(**kwargs)
            return
        except Exception as e:
            text = redact(f"{type(e).__name__}: {e}".replace("\n", " "))[:1000]
            if isinstance(e, litellm.BadRequestError) and not attempt:
                kwargs["max_tokens"] = 256
                continue
            if permanent(e) or missing_credentials(e) or malformed_header(e):
                raise CheckCallError(f"the {who} {model} at {where} refused the check call: {text}") from None
            if connection_failed(e):
                raise CheckCallError(f"the {who} {model} at {where} does not answer: {text}") from None
            print(f"preflight: warning: the {who}'s check call failed ({text}); going on", file=sys.stderr)
            return


def check_judges(members: list[JudgeSettings]) -> None:
    """The check call to each judge (each member of a jury) with the key its calls will carry."""
    from oab_bench.judge.grading.client import call_key

    for member in members:
        check_call("judge", member.judge_model, api_base=member.api_base, api_key=call_key(member))
