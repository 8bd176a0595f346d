"""The provider's side of a batch: the uploaded JSONL (one direct-call body per judgment, split at the
provider's limits), its files and batches endpoints through litellm (retried like judge calls)."""

from __future__ import annotations

import json
from typing import Any

import litellm
import tenacity

from oab_bench.judge.grading.client import call_key, describe_error, request_params, transient
from oab_bench.judge.settings import JudgeSettings

FIND_PAGES = 20  # the newest 2,000 batches: a kill is followed by a rerun, not by 2,000 batches
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
    """One request's line: the body litellm would send for a direct call, with the provider's model."""
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


class BatchAPIError(ValueError):
    """A files/batches call failed for good (the message is scrubbed of keys)."""


def _credentials(settings: JudgeSettings) -> dict[str, Any]:
    kw = {"custom_llm_provider": provider(settings)[1], "timeout": settings.timeout}
    kw |= {"api_base": settings.api_base, "api_key": call_key(settings)}
    return {k: v for k, v in kw.items() if v}


async def _call(settings: JudgeSettings, what: str, fn, **kwargs) -> Any:
    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(settings.max_attempts),
        wait=tenacity.wait_exponential_jitter(multiplier=settings.backoff_initial, max=settings.backoff_max),
        retry=tenacity.retry_if_exception(transient),
        reraise=True,
    )
    try:
        return await retrying(fn, **kwargs, **_credentials(settings))
    except Exception as e:
        raise BatchAPIError(f"Batch API, {what}: {describe_error(e)}") from None


async def upload(settings: JudgeSettings, name: str, data: bytes) -> str:
    return (await _call(settings, "upload", litellm.acreate_file, file=(name, data), purpose="batch")).id


async def create(settings: JudgeSettings, file_id: str, chunk: str) -> str:
    kw = {"completion_window": "24h", "endpoint": ENDPOINT, "metadata": {"oab_bench_chunk": chunk}}
    return (await _call(settings, "create", litellm.acreate_batch, input_file_id=file_id, **kw)).id


async def retrieve(settings: JudgeSettings, batch_id: str) -> Any:
    # litellm's logging would otherwise download a finished batch's output again, to price it
    quiet = {"batch_ignore_default_logging": True}
    return await _call(
        settings, f"retrieve {batch_id}", litellm.aretrieve_batch, batch_id=batch_id, litellm_metadata=quiet
    )


async def content(settings: JudgeSettings, file_id: str | None) -> bytes:
    if not file_id:
        return b""
    return (await _call(settings, f"file {file_id}", litellm.afile_content, file_id=file_id)).content


async def find(settings: JudgeSettings, file_id: str) -> str | None:
    """The batch already made from `file_id` (killed before recording it), page by page, newest first."""
    after = None
    for _ in range(FIND_PAGES):
        page = await _call(
            settings, "list", litellm.alist_batches, limit=100, **({"after": after} if after else {})
        )
        data = getattr(page, "data", None) or []
        found = [batch.id for batch in data if batch.input_file_id == file_id]
        if found or not data or not getattr(page, "has_more", False):
            return found[0] if found else None
        after = getattr(page, "last_id", None) or data[-1].id
    return None


def check_batch_api(settings: JudgeSettings) -> None:
    """The provider's files and batches endpoints answer a one-item listing, before anything is generated."""
    for what, fn in (("files", litellm.file_list), ("batches", litellm.list_batches)):
        try:
            fn(limit=1, **_credentials(settings) | {"timeout": 30})
        except Exception as e:
            raise BatchAPIError(
                f"--batch: the judge {settings.judge_model} at {settings.api_base or 'its provider'} has no "
                f"usable Batch API (listing its {what}: {describe_error(e)}); judge without --batch, or use a "
                "server that has /v1/files and /v1/batches"
            ) from None
