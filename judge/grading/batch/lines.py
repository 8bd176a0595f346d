"""The JSONL a batch uploads: one line per judgment, the body a direct call would send."""

from __future__ import annotations

import json

import litellm

from oab_bench.judge.grading.client import request_params
from oab_bench.judge.settings import JudgeSettings

ENDPOINT = "/v1/chat/completions"
MAX_REQUESTS, MAX_BYTES = 50_000, 200 * 1024 * 1024  # OpenAI's limits per batch input file


def provider(settings: JudgeSettings) -> tuple[str, str]:
    """(model name the provider knows, litellm provider for the files/batches calls)."""
    name, found, _, _ = litellm.get_llm_provider(settings.judge_model)
    if found in ("openai", "azure"):
        return name, found
    if settings.api_base:  # an OpenAI-compatible server (vLLM, a proxy) that implements the Batch API
        return name, "openai"
    raise ValueError(
        f"--batch: {settings.judge_model} ({found}) has no OpenAI-style Batch API through litellm; "
        "use an openai/ or azure/ judge, or an OpenAI-compatible server with --api-base"
    )


def request_line(
    custom_id: str, settings: JudgeSettings, messages: list[dict], response_format: dict | None
) -> bytes:
    """The line of one request: the body litellm would send for a direct call (its parameter
    mapping and dropping of unsupported parameters included), with the provider's model name."""
    name, found = provider(settings)
    params = request_params(settings, messages, response_format)
    messages = params.pop("messages")
    mapped = litellm.get_optional_params(model=name, custom_llm_provider=found, drop_params=True, **params)
    mapped.pop("stream", None)
    extra = mapped.pop("extra_body", None) or {}
    body = {"model": name, "messages": messages, **mapped, **extra}
    line = {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}
    return (json.dumps(line, ensure_ascii=False) + "\n").encode()


def split(
    lines: list[bytes], max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES
) -> list[list[bytes]]:
    """Consecutive groups of lines, each within the provider's limits per input file."""
    groups: list[list[bytes]] = []
    size = 0
    for line in lines:
        if len(line) > max_bytes:
            raise ValueError(
                f"--batch: one request is {len(line)} bytes, over the {max_bytes}-byte file limit"
            )
        if not groups or len(groups[-1]) >= max_requests or size + len(line) > max_bytes:
            groups.append([])
            size = 0
        groups[-1].append(line)
        size += len(line)
    return groups
