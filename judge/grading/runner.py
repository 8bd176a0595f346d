"""Grade many (question, answer) pairs: cache first, then concurrent calls, a progress bar, totals."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel
from tqdm import tqdm

from oab_bench.conventions import JUDGE_STOP_GRACE_S
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.batch.state import prune_kept
from oab_bench.judge.grading.batch.submit import direct_from_log, judge_batch
from oab_bench.judge.grading.grader import _STOPPING, Judge
from oab_bench.judge.grading.loop import run as run_own_loop
from oab_bench.judge.records import Judgment, Usage


class Summary(BaseModel):
    total: int = 0
    cached: int = 0
    statuses: dict[str, int] = {}
    usage: Usage = Usage()
    cost_usd: float = 0.0
    unpriced_calls: int = 0

    def line(self) -> str:
        st = ", ".join(f"{k} {v}" for k, v in sorted(self.statuses.items()))
        u = self.usage
        share = f", {u.cached_tokens / u.prompt_tokens:.0%}" if u.prompt_tokens else ""
        return (
            f"{self.total} judgments ({self.cached} from cache): {st}; tokens: prompt {u.prompt_tokens} "
            f"(cached {u.cached_tokens}{share}), completion {u.completion_tokens} (reasoning {u.reasoning_tokens}); "
            f"cost ${self.cost_usd:.4f}"
            + (f" (+{self.unpriced_calls} calls with no known price)" if self.unpriced_calls else "")
        )


def summarise(judgments: Iterable[Judgment]) -> Summary:
    s = Summary()
    statuses: Counter[str] = Counter()
    for j in judgments:
        s.total += 1
        statuses[j.status] += 1
        if j.cached:
            s.cached += 1
            continue
        s.usage = s.usage + j.usage
        if j.cost_usd is None:
            s.unpriced_calls += 1 if j.usage.prompt_tokens else 0
        else:
            s.cost_usd += j.cost_usd
    s.statuses = dict(statuses)
    return s


async def judge_all(
    judge: Judge, pairs: list[tuple[QuestionRow, Answer]], *, progress: bool = True
) -> list[Judgment]:
    """Grade every pair, at most `concurrency` calls at a time; results in input order."""
    if judge.settings.batch:  # through the provider's Batch API (batch/)
        done = await judge_batch(judge, pairs, progress=progress)
        prune_kept(judge.store)  # stored and committed: the replies kept for them may go (batch/state.py)
        return done
    kept: dict = {}
    batches = isinstance(judge, Judge) and judge.store.path is not None  # a cache that may have batches
    if batches:
        kept = direct_from_log(judge, pairs)
    # judgments under way; at most `concurrency` of them in a call at once (Judge.call_slot)
    semaphore = asyncio.Semaphore(2 * judge.settings.concurrency)
    stopping = asyncio.Event()
    stop_token = _STOPPING.set(stopping)  # the tasks below copy it; the caller's context is reset below
    bar = tqdm(total=len(pairs), desc="judging", unit="q", disable=not progress, dynamic_ncols=True)
    failures, spent = 0, 0.0
    calling: set[asyncio.Task] = set()

    async def one(i: int, row: QuestionRow, answer: Answer) -> Judgment:
        nonlocal failures, spent
        async with semaphore:
            calling.add(asyncio.current_task())
            j = await (judge.grade(row, answer, kept[i]) if i in kept else judge.grade(row, answer))
        if j.status != "ok":
            failures += 1
        if not j.cached and j.cost_usd:
            spent += j.cost_usd
        bar.set_postfix_str(f"failed {failures}, ${spent:.4f}", refresh=False)
        bar.update(1)
        return j

    tasks = [asyncio.ensure_future(one(i, r, a)) for i, (r, a) in enumerate(pairs)]
    gathered = asyncio.gather(*tasks)
    # once stopped, nobody awaits the gather: take its outcome, or asyncio prints a traceback for it
    gathered.add_done_callback(lambda f: f.cancelled() or f.exception())
    try:
        with fewer_collections(len(pairs) >= 200):
            done = list(await asyncio.shield(gathered))
        if batches:
            prune_kept(judge.store)
        return done
    except asyncio.CancelledError:  # Ctrl-C: calls already paid for finish and are stored, briefly
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
        _STOPPING.reset(stop_token)
        bar.close()


@contextlib.contextmanager
def fewer_collections(active: bool = True):
    """A run makes many short-lived objects per call while it holds many long-lived ones (rows,
    answers, judgments, litellm's modules), so Python's collector rescans the same survivors again
    and again: freeze what exists and collect the young generation less often, for the run only
    (docs/performance.md). No collection first: litellm's modules are large, so it would cost
    wall time on every run to free at most what exists at the start."""
    if not active:
        yield
        return
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def run_judge_all(
    judge: Judge, pairs: list[tuple[QuestionRow, Answer]], *, progress: bool = True
) -> list[Judgment]:
    """Sync wrapper, on a loop of its own (loop.py); also safe when called from inside a
    running event loop (a notebook, lighteval): then that loop's thread is left alone."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run_own_loop(judge_all(judge, pairs, progress=progress))
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(run_own_loop, judge_all(judge, pairs, progress=progress)).result()


def dump_jsonl(judgments: Iterable[Judgment]) -> str:
    return "".join(json.dumps(j.record(), ensure_ascii=False) + "\n" for j in judgments)
