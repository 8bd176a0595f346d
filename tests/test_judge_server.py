"""The judge against a real HTTP server on 127.0.0.1: faults, retries, cache, resume, key hygiene."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.judge.records import RECORD_FIELDS
from tests.conftest import SECRET, oab
from tests.helpers import (
    _answers_file,
    _cli,
    _judge_args,
    grade,
    made_up_row,
    settings,
)


def test_ok_judgment_scores_are_summed_by_code(stub, judge_key):
    server = stub(policy="alternate")
    j = grade(server, made_up_row(annulled=True))
    assert j.status == "ok" and j.cost_usd is None  # an unknown model has no price
    # alternate: A1 max (0.65), B1 zero; B2 annulled -> full marks by code
    assert [(i.item_id, i.score) for i in j.items] == [("A1", 0.65), ("B1", 0.0), ("B2", 0.3)]
    assert j.score == 0.95 and j.max_score == 1.25 and j.prompt_version == "oab-pt-v1"
    assert j.usage.prompt_tokens > 0 and j.usage.cached_tokens > 0


def test_captured_request_carries_the_rubric_schema(stub, judge_key, built_rows):
    rows, _ = built_rows
    row = next(r for r in rows if r.question_id == "41_direito_do_trabalho_questao_3")
    server = stub()
    assert grade(server, row).status == "ok"
    body = server.requests[-1]["body"]
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    props = fmt["json_schema"]["schema"]["properties"]["items"]["properties"]
    gradable = [r for r in row.rubric if not r.annulled]
    assert list(props) == [r.item_id for r in gradable] == ["A1"]  # B1 is annulled: not asked
    for r in gradable:
        assert props[r.item_id]["properties"]["score"]["enum"] == r.allowed_scores
    assert body["messages"][0]["role"] == "system" and body["messages"][-1]["content"].endswith(
        "</resposta_do_candidato>"
    )
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"


def test_429_honours_retry_after(stub, judge_key):
    server = stub(faults=[{"kind": "429", "count": 2, "retry_after": 0.4}])
    j = grade(server)
    assert j.status == "ok" and j.attempts == 3
    times = [r["time"] for r in server.requests]
    assert times[1] - times[0] >= 0.35 and times[2] - times[1] >= 0.35


def test_500_is_retried_then_recorded_as_failure_not_zero(stub, judge_key):
    server = stub(faults=[{"kind": "500", "count": 2}])
    assert grade(server).status == "ok"
    always = stub(faults=[{"kind": "500"}])
    j = grade(always, max_attempts=3)
    assert j.status == "api_error" and j.score is None and j.attempts == 3 and "500" in j.error
    assert len(always.requests) == 3


def test_400_is_not_retried(stub, judge_key):
    server = stub(faults=[{"kind": "400"}])
    j = grade(server)
    assert j.status == "api_error" and j.attempts == 1 and j.score is None


def test_hang_times_out(stub, judge_key):
    server = stub(faults=[{"kind": "hang", "seconds": 30}])
    t0 = time.time()
    j = grade(server, timeout=0.5, max_attempts=2)
    assert j.status == "api_error" and j.score is None and "imeout" in j.error
    assert time.time() - t0 < 20


def test_malformed_json_is_retried_then_a_parse_error(stub, judge_key):
    once = stub(faults=[{"kind": "malformed", "count": 1}])
    assert grade(once).status == "ok"
    always = stub(faults=[{"kind": "malformed"}])
    j = grade(always, parse_attempts=2)
    assert j.status == "parse_error" and j.score is None and "not JSON" in j.error
    assert len(always.requests) == 2


def test_score_outside_the_rubric_is_a_parse_error(stub, judge_key):
    server = stub(faults=[{"kind": "bad_score"}])
    j = grade(server)
    assert j.status == "parse_error" and "not in allowed" in j.error


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        ("truncated", "truncated"),
        ("empty_reasoning", "truncated"),
        ("refusal", "refused"),
        ("empty", "parse_error"),
    ],
)
def test_reply_classification(stub, judge_key, kind, status):
    server = stub(faults=[{"kind": kind}])
    j = grade(server)
    assert j.status == status and j.score is None and j.items == []


def test_empty_answer_is_no_answer_without_a_call(stub, judge_key):
    server = stub()
    j = grade(server, answer="<think>só pensou</think>  ")
    assert j.status == "no_answer" and j.score is None and server.requests == []


def test_legacy_mode_parses_the_bracketed_score(stub, judge_key):
    server = stub(legacy_score="0,55")
    j = grade(server, made_up_row(annulled=True), mode="legacy")
    assert j.status == "ok" and j.score == 0.85 and j.parse_method == "double_bracket"  # 0.55 + annulled 0.30
    assert "response_format" not in server.requests[-1]["body"]
    bad = stub(legacy_score="9,99")
    assert grade(bad, mode="legacy").status == "parse_error"


def test_concurrency_limit_is_respected(stub, judge_key):
    server = stub(latency=0.2)
    row = made_up_row()
    judge = Judge(settings(server, concurrency=3))
    pairs = [
        (row, Answer(model=f"m{i}", question_id=row.question_id, turns=[f"resposta {i}"])) for i in range(9)
    ]
    out = run_judge_all(judge, pairs, progress=False)
    assert all(j.status == "ok" for j in out) and [j.model for j in out] == [f"m{i}" for i in range(9)]
    assert server.max_inflight == 3


def test_cache_skips_done_work_and_no_cache_forces(stub, judge_key, tmp_path):
    server = stub()
    row = made_up_row()
    first = grade(server, row, store=JudgmentStore(tmp_path))
    again = grade(server, row, store=JudgmentStore(tmp_path))
    assert len(server.requests) == 1 and again.cached and again.score == first.score
    grade(server, row, store=JudgmentStore(tmp_path, read=False))
    assert len(server.requests) == 2
    grade(server, row, answer="Outra resposta.", store=JudgmentStore(tmp_path))  # new answer: new key
    grade(server, row, store=JudgmentStore(tmp_path), max_tokens=123)  # new sampling settings: new key
    assert len(server.requests) == 4


def test_failures_are_not_cached(stub, judge_key, tmp_path):
    server = stub(faults=[{"kind": "500", "count": 3}])
    assert grade(server, store=JudgmentStore(tmp_path)).status == "api_error"
    assert grade(server, store=JudgmentStore(tmp_path)).status == "ok"


# --- the CLI, as a user runs it ----------------------------------------------------------------


def test_cli_writes_every_judgment_and_no_key(stub, judge_key, tmp_path, upstream_v1, built_dataset):
    server = stub(policy="alternate")
    answers, ids = _answers_file(tmp_path, upstream_v1, 10)
    out, cache = tmp_path / "out.jsonl", tmp_path / "cache"
    questions = ["--questions", "39_direito_administrativo*", "39_direito_civil*"]
    args = _judge_args(built_dataset, answers, server, cache, out, *questions)
    proc = oab("judge", *args)
    stdout, stderr = proc.stdout, proc.stderr
    assert proc.returncode == 0, stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["question_id"] for r in rows] == ids and {r["status"] for r in rows} == {"ok"}
    assert set(rows[0]) == RECORD_FIELDS  # the projection, defined once in judge/records.py
    documented = (
        "question_id exam_id model judge_model prompt_version status score max_score items usage cost_usd"
    )
    assert set(documented.split()) | {"judge_text"} <= RECORD_FIELDS  # the contract docs/judge.md states
    assert rows[0]["model"] == "o3-2025-04-16" and rows[0]["items"][0]["item_id"] == "P1"
    for path in [out, *cache.rglob("*")]:
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    assert SECRET not in stdout + stderr
    assert "10 judgments (0 from cache): ok 10" in stderr


def test_cli_exits_nonzero_after_writing_all_when_a_judgment_fails(
    stub, judge_key, tmp_path, upstream_v1, built_dataset
):
    server = stub(faults=[{"kind": "500", "match": "## Item A"}])  # every questão fails, peças pass
    answers, _ = _answers_file(tmp_path, upstream_v1, 5)
    out = tmp_path / "out.jsonl"
    extra = ["--questions", "39_direito_administrativo", "--max-attempts", "2"]
    args = _judge_args(built_dataset, answers, server, tmp_path / "c", out, *extra)
    proc = oab("judge", *args)
    stderr = proc.stderr
    assert proc.returncode == 1
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["status"] for r in rows] == ["ok", "api_error", "api_error", "api_error", "api_error"]
    assert all(r["score"] is None for r in rows[1:])
    assert "not ok: o3-2025-04-16 39_direito_administrativo_questao_1: api_error" in stderr


@pytest.mark.slow
def test_cli_resumes_after_a_kill_and_bills_nothing_twice(
    stub, judge_key, tmp_path, upstream_v1, built_dataset
):
    server = stub(latency=0.3)
    answers, ids = _answers_file(tmp_path, upstream_v1, 20)
    out, cache = tmp_path / "out.jsonl", tmp_path / "cache"
    areas = [
        "39_direito_administrativo*",
        "39_direito_civil*",
        "39_direito_constitucional*",
        "39_direito_do_trabalho*",
    ]
    args = _judge_args(
        built_dataset, answers, server, cache, out, "--concurrency", "2", "--questions", *areas
    )
    proc = _cli(args, start_new_session=True)
    deadline = time.time() + 90
    while time.time() < deadline and len(JudgmentStore(cache, access="read")) < 6:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len(JudgmentStore(cache))  # every judgment committed before the kill
    assert 6 <= done < 20 and not out.exists()
    before = len(server.requests)
    proc = oab("judge", *args)
    stderr = proc.stderr
    assert proc.returncode == 0, stderr
    assert len(server.requests) - before == 20 - done  # only what was not done
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["question_id"] for r in rows] == ids and sum(r["cached"] for r in rows) == done
    proc = oab("judge", *args)  # a third run: all cached, nothing billed
    assert len(server.requests) - before == 20 - done


def test_cli_missing_answers_are_no_answer_judgments(stub, judge_key, tmp_path, upstream_v1, built_dataset):
    server = stub()
    answers, _ = _answers_file(tmp_path, upstream_v1, 3)
    out = tmp_path / "out.jsonl"
    args = _judge_args(
        built_dataset, answers, server, tmp_path / "c", out, "--questions", "39_direito_administrativo"
    )
    proc = oab("judge", *args)
    assert proc.returncode == 1
    statuses = {
        json.loads(line)["question_id"]: json.loads(line)["status"] for line in out.read_text().splitlines()
    }
    assert list(statuses.values()) == ["ok", "ok", "ok", "no_answer", "no_answer"]


def test_prices_override_the_cost_map(stub, judge_key):
    server = stub()
    j = grade(server, price_input=1.0, price_cached_input=0.5, price_output=2.0)
    u = j.usage
    expected = (
        (u.prompt_tokens - u.cached_tokens) * 1.0 + u.cached_tokens * 0.5 + u.completion_tokens * 2.0
    ) / 1e6
    assert j.cost_usd == pytest.approx(expected) and j.cost_usd > 0
    known = grade(server, judge_model="openai/gpt-4o")  # a model in litellm's cost map
    assert known.cost_usd is not None and known.cost_usd > 0


def test_upstream_v1_parity_run_through_the_server(stub, judge_key, upstream_v1, built_rows):
    rows, _ = built_rows
    row = next(r for r in rows if r.question_id == "39_direito_penal_questao_1")
    server = stub(legacy_score="0,50")
    judge = Judge(
        settings(server, prompt="upstream-v1", upstream_prompts=str(upstream_v1 / "judge_prompts.jsonl"))
    )
    answer = Answer(model="m", question_id=row.question_id, turns=["Resp A", "Resp B"])
    (j,) = run_judge_all(judge, [(row, answer)], progress=False)
    assert j.status == "ok" and j.score == 1.0 and [i.item_id for i in j.items] == ["A", "B"]
    assert j.prompt_version.startswith("upstream-v1@") and len(server.requests) == 2
    # upstream's raw (swapped) value for turn 1 is what upstream sent: 0.6
    assert "[[0.6]]" in server.requests[0]["body"]["messages"][1]["content"]


def test_upstream_v2_parity_run_through_the_server(stub, judge_key, judge_prompts_v2, built_rows):
    rows, _ = built_rows
    row = next(r for r in rows if r.question_id == "39_direito_penal_questao_1")
    server = stub()
    judge = Judge(settings(server, prompt="upstream-v2", upstream_prompts=str(judge_prompts_v2)))
    (j,) = run_judge_all(
        judge,
        [(row, Answer(model="m", question_id=row.question_id, turns=["Resp A", "Resp B"]))],
        progress=False,
    )
    assert j.status == "ok" and j.prompt_version.startswith("upstream-v2@") and j.mode == "structured"
    body = server.requests[-1]["body"]
    assert body["response_format"]["json_schema"]["name"] == "OABJudgment"
    assert "# A:\nResp A\n\n# B:\nResp B" in body["messages"][1]["content"]
    # upstream's total is the sum of the item scores the judge returned (the stub returns one item at 0)
    assert j.score == 0.0 and j.items[-1].item_id == "total" and j.items[-1].max_score == pytest.approx(1.25)
