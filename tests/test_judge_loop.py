"""The judge loop: concurrency, a stop that keeps what was paid, the store's writes, the cost cap, signals."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from oab_bench.judge.answers import Answer
from oab_bench.judge.grading import grader, loop
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.runner import judge_all, run_judge_all
from tests.conftest import REPO
from tests.helpers import (
    _answers_file,
    _cli,
    _count_in_flight,
    _judge_args,
    _pairs,
    made_up_row,
    settings,
)


def test_judgments_in_flight_at_ctrl_c_are_stored(stub, judge_key, tmp_path):
    server = stub(policy="max", latency=1.0)
    row = made_up_row()
    pairs = [(row, Answer(model="m", question_id=row.question_id, turns=[f"resposta {n}"])) for n in range(6)]
    judge = Judge(settings(server, concurrency=2), JudgmentStore(tmp_path))

    async def interrupted() -> None:
        task = asyncio.ensure_future(judge_all(judge, pairs, progress=False))
        while server.count < 2:
            await asyncio.sleep(0.05)
        task.cancel()  # what asyncio.run does on Ctrl-C
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupted())
    assert server.count == 2  # nothing new was started after Ctrl-C
    assert len(JudgmentStore(tmp_path)) == 2  # both calls already paid for were kept


def test_concurrency_bounds_calls_and_all_are_judged(stub, judge_key, tmp_path, monkeypatch):
    server = stub(latency=0.05)
    seen = _count_in_flight(monkeypatch)
    judge = Judge(settings(server, concurrency=3), JudgmentStore(tmp_path))
    out = run_judge_all(judge, _pairs(12), progress=False)
    assert [j.status for j in out] == ["ok"] * 12
    assert seen["max"] == 3 and seen["started"] == 12 == server.count
    # every judgment was stored, and a second run calls nothing
    assert len(JudgmentStore(tmp_path)) == 12
    again = run_judge_all(
        Judge(settings(server, concurrency=3), JudgmentStore(tmp_path)), _pairs(12), progress=False
    )
    assert all(j.cached for j in again) and server.count == 12


def test_a_stopped_run_starts_no_new_call_and_keeps_the_paid_ones(stub, judge_key, tmp_path, monkeypatch):
    """Ctrl-C while 2 calls are in flight and 6 judgments wait for a slot: the 2 finish and are
    stored, no other call starts (before, a judgment under way could still start its call)."""
    server = stub(latency=0.6)
    seen = _count_in_flight(monkeypatch)
    judge = Judge(settings(server, concurrency=2, timeout=10), JudgmentStore(tmp_path))

    async def main():
        task = asyncio.ensure_future(judge_all(judge, _pairs(8), progress=False))
        while seen["started"] < 2:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"

    assert loop.run(main()) == "cancelled"
    assert seen["started"] == 2 == server.count
    assert len(JudgmentStore(tmp_path)) == 2


def test_a_call_waiting_for_its_slot_does_not_call_a_server_taken_for_dead(stub, judge_key):
    """The breaker may open while a judgment waits for a call slot (up to 2 x concurrency are
    under way): that judgment fails at once, naming the breaker, without a request."""
    from oab_bench.judge.grading.client import Breaker, call_judge

    server = stub()
    breaker = Breaker(limit=1)
    breaker.record(ConnectionError("Connection error"))
    assert breaker.open
    result = loop.run(call_judge(settings(server), [{"role": "user", "content": "x"}], None, breaker))
    assert result.status == "api_error" and "unreachable" in result.error and result.attempts == 0
    assert server.count == 0


def test_a_stopped_run_keeps_judgments_with_more_than_one_call(
    stub, judge_key, tmp_path, upstream_v1, built_rows
):
    """Upstream mode makes two calls per questão: a judgment whose first call is paid makes its
    second after Ctrl-C and is stored; one that has not called starts nothing. Nothing paid is lost."""
    from oab_bench.judge.answers import Answer

    questions = [r for r in built_rows[0] if r.kind == "questao"][:12]
    server = stub(latency=0.5, legacy_score="0,50")
    upstream = dict(prompt="upstream-v1", upstream_prompts=str(upstream_v1 / "judge_prompts.jsonl"))
    judge = Judge(settings(server, concurrency=2, timeout=10, **upstream), JudgmentStore(tmp_path))
    pairs = [(r, Answer(model="m", question_id=r.question_id, turns=["Resp A", "Resp B"])) for r in questions]

    async def main():
        task = asyncio.ensure_future(judge_all(judge, pairs, progress=False))
        while server.count < 2:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.7)  # the first calls are done; their second calls are queued
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return grader._STOPPING.get()

    assert loop.run(main()) is None  # the stop flag is the run's own, not left in the caller's context
    stored = len(JudgmentStore(tmp_path))
    assert stored >= 2 and server.count == 2 * stored  # every call paid for is in a stored judgment


@pytest.mark.slow
def test_the_cost_cap_never_hangs_on_rounding(stub, judge_key):
    """The cap waits for calls in flight to settle; float sums of reservations once left 4e-16
    'in flight' with nothing running, and the run waited forever (jury, repeats, one judge)."""
    from oab_bench.judge.grading.bill import estimate
    from oab_bench.judge.grading.jury import make_judge

    server = stub(latency=0.01)
    prices = dict(price_input=1000.0, price_output=1000.0, timeout=10)
    cases = [
        (n, frac, c, extra)
        for n in (16, 32)
        for frac in (0.3, 0.7)
        for c in (1, 4)
        for extra in ({}, {"repeats": 2})
    ]
    for n, frac, c, extra in cases:
        pairs = _pairs(n)
        full = estimate(Judge(settings(server, concurrency=c, **prices)), pairs).total.cost_usd
        judge = make_judge(settings(server, concurrency=c, max_cost_usd=full * frac, **prices, **extra))

        async def main(judge=judge, pairs=pairs):
            task = asyncio.ensure_future(judge_all(judge, pairs, progress=False))
            done, _ = await asyncio.wait([task], timeout=20)
            if not done:
                task.cancel()
                return "hung"
            return "finished"

        assert loop.run(main()) == "finished", (n, frac, c, extra)


@pytest.mark.parametrize("sig", loop.STOP_SIGNALS, ids=[s.name for s in loop.STOP_SIGNALS])
@pytest.mark.parametrize("when", ["before it starts", "while it runs", "as it ends"])
def test_a_second_signal_never_breaks_off_the_cleanup_and_none_is_lost(sig, when, monkeypatch):
    """A second Ctrl-C used to raise at once (asyncio's own handling), losing the calls in flight that
    were paid for; a SIGTERM or SIGHUP landing as the work began or ended was dropped, and the run
    went on."""
    steps = []
    if when == "before it starts":
        real = asyncio.Runner.run

        def late(runner, coro, **kw):
            signal.raise_signal(sig)
            return real(runner, coro, **kw)

        monkeypatch.setattr(asyncio.Runner, "run", late)

    async def work() -> str:
        steps.append("started")
        await asyncio.sleep(0)
        if when != "before it starts":
            signal.raise_signal(sig)
        if when == "as it ends":
            return "done"
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            signal.raise_signal(sig)  # impatient
            await asyncio.sleep(0.05)  # the calls in flight finishing
            steps.append("cleaned up")
            raise

    with pytest.raises(loop.Stopped, match=sig.name):
        loop.run(work())
    assert steps == {"before it starts": [], "as it ends": ["started"]}.get(when, ["started", "cleaned up"])
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["TERM", "HUP", "INT"])
@pytest.mark.slow
def test_sigterm_and_sighup_stop_the_judge_as_ctrl_c_does(
    stub, judge_key, tmp_path, upstream_v1, built_dataset, sig
):
    """`oab-bench judge` used to die at once on SIGTERM/SIGHUP, losing the calls in flight:
    now they finish and are stored, no new call starts, and it exits 128+signal, saying so in
    one line (Ctrl-C printed a traceback, and every signal an unretrieved-future one)."""

    server = stub(latency=1.0)
    answers, _ = _answers_file(tmp_path, upstream_v1, 20)
    cache = tmp_path / "cache"
    proc = _cli(
        _judge_args(built_dataset, answers, server, cache, tmp_path / "out.jsonl", "--concurrency", "4"),
        # as from a terminal: Ctrl-C handled even when this test runs as a background job (SIG_IGN)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    while server.count < 4:
        time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()
    time.sleep(0.3)
    signalled = time.time()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert f"stopped by {signal.Signals(sig).name}" in err
    assert "Traceback" not in err and "never retrieved" not in err, err
    assert not any(r["time"] > signalled for r in server.requests)  # nothing started after the signal
    assert len(JudgmentStore(cache)) == server.count  # every call in flight finished and was stored
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.slow  # three processes, each importing litellm
def test_the_benchmark_prints_every_row(upstream_v1, tmp_path):
    """`benchmarks.bench_judge` end to end at a tiny size (figures are for docs/performance.md, not
    asserted): each contender answers every request, in its own process, against the stub it starts."""
    cmd = [sys.executable, "-m", "benchmarks.bench_judge", "--n", "12", "--concurrency", "4"]
    cmd += ["--latency", "0.01", "--rounds", "1", "--source", str(upstream_v1)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    out = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line for line in out.stdout.splitlines() if line.startswith("| ") and "| ok |" not in line]
    assert len(rows) == 2 and all("| 12/12 |" in row for row in rows), out.stdout
    assert (
        "peer: litellm.completion in a thread pool" in out.stdout and "ours / peer wall time: " in out.stdout
    )
