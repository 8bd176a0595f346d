"""A jury is its members in a canonical (sorted) order: `a,b` and `b,a` are one judge, one set of
cache entries."""

from __future__ import annotations

from oab_bench.dataset_builder.build import build_rows
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.jury import make_judge
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.judge.settings import JudgeSettings
from tests import synthetic as syn


def test_the_order_members_are_named_in_does_not_change_the_jury():
    a = make_judge(JudgeSettings(judge_model="openai/c,openai/a, openai/b"))
    b = make_judge(JudgeSettings(judge_model="openai/a,openai/b,openai/c"))
    assert a.name == b.name == "jury-median(openai/a, openai/b, openai/c)"
    assert [m.settings.judge_model for m in a.members] == ["openai/a", "openai/b", "openai/c"]


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
