"""Keep API keys out of everything we write (providers echo them in errors): the values of key-like
variables, bearer tokens and credentials inside URLs are masked."""

from __future__ import annotations

import os
import re

SECRET_NAME = re.compile(r"(API_KEY|_TOKEN|SECRET|PASSWORD|ACCESS_KEY|_KEY$)", re.IGNORECASE)
BEARER = re.compile(r"(Bearer\s+)[^\s'\",}]+", re.IGNORECASE)
URL_USER = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^\s/@'\"]+@", re.IGNORECASE)
URL_KEY = re.compile(
    r"([?&](?:api[_-]?key|key|token|access[_-]?token|secret|password|sig|signature)=)[^&\s'\"#]+",
    re.IGNORECASE,
)
MASK = "***"


def secret_values(env: dict[str, str] | None = None) -> list[str]:
    """Values of key-like variables, longest first (so a key containing another is masked whole)."""
    env = os.environ if env is None else env
    values = {v for k, v in env.items() if SECRET_NAME.search(k) and v and len(v) >= 6 and v != "EMPTY"}
    return sorted(values, key=len, reverse=True)


def redact(
    text: str | None, env: dict[str, str] | None = None, *, secrets: list[str] | None = None
) -> str | None:
    """`secrets`: secret_values() computed once by a caller redacting many texts."""
    if not text:
        return text
    for value in secret_values(env) if secrets is None else secrets:
        text = text.replace(value, MASK)
    text = URL_USER.sub(rf"\g<1>{MASK}@", text)
    return BEARER.sub(rf"\g<1>{MASK}", URL_KEY.sub(rf"\g<1>{MASK}", text))
