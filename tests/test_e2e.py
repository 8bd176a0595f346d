"""End to end, offline: build from ../shared, local stub servers as candidate and judge,
`oab-bench run` and the plain `lighteval endpoint litellm` command."""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict

import pandas as pd
import pytest

from oab_bench.conventions import RUN_MARKER
from tests.conftest import REPO, oab
from tests.helpers import (
    TASK,
    alternate_score,
    check_candidate_requests,
    check_no_secret,
    env_for,
    expected_figures,
    is_check_call,
    results_json,
    run_bench,
)

pytestmark = pytest.mark.e2e


FAST_RETRIES = ("--candidate-retries", "2", "--candidate-retry-sleep", "0.05")


def test_oab_bench_run_end_to_end(stub, built_rows, built_dataset, tmp_path):
    rows, _ = built_rows
    litellm_cache_before = (REPO / ".litellm_cache").exists()
    server = stub(policy="alternate", think=True, max_model_len=1_000_000, served=("cand-e2e",))
    out, proc = run_bench("openai/cand-e2e", server.url, server.url, built_dataset, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "preflight: 15 prompts fit in the model's 1000000 tokens" in proc.stderr
    for noise in (
        "nltk_data",
        "FutureWarning",
        "Careful, the task",
        "Generating test split",
        "dataset splits",
    ):
        assert noise not in proc.stderr, noise  # nothing downloaded, no warning not the user's to act on
    assert (REPO / ".litellm_cache").exists() == litellm_cache_before  # lighteval ran in the output folder
    summary = json.loads((out / "oab_bench_summary.json").read_text())
    assert summary["figures"]["cost_usd"] is None  # the stub's models have no price: unknown, not 0.0
    assert (out / "report.html").exists(), proc.stderr[-3000:]
    report = (out / "report.html").read_text(encoding="utf-8")  # the audit report, with the rubrics
    assert f"report: {out / 'report.html'}" in proc.stderr and 'data-model="openai/cand-e2e"' in report
    answers = report.split('id="data-answers">', 1)[1].split("</script>", 1)[0]
    assert '"rubric":[{' in report and answers.count('"openai/cand-e2e\\t') == 15

    got = results_json(out)["results"][f"{TASK}|0"]
    for key, value in expected_figures(rows).items():
        assert got[key] == pytest.approx(value), key
    assert math.isnan(got["cost_usd"])
    check_candidate_requests(server, rows)

    judgments = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert len(judgments) == 15 and {j["status"] for j in judgments} == {"ok"}
    by_id = {r.question_id: r for r in rows}
    for j in judgments:
        assert j["score"] == pytest.approx(alternate_score(by_id[j["question_id"]]))
        assert j["model"] == "openai/cand-e2e"
    # the stub wrapped every answer in <think>...</think>: the judge never saw it
    judge_bodies = [r["body"] for r in server.requests if r["body"].get("response_format")]
    assert judge_bodies and all("<think>" not in b["messages"][-1]["content"] for b in judge_bodies)

    (details,) = list((out / "details").rglob("*.parquet"))
    df = pd.read_parquet(details)
    first = df["metric"][0]["oab_judgment"]
    assert (
        first["status"] == "ok"
        and len(first["items"]) > 0
        and {"item_id", "score", "max_score", "analysis"} <= set(first["items"][0])
    )
    expected = expected_figures(rows)
    row = f"| openai/cand-e2e | {expected['exam_score']:.2f} | {expected['pass_rate']:.0%} (0/3) |"
    assert row in proc.stdout and "| 100% |" in proc.stdout

    # the leaderboard reads lighteval's output folder (its details) to the same figures
    # the lighteval folder and our judgments file: one judge, duplicates noted
    lb = oab("leaderboard", out, out / "judgments.jsonl", "--format", "json", "--resamples", "500")
    assert lb.returncode == 0, lb.stderr
    board = json.loads(lb.stdout)
    (lrow,) = board["rows"]
    assert board["notes"] == [
        "15 records repeat a (judge, model, question) with the same result: each counted once"
    ]
    assert lrow["model"] == "openai/cand-e2e" and lrow["judge"] == "openai/judge-e2e [oab-pt-v1, structured]"
    assert (
        lrow["mean_exam_score"] == pytest.approx(expected["exam_score"])
        and lrow["exams"] == 3
        and lrow["coverage"] == 1.0
    )
    check_no_secret(out, proc.stdout, proc.stderr)

    # the judge CLI reads lighteval details as answers, and its cache already holds every judgment
    jout = tmp_path / "from_details.jsonl"
    jcmd = ["judge", "--dataset", str(built_dataset), "--answers", str(out)]
    jcmd += ["--judge-model", "openai/judge-e2e", "--api-base", server.url, "--cache", str(tmp_path / "jc")]
    jcmd += ["--output", str(jout), "--questions", "*_direito_penal_*", "--no-progress"]
    jproc = oab(*jcmd, env=env_for())
    assert jproc.returncode == 0, jproc.stderr[-2000:]
    again = [json.loads(line) for line in jout.read_text().splitlines()]
    assert (
        len(again) == 15
        and all(j["cached"] for j in again)
        and {j["model"] for j in again} == {"openai/cand-e2e"}
    )


def test_candidate_errors_fail_the_run_and_their_exams_get_no_figure(
    stub, built_rows, built_dataset, tmp_path
):
    rows, _ = built_rows
    penal = [r for r in rows if r.area == "penal"]
    victim = next(r for r in penal if r.edition == 40 and r.number == 2)
    candidate = stub(faults=[{"kind": "500", "match": victim.statement[:40]}])
    judge = stub(policy="alternate")
    out, proc = run_bench("openai/cand-err", candidate.url, judge.url, built_dataset, tmp_path, *FAST_RETRIES)
    assert proc.returncode == 1
    assert f"1 empty answers (failed generations?): {victim.question_id}" in proc.stderr
    (said,) = [x for x in proc.stderr.splitlines() if x.startswith(f"oab-bench run: {victim.question_id}: ")]
    assert "its last call failed: InternalServerError (500)" in said and "injected 500" in said  # the
    # server's own words, which lighteval drops
    got = results_json(out)["results"][f"{TASK}|0"]
    assert got["coverage"] == pytest.approx(14 / 15) and got["exams_complete"] == 2.0
    others = [r for r in penal if r.exam_id != victim.exam_id]
    totals = defaultdict(float)
    for r in others:
        totals[r.exam_id] += alternate_score(r)
    assert got["exam_score"] == pytest.approx(sum(totals.values()) / 2)
    summary = json.loads((out / "oab_bench_summary.json").read_text())
    assert summary["empty_answers"] == [victim.question_id]


def test_candidate_server_dying_mid_run(stub, built_rows, built_dataset, tmp_path):
    rows, _ = built_rows
    # check call, 12 answers, then dead: each question asked of a dead server costs ~3 s of retries
    candidate = stub(faults=[{"kind": "die", "after": 13, "count": 1}])
    judge = stub(policy="max")
    out, proc = run_bench(
        "openai/cand-die",
        candidate.url,
        judge.url,
        built_dataset,
        tmp_path,
        "--concurrency",
        "1",
        *FAST_RETRIES,
    )
    assert proc.returncode == 1
    summary = json.loads((out / "oab_bench_summary.json").read_text())
    empty = summary["empty_answers"]
    assert len(empty) == 3 and all(q in proc.stderr for q in empty)
    figures = results_json(out)["results"][f"{TASK}|0"]
    assert figures["coverage"] == pytest.approx(12 / 15)
    hit = {r.exam_id for r in rows if r.question_id in empty}
    assert figures["exams_complete"] == 3 - len(hit)  # an exam with an empty answer gets no figure
    if not figures["exams_complete"]:
        assert math.isnan(figures["exam_score"]) and math.isnan(figures["pass_rate"])


def test_lighteval_failure_is_an_error_even_with_old_results_in_the_folder(
    stub, tmp_path, built_dataset, monkeypatch
):
    from oab_bench.judge.generation import run

    server = stub()
    old = tmp_path / "run" / "results" / "openai" / "cand-old" / "results_2020-01-01T00-00-00.json"
    old.parent.mkdir(parents=True)
    old.write_text("{}")
    os.utime(old, (0, 0))
    (tmp_path / "run" / RUN_MARKER).touch()  # the folder of an earlier run
    # everything the run can check up front is fine: lighteval alone fails
    monkeypatch.setattr(run, "pipeline", lambda s, failed: failed.append(ZeroDivisionError("lighteval")))
    out, proc = run_bench(
        "openai/cand-old", server.url, server.url, built_dataset, tmp_path, "--no-check-call"
    )
    assert proc.returncode == 1
    assert "ZeroDivisionError" in proc.stderr  # lighteval's traceback, then our line
    assert f"oab-bench run: error: lighteval left no results or judgments in {out}" in proc.stderr
    assert not (out / "oab_bench_summary.json").exists() and not server.requests


def test_a_prompt_longer_than_the_context_fails_before_generating(stub, built_rows, built_dataset, tmp_path):
    rows, _ = built_rows
    server = stub(max_model_len=1400, served=("cand-short",))  # the stub counts 4 characters a token
    _, proc = run_bench(
        "openai/cand-short", server.url, server.url, built_dataset, tmp_path, "--max-new-tokens", "100"
    )
    assert proc.returncode == 2
    assert "prompts do not fit the model's context" in proc.stderr
    longest = max((r for r in rows if r.area == "penal"), key=lambda r: len(r.statement))
    assert f"{longest.question_id}: prompt " in proc.stderr and "context 1400 tokens" in proc.stderr
    assert all(map(is_check_call, server.requests))  # the check calls only: nothing was generated


def test_a_key_echoed_by_the_candidate_server_is_masked(stub, built_dataset, tmp_path):
    candidate = stub(faults=[{"kind": "401"}])  # quotes the Authorization header, key included
    judge = stub()
    out, proc = run_bench("openai/cand-401", candidate.url, judge.url, built_dataset, tmp_path, *FAST_RETRIES)
    assert proc.returncode == 2  # the check call found it: nothing was generated
    assert "Incorrect API key provided: Bearer ***" in proc.stderr
    check_no_secret(out, proc.stdout, proc.stderr)
