"""`oab-bench judge-sweep` against the stub judge: three made-up judges of known behaviour (one that
credits content, one that gives full marks, one that gives zero) and a reference that credits content."""

from __future__ import annotations

import json

import pytest

from oab_bench.judge.grading.jury import make_judge
from oab_bench.judge.sweep.decide import Rule, decide
from oab_bench.judge.sweep.spec import parse_spec
from oab_bench.scripts.cli import main
from tests.openai_stub import count_prompt_tokens
from tests.sweep_cases import PRICE, judge_row, made_up_answers, records, spec, sweep

# --- the spec ---------------------------------------------------------------------------------------


def test_a_spec_carries_a_judges_own_settings():
    s = parse_spec(
        "openai/gpt-5-mini,effort=low,temperature=none,max_tokens=800,api_base=http://127.0.0.1:9/v1"
    )
    assert (s.judge_model, s.reasoning_effort, s.temperature, s.max_tokens) == (
        "openai/gpt-5-mini",
        "low",
        None,
        800,
    )
    assert s.api_base == "http://127.0.0.1:9/v1"
    jury = parse_spec("jury-mean:openai/a,effort=low|openai/b,temperature=0.5")
    judge = make_judge(jury)
    assert judge.name == "jury-mean(openai/a, openai/b)"
    assert [m.settings.reasoning_effort for m in judge.members] == ["low", None]
    assert [m.settings.temperature for m in judge.members] == [0.0, 0.5]


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("openai/a,foo=1", "'foo' is not a judge's own setting"),
        ("openai/a,max_cost_usd=3", "'max_cost_usd' is not a judge's own setting"),
        ("openai/a,max_tokens=abc", "max_tokens=abc"),
        ("openai/a,effort", "'effort' is not SETTING=VALUE"),
        ("openai/a,effort=low,effort=high", "'effort' given twice"),
        ("jury:openai/a", "a jury needs two members or more"),
        ("effort=low", "does not start with a model name"),
        ("openai/a,api_base=localhost:8000", "is not an http(s) URL"),
    ],
)
def test_a_bad_spec_is_an_error_quoting_it(spec, says):
    with pytest.raises(ValueError, match="judge '") as e:
        parse_spec(spec)
    assert says in str(e.value) and repr(spec) in str(e.value)


# --- the decision -----------------------------------------------------------------------------------


def test_cheapest_valid_candidate_pareto_front_and_the_bound_kappa_is_read_on():
    ref = judge_row("ref", 5.0).model_copy(update={"agreement": None})
    rows = [
        judge_row("blind", 0.01, verdict="does not discriminate", kappa=1.0, low=1.0),  # cheapest, invalid
        judge_row("broken", 0.001, failed="404"),
        judge_row("wide", 0.5, kappa=0.95, low=0.7),  # valid on its value, not on its lower bound
        judge_row("good", 1.0, kappa=0.9, low=0.85),
        judge_row("dear", 3.0, kappa=0.9, low=0.85),  # as valid as good, dearer: off the front
        judge_row("flippy", 0.2, kappa=0.9, low=0.85, flips=0.2),
    ]
    report, why = decide(ref, rows, Rule())
    assert report.recommended == "good" and "lower end" in report.rule
    assert [r.judge for r in report.judges] == ["broken", "blind", "flippy", "wide", "good", "dear", "ref"]
    front = {r.judge for r in report.judges if r.pareto}
    assert front == {"blind", "flippy", "wide"}  # good is beaten by wide (cheaper, kappa 0.95)
    assert why["broken"].startswith("failed") and why["blind"] == "probe: does not discriminate"
    assert why["wide"] == "kappa_pass lower bound 0.70 < 0.8" and why["flippy"] == "flip_rate 0.20 > 0.1"
    report, _ = decide(ref, rows, Rule(kappa_on="value"))
    assert report.recommended == "wide" and "its value" in report.rule
    report, why = decide(ref, rows[:2], Rule())
    assert report.recommended is None and "none recommended" in report.rule and "blind" in report.rule
    failed_ref = ref.model_copy(update={"failed": "401"})
    assert decide(failed_ref, rows, Rule())[0].recommended is None


# --- end to end ---------------------------------------------------------------------------------------


@pytest.fixture
def material(built_rows, tmp_path):
    return made_up_answers(built_rows[0], tmp_path)


@pytest.mark.slow
def test_only_the_judge_that_credits_content_is_recommended(stub, built_dataset, material, tmp_path, capsys):
    content, full, zero = stub(policy="overlap"), stub(policy="max"), stub(policy="min")
    ref = spec("ref", content)
    cands = [spec("content", content), spec("max", full), spec("zero", zero)]

    rc, out, err = sweep(capsys, built_dataset, material, tmp_path, ref, *cands, extra=["--estimate"])
    assert rc == 0 and content.count + full.count + zero.count == 0 and not (tmp_path / "out").exists()
    bill = json.loads(out)
    assert [j["calls"] for j in bill["judges"]] == [80, 80, 80, 80]  # 50 probes + 3 models x 10 questions
    assert bill["total"]["cost_usd"] == pytest.approx(sum(j["cost_usd"] for j in bill["judges"]))

    rc, out, err = sweep(capsys, built_dataset, material, tmp_path, ref, *cands)
    assert rc == 0, err
    report = json.loads(out)
    assert set(report) == {"reference", "judges", "recommended", "rule"}
    assert report["reference"] == ref and report["recommended"] == cands[0]
    by = {j["judge"]: j for j in report["judges"]}
    assert [j["judge"] for j in report["judges"]] == [cands[1], cands[2], cands[0], ref]  # by cost
    for j in report["judges"]:
        assert set(j) == {
            "judge", "probe", "agreement", "cost_usd_per_model", "cost_usd_per_model_batch",
            "calls", "seconds", "pareto", "failed",
        }  # fmt: skip
        assert j["failed"] is None and j["calls"] == 80
    assert (
        by[cands[0]]["probe"]["verdict"] == "discriminates"
        and by[cands[0]]["agreement"]["kappa_pass"]["value"] == 1.0
    )
    assert (
        by[cands[0]]["agreement"]["flips"] == 0 and by[cands[0]]["agreement"]["ranking_tau"]["value"] == 1.0
    )
    for blind in cands[1:]:
        assert by[blind]["probe"]["verdict"] == "does not discriminate"
        assert by[blind]["agreement"]["flip_rate"] > 0.1
    assert by[cands[1]]["probe"]["swapped_pct"] == 100.0 and by[cands[2]]["probe"]["reference_pct"] == 0.0
    assert by[ref]["agreement"] is None and set(report["judges"][0]["agreement"]) == {
        "exam_ccc", "kappa_pass", "flips", "flip_rate", "exam_mae", "ranking_tau"
    }  # fmt: skip

    # the page beside sweep.json: every judge, the picture, the recommendation
    page = (tmp_path / "out" / "sweep.html").read_text(encoding="utf-8")
    assert all(f'data-judge="{j["judge"]}"' in page for j in report["judges"])
    assert page.count("data:image/png;base64,") == 1 and f'<span class="badge ok">{cands[0]}</span>' in page

    # costs add up to the calls the server saw: tokens of every request, priced
    assert sum(j["calls"] for j in report["judges"]) == content.count + full.count + zero.count == 320
    folders = sorted(p for p in (tmp_path / "out").iterdir() if p.name[:2].isdigit())
    for folder, (name, server) in zip(
        folders, [("ref", content), ("content", content), ("max", full), ("zero", zero)], strict=True
    ):
        mine = [r for r in server.requests if r["body"]["model"] == f"judge-{name}"]
        got = records(folder)
        assert len(mine) == len(got) == 80
        assert sum(r["usage"]["prompt_tokens"] for r in got) == sum(
            count_prompt_tokens(r["body"]["messages"]) for r in mine
        )
        pin, pout = PRICE[name]
        paid = (
            sum(r["usage"]["prompt_tokens"] * pin + r["usage"]["completion_tokens"] * pout for r in got) / 1e6
        )
        assert sum(r["cost_usd"] for r in got) == pytest.approx(paid)
        answers = [r for r in got if r["model"].startswith("m-")]
        per_question = sum(r["cost_usd"] for r in answers) / 3 / 10
        row = by[spec(name, server)]
        assert row["cost_usd_per_model"] > per_question * 100  # scaled to the whole dataset, not 10 questions
        assert row["cost_usd_per_model_batch"] == pytest.approx(row["cost_usd_per_model"] / 2)

    # a rerun makes no call; the text report
    before = content.count + full.count + zero.count
    rc, text, _ = sweep(capsys, built_dataset, material, tmp_path, ref, *cands, extra=["--format", "text"])
    assert rc == 0 and content.count + full.count + zero.count == before
    assert f"recommended: {cands[0]}" in text and "scaled: 10 of" in text and "(reference)" in text
    assert "0 calls made; 320 of 320 gradings came from the cache (no call)" in text

    # a cheaper content judge added: it alone is paid for, and it is recommended
    cheap = spec("content", content, "-b").replace("price_input=1.0", "price_input=0.5")
    rc, out, _ = sweep(capsys, built_dataset, material, tmp_path, ref, *cands, cheap)
    assert rc == 0 and content.count + full.count + zero.count == before + 80
    report = json.loads(out)
    assert report["recommended"] == cheap and {j["judge"]: j["calls"] for j in report["judges"]}[cheap] == 80
    assert sum(j["calls"] for j in report["judges"]) == 80


@pytest.mark.slow
def test_blind_judges_are_never_recommended_and_failed_calls_are_not_findings(
    stub, built_dataset, material, tmp_path, capsys
):
    content, full, zero = stub(policy="overlap"), stub(policy="max"), stub(policy="min")
    gone = stub(policy="overlap", faults=[{"kind": "404", "count": None}])
    ref = spec("ref", content)
    cands = [spec("max", full), spec("zero", zero), spec("content", gone)]
    rc, out, err = sweep(capsys, built_dataset, material, tmp_path, ref, *cands, extra=["--strict"])
    assert rc == 1, err
    report = json.loads(out)
    assert report["recommended"] is None and "none recommended" in report["rule"]
    failed = {j["judge"]: j for j in report["judges"]}[cands[2]]
    assert failed["failed"].startswith("80 of 80 gradings not made (api_error)")
    assert failed["probe"] is None and failed["agreement"] is None and not failed["pareto"]


def test_the_cost_cap_covers_the_whole_sweep(stub, built_dataset, material, tmp_path, capsys):
    content = stub(policy="overlap")
    ref, cand = spec("ref", content), spec("content", content)
    rc, out, err = sweep(
        capsys, built_dataset, material, tmp_path, ref, cand, extra=["--max-cost-usd", "0.000001"]
    )
    assert rc == 0, err
    report = json.loads(out)
    assert content.count == 0 and all(j["failed"] and "(budget)" in j["failed"] for j in report["judges"])
    rc, _, err = sweep(
        capsys, built_dataset, material, tmp_path, ref, "openai/judge-unpriced", extra=["--max-cost-usd", "1"]
    )
    assert rc == 2 and "no known price" in err


def test_bad_input_writes_nothing(stub, built_dataset, material, tmp_path, capsys):
    content = stub(policy="overlap")
    ref = spec("ref", content)
    for cands, says in [
        ([ref], "are one judge: every setting is the same"),
        (["openai/x,foo=1"], "'foo' is not a judge's own setting"),
        (["jury:openai/x,concurrency=2|openai/y"], "jury member"),
        ([f"{ref},effort=low", f"{ref},reasoning-effort=low"], "are one judge: every setting is the same"),
        (["jury:openai/x|openai/y", "jury:openai/y|openai/x"], "are one judge"),
    ]:
        rc, _, err = sweep(capsys, built_dataset, material, tmp_path, ref, *cands)
        assert rc == 2 and says in err, err
    rc, _, err = sweep(capsys, built_dataset, material[:1], tmp_path, ref, spec("content", content))
    assert rc == 2 and "two models or more" in err
    assert content.count == 0 and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_batch_judge_is_judged_through_the_batch_api_and_a_rerun_reattaches(
    stub, built_dataset, material, tmp_path, capsys
):
    content, batched = stub(policy="overlap"), stub(policy="overlap", batch_hold=True)
    ref, cand = spec("ref", content), spec("content", batched) + ",batch=true"
    rc, out, err = sweep(capsys, built_dataset, material, tmp_path, ref, cand + ",batch_wait=0")
    assert rc == 3, err
    assert "still running after --batch-wait 0s: batch_1" in err and "resume: oab-bench " in err
    assert batched.batch_creations == 1 and out == "" and not (tmp_path / "out" / "sweep.json").exists()
    assert content.count == 80  # the other judges are judged meanwhile

    batched.release_batches()
    rc, out, err = sweep(capsys, built_dataset, material, tmp_path, ref, cand)
    assert rc == 0, err
    assert "batch batch_1: reattached" in err and batched.batch_creations == 1
    by = {j["judge"]: j for j in json.loads(out)["judges"]}
    assert content.count == 80 and by[ref]["calls"] == 0  # the reference from the cache
    assert by[cand]["calls"] == len(batched.requests) == 80  # every grading in the one batch
    assert by[cand]["cost_usd_per_model"] == pytest.approx(2 * by[cand]["cost_usd_per_model_batch"])


def test_the_dataset_defaults_as_runs_does(stub, built_dataset, material, tmp_path, capsys, monkeypatch):
    content = stub(policy="overlap")
    ref, cand = spec("ref", content), spec("content", content)
    monkeypatch.setenv("OAB_BENCH_DATASET", str(built_dataset))
    rc, out, err = sweep(capsys, None, material, tmp_path, ref, cand, extra=["--estimate"])
    assert rc == 0, err
    assert [j["calls"] for j in json.loads(out)["judges"]] == [80, 80]
    monkeypatch.setenv("OAB_BENCH_DATASET", str(tmp_path / "nowhere"))
    rc, _, err = sweep(capsys, None, material, tmp_path, ref, cand)
    assert rc == 2 and f"OAB_BENCH_DATASET {tmp_path / 'nowhere'}" in err and "no such folder" in err
    assert content.count == 0 and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_one_model_at_two_efforts_is_two_judges_after_the_sweep(
    stub, built_dataset, material, tmp_path, capsys
):
    """The sweep's judgments files read by the leaderboard: two tables, never one merged."""
    content = stub(policy="overlap")
    ref = spec("content", content)
    rc, out, err = sweep(
        capsys, built_dataset, material, tmp_path, ref, f"{ref},effort=high", extra=["--format", "text"]
    )
    assert rc == 0 and content.count == 160, err
    assert "calls and seconds: this run's; 160 calls made; 0 of 160 gradings came from the cache" in out
    files = sorted(str(p) for p in (tmp_path / "out").glob("*/judgments.jsonl"))
    capsys.readouterr()
    rc = main(["leaderboard", *files, "--format", "json", "--resamples", "50"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    judges = {r["judge"] for r in json.loads(out)["rows"]}
    plain = "openai/judge-content [oab-pt-v1, structured]"
    assert judges == {plain, plain[:-1] + ", reasoning_effort=high]"}
