"""A jury is its members in a canonical (sorted) order: `a,b` and `b,a` are one judge, one set of
cache entries, and records written under the old order's name still count as that judge."""

from __future__ import annotations

import json

from oab_bench.dataset_builder.build import build_rows
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.jury import make_judge
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.judge.jury_name import canonical_judge
from oab_bench.judge.leaderboard.inputs import load_records
from oab_bench.judge.leaderboard.tables import build_tables
from oab_bench.judge.settings import JudgeSettings
from tests import synthetic as syn


def test_the_order_members_are_named_in_does_not_change_the_jury():
    a = make_judge(JudgeSettings(judge_model="openai/c,openai/a, openai/b"))
    b = make_judge(JudgeSettings(judge_model="openai/a,openai/b,openai/c"))
    assert a.name == b.name == "jury-median(openai/a, openai/b, openai/c)"
    assert [m.settings.judge_model for m in a.members] == ["openai/a", "openai/b", "openai/c"]
    assert canonical_judge("jury-min(openai/c, openai/a)") == "jury-min(openai/a, openai/c)"
    assert canonical_judge("openai/gpt-5.2") == "openai/gpt-5.2"


def test_the_same_jury_named_in_another_order_grades_from_the_same_cache(stub, tmp_path, monkeypatch):
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "sk-order-test")
    server = stub(policy="alternate")
    src = syn.write_source(tmp_path / "src", syn.exam())
    row = build_rows(src, src / "errata.yaml")[0][1]  # a made-up questão
    pairs = [(row, Answer(model="m", question_id=row.question_id, turns=["x"]))]
    got = []
    for order in ("openai/j-a,openai/j-b", "openai/j-b,openai/j-a"):
        judge = make_judge(
            JudgeSettings(judge_model=order, api_base=server.url), JudgmentStore(tmp_path / "cache")
        )
        [j] = run_judge_all(judge, pairs, progress=False)
        got.append(j.record())
    assert server.count == 2  # each member once: the second order was served from the cache
    for r in got:
        r.pop("cached", None), r.pop("cost_usd", None), r.pop("usage", None), r.pop("attempts", None)
        for m in r["members"]:
            m.pop("cached", None), m.pop("cost_usd", None)
    assert got[0] == got[1] and got[0]["judge_model"] == "jury-median(openai/j-a, openai/j-b)"


def test_records_named_in_the_old_order_are_the_same_judge(tmp_path):
    rec = {
        "question_id": "90_direito_civil_questao_1",
        "exam_id": "90_direito_civil",
        "model": "m",
        "prompt_version": "oab-pt-v1",
        "mode": "structured",
        "status": "ok",
        "score": 1.0,
        "max_score": 1.25,
    }
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text(json.dumps({**rec, "judge_model": "jury-median(openai/b, openai/a)"}) + "\n")
    new.write_text(json.dumps({**rec, "judge_model": "jury-median(openai/a, openai/b)"}) + "\n")
    records = load_records(old) + load_records(new)
    assert {r.judge for r in records} == {"jury-median(openai/a, openai/b) [oab-pt-v1, structured]"}
    _, notes = build_tables(records)
    assert any("each counted once" in n for n in notes)  # one judge, the copy counted once
