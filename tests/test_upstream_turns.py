"""Upstream-format judgments read back, and upstream's per-turn protocol: every turn checked
against its value, no line order deciding a score, and what FGV annulled counted in full (as in
our own judgments). Made-up rows and judgments only."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.grading.client import CallResult
from oab_bench.judge.grading.judgment_reader import problem
from oab_bench.judge.grading.upstream_prompts import V1_MULTI, V1_SINGLE, grade_upstream
from oab_bench.judge.leaderboard.inputs import load_records
from oab_bench.judge.records import ItemScore, JudgmentLine, Usage
from tests.helpers import made_up_row

QID = "90_direito_civil_questao_1"


def b_annulled():
    """The made-up questão with its whole item B (both rows) annulled by FGV."""
    row = made_up_row()
    rubric = [r.model_copy(update={"annulled": r.part == "B"}) for r in row.rubric]
    return row.model_copy(update={"rubric": rubric})


def line(turn, score, model="model-a"):
    return {
        "question_id": QID,
        "model": model,
        "judge": ["judge-x", "single-oab-v1" if turn == 1 else "single-oab-v1-multi-turn"],
        "turn": turn,
        "score": score,
        "judgment": f"nota [[{score}]]",
    }


def write(tmp_path, lines, name="up.jsonl"):
    f = tmp_path / name
    f.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return f


@pytest.mark.parametrize("order", [1, -1])
def test_a_turn_scored_twice_differently_is_an_error_in_either_order(tmp_path, order):
    lines = [line(1, 0.65), line(2, 0.6), line(2, 0.0)][::order]
    with pytest.raises(SourceError, match=r"up\.jsonl:\d: field 'score'.*turn 2.*on line \d"):
        load_records(write(tmp_path, lines))


def test_the_same_line_twice_is_one_judgment(tmp_path):
    [rec] = load_records(write(tmp_path, [line(1, 0.65), line(2, 0.3), line(2, 0.3)]))
    assert rec.status == "ok" and rec.score == pytest.approx(0.95)


@pytest.mark.parametrize(
    "bad, field, why",
    [
        (line(3, 0.1), "turn", "not a turn"),
        ({**line(1, 0.1), "turn": "x"}, "turn", "valid integer"),
        ({**line(1, 0.1), "turn": True}, "turn", "valid integer"),
        (line(2, 0.61), "score", "above turn 2's value 0.6"),
        (line(1, -0.5), "score", "negative"),
        ({**line(1, 0.1), "score": True}, "score", "valid number"),
        ({**line(1, 0.1), "question_id": "90_direito_civil_pergunta"}, "question_id", ""),
    ],
)
def test_a_bad_turn_line_names_its_line_and_field(tmp_path, bad, field, why):
    f = write(tmp_path, [line(1, 0.65), bad])
    with pytest.raises(SourceError, match=rf"up\.jsonl:2: field '{field}'.*{why}"):
        load_records(f, {QID: made_up_row()})


def test_without_the_dataset_a_turn_is_bounded_by_the_larger_item(tmp_path):
    with pytest.raises(SourceError, match=r"above turn 1's value 0\.65"):
        load_records(write(tmp_path, [line(1, 0.7), line(2, 0.1)]))


def test_an_item_fgv_annulled_whole_counts_in_full_from_an_upstream_file(tmp_path):
    f = write(tmp_path, [line(1, 0.55), line(2, 0.0)])
    [rec] = load_records(f, {QID: b_annulled()})
    assert rec.status == "ok" and rec.score == pytest.approx(0.55 + 0.6)
    [plain] = load_records(f, {QID: made_up_row()})  # nothing annulled: the judge's 0 stands
    assert plain.score == pytest.approx(0.55)


def test_upstream_v1_grading_gives_an_annulled_item_in_full():
    row = b_annulled()
    prompts = {
        name: {"name": name, "system_prompt": "S", "prompt_template": "{question_1}{answer_1}{value}"}
        for name in (V1_SINGLE, V1_MULTI)
    }
    prompts[V1_SINGLE]["prompt_template"] = "{question}{answer}{value}"

    async def call(messages, fmt, parse):  # the judge gives A 0.55 and B nothing
        content = "[[0.55]]" if len(call.seen) == 0 else "[[0]]"
        call.seen.append(content)
        return CallResult("ok", content, Usage(), None, None, 1, parse(content))

    call.seen = []
    base = {
        "question_id": QID,
        "exam_id": "90_direito_civil",
        "model": "model-a",
        "judge_model": "judge-x",
        "prompt_version": "upstream-v1@x",
        "mode": "legacy",
        "max_score": 1.25,
    }
    judge = SimpleNamespace(call=call, settings=SimpleNamespace(prompt="upstream-v1"), upstream=prompts)
    j = asyncio.run(grade_upstream(judge, row, ["resposta A", "resposta B"], base))
    assert len(call.seen) == 2  # both turns still asked, as upstream does
    assert j.status == "ok" and j.score == pytest.approx(1.15)
    assert [(i.item_id, i.score) for i in j.items] == [("A", 0.55), ("B", 0.6)]
    assert problem(j, row) is None
    items = [
        ItemScore(item_id="A", score=0.55, max_score=0.65),
        ItemScore(item_id="B", score=0.0, max_score=0.6),
    ]
    stale = j.model_copy(update={"score": 0.55, "items": items})
    assert problem(stale, row) == ("items[1].score", "0.0: B was annulled by FGV, it counts 0.6")


def test_any_prompts_record_giving_an_annulled_row_less_is_not_trusted():
    row = made_up_row(annulled=True)  # B2 annulled
    record = {
        "question_id": QID,
        "exam_id": "90_direito_civil",
        "model": "model-a",
        "judge_model": "judge-x",
        "status": "ok",
        "score": 0.95,
        "max_score": 1.25,
        "mode": "structured",
        "prompt_version": "oab-pt-v0",  # an older prompt: its items are still checked for this
        "items": [
            {"item_id": "A1", "score": 0.65, "max_score": 0.65},
            {"item_id": "B1", "score": 0.3, "max_score": 0.3},
            {"item_id": "B2", "score": 0.0, "max_score": 0.3},
        ],
    }
    assert problem(JudgmentLine.model_validate(record), row) == (
        "items[2].score",
        "0.0: B2 was annulled by FGV, it counts 0.3",
    )


def test_our_judgment_with_a_bad_question_id_names_its_line(tmp_path):
    good = {
        "question_id": QID,
        "exam_id": "90_direito_civil",
        "model": "model-a",
        "judge_model": "judge-x",
        "status": "ok",
        "score": 1.0,
        "max_score": 1.25,
    }
    f = write(tmp_path, [good, {**good, "question_id": "90_direito_civil_pergunta_9"}], name="ours.jsonl")
    with pytest.raises(SourceError, match=r"ours\.jsonl:2: field 'question_id'"):
        load_records(f)


def _graded_by(replies, version="upstream-v1", row=None):
    """grade_upstream with a judge whose replies are `replies`, parsed as the runner parses them."""
    from oab_bench.judge.grading.reply_schema import GradingError

    prompts = {
        name: {"name": name, "system_prompt": "S", "prompt_template": "{question_1}{answer_1}{value}"}
        for name in (V1_SINGLE, V1_MULTI)
    }
    prompts[V1_SINGLE]["prompt_template"] = "{question}{answer}{value}"
    prompts["single-oab-v2"] = {"name": "single-oab-v2", "system_prompt": "S", "prompt_template": "{answer}"}
    replies = list(replies)

    async def call(messages, fmt, parse):
        content = replies.pop(0)
        try:
            return CallResult("ok", content, Usage(), None, None, 1, parse(content))
        except (GradingError, ValueError, KeyError, TypeError) as e:
            return CallResult("parse_error", content, Usage(), None, str(e), 1)

    base = {
        "question_id": QID,
        "exam_id": "90_direito_civil",
        "model": "model-a",
        "judge_model": "judge-x",
        "prompt_version": f"{version}@x",
        "mode": "legacy" if version == "upstream-v1" else "structured",
        "max_score": 1.25,
    }
    row = row or made_up_row()
    judge = SimpleNamespace(call=call, settings=SimpleNamespace(prompt=version), upstream=prompts)
    return asyncio.run(grade_upstream(judge, row, ["resposta A", "resposta B"], base))


@pytest.mark.parametrize(
    ("version", "replies"),
    [
        ("upstream-v1", ["nota [[5]]", "nota [[0,6]]"]),  # A is worth 0.65
        ("upstream-v1", ["nota [[0,65]]", "nota [[0,61]]"]),  # B is worth 0.6
        ("upstream-v2", [json.dumps({"items": [{"item_id": "A", "score": 9}], "total_score": 9})]),
        (
            "upstream-v2",
            [json.dumps({"items": [{"item_id": "A", "score": -1}, {"item_id": "B", "score": 1.5}]})],
        ),
        ("upstream-v2", ['{"items": [{"item_id": "A", "score": NaN}], "total_score": 0}']),
    ],
)
def test_an_upstream_score_outside_its_value_is_a_parse_error_not_an_ok(version, replies):
    """A judge told "0 to value" that answers more (or less, or NaN) failed: recorded as such, never an
    ok record the cache and the reports would then refuse as impossible."""
    j = _graded_by(replies, version)
    assert j.status == "parse_error" and j.score is None, j
    assert "outside" in j.error or "not a score" in j.error


def test_an_upstream_score_within_its_value_is_ok():
    j = _graded_by(["nota [[0,65]]", "nota [[0,6]]"])
    assert j.status == "ok" and j.score == pytest.approx(1.25) and problem(j, made_up_row()) is None
