"""A jury of judges: the combination rule on made-up gradings, and three members through the stub
server, one of which fails every call."""

from __future__ import annotations

import json
import re

import pytest

from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.jury import Jury, combine, make_judge, round_down
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.judge.records import ItemScore, Judgment
from oab_bench.judge.settings import JudgeSettings
from tests.conftest import oab
from tests.helpers import made_up_row

ROW = made_up_row(annulled=True)  # A1 grid [0, 0.55, 0.65], B1 [0, 0.3], B2 annulled (0.3)


def member(name, a1=None, b1=None, status="ok", cost=0.01, cached=False):
    items = [] if status != "ok" else [ItemScore(item_id="A1", score=a1, max_score=0.65)]
    if status == "ok":
        items += [
            ItemScore(item_id="B1", score=b1, max_score=0.3),
            ItemScore(item_id="B2", score=0.3, max_score=0.3),
        ]
    return Judgment(
        question_id=ROW.question_id,
        exam_id=ROW.exam_id,
        model="m",
        judge_model=name,
        prompt_version="oab-pt-v1",
        mode="structured",
        status=status,
        score=sum(i.score for i in items) if status == "ok" else None,
        max_score=ROW.max_score,
        items=items,
        cost_usd=cost,
        cached=cached,
    )


BASE = {
    "question_id": ROW.question_id,
    "exam_id": ROW.exam_id,
    "model": "m",
    "judge_model": "jury-median(a, b, c)",
    "prompt_version": "oab-pt-v1",
    "mode": "structured",
    "max_score": ROW.max_score,
}


def test_round_down_to_the_grid():
    assert round_down(0.6, [0.0, 0.55, 0.65]) == 0.55
    assert round_down(0.65, [0.0, 0.55, 0.65]) == 0.65
    assert round_down(0.54, [0.0, 0.55, 0.65]) == 0.0


@pytest.mark.parametrize(
    ("how", "a1", "b1"),
    [
        ("median", 0.55, 0.3),  # median(0, .55, .65) = .55; median(0, .3, .3) = .3
        ("mean", 0.0, 0.0),  # mean .4 -> down to 0; mean .2 -> down to 0
        ("min", 0.0, 0.0),
    ],
)
def test_combine_item_scores(how, a1, b1):
    got = [member("a", 0.0, 0.3), member("b", 0.55, 0.0), member("c", 0.65, 0.3)]
    j = combine(ROW, got, how, BASE)
    items = {i.item_id: i.score for i in j.items}
    assert j.status == "ok" and items == {"A1": a1, "B1": b1, "B2": 0.3}  # annulled: in full
    assert j.score == pytest.approx(a1 + b1 + 0.3)
    assert [m.items.get("A1") for m in j.members] == [0.0, 0.55, 0.65]  # each member's scores kept
    assert j.cost_usd == pytest.approx(0.03)


def test_even_median_rounds_down():
    j = combine(ROW, [member("a", 0.55, 0.3), member("b", 0.65, 0.3)], "median", BASE)
    assert {i.item_id: i.score for i in j.items}["A1"] == 0.55  # median 0.60 is not on the grid


def test_majority_rule():
    """2 of 3 members graded: the jury grades with those two; 1 of 3 or 2 of 4: the jury fails."""
    two_of_three = [member("a", 0.55, 0.3), member("b", status="api_error", cost=0.0), member("c", 0.65, 0.0)]
    j = combine(ROW, two_of_three, "median", BASE)
    assert j.status == "ok" and {i.item_id: i.score for i in j.items}["A1"] == 0.55
    one_of_three = [
        member("a", 0.55, 0.3),
        member("b", status="api_error"),
        member("c", status="parse_error"),
    ]
    j = combine(ROW, one_of_three, "median", BASE)
    assert j.status in ("api_error", "parse_error") and j.score is None
    assert "1 of 3 members graded this question; a majority (2) is needed" in j.error
    two_of_four = [*two_of_three, member("d", status="api_error")]
    j = combine(ROW, two_of_four, "median", BASE)
    assert j.status == "api_error" and "2 of 4" in j.error and "majority (3)" in j.error


def test_cached_members_cost_nothing_again():
    got = [member("a", 0.55, 0.3, cached=True), member("b", 0.55, 0.3, cost=0.02)]
    j = combine(ROW, got, "median", BASE)
    assert j.cost_usd == pytest.approx(0.02) and not j.cached
    assert combine(ROW, [member("a", 0.55, 0.3, cached=True)] * 2, "median", BASE).cached


def test_make_judge_and_the_record():
    assert isinstance(make_judge(JudgeSettings(judge_model="openai/x")), Judge)
    jury = make_judge(JudgeSettings(judge_model="openai/a, openai/b,openai/c", jury_combine="min"))
    assert isinstance(jury, Jury) and jury.name == "jury-min(openai/a, openai/b, openai/c)"
    assert [m.settings.judge_model for m in jury.members] == ["openai/a", "openai/b", "openai/c"]
    with pytest.raises(ValueError, match="named twice"):
        Jury(JudgeSettings(judge_model="openai/a,openai/a"))
    record = combine(ROW, [member("a", 0.55, 0.3)] * 3, "median", BASE).record()
    assert record["members"][0]["items"] == {"A1": 0.55, "B1": 0.3, "B2": 0.3}
    assert "members" not in member("a", 0.55, 0.3).record()  # one judge's records are unchanged


def test_jury_of_three_through_the_stub_one_member_always_fails(
    stub, judge_key, tmp_path, upstream_v1, built_dataset
):
    server = stub(policy="alternate", faults=[{"kind": "500", "match": '"judge-dead"'}])
    answers = upstream_v1 / "model_answer" / "o3-2025-04-16.jsonl"
    out = tmp_path / "jury.jsonl"
    args = ["judge", "--dataset", built_dataset, "--answers", answers, "--questions", "39_direito_penal*"]
    for m in ("openai/judge-a", "openai/judge-b", "openai/judge-dead"):
        args += ["--judge-model", m]
    args += ["--api-base", server.url, "--cache", tmp_path / "cache", "--output", out, "--no-progress"]
    args += [
        "--max-attempts",
        "1",
        "--price-input",
        "1",
        "--price-output",
        "2",
        "--price-cached-input",
        "0.5",
    ]
    proc = oab(*args, timeout=300)
    assert proc.returncode == 0, proc.stderr  # 2 of 3 members graded every question
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 5 and {r["status"] for r in rows} == {"ok"}
    assert {r["judge_model"] for r in rows} == {
        "jury-median(openai/judge-a, openai/judge-b, openai/judge-dead)"
    }
    for r in rows:
        by = {m["judge_model"]: m for m in r["members"]}
        assert by["openai/judge-dead"]["status"] == "api_error" and by["openai/judge-dead"]["cost_usd"] == 0
        ok = [by["openai/judge-a"], by["openai/judge-b"]]
        assert all(m["status"] == "ok" and m["cost_usd"] > 0 for m in ok)
        assert r["cost_usd"] == pytest.approx(sum(m["cost_usd"] for m in ok))  # costs add up per member
        assert r["score"] == pytest.approx(ok[0]["score"])  # both alike: the median is theirs
    err = proc.stderr
    assert (
        "jury member C openai/judge-dead: ok 0 of 5" in err
        and "jury member A openai/judge-a: ok 5 of 5" in err
    )
    assert "strict majority of the 3 members" in err and "0 failed that rule" in err
    assert "jury agreement A vs B: exam CCC" in err and "Krippendorff's alpha" in err
    # one jury's file: `agreement` compares its members
    agree = oab("agreement", out, "--format", "json", "--resamples", "200", timeout=120)
    assert agree.returncode == 0, agree.stderr
    r = json.loads(agree.stdout)
    assert [s["judge"] for s in r["sources"]] == ["openai/judge-a", "openai/judge-b", "openai/judge-dead"]
    assert r["n_pairs"] == 5 and r["item"]["exact"]["value"] == 1.0 and len(r["pairwise"]) == 3
    assert r["pairwise"][1]["ccc"]["value"] is None  # the dead member graded nothing
    # the leaderboard: the jury as its own judge, and on request each member
    lb = oab("leaderboard", out, "--format", "json", "--members", "--resamples", "200", timeout=120)
    assert lb.returncode == 0, lb.stderr
    judges = {row["judge"] for row in json.loads(lb.stdout)["rows"]}
    assert any(j.startswith("jury-median(") for j in judges)
    assert any(j.startswith("openai/judge-a [") and "jury member" in j for j in judges)


def test_run_hands_the_jury_to_the_task(tmp_path, monkeypatch):
    """`oab-bench run --judge-model A --judge-model B`: the run's settings, which the task is handed, name
    the jury; `OAB_JUDGE_MODEL=A,B` means the same to the plain lighteval CLI."""
    from oab_bench.judge.generation.run_settings import RunSettings
    from oab_bench.judge.grading.lighteval_judge import settings_from_env
    from oab_bench.scripts.cli import build_parser

    run = ["run", "--model", "openai/m", "--output-dir", str(tmp_path), "--dataset", str(tmp_path)]
    args = build_parser().parse_args(
        [*run, "--judge-model", "openai/a", "--judge-model", "openai/b", "--jury-combine", "min"]
    )
    jury = make_judge(RunSettings.from_args(args).judge)
    assert isinstance(jury, Jury) and jury.name == "jury-min(openai/a, openai/b)"
    monkeypatch.setenv("OAB_JUDGE_MODEL", "openai/a,openai/b")
    monkeypatch.setenv("OAB_JUDGE_JURY_COMBINE", "min")
    assert make_judge(settings_from_env()).name == jury.name


@pytest.mark.e2e
def test_run_with_a_jury_end_to_end(stub, built_dataset, tmp_path):
    """`oab-bench run` with two judges: the lighteval task grades with the jury, run prints its members."""
    from oab_bench.conventions import JUDGMENTS_FILE
    from tests.helpers import is_check_call, run_bench

    candidate, judges = stub(), stub(policy="alternate")
    extra = ("--judge-model", "openai/judge-e2e-b")  # after run_bench's own --judge-model openai/judge-e2e
    out, proc = run_bench("openai/cand-jury", candidate.url, judges.url, built_dataset, tmp_path, *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in (out / JUDGMENTS_FILE).read_text().splitlines()]
    assert rows and {r["judge_model"] for r in rows} == {"jury-median(openai/judge-e2e, openai/judge-e2e-b)"}
    assert all(
        [m["judge_model"] for m in r["members"]] == ["openai/judge-e2e", "openai/judge-e2e-b"] for r in rows
    )
    assert "jury member B openai/judge-e2e-b: ok 15 of 15" in proc.stderr
    assert "jury agreement A vs B: exam CCC" in proc.stderr
    checked = sorted(r["body"]["model"] for r in judges.requests if is_check_call(r))
    assert checked == ["judge-e2e", "judge-e2e-b"]  # each member checked, never "A,B" as one model name
    # a run folder is a source for `agreement` too (its details carry item scores)
    agree = oab("agreement", out, out / JUDGMENTS_FILE, "--format", "json", "--resamples", "200", timeout=120)
    assert agree.returncode == 0, agree.stderr
    r = json.loads(agree.stdout)
    assert r["n_pairs"] == 15 and r["exam"]["n"] == 3 and r["item"]["exact"]["value"] == 1.0


def test_run_preflight_names_each_jury_member(monkeypatch):
    """Keys are checked per member; a vllm: member is refused with what to do instead."""
    from oab_bench.judge.generation.run_checks import check_credentials
    from oab_bench.judge.generation.run_settings import RunSettings
    from oab_bench.judge.settings import JudgeSettings
    from oab_bench.scripts.cli import build_parser

    for var in ("OAB_JUDGE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OAB_JUDGE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-only-openai")
    jury = JudgeSettings(judge_model="openai/gpt-5.2,anthropic/claude-sonnet-4-6")
    with pytest.raises(ValueError) as info:
        check_credentials("openai/gpt-4o-mini", None, jury)
    assert "anthropic/claude-sonnet-4-6 needs" in str(info.value) and "gpt-5.2 needs" not in str(info.value)

    run = ["run", "--model", "m", "--output-dir", "o", "--judge-model", "openai/a"]
    args = build_parser().parse_args([*run, "--judge-model", "vllm:Qwen/Qwen3.5-35B-A3B"])
    with pytest.raises(ValueError, match="a jury member cannot be vllm"):
        RunSettings.from_args(args)


def test_members_have_their_own_settings_where_given(stub, tmp_path, monkeypatch):
    """`--judge-model "MODEL key=value ..."`: a member's own server, sampling and prices; the rest shared."""
    from oab_bench.judge.settings import member_settings

    monkeypatch.setenv("OAB_JUDGE_API_KEY", "sk-jury-test")
    a, b = stub(policy="max"), stub(policy="alternate")
    spec = f"openai/judge-a price_input=1 price_output=2,openai/judge-b api_base={b.url} temperature=0.6"
    settings = JudgeSettings(judge_model=spec, api_base=a.url, max_tokens=500)
    first, second = member_settings(settings)
    assert (first.judge_model, first.api_base, first.price_input, first.temperature) == (
        "openai/judge-a",
        a.url,
        1,
        0.0,
    )
    assert (second.judge_model, second.api_base, second.temperature, second.max_tokens) == (
        "openai/judge-b",
        b.url,
        0.6,
        500,
    )
    judge = make_judge(settings, JudgmentStore(tmp_path))
    assert judge.name == "jury-median(openai/judge-a, openai/judge-b)"
    [j] = run_judge_all(
        judge,
        [(made_up_row(), Answer(model="m", question_id=made_up_row().question_id, turns=["x"]))],
        progress=False,
    )
    assert a.count == 1 and b.count == 1 and b.requests[0]["body"]["temperature"] == 0.6
    assert [m.cost_usd is not None for m in j.members] == [True, False]  # only A has a price

    for bad, said in (
        ("openai/a,openai/b concurrency=3", "not SETTING=VALUE of a member's own setting"),
        ("openai/a,openai/b temperature=hot", "temperature=hot"),
        ("openai/a,openai/b max_tokens=0", "--max-tokens (OAB_JUDGE_MAX_TOKENS): Input should be greater"),
        ("openai/a temperature=0.6", "settings after a model name are for jury members"),
    ):
        with pytest.raises(ValueError, match=re.escape(said)):
            make_judge(JudgeSettings(judge_model=bad))


def test_a_jury_file_is_checked_before_its_members_are_compared(tmp_path):
    """`agreement JURY.jsonl` and `leaderboard --members` read the members' scores only once checked;
    a (model, question) graded twice differently stops naming both lines, whatever their order."""
    from oab_bench.dataset_builder.errors import SourceError
    from oab_bench.judge.validity.jury_report import jury_file_sources, member_records_of

    def write(name, records):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in records))
        return tmp_path / name

    got = [member("a", 0.55, 0.3), member("b", 0.65, 0.0)]
    recs = [combine(ROW, got, "median", {**BASE, "model": m}).record() for m in ("m", "m2")]
    sources = jury_file_sources(write("jury.jsonl", recs))
    again = jury_file_sources(write("again.jsonl", [recs[1], recs[0], recs[1]]))  # reordered, a copy
    assert [s.graded for s in again] == [s.graded for s in sources] and len(sources[0].graded) == 2
    bad = json.loads(json.dumps(recs))
    bad[1]["members"][1]["score"] = 9.0
    path = write("bad.jsonl", bad)
    for read in (jury_file_sources, member_records_of):
        with pytest.raises(SourceError, match=r"bad.jsonl:2: field 'members\[1\].score': 9.0 is not a score"):
            read(path)
    clash = json.loads(json.dumps(recs[0]))
    clash["members"][1]["score"] = 0.3
    with pytest.raises(
        SourceError, match=r"clash.jsonl:1: m is graded on .* differently here and in .*clash.jsonl:3"
    ):
        jury_file_sources(write("clash.jsonl", [*recs, clash]))


def test_members_grading_with_another_prompt_or_mode_are_refused(tmp_path):
    """A jury's record names one prompt version and mode: members grading otherwise would make records
    mislabelled (and, structured with no items, refused by the leaderboard): an error naming the member."""
    prompts = tmp_path / "judge_prompts.jsonl"
    prompts.write_text(
        "".join(
            json.dumps({"name": n, "system_prompt": "S", "prompt_template": "{answer}"}) + "\n"
            for n in ("single-oab-v1", "single-oab-v1-multi-turn")
        ),
        encoding="utf-8",
    )
    for spec, said in (
        ("openai/a,openai/b mode=legacy", "jury member 'openai/b' grades with oab-pt-v1 in legacy mode"),
        (
            f"openai/a mode=legacy,openai/b mode=legacy prompt=upstream-v1 upstream_prompts={prompts}",
            "jury member 'openai/b' grades with upstream-v1@",
        ),
    ):
        with pytest.raises(ValueError, match=re.escape(said)):
            make_judge(JudgeSettings(judge_model=spec))
    same = make_judge(JudgeSettings(judge_model="openai/a,openai/b", mode="legacy"))
    assert (same.prompt_version, same.mode) == ("oab-pt-v1", "legacy")


def test_a_failed_jury_status_does_not_depend_on_the_members_order():
    """One failure each (a tie): the jury's status is the same whichever member is named first."""
    got = [member("a", 0.55, 0.3), member("b", status="parse_error"), member("c", status="api_error")]
    statuses = {combine(ROW, order, "median", BASE).status for order in (got, got[::-1], got[1:] + got[:1])}
    assert statuses == {"api_error"}  # ties broken by the status's name
