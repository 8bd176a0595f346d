"""One judge grading one answer: the prompt, the call(s), the parse, the score; and the cost cap it
reserves against (`--max-cost-usd`)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import logging
from collections.abc import Callable
from functools import cached_property

from oab_bench.dataset_builder.schema import QuestionRow, money
from oab_bench.judge.answers import Answer, strip_reasoning
from oab_bench.judge.grading.answer_limit import fit_answer
from oab_bench.judge.grading.client import Breaker, CallResult, call_judge, prices
from oab_bench.judge.grading.estimate.core import expected_cost
from oab_bench.judge.grading.judgment_store import JudgmentStore, cache_key
from oab_bench.judge.grading.prompts import PROMPT_VERSION, build_messages, marks_cache
from oab_bench.judge.grading.reply_schema import GradingError, response_format, schema_hash, validate_grading
from oab_bench.judge.grading.trust import problem
from oab_bench.judge.grading.upstream_prompts import (
    grade_upstream,
    load_upstream_prompts,
    prompt_version,
    upstream_calls,
)
from oab_bench.judge.legacy import parse_legacy_score_detailed
from oab_bench.judge.records import Judgment, Outcome, Usage, priced, total_cost
from oab_bench.judge.scoring import annulled_items, question_score
from oab_bench.judge.settings import JudgeSettings

logger = logging.getLogger(__name__)
# A run being stopped (Ctrl-C): set by judge_all, seen by every grading it started (tasks copy
# the context), so a judgment that has not called yet never starts a call.
_STOPPING: contextvars.ContextVar[asyncio.Event | None] = contextvars.ContextVar("oab_stopping", default=None)
# One judgment's calls so far (set by Judge.grade): a judgment that has paid for a call finishes
# its other calls (upstream mode's second call, a parse retry) even when the run is stopping.
_CALLED: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar("oab_called", default=None)


def judged_text(answer: Answer, settings: JudgeSettings) -> tuple[list[str], str, int | None]:
    """(turns, text, size) of an answer as the judge sees it: reasoning blocks removed, then fitted
    to max_answer_tokens (size: the answer's tokens when over it, else None; cut when asked)."""
    turns = [strip_reasoning(t) for t in answer.turns]
    cut = settings.long_answers == "truncate"
    turns, size = fit_answer(turns, settings.judge_model, settings.max_answer_tokens, cut=cut)
    return turns, Answer(model=answer.model, question_id=answer.question_id, turns=turns).text, size


class Judge:
    """Holds what every grading of a run shares: settings, upstream prompts, the store."""

    def __init__(self, settings: JudgeSettings, store: JudgmentStore | None = None):
        self.settings = settings
        self.store = store if store is not None else JudgmentStore(None)
        self.budget = Budget(self, settings.max_cost_usd) if settings.max_cost_usd is not None else None
        self.upstream = None
        self.breaker = Breaker(limit=max(8, settings.concurrency))  # a whole wave of calls refused
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self._per_row: dict[tuple[str, int], tuple[str, dict, str]] = {}
        if settings.prompt != "oab":
            self.upstream = load_upstream_prompts(settings.upstream_prompts)

    @cached_property
    def prompt_version(self) -> str:
        if self.upstream is None:
            return PROMPT_VERSION
        return prompt_version(self.settings.prompt, self.upstream)

    @property
    def mode(self) -> str:
        return self.settings.mode  # settings made it follow an upstream prompt

    def _row_facts(self, row: QuestionRow) -> tuple[str, dict | None, str]:
        """(content hash, response format, schema id) of a row, computed once per row."""
        memo = (row.question_id, id(row))
        if memo not in self._per_row:
            if self.settings.prompt == "oab" and self.mode == "structured":
                fmt = response_format(row)
                schema_id = schema_hash(fmt["json_schema"]["schema"])
            else:
                fmt, schema_id = None, self.settings.prompt
            self._per_row[memo] = (row.content_hash(), fmt, schema_id)
        return self._per_row[memo]

    def key(self, row: QuestionRow, answer_text: str) -> str:
        row_hash, _, schema_id = self._row_facts(row)
        return cache_key(
            judge_model=self.settings.judge_model,
            prompt_version=self.prompt_version,
            mode=self.mode,
            schema=schema_id,
            row=row_hash,
            answer=hashlib.sha256(answer_text.encode()).hexdigest(),
            sampling=self.settings.sampling(),
        )

    def _base(self, row: QuestionRow, model: str, key: str) -> dict:
        return {
            "question_id": row.question_id,
            "exam_id": row.exam_id,
            "model": model,
            "judge_model": self.settings.judge_model,
            "prompt_version": self.prompt_version,
            "mode": self.mode,
            "max_score": row.max_score,
            "cache_key": key,
            "settings": self.settings.recorded(),
        }

    def unanswered(self, row: QuestionRow, model: str, why: str, key: str = "") -> Judgment:
        """A question with no answer to judge: recorded as `no_answer`, never as a zero."""
        return Judgment(**self._base(row, model, key), status="no_answer", error=why, cost_usd=0.0)

    def to_call(self, row: QuestionRow, answer: Answer) -> tuple[str, list[str], str | None]:
        """(cache key, turns, text) as the judge would read `answer`; text None when grading it
        calls nothing: an empty or too long answer, or a trusted cache hit."""
        turns, text, size = judged_text(answer, self.settings)
        key = self.key(row, text)
        too_long = size is not None and self.settings.long_answers != "truncate"
        if (
            not any(t.strip() for t in turns)
            or too_long
            or self._trusted(self.store.get(key), row, quiet=True)
        ):
            return key, turns, None
        return key, turns, text

    def prompts(self, row: QuestionRow, answer: Answer) -> tuple[str, list[list[dict]]]:
        """(cache key, the messages of every call) grading `answer` takes, before any retry; no
        calls for an empty answer or a trusted cache hit. What `--estimate` and the budget count."""
        key, turns, text = self.to_call(row, answer)
        if text is None:
            return key, []
        if self.upstream is not None:
            calls = upstream_calls(row, turns, self.settings.prompt, self.upstream)
            return key, [c.messages for c in calls]
        return key, [self.request(row, text)[0]]

    async def grade(self, row: QuestionRow, answer: Answer, first: CallResult | None = None) -> Judgment:
        """`first`: a reply already in hand (a Batch API result), checked as the first call's would be."""
        turns, text, size = judged_text(answer, self.settings)
        limit, cut = self.settings.max_answer_tokens, self.settings.long_answers == "truncate"
        noted = {"note": f"answer cut from about {size} to {limit} tokens before judging"} if size else {}
        key = self.key(row, text)
        base = self._base(row, answer.model, key)
        if not any(t.strip() for t in turns):
            return self.unanswered(
                row, answer.model, "empty answer (nothing left after removing reasoning blocks)", key
            )
        if size and not cut:  # never sent, cached or stored
            why = f"answer of about {size} tokens, over max_answer_tokens {limit}: not sent to the judge"
            return Judgment(**base, status="too_long", error=why, cost_usd=0.0)
        async with self.store.claim(key):  # another process judging the same: wait and reuse its judgment
            cached = self._trusted(self.store.get(key), row)
            if cached is not None:
                # the same key, the same settings: an entry stored before they were recorded gets them
                update = {"model": answer.model, "cached": True, "settings": base["settings"], **noted}
                return cached.model_copy(update=update)
            if self.breaker.open:
                return Judgment(**base, status="api_error", error=self.breaker.why(), cost_usd=0.0)
            reserved = await self.budget.reserve(row, answer, self) if self.budget else 0.0
            if reserved is None:
                return Judgment(**base, status="budget", error=self.budget.why(), cost_usd=0.0)
            judgment = None
            called = _CALLED.set([False])
            try:
                if self.upstream is not None:
                    judgment = await grade_upstream(
                        self._call, row, turns, self.settings.prompt, self.upstream, base
                    )
                else:
                    judgment = await self._grade_ours(row, text, base, first)
            finally:
                _CALLED.reset(called)
                if self.budget:
                    await self.budget.settle(reserved, judgment)
            # written (visible to other processes) before the key is released; fsynced behind
            await self.store.append(judgment)
        return judgment.model_copy(update=noted)

    def _trusted(self, cached: Judgment | None, row: QuestionRow, quiet: bool = False) -> Judgment | None:
        """A cache hit whose numbers are possible for this row; an impossible one is judged again."""
        if cached is None:
            return None
        bad = problem(cached.record(), row)
        if bad is None:
            return cached
        if quiet:
            return None
        logger.warning(
            "%s: cached judgment of %s ignored (%s: %s): judging it again",
            self.store.path,
            row.question_id,
            *bad,
        )
        return None

    async def _call(
        self, messages: list[dict], fmt: dict | None, parse, first: CallResult | None = None
    ) -> Outcome:
        """Call until the reply parses (up to parse_attempts): the last outcome, and what the calls cost."""
        usage, costs, attempts = Usage(), [], 0
        status, content, error, parsed = "api_error", "", None, None
        for n in range(self.settings.parse_attempts):
            if n == 0 and first is not None:
                result = first
                if called := _CALLED.get():
                    called[0] = True  # a reply paid for (a Batch API line): its retries may follow
            else:
                async with self.call_slot():
                    result = await call_judge(self.settings, messages, fmt, self.breaker)
            usage, attempts = usage + result.usage, attempts + result.attempts
            costs.append(priced(result.cost_usd, result.usage))
            status, content, error = result.status, result.content, result.error
            if status == "ok":
                try:
                    parsed = parse(content)
                    break
                except (GradingError, ValueError, KeyError, TypeError) as e:
                    status, error = "parse_error", str(e)[:500]
            elif status != "parse_error":
                break  # api errors were already retried; truncation and refusals would repeat
        return Outcome(status, content, usage, total_cost(costs), attempts, error, parsed)

    @contextlib.asynccontextmanager
    async def call_slot(self):
        """Held during one judge call: at most `concurrency` in flight (a semaphore per event
        loop). Only the call holds a slot: preparing a request and checking, scoring and storing
        a reply do not, so the next request goes out while the last reply is being taken in
        (docs/performance.md). Once the run is stopping, no judgment starts calling (one that
        has called finishes its calls)."""
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.settings.concurrency))
        stopping, called = _STOPPING.get(), _CALLED.get()
        async with self._slots[1]:
            if stopping is not None and stopping.is_set() and not (called and called[0]):
                raise asyncio.CancelledError("run stopping: no new judge call")
            if called is not None:
                called[0] = True
            yield

    def request(self, row: QuestionRow, text: str) -> tuple[list[dict], dict | None]:
        """(messages, response format) of one judgment: what a direct call and a batch line send."""
        cache_prefix = marks_cache(self.settings.judge_model)  # Anthropic: the shared prefix is cached
        return build_messages(row, text, self.mode, cache_prefix=cache_prefix), self._row_facts(row)[1]

    async def _grade_ours(
        self, row: QuestionRow, text: str, base: dict, first: CallResult | None = None
    ) -> Judgment:
        structured = self.mode == "structured"
        messages, fmt = self.request(row, text)

        def parse(content: str):
            if structured:
                return validate_grading(row, content)
            found = parse_legacy_score_detailed(content)
            if found is None:
                raise GradingError("no [[nota]] in the reply")
            gradable_max = sum(r.max_score for r in row.rubric if not r.annulled)
            if not 0 <= found.score <= gradable_max + 1e-9:
                raise GradingError(f"score {found.score} outside 0..{gradable_max}")
            return found

        o = await self._call(messages, fmt, parse, first)
        fields = dict(base, usage=o.usage, cost_usd=o.cost_usd, judge_text=o.content, attempts=o.attempts)
        if o.status != "ok":
            return Judgment(**fields, status=o.status, error=o.error)
        annulled = annulled_items(row)
        if structured:
            items = [*o.parsed, *annulled]
            return Judgment(**fields, status="ok", score=question_score(items), items=items)
        score = money(o.parsed.score + sum(i.score for i in annulled))
        return Judgment(**fields, status="ok", score=score, items=annulled, parse_method=o.parsed.method)


class Budget:
    """`--max-cost-usd`: a judgment starts only while what was spent, plus the expected cost of the
    calls in flight and of this one, stays within the cap; the others are left with status `budget`.

    Expected cost: the prompt's counted tokens and the completion tokens the estimate expects
    (the cache's history for this judge, else a default per question kind). A call can cost more
    than expected, so the cap can be passed by the overrun of the calls in flight, never more.
    """

    def __init__(self, judge: Judge, cap: float):
        p = prices(judge.settings)
        if p.input is None or p.output is None:
            raise ValueError(
                f"--max-cost-usd: no known price for {judge.settings.judge_model}; "
                "give --price-input and --price-output (USD per 1M tokens)"
            )
        self.judge, self.cap, self.spent, self.in_flight, self.refused = judge, cap, 0.0, 0.0, 0
        self.reserved = 0  # judgments holding a reservation: counted, as a float sum may not reach 0
        self._expect: dict[Judge, Callable] = {}  # per judge sharing the cap (a jury's members, repeats)
        self._settled: tuple[asyncio.AbstractEventLoop, asyncio.Condition] | None = None

    def _condition(self) -> asyncio.Condition:
        """Signalled when a call in flight settles (one per event loop: a judge may serve several runs)."""
        loop = asyncio.get_running_loop()
        if self._settled is None or self._settled[0] is not loop:
            self._settled = (loop, asyncio.Condition())
        return self._settled[1]

    async def reserve(self, row: QuestionRow, answer: Answer, judge: Judge | None = None) -> float | None:
        """The expected cost of judging `answer`, now counted as in flight; None: over the cap.

        While calls are in flight a judgment that does not fit waits for them to settle (they
        usually cost less than expected), so the cap is used, not just filled with expectations;
        it is refused only when it does not fit with nothing in flight. Once one is refused, no
        later one starts (a rerun continues in order; its cap counts only what it spends). `judge`: who calls, priced
        at its own prices and history (a jury's members share one cap, not one price)."""
        judge = judge or self.judge
        if judge not in self._expect:
            self._expect[judge] = expected_cost(judge)
        expected = self._expect[judge](row, answer)
        settled = self._condition()
        async with settled:
            while not self.refused and self.reserved > 0 and self._over(expected):
                await settled.wait()
            if self.refused or self._over(expected):
                self.refused += 1
                return None
            self.in_flight += expected
            self.reserved += 1
            return expected

    def _over(self, expected: float) -> bool:
        return self.spent + self.in_flight + expected > self.cap

    async def settle(self, reserved: float, judgment: Judgment | None) -> None:
        settled = self._condition()
        async with settled:
            self.reserved -= 1
            # nothing left in flight is exactly 0 (a float sum of reservations may leave 4e-16)
            self.in_flight = max(0.0, self.in_flight - reserved) if self.reserved else 0.0
            if judgment is not None:
                self.spent += judgment.cost_usd or 0.0
            settled.notify_all()

    def why(self) -> str:
        return (
            f"not judged: the cost cap (--max-cost-usd {self.cap:g}) would be passed "
            f"(spent ${self.spent:.4f} by this command, ${self.in_flight:.4f} in flight); a rerun "
            "judges only what is left, and its cap counts what it spends"
        )
