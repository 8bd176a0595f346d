"""Grade many (question, answer) pairs: cache first, then concurrent calls, a progress bar, totals."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import json
import threading
from collections.abc import Iterable

from tqdm import tqdm

from oab_bench.conventions import JUDGE_STOP_GRACE_S
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading import loop
from oab_bench.judge.grading.batch.state import prune_kept
from oab_bench.judge.grading.batch.submit import direct_from_log, judge_batch
from oab_bench.judge.grading.grader import _STOPPING, Judge
from oab_bench.judge.records import Judgment


async def judge_all(
    judge: Judge, pairs: list[tuple[QuestionRow, Answer]], *, progress: bool = True
) -> list[Judgment]:
    """Every pair graded, in input order; cancelled (Ctrl-C), calls already paid for finish and are stored."""
    if judge.settings.batch:  # the replies through the provider's Batch API first, kept in the log (batch/)
        await judge_batch(judge, pairs, progress=progress)
    batches = isinstance(judge, Judge) and judge.store.path is not None  # a cache that may have batches
    kept = direct_from_log(judge, pairs) if batches else {}
    semaphore = asyncio.Semaphore(2 * judge.settings.concurrency)  # under way; calling: Judge.call_slot
    stopping = asyncio.Event()
    stop_token = _STOPPING.set(stopping)  # the tasks below copy it; the caller's context is reset below
    bar = tqdm(total=len(pairs), desc="judging", unit="q", disable=not progress, dynamic_ncols=True)
    failures, spent = 0, 0.0
    calling: set[asyncio.Task] = set()

    async def one(i: int, row: QuestionRow, answer: Answer) -> Judgment:
        nonlocal failures, spent
        async with semaphore:
            calling.add(asyncio.current_task())
            j = await judge.grade(row, answer, kept[i]) if i in kept else await judge.grade(row, answer)
        failures += j.status != "ok"
        spent += 0.0 if j.cached else j.cost_usd or 0.0
        bar.set_postfix_str(f"failed {failures}, ${spent:.4f}", refresh=False)
        bar.update(1)
        return j

    tasks = [asyncio.ensure_future(one(i, r, a)) for i, (r, a) in enumerate(pairs)]
    gathered = asyncio.gather(*tasks)
    # once stopped, nobody awaits the gather: take its outcome, or asyncio prints a traceback for it
    gathered.add_done_callback(lambda f: f.cancelled() or f.exception())
    gc.freeze()  # the run's long-lived objects (litellm's modules, rows): the collector skips them
    try:
        done = list(await asyncio.shield(gathered))
        if batches:
            prune_kept(judge.store)
        return done
    except asyncio.CancelledError:
        stopping.set()  # under way but not calling yet: they stop at the call slot
        for t in tasks:
            if t not in calling:
                t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=JUDGE_STOP_GRACE_S)
        for t in tasks:
            t.cancel()
        raise
    finally:
        gc.unfreeze()
        _STOPPING.reset(stop_token)
        bar.close()


def run_judge_all(
    judge,
    pairs: list[tuple[QuestionRow, Answer]],
    *,
    progress: bool = True,
    stopping: threading.Event | None = None,
) -> list[Judgment]:
    """judge_all on a loop of its own (a notebook's: in a thread). Once `stopping` is set nothing starts,
    calls in flight finish and are stored, and RuntimeError is raised (a signal: Stopped)."""

    async def until_stopped() -> list[Judgment]:
        task = asyncio.ensure_future(judge_all(judge, pairs, progress=progress))
        while not task.done() and not stopping.is_set():
            await asyncio.wait({task}, timeout=0.2)
        task.cancel()  # nothing once done; else calls in flight finish, then it ends
        try:
            return await task
        except asyncio.CancelledError:
            raise RuntimeError("judging stopped while judging") from None

    if stopping is not None and stopping.is_set():
        raise RuntimeError("judging stopped before it began")
    coro = judge_all(judge, pairs, progress=progress) if stopping is None else until_stopped()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return loop.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(loop.run, coro).result()


def dump_jsonl(judgments: Iterable[Judgment]) -> str:
    return "".join(json.dumps(j.record(), ensure_ascii=False) + "\n" for j in judgments)
