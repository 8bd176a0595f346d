"""Submit (or reattach to) the batches of every judgment still to pay for, wait, and keep each finished
batch's replies in the log before it counts as collected; the runner grades them as direct replies."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import sys
import time
import uuid
from types import SimpleNamespace

import litellm
from tqdm import tqdm

from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.batch import api
from oab_bench.judge.grading.batch.state import BatchLog, Chunk, Request
from oab_bench.judge.grading.client import CallResult, classify, cost, usage_of
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.settings import JudgeSettings

TERMINAL = ("completed", "expired", "failed", "cancelled")
POLL_FIRST, POLL_MAX = 0.5, 30.0
Todo = dict[str, tuple[QuestionRow, Answer, str]]  # cache key -> (row, answer, the text judged)


class BatchPending(RuntimeError):
    """Batches still running when --batch-wait ran out; a rerun reattaches to them."""


def reply(settings: JudgeSettings, body: dict) -> CallResult:
    """One batch reply as a call's result, priced at the batch rate."""
    resp = litellm.ModelResponse(**body)
    usage = usage_of(resp)
    price = cost(settings, usage)
    return classify(resp, usage, None if price is None else price * settings.price_batch_discount, 1)


def answered(output: bytes) -> dict[str, dict]:
    """custom_id -> the reply's body, for every line of an output file the provider answered with 200."""
    lines = [json.loads(raw) for raw in output.splitlines() if raw.strip()]
    ok = [x for x in lines if not x.get("error") and (x.get("response") or {}).get("status_code") == 200]
    return {x["custom_id"]: x["response"]["body"] for x in ok}


def _say(text: str) -> None:
    tqdm.write(text, file=sys.stderr)


def endpoint(settings: JudgeSettings) -> str:
    """Which server a batch went to, as a hash: the log never holds a URL (it may carry a token)."""
    return hashlib.sha256((settings.api_base or "").rstrip("/").encode()).hexdigest()[:12]


async def _submit(judge: Judge, log: BatchLog, todo: Todo) -> list[Chunk]:
    """Reattach to the recorded batches that judge keys of `todo`; submit the rest as new batches."""
    settings = judge.settings
    attached: list[Chunk] = []
    for chunk in log.chunks().values():
        mine = {r.key for r in chunk.requests.values()} & set(todo)
        if chunk.done or not mine or chunk.judge_model != settings.judge_model:
            continue
        if chunk.endpoint != endpoint(settings):  # polling another server would fail, or worse
            raise ValueError(
                f"batch {chunk.batch_id or chunk.chunk} (in {log.path}) holds {len(mine)} of these "
                "judgments and was submitted through another --api-base than this run's: rerun with "
                "that --api-base to collect it (nothing is submitted twice), or use another cache folder"
            )
        if chunk.file_id is None:  # killed before its upload was recorded: nothing was submitted
            log.append("done", chunk.chunk, status="abandoned")
            continue
        if chunk.batch_id is None:  # killed around the batch's creation: find it, else create it now
            found = await api.find(settings, chunk.file_id)
            chunk.batch_id = found or await api.create(settings, chunk.file_id, chunk.chunk)
            log.append("batch", chunk.chunk, batch_id=chunk.batch_id)
        _say(f"batch {chunk.batch_id}: reattached ({len(chunk.requests)} requests)")
        attached.append(chunk)
        todo = {k: v for k, v in todo.items() if k not in mine}
    lines = [api.request_line(k, settings, *judge.request(row, text)) for k, (row, _, text) in todo.items()]
    sent_to = {"judge_model": settings.judge_model, "endpoint": endpoint(settings)}
    for group in api.split(lines):
        keys = [json.loads(line)["custom_id"] for line in group]
        requests = {
            k: Request(key=k, question_id=todo[k][0].question_id, model=todo[k][1].model) for k in keys
        }
        chunk = Chunk(chunk=uuid.uuid4().hex, requests=requests, **sent_to)
        log.append("submit", chunk.chunk, **chunk.model_dump(exclude={"chunk"}))  # before anything is sent
        chunk.file_id = await api.upload(settings, f"oab-bench-{chunk.chunk}.jsonl", b"".join(group))
        log.append("file", chunk.chunk, file_id=chunk.file_id)
        chunk.batch_id = await api.create(settings, chunk.file_id, chunk.chunk)
        log.append("batch", chunk.chunk, batch_id=chunk.batch_id)
        _say(f"batch {chunk.batch_id}: submitted {len(group)} requests")
        attached.append(chunk)
    return attached


async def _collect(judge: Judge, log: BatchLog, chunk: Chunk, batch, todo: Todo) -> int:
    """A finished batch's replies kept (committed) before it counts as collected; how many it left unanswered."""
    bodies = answered(await api.content(judge.settings, batch.output_file_id))
    replies = {key: body for key, body in bodies.items() if judge.store.get(key) is None}  # custom_id: key
    log.append("kept", chunk.chunk, replies=replies)
    if others := len(set(replies) - set(todo)):
        _say(f"batch {batch.id}: {others} result(s) belong to judgments not in this run: kept for later")
    log.append("done", chunk.chunk, status=batch.status)
    return sum(r.key in todo and r.key not in bodies for r in chunk.requests.values())


def direct_from_log(judge: Judge, pairs: list[tuple[QuestionRow, Answer]]) -> dict[int, CallResult]:
    """Index -> the reply kept in the batch log of these pairs; refused if an uncollected batch holds one."""
    log = BatchLog(judge.store.path.parent, access="read")
    if not log.path.exists():
        return {}
    kept, open_ = log.kept(), log.open_keys()
    first: dict[int, CallResult] = {}
    waiting: dict[str, int] = {}
    for i, (row, answer) in enumerate(pairs):
        key, _, text = judge.to_call(row, answer)
        if text is not None and key in kept:
            first[i] = reply(judge.settings, kept[key])
        elif text is not None and key in open_:
            waiting[open_[key]] = waiting.get(open_[key], 0) + 1
    if waiting:
        raise ValueError(
            f"{sum(waiting.values())} of these judgments are in batches not yet collected "
            f"({', '.join(sorted(waiting))}, in {log.path}): rerun with --batch to collect them "
            "(nothing is submitted twice); a direct call would pay for them again"
        )
    return first


async def judge_batch(judge: Judge, pairs: list[tuple[QuestionRow, Answer]], *, progress: bool) -> None:
    """The replies of every judgment of `pairs` still to pay for, through batches, kept in the log."""
    if judge.upstream is not None:
        raise ValueError("--batch: only the oab prompt is judged in batches (upstream prompts call per turn)")
    if judge.store.path is None:
        raise ValueError("--batch needs a judgment cache folder: its batches are recorded there")
    log = BatchLog(judge.store.path.parent, access="write" if judge.store.writable else "read")
    kept, todo = log.kept(), {}
    for row, answer in pairs:
        key, _, text = judge.to_call(row, answer)
        if text is not None and key not in kept:  # a second identical answer: one request
            todo.setdefault(key, (row, answer, text))
    if todo:
        async with log.submitting():
            chunks = await _submit(judge, log, todo)
        await _wait(judge, log, chunks, todo, progress)


async def _wait(judge: Judge, log: BatchLog, chunks: list[Chunk], todo: Todo, progress: bool) -> None:
    settings = judge.settings
    total = sum(len(c.requests) for c in chunks)
    bar = tqdm(total=total, desc="batch", unit="q", disable=not progress, dynamic_ncols=True)
    deadline = time.monotonic() + (math.inf if settings.batch_wait is None else settings.batch_wait)
    pending = {c.batch_id: c for c in chunks}
    seen, counted = {}, {}  # batch id -> its last status, its requests done
    retried, delay = 0, POLL_FIRST
    try:
        while pending:
            for batch in await asyncio.gather(*(api.retrieve(settings, b) for b in pending)):
                counts = batch.request_counts or SimpleNamespace(completed=0, failed=0, total="?")
                counted[batch.id] = counts.completed + counts.failed
                if seen.get(batch.id) != batch.status:
                    seen[batch.id] = batch.status
                    errors = getattr(getattr(batch, "errors", None), "data", None) or []  # failed whole
                    reasons = "; ".join(f"{e.code}: {e.message}" for e in errors[:3]) or "no reason given"
                    why = f"; {reasons}" if batch.status == "failed" else ""
                    done = f"{counted[batch.id]}/{counts.total} done, {counts.failed} failed"
                    _say(f"batch {batch.id}: {batch.status} ({done}{why})")
                if batch.status in TERMINAL:
                    retried += await _collect(judge, log, pending.pop(batch.id), batch, todo)
            bar.n = min(total, sum(counted.values()))
            bar.set_postfix_str(", ".join(f"{b} {seen[b]}" for b in pending), refresh=False)
            bar.refresh()
            if pending and time.monotonic() >= deadline:
                raise BatchPending(
                    f"{len(pending)} batch(es) still running after --batch-wait {settings.batch_wait:g}s: "
                    f"{', '.join(pending)} (recorded in {log.path}); rerun the same command to reattach, "
                    "nothing is submitted twice"
                )
            if pending:
                await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
                delay = min(POLL_MAX, delay * 1.5)
    finally:
        bar.close()
    if retried:
        _say(f"batch: {retried} request(s) failed or expired inside their batch; retried directly")
