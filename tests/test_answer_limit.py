"""Answers too long for the judge: found cheaply and never sent, or cut when asked."""

from __future__ import annotations

import argparse
import math
import time

from oab_bench.judge.aggregate import QuestionResult, task_figures
from oab_bench.judge.grading.answer_limit import count_tokens, excess
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.settings import add_arguments, settings_from
from tests.helpers import (
    grade,
)


def test_a_5mb_answer_is_never_sent_to_the_judge(stub, judge_key, tmp_path):
    server = stub(policy="max")
    huge = "Resposta longa do candidato, repetida sem fim. " * 110_000  # 5.2 MB
    assert len(huge.encode()) > 5_000_000
    started = time.monotonic()
    j = grade(server, answer=huge, store=JudgmentStore(tmp_path))
    assert time.monotonic() - started < 5
    assert server.count == 0
    assert j.status == "too_long" and j.score is None and j.cost_usd == 0.0
    assert "over max_answer_tokens 32768" in j.error
    assert len(JudgmentStore(tmp_path)) == 0  # not stored: nothing was judged
    # counted in coverage, never a score
    fig = task_figures([QuestionResult.model_validate(j.record())])
    assert fig["coverage"] == 0.0 and math.isnan(fig["exam_score"])


def test_the_limit_is_a_setting_and_near_it_tokens_are_counted(stub, judge_key):
    server = stub(policy="max")
    answer = "Resposta do candidato com fundamentação. " * 300  # about 2,000 tokens, 12,600 characters
    assert grade(server, answer=answer).status == "ok" and server.count == 1
    j = grade(server, answer=answer, max_answer_tokens=1000)  # between the bounds: really counted
    assert j.status == "too_long" and server.count == 1
    assert excess(answer, "openai/judge-test", 1000) == count_tokens(answer, "openai/judge-test") > 1000
    assert excess(answer, "openai/judge-test", 5000) is None
    args = argparse.Namespace(max_answer_tokens=None, long_answers=None)
    env = {"OAB_JUDGE_MODEL": "m", "OAB_JUDGE_MAX_ANSWER_TOKENS": "77", "OAB_JUDGE_LONG_ANSWERS": "truncate"}
    got = settings_from(args, env)
    assert (got.max_answer_tokens, got.long_answers) == (77, "truncate")
    parser = argparse.ArgumentParser()
    add_arguments(parser, prefix="judge-")
    run_args = parser.parse_args(["--judge-max-answer-tokens", "500", "--judge-long-answers", "truncate"])
    assert settings_from(run_args, {"OAB_JUDGE_MODEL": "m"}, prefix="judge-").max_answer_tokens == 500


def test_long_answers_truncate_judges_a_cut_answer_with_a_note(stub, judge_key):
    server = stub(policy="max")
    huge = "Resposta longa do candidato, repetida sem fim. " * 110_000
    j = grade(server, answer=huge, long_answers="truncate", max_answer_tokens=2000)
    assert j.status == "ok" and server.count == 1 and j.note.startswith("answer cut from about")
    sent = server.requests[0]["body"]["messages"][-1]["content"]
    assert "resposta cortada em 2000 tokens" in sent and len(sent) < 40_000
