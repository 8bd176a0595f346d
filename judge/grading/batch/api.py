"""The provider's files and batches endpoints, through litellm (retried like judge calls)."""

from __future__ import annotations

from typing import Any

import litellm
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from oab_bench.judge.grading.batch.lines import ENDPOINT, provider
from oab_bench.judge.grading.client import call_key, describe_error, transient
from oab_bench.judge.settings import JudgeSettings


class BatchAPIError(ValueError):
    """A files/batches call failed for good (the message is scrubbed of keys)."""


def _credentials(settings: JudgeSettings) -> dict[str, Any]:
    kw: dict[str, Any] = {"custom_llm_provider": provider(settings)[1], "timeout": settings.timeout}
    if settings.api_base:
        kw["api_base"] = settings.api_base
    key = call_key(settings)
    if key:
        kw["api_key"] = key
    return kw


async def _call(settings: JudgeSettings, what: str, fn, **kwargs) -> Any:
    try:
        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(settings.max_attempts),
            wait=wait_exponential_jitter(multiplier=settings.backoff_initial, max=settings.backoff_max),
            retry=retry_if_exception(transient),
            reraise=True,
        ):
            with attempt:
                return await fn(**kwargs, **_credentials(settings))
    except Exception as e:
        raise BatchAPIError(f"Batch API, {what}: {describe_error(e)}") from None


async def upload(settings: JudgeSettings, name: str, data: bytes) -> str:
    f = await _call(settings, "upload", litellm.acreate_file, file=(name, data), purpose="batch")
    return f.id


async def create(settings: JudgeSettings, file_id: str, chunk: str) -> str:
    batch = await _call(
        settings,
        "create",
        litellm.acreate_batch,
        completion_window="24h",
        endpoint=ENDPOINT,
        input_file_id=file_id,
        metadata={"oab_bench_chunk": chunk},
    )
    return batch.id


async def retrieve(settings: JudgeSettings, batch_id: str) -> Any:
    return await _call(
        settings,
        f"retrieve {batch_id}",
        litellm.aretrieve_batch,
        batch_id=batch_id,
        # else litellm's logging downloads a finished batch's output again, to price it, in the background
        litellm_metadata={"batch_ignore_default_logging": True},
    )


async def content(settings: JudgeSettings, file_id: str | None) -> bytes:
    if not file_id:
        return b""
    got = await _call(settings, f"file {file_id}", litellm.afile_content, file_id=file_id)
    return got.content


FIND_PAGES = 20  # the newest 2,000 batches: a kill is followed by a rerun, not by 2,000 batches


async def find(settings: JudgeSettings, file_id: str) -> str | None:
    """The batch already made from `file_id` (a run killed between creating it and recording it),
    looked for page by page, newest first: on a busy account it may not be on the first page."""
    after = None
    for _ in range(FIND_PAGES):
        more = {"after": after} if after else {}
        page = await _call(settings, "list", litellm.alist_batches, limit=100, **more)
        data = getattr(page, "data", None) or []
        for batch in data:
            if batch.input_file_id == file_id:
                return batch.id
        if not data or not getattr(page, "has_more", False):
            return None
        after = getattr(page, "last_id", None) or data[-1].id
    return None


def check_batch_api(settings: JudgeSettings) -> None:
    """The provider's files and batches endpoints answer a one-item listing (one try each, no retry):
    an endpoint without them (a vLLM server, a proxy) fails before anything is generated."""
    where = settings.api_base or "its provider"
    for what, fn in (("files", litellm.file_list), ("batches", litellm.list_batches)):
        try:
            fn(limit=1, **_credentials(settings) | {"timeout": 30})
        except Exception as e:
            raise BatchAPIError(
                f"--batch: the judge {settings.judge_model} at {where} has no usable Batch API "
                f"(listing its {what}: {describe_error(e)}); judge without --batch, or use a server that has "
                "/v1/files and /v1/batches"
            ) from None
