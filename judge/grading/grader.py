"""One judge grading one answer (prompt, calls, parse, score), and the `--max-cost-usd` cap."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import logging
import statistics
import weakref
from collections.abc import Callable

from litellm import token_counter

from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.dataset_builder.schema import QuestionRow, money
from oab_bench.judge.answers import Answer, strip_reasoning
from oab_bench.judge.grading.answer_limit import fit_answer
from oab_bench.judge.grading.client import Breaker, CallResult, call_judge, cost, merged
from oab_bench.judge.grading.judgment_reader import problem
from oab_bench.judge.grading.judgment_store import JudgmentStore, cache_key
from oab_bench.judge.grading.prompts import PROMPT_VERSION, build_messages, marks_cache
from oab_bench.judge.grading.reply_schema import GradingError, response_format, schema_hash, validate_grading
from oab_bench.judge.grading.upstream_prompts import (
    grade_upstream,
    load_upstream_prompts,
    prompt_version,
    score_within,
    upstream_calls,
)
from oab_bench.judge.legacy import parse_legacy_score_detailed
from oab_bench.judge.records import Judgment, Usage, priced
from oab_bench.judge.scoring import annulled_items, question_score
from oab_bench.judge.settings import JudgeSettings

logger = logging.getLogger(__name__)
# A run stopping (set by judge_all): a judgment that has not called never starts; one that has
# (_CALLED, per judgment) finishes its other calls (upstream's second turn, a parse retry).
_STOPPING: contextvars.ContextVar[asyncio.Event | None] = contextvars.ContextVar("oab_stopping", default=None)
_CALLED: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar("oab_called", default=None)
_O200K = ("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")


class PerKind(dict):  # tokens per question kind, printed in words
    def __str__(self) -> str:
        return f"{self['peca']} (peça) and {self['questao']} (questão)"


DEFAULT_COMPLETION_TOKENS = PerKind(peca=2500, questao=1000)  # of one judgment, with no history


def per_loop(held: weakref.WeakKeyDictionary, make: Callable):
    """One `make()` per event loop: an asyncio primitive serves only the loop it first waited on."""
    loop = asyncio.get_running_loop()
    if loop not in held:
        held[loop] = make()
    return held[loop]


class Judge:
    """What a run's gradings share; `repeat` > 0 (`--repeats`): that repeat's own cache entries."""

    def __init__(self, settings: JudgeSettings, store: JudgmentStore | None = None, repeat: int = 0):
        self.settings = settings
        self.store = store if store is not None else JudgmentStore(None)
        self.repeat = repeat
        self.budget = Budget(self, settings.max_cost_usd) if settings.max_cost_usd is not None else None
        self.upstream = None if settings.prompt == "oab" else load_upstream_prompts(settings.upstream_prompts)
        self.breaker = Breaker(limit=max(8, settings.concurrency))  # a whole wave of calls refused
        self._slots: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # loop -> its semaphore
        self._per_row: dict[tuple[str, int], tuple[str, dict | None, str]] = {}
        self.mode, up = settings.mode, self.upstream
        self.prompt_version = PROMPT_VERSION if up is None else prompt_version(settings.prompt, up)

    def identity(self) -> dict:
        return dict(judge_model=self.settings.judge_model, prompt_version=self.prompt_version, mode=self.mode)

    def _row_facts(self, row: QuestionRow) -> tuple[str, dict | None, str]:
        """(content hash, response format, schema id) of a row, computed once per row."""
        memo = (row.question_id, id(row))
        if memo not in self._per_row:
            fmt, schema_id = None, self.settings.prompt
            if self.settings.prompt == "oab" and self.mode == "structured":
                fmt = response_format(row)
                schema_id = schema_hash(fmt["json_schema"]["schema"])
            self._per_row[memo] = (row.content_hash(), fmt, schema_id)
        return self._per_row[memo]

    def key(self, row: QuestionRow, answer_text: str) -> str:
        row_hash, _, schema_id = self._row_facts(row)
        answer = hashlib.sha256(answer_text.encode()).hexdigest()
        sampling = self.settings.sampling()
        plain = cache_key(**self.identity(), schema=schema_id, row=row_hash, answer=answer, sampling=sampling)
        return cache_key(judgment=plain, repeat=self.repeat) if self.repeat else plain

    def base(self, row: QuestionRow, model: str, key: str = "") -> dict:
        """The fields every judgment of `row` by this judge carries."""
        question = row.model_dump(include={"question_id", "exam_id", "max_score"})
        mine = {"model": model, "cache_key": key, "settings": self.settings.recorded()}
        return question | self.identity() | mine

    def unanswered(self, row: QuestionRow, model: str, why: str) -> Judgment:
        """A question with no answer to judge: recorded as `no_answer`, never as a zero."""
        return Judgment(**self.base(row, model), status="no_answer", error=why, cost_usd=0.0)

    def _read(self, row: QuestionRow, answer: Answer) -> tuple[list[str], str, int | None, str, tuple | None]:
        """(turns, text, size when over max_answer_tokens, cache key, (status, why) when not sent)."""
        s = self.settings
        turns = [strip_reasoning(t) for t in answer.turns]
        turns, size = fit_answer(turns, s.judge_model, s.max_answer_tokens, cut=s.long_answers == "truncate")
        text = Answer(model=answer.model, question_id=answer.question_id, turns=turns).text
        skip = None
        if not any(t.strip() for t in turns):
            skip = ("no_answer", "empty answer (nothing left after removing reasoning blocks)")
        elif size and s.long_answers != "truncate":  # never sent, cached or stored
            over = f"over max_answer_tokens {s.max_answer_tokens}: not sent to the judge"
            skip = ("too_long", f"answer of about {size} tokens, {over}")
        return turns, text, size, self.key(row, text), skip

    def to_call(self, row: QuestionRow, answer: Answer) -> tuple[str, list[str], str | None]:
        """(cache key, turns, text); text None when grading calls nothing (empty, too long, cached)."""
        turns, text, _, key, skip = self._read(row, answer)
        return key, turns, None if skip or self._trusted(self.store.get(key), row, quiet=True) else text

    def prompts(self, row: QuestionRow, answer: Answer) -> tuple[str, list[list[dict]]]:
        """(cache key, the messages of every call before any retry): what estimates and the cap count."""
        key, turns, text = self.to_call(row, answer)
        if text is None:
            return key, []
        if self.upstream is not None:
            return key, [c.messages for c in upstream_calls(row, turns, self.settings.prompt, self.upstream)]
        return key, [self.request(row, text)[0]]

    async def grade(self, row: QuestionRow, answer: Answer, first: CallResult | None = None) -> Judgment:
        """`first`: a reply already in hand (a Batch API result), checked as the first call's would be."""
        turns, text, size, key, skip = self._read(row, answer)
        base = self.base(row, answer.model, key)
        if skip:
            return Judgment(**base, status=skip[0], error=skip[1], cost_usd=0.0)
        cut = f"answer cut from about {size} to {self.settings.max_answer_tokens} tokens before judging"
        noted = {"note": cut} if size else {}
        async with self.store.claim(key):  # another process judging the same: wait and reuse its judgment
            cached = self._trusted(self.store.get(key), row)
            if cached is not None:
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
                if self.upstream is None:
                    judgment = await self._grade_ours(row, text, base, first)
                else:
                    judgment = await grade_upstream(self, row, turns, base)
            finally:
                _CALLED.reset(called)
                if self.budget:
                    await self.budget.settle(reserved, judgment)
            await self.store.append(judgment)  # visible to other processes before the key is released
        return judgment.model_copy(update=noted)

    def _trusted(self, cached: Judgment | None, row: QuestionRow, quiet: bool = False) -> Judgment | None:
        """A cache hit whose numbers are possible for this row; an impossible one is judged again."""
        bad = None if cached is None else problem(cached, row)
        if bad and not quiet:
            what = "%s: cached judgment of %s ignored (%s: %s): judging it again"
            logger.warning(what, self.store.path, row.question_id, *bad)
        return None if bad else cached

    async def call(self, messages: list[dict], fmt: dict | None, parse, first: CallResult | None = None):
        """Call until the reply parses (up to parse_attempts): the last outcome, and what the calls cost."""
        results: list[CallResult] = []
        for n in range(self.settings.parse_attempts):
            if n == 0 and first is not None:
                result = first
                if called := _CALLED.get():
                    called[0] = True  # a reply paid for (a Batch API line): its retries may follow
            else:
                async with self.call_slot():
                    result = await call_judge(self.settings, messages, fmt, self.breaker)
            if result.status == "ok":
                try:
                    return merged([*results, result], parse(result.content))
                except (GradingError, ValueError, KeyError, TypeError, AttributeError) as e:
                    result = result._replace(status="parse_error", error=str(e)[:500])
            results.append(result)
            if result.status != "parse_error":
                break  # api errors were already retried; truncation and refusals would repeat
        return merged(results)

    @contextlib.asynccontextmanager
    async def call_slot(self):
        """One of at most `concurrency` calls in flight; a stopping run: none for a judgment yet to call."""
        stopping, called = _STOPPING.get(), _CALLED.get()
        async with per_loop(self._slots, lambda: asyncio.Semaphore(self.settings.concurrency)):
            if stopping is not None and stopping.is_set() and not (called and called[0]):
                raise asyncio.CancelledError("run stopping: no new judge call")
            if called is not None:
                called[0] = True
            yield

    def request(self, row: QuestionRow, text: str) -> tuple[list[dict], dict | None]:
        """(messages, response format) of one judgment: what a direct call and a batch line send."""
        cache_prefix = marks_cache(self.settings.judge_model)  # Anthropic: the shared prefix is cached
        return build_messages(row, text, self.mode, cache_prefix=cache_prefix), self._row_facts(row)[1]

    async def _grade_ours(self, row: QuestionRow, text: str, base: dict, first: CallResult | None):
        structured = self.mode == "structured"

        def parse(content: str):
            if structured:
                return validate_grading(row, content)
            found = parse_legacy_score_detailed(content)
            if found is None:
                raise GradingError("no [[nota]] in the reply")
            score_within(found.score, sum(r.max_score for r in row.rubric if not r.annulled))
            return found

        o = await self.call(*self.request(row, text), parse, first)
        fields = dict(base, usage=o.usage, cost_usd=o.cost_usd, judge_text=o.content, attempts=o.attempts)
        if o.status != "ok":
            return Judgment(**fields, status=o.status, error=o.error)
        annulled = annulled_items(row)
        if structured:
            items = [*o.parsed, *annulled]
            return Judgment(**fields, status="ok", score=question_score(items), items=items)
        score = money(o.parsed.score + sum(i.score for i in annulled))
        return Judgment(**fields, status="ok", score=score, items=annulled, parse_method=o.parsed.method)


def count_tokens(judge_model: str, messages: list[dict]) -> int:
    """Prompt tokens with litellm's counter (OpenAI's GPT-4o/4.1/5 and o-series count with o200k)."""
    o200k = judge_model.split("/", 1)[-1].startswith(_O200K)
    return token_counter(model="gpt-4o" if o200k else judge_model, messages=messages)


def completion_history(judge: Judge) -> tuple[dict[str, float], str]:
    """Mean completion tokens per question kind of this judge's cached judgments, and their source."""
    got: dict[str, list[int]] = {"peca": [], "questao": []}
    me = tuple(judge.identity().values())
    for j in judge.store.judgments():
        if (j.judge_model, j.prompt_version, j.mode) == me and j.usage.completion_tokens:
            got[parse_question_id(j.question_id).kind].append(j.usage.completion_tokens)
    everything = got["peca"] + got["questao"]
    if not everything:
        return dict(DEFAULT_COMPLETION_TOKENS), f"no history: defaults of {DEFAULT_COMPLETION_TOKENS} tokens"
    means = {kind: statistics.fmean(ns or everything) for kind, ns in got.items()}
    return means, f"mean of {len(everything)} cached judgments by this judge"


def price_of(judge: Judge, prompt: int, completion: int) -> float | None:
    """Unknown without a price, except for nothing at all: no call costs $0 whatever the price."""
    usage = Usage(prompt_tokens=prompt, completion_tokens=completion)
    return priced(cost(judge.settings, usage), usage)


class Budget:
    """`--max-cost-usd`: a judgment starts only while spent + in flight + its expected cost fit the cap."""

    def __init__(self, judge: Judge, cap: float):
        if cost(judge.settings, Usage()) is None:  # unknown input or output price
            need = "give --price-input and --price-output (USD per 1M tokens)"
            raise ValueError(f"--max-cost-usd: no known price for {judge.settings.judge_model}; {need}")
        self.cap, self.spent, self.in_flight, self.refused = cap, 0.0, 0.0, 0
        self.reserved = 0  # judgments holding a reservation: counted, as a float sum may not reach 0
        self._history: dict[Judge, dict[str, float]] = {}  # per judge sharing the cap (jury, repeats)
        self._settled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # signalled as calls settle

    async def reserve(self, row: QuestionRow, answer: Answer, judge: Judge) -> float | None:
        """The expected cost, now in flight; over the cap: waits for calls in flight, else None (for good)."""
        if judge not in self._history:
            self._history[judge] = completion_history(judge)[0]
        prompt = sum(count_tokens(judge.settings.judge_model, c) for c in judge.prompts(row, answer)[1])
        expected = price_of(judge, prompt, round(self._history[judge][row.kind])) or 0.0
        settled = per_loop(self._settled, asyncio.Condition)
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
        settled = per_loop(self._settled, asyncio.Condition)
        async with settled:
            self.reserved -= 1
            self.in_flight = max(0.0, self.in_flight - reserved) if self.reserved else 0.0
            if judgment is not None:
                self.spent += judgment.cost_usd or 0.0
            settled.notify_all()

    def why(self) -> str:
        spent = f"spent ${self.spent:.4f} by this command, ${self.in_flight:.4f} in flight"
        cap = f"the cost cap (--max-cost-usd {self.cap:g}) would be passed ({spent})"
        return f"not judged: {cap}; a rerun judges only what is left, and its cap counts what it spends"
