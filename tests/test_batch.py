"""Batch judging (judge/batch) against the stub's Batch API: same requests, same statuses, no
batch submitted twice, priced at the batch rate."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from oab_bench.judge.grading.batch.api import split
from oab_bench.judge.grading.batch.state import BatchLog
from oab_bench.judge.grading.batch.submit import BatchPending
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.runner import run_judge_all
from tests.conftest import SECRET, oab
from tests.helpers import PRICES, _answers_file, _cli, _judge_args, made_up_row, pairs, settings


def direct_price(j) -> float:
    return (j.usage.prompt_tokens * 1.0 + j.usage.completion_tokens * 2.0) / 1e6


def batch_lines(server) -> list[dict]:
    return [r for r in server.requests if r["headers"].get("X-Stub-Batch")]


def test_split_at_the_file_limits():
    lines = [b"x" * 10 + b"\n"] * 7
    assert [len(g) for g in split(lines, max_requests=3)] == [3, 3, 1]
    assert [len(g) for g in split(lines, max_bytes=25)] == [2, 2, 2, 1]
    with pytest.raises(ValueError, match="over the 5-byte file limit"):
        split(lines, max_bytes=5)


def test_batch_line_is_the_direct_request(stub, judge_key, tmp_path):
    """The same judgment, direct and in a batch: the server receives the same body."""
    direct, batched = stub(), stub()
    row = made_up_row()
    run_judge_all(Judge(settings(direct, reasoning_effort="high")), pairs(1, row), progress=False)
    judge = Judge(settings(batched, batch=True, reasoning_effort="high"), JudgmentStore(tmp_path))
    (j,) = run_judge_all(judge, pairs(1, row), progress=False)
    assert j.status == "ok" and batched.batch_creations == 1
    (line,) = batch_lines(batched)
    sent = direct.requests[0]["body"]
    assert line["body"] == sent
    assert sent["response_format"]["type"] == "json_schema" and sent["max_tokens"] == 16000
    assert sent["temperature"] == 0.0 and sent["reasoning_effort"] == "high"
    assert {r["headers"]["Authorization"] for r in batched.batch_api} == {f"Bearer {SECRET}"}
    assert SECRET.encode() not in (tmp_path / "judgments.sqlite").read_bytes()


def test_batch_price_from_the_cost_map_is_half_the_direct_one(stub, judge_key, tmp_path):
    """A model litellm prices (openai/gpt-4o): same request, same usage, half the dollars; litellm's
    mapping drops what the model does not take (reasoning_effort) from both alike."""
    direct, batched = stub(), stub()
    kw = {"judge_model": "openai/gpt-4o", "reasoning_effort": "high"}
    (d,) = run_judge_all(Judge(settings(direct, **kw)), pairs(1), progress=False)
    judge = Judge(settings(batched, batch=True, **kw), JudgmentStore(tmp_path))
    (b,) = run_judge_all(judge, pairs(1), progress=False)
    assert batch_lines(batched)[0]["body"] == direct.requests[0]["body"]
    assert "reasoning_effort" not in direct.requests[0]["body"]
    assert d.usage == b.usage and d.cost_usd > 0 and b.cost_usd == pytest.approx(0.5 * d.cost_usd)
    quarter = Judge(
        settings(batched, batch=True, price_batch_discount=0.25, **kw), JudgmentStore(tmp_path / "q")
    )
    (q,) = run_judge_all(quarter, pairs(1), progress=False)
    assert q.cost_usd == pytest.approx(0.25 * d.cost_usd)


def test_failed_and_expired_inside_the_batch_are_retried_and_counted(stub, judge_key, tmp_path, capsys):
    server = stub(
        policy="alternate",
        batch_faults=[
            {"kind": "expired", "match": "resposta 1\\n"},  # the batch ends expired
            {"kind": "failed", "match": "resposta 2\\n"},
            {"kind": "failed", "match": "resposta 3\\n"},
        ],
        faults=[
            {"kind": "malformed", "match": "resposta 4\\n", "count": 1},  # a batch reply that does not parse
            {"kind": "400", "match": "resposta 3\\n"},  # its direct retry fails too: an explicit failure
            {"kind": "refusal", "match": "resposta 5\\n"},
        ],
    )
    judge = Judge(settings(server, batch=True, **PRICES), JudgmentStore(tmp_path))
    out = run_judge_all(judge, pairs(7), progress=False)
    assert server.batch_creations == 1 and len(batch_lines(server)) == 4  # 1 expired, 2 failed: unanswered
    status = {j.model: j.status for j in out}
    assert status == {
        "m0": "ok",
        "m1": "ok",
        "m2": "ok",
        "m3": "api_error",
        "m4": "ok",
        "m5": "refused",
        "m6": "ok",
    }
    assert all(j.score is not None for j in out if j.status == "ok")
    assert all(j.score is None and j.error for j in out if j.status != "ok")
    by = {j.model: j for j in out}
    # batch replies cost half; direct retries full; a batch reply retried after a parse error: both
    for m in ("m0", "m6", "m5"):
        assert by[m].cost_usd == pytest.approx(0.5 * direct_price(by[m])) and by[m].attempts == 1
    for m in ("m1", "m2"):
        assert by[m].cost_usd == pytest.approx(direct_price(by[m])) and by[m].attempts == 1
    assert by["m4"].attempts == 2 and 0.5 * direct_price(by["m4"]) < by["m4"].cost_usd < direct_price(
        by["m4"]
    )
    err = capsys.readouterr().err
    assert "expired (" in err and "3 request(s) failed or expired inside their batch; retried directly" in err
    # a rerun: the ok ones come from the cache, only the failures are judged again, directly
    before = len(server.requests)
    again = run_judge_all(
        Judge(settings(server, batch=True, **PRICES), JudgmentStore(tmp_path)), pairs(7), progress=False
    )
    assert sum(j.cached for j in again) == 5 and server.batch_creations == 2
    # m5's refusal graded again from its kept reply (paid for: no call); m3 fails in a new batch, then direct
    assert len(server.requests) - before == 1 and again[5].status == "refused"


def test_a_batch_created_but_not_recorded_is_found_not_created_again(stub, judge_key, tmp_path):
    """Killed between creating the batch and recording its id: the rerun finds it by its input file."""
    server = stub(batch_hold=True)
    s = settings(server, batch=True, batch_wait=0)
    with pytest.raises(BatchPending, match="still running after --batch-wait 0s: batch_1"):
        run_judge_all(Judge(s, JudgmentStore(tmp_path)), pairs(3), progress=False)
    server.release_batches()
    log = BatchLog(tmp_path)
    ((name, chunk),) = log.chunks().items()
    assert chunk.file_id and chunk.batch_id == "batch_1" and not chunk.done
    log.write([(f"{name}/batch_id", None)])  # as if killed before the batch was recorded
    out = run_judge_all(
        Judge(s.model_copy(update={"batch_wait": None}), JudgmentStore(tmp_path)), pairs(3), progress=False
    )
    assert [j.status for j in out] == ["ok"] * 3 and server.batch_creations == 1
    chunk = next(iter(BatchLog(tmp_path).chunks().values()))
    assert chunk.batch_id == "batch_1" and chunk.done == "completed"


def test_a_rerun_over_fewer_answers_keeps_the_others_replies(stub, judge_key, tmp_path, capsys):
    """A batch for 4 judgments collected by a run over 2 of them: the other 2 replies, paid for,
    are kept in the batch log; the run over all 4 grades them from there and calls nothing."""
    server = stub(batch_hold=True)
    s = settings(server, batch=True, batch_wait=0, **PRICES)
    with pytest.raises(BatchPending):
        run_judge_all(Judge(s, JudgmentStore(tmp_path)), pairs(4), progress=False)
    server.release_batches()
    waits = s.model_copy(update={"batch_wait": None})
    two = run_judge_all(Judge(waits, JudgmentStore(tmp_path)), pairs(4)[:2], progress=False)
    assert [j.status for j in two] == ["ok"] * 2
    assert "2 result(s) belong to judgments not in this run: kept for later" in capsys.readouterr().err
    calls, api_calls = len(server.requests), len(server.batch_api)
    out = run_judge_all(Judge(waits, JudgmentStore(tmp_path)), pairs(4), progress=False)
    assert [j.status for j in out] == ["ok"] * 4 and [j.cached for j in out] == [True, True, False, False]
    assert server.batch_creations == 1 and len(server.requests) == calls == 4
    assert len(server.batch_api) == api_calls  # no upload, no batch, not even a poll
    for j in out[2:]:
        assert j.cost_usd == pytest.approx(0.5 * direct_price(j)) and j.attempts == 1
    assert len(JudgmentStore(tmp_path)) == 4


@pytest.mark.slow
def test_cli_batch_wait_kill_and_reattach(stub, judge_key, tmp_path, upstream_v1, built_dataset):
    """`oab-bench judge --batch`: stop waiting (exit 3, resume command), SIGKILL while waiting,
    then a run that reattaches; the server saw one batch, and every judgment is at the batch price."""
    server = stub(batch_hold=True)
    answers, ids = _answers_file(tmp_path, upstream_v1, 5)
    out, cache = tmp_path / "out.jsonl", tmp_path / "cache"
    questions = ["--questions", "39_direito_administrativo*"]
    args = _judge_args(built_dataset, answers, server, cache, out, *questions, "--batch")
    prices = ["--price-input", "1", "--price-cached-input", "1", "--price-output", "2"]

    proc = oab("judge", *args, *prices, "--batch-wait", "0")
    stderr = proc.stderr
    assert proc.returncode == 3, stderr
    assert "still running after --batch-wait 0s: batch_1" in stderr and "resume: oab-bench judge " in stderr
    assert server.batch_creations == 1 and not out.exists()

    polled = server.batch_retrievals
    proc = _cli([*args, *prices], start_new_session=True)  # reattaches, then is killed while waiting
    deadline = time.time() + 60
    while time.time() < deadline and server.batch_retrievals == polled and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert server.batches["batch_1"]["status"] == "in_progress" and not out.exists()
    server.release_batches()

    proc = oab("judge", *args, *prices)
    stderr = proc.stderr
    assert proc.returncode == 0, stderr
    assert "batch batch_1: reattached (5 requests)" in stderr
    assert server.batch_creations == 1 and len(server.requests) == 5  # nothing submitted or called twice
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["question_id"] for r in rows] == ids and {r["status"] for r in rows} == {"ok"}
    for r in rows:
        u = r["usage"]
        assert r["cost_usd"] == pytest.approx(0.5 * (u["prompt_tokens"] + 2 * u["completion_tokens"]) / 1e6)
    for path in [out, *cache.rglob("*")]:
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


@pytest.mark.e2e
def test_oab_bench_run_judge_batch(stub, built_rows, built_dataset, tmp_path):
    """`oab-bench run --judge-batch`: the lighteval task judges through one batch (OAB_JUDGE_BATCH)."""
    from tests.helpers import TASK, alternate_score, results_json, run_bench

    rows, _ = built_rows
    server = stub(policy="alternate", max_model_len=1_000_000, served=("cand-e2e",), batch_hold=True)
    args = ("openai/cand-e2e", server.url, server.url, built_dataset, tmp_path, "--judge-batch")
    _, proc = run_bench(*args, "--judge-batch-wait", "0")  # submits, then stops waiting
    assert proc.returncode != 0 and server.batch_creations == 1
    assert "batches go on running" in proc.stderr and "resume with: oab-bench run" in proc.stderr
    server.release_batches()
    out, proc = run_bench(*args)  # the resume reattaches: nothing submitted twice
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert server.batch_creations == 1
    judged = [
        r for r in server.requests if (r["body"].get("response_format") or {}).get("type") == "json_schema"
    ]
    assert len(judged) == 15 and all(r["headers"].get("X-Stub-Batch") == "batch_1" for r in judged)
    judgments = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    by_id = {r.question_id: r for r in rows}
    assert len(judgments) == 15 and {j["status"] for j in judgments} == {"ok"}
    for j in judgments:
        assert j["score"] == pytest.approx(alternate_score(by_id[j["question_id"]]))
    assert results_json(out)["results"][f"{TASK}|0"]["coverage"] == 1.0
    assert BatchLog(tmp_path / "jc", access="read").chunks()


def test_batch_settings_from_flags_and_environment():
    import argparse

    from oab_bench.judge.settings import add_arguments, settings_from

    parser = argparse.ArgumentParser()
    add_arguments(parser, prefix="judge-")
    args = parser.parse_args(["--judge-model", "openai/x", "--judge-batch", "--judge-batch-wait", "60"])
    s = settings_from(args, {}, prefix="judge-")
    assert s.batch and s.batch_wait == 60 and s.price_batch_discount == 0.5
    assert settings_from(None, {"OAB_JUDGE_MODEL": "openai/x", "OAB_JUDGE_BATCH": "1"}).batch
    off = parser.parse_args(["--judge-model", "openai/x", "--judge-batch", "false"])
    assert not settings_from(off, {"OAB_JUDGE_BATCH": "1"}, prefix="judge-").batch


def test_a_direct_rerun_pays_again_neither_for_kept_replies_nor_for_batches_still_running(
    stub, judge_key, tmp_path
):
    """Switching from --batch to direct calls mid-job: a batch not yet collected makes the direct
    run refuse (its calls would pay twice), the estimate counts nothing to pay for it, and replies
    kept in the log are graded from there, with no call."""
    from oab_bench.judge.grading.bill import estimate

    server = stub(batch_hold=True)
    s = settings(server, batch=True, batch_wait=0, **PRICES)
    with pytest.raises(BatchPending):
        run_judge_all(Judge(s, JudgmentStore(tmp_path)), pairs(4), progress=False)
    direct = s.model_copy(update={"batch": False, "batch_wait": None})
    assert estimate(Judge(direct, JudgmentStore(tmp_path)), pairs(4)).total.calls == 0
    with pytest.raises(ValueError, match=r"4 of these judgments are in batches not yet collected \(batch_1"):
        run_judge_all(Judge(direct, JudgmentStore(tmp_path)), pairs(4), progress=False)
    assert not [r for r in server.requests if not r["headers"].get("X-Stub-Batch")]  # no direct call
    server.release_batches()

    waits = s.model_copy(update={"batch_wait": None})
    run_judge_all(Judge(waits, JudgmentStore(tmp_path)), pairs(4)[:2], progress=False)  # keeps 2 replies
    calls = len(server.requests)
    out = run_judge_all(Judge(direct, JudgmentStore(tmp_path)), pairs(4), progress=False)
    assert [j.status for j in out] == ["ok"] * 4 and len(server.requests) == calls
    assert [j.cached for j in out] == [True, True, False, False]
    for j in out[2:]:  # graded from the kept replies, at the batch price they were paid
        assert j.cost_usd == pytest.approx(0.5 * direct_price(j))


def test_a_batch_sent_through_another_api_base_is_not_polled_through_this_one(stub, judge_key, tmp_path):
    first, other = stub(batch_hold=True), stub()
    s = settings(first, batch=True, batch_wait=0)
    with pytest.raises(BatchPending):
        run_judge_all(Judge(s, JudgmentStore(tmp_path)), pairs(2), progress=False)
    moved = s.model_copy(update={"api_base": other.url, "batch_wait": None})
    with pytest.raises(ValueError, match="submitted through another --api-base than this run's"):
        run_judge_all(Judge(moved, JudgmentStore(tmp_path)), pairs(2), progress=False)
    assert not other.requests and not other.batch_api
    assert other.url.encode() not in (tmp_path / "judgments.sqlite").read_bytes()  # a hash, never the URL


def test_a_lost_batch_is_found_past_the_first_page_of_the_list(stub, judge_key):
    """A run killed between creating a batch and recording it looks it up by its input file: on
    a busy account the batch is not on the first page of the provider's list."""
    import asyncio

    from oab_bench.judge.grading.batch import api

    server = stub(batch_hold=True, batch_page=2)
    s = settings(server, batch=True)

    async def make() -> list[tuple[str, str]]:
        made = []
        for n in range(5):
            file_id = await api.upload(s, f"f{n}.jsonl", b"{}\n")
            made.append((file_id, await api.create(s, file_id, f"chunk{n}")))
        return made

    made = asyncio.run(make())
    oldest_file, oldest_batch = made[0]
    assert asyncio.run(api.find(s, oldest_file)) == oldest_batch
    assert asyncio.run(api.find(s, "file-nowhere")) is None
