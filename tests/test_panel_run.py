"""`oab-bench run --panel DIR` end to end against the stub: the candidate ranked among upstream's six
published models under the same judge, and the panel paid for once across candidates."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.conftest import oab
from tests.helpers import env_for, judge_calls

pytestmark = pytest.mark.e2e


def test_run_with_a_panel_ranks_the_candidate_among_seven_and_judges_the_panel_once(
    stub, built_dataset, tmp_path, upstream_v1
):
    server = stub(policy="overlap", max_model_len=1_000_000, served=("cand-a", "cand-b"))
    panel = upstream_v1 / "model_answer"

    def run(model: str, out: str, *extra: str) -> subprocess.CompletedProcess:
        cmd = ["run", "--model", model, "--api-base", server.url]
        cmd += ["--dataset", str(built_dataset), "--judge-model", "openai/judge-panel"]
        cmd += ["--judge-api-base", server.url, "--judge-cache", str(tmp_path / "jc")]
        cmd += ["--answer-cache", str(tmp_path / "ac"), "--output-dir", str(tmp_path / out)]
        cmd += ["--panel", str(panel), "--tasks", "oab_bench:penal", *extra]
        started = time.monotonic()
        proc = oab(*cmd, env=env_for())
        print(
            f"{model} {' '.join(extra)}: {time.monotonic() - started:.1f} s, {len(judge_calls(server))} judge calls"
        )
        return proc

    est = run("openai/cand-a", "a", "--estimate", "--format", "json")
    assert est.returncode == 0, est.stderr[-3000:]
    doc = json.loads(est.stdout)
    assert server.count == 0  # --estimate calls nothing
    assert doc["total"]["calls"] == 15 and doc["panel"]["total"]["calls"] == 90
    assert len(doc["panel"]["models"]) == 6 and doc["total_with_panel"]["calls"] == 105

    first = run("openai/cand-a", "a")
    assert first.returncode == 0, first.stderr[-3000:]
    assert len(judge_calls(server)) == 15 + 90
    board = first.stdout.split("### Judge: openai/judge-panel", 1)[1].splitlines()
    rows = [x for x in board if x.startswith("| ") and not x.startswith(("| Model |", "| --- |"))]
    assert len(rows) == 7 and sum("(panel)" in x for x in rows) == 6
    assert "openai/cand-a ranks 7 of 7 beside the panel's 6 published models" in first.stderr
    assert "judging the panel: 90 published answers of 6 models" in first.stderr
    assert "90 to judge now, 0 need no call" in first.stderr
    out = tmp_path / "a"
    summary = json.loads((out / "oab_bench_summary.json").read_text())
    block = summary["panel"]
    assert (block["rank"], block["of"], block["source"]) == (7, 7, str(panel.resolve()))
    assert sum(r["panel"] for r in block["ranking"]) == 6 and block["failed_judgments"] == []
    marked = [json.loads(x) for x in (out / "panel_judgments.jsonl").read_text().splitlines()]
    assert len(marked) == 90 and {r["panel"] for r in marked} == {str(panel.resolve())}
    report = (out / "report.html").read_text(encoding="utf-8")
    assert report.count('<tr class="lb-row') == 7 and report.count('<tr class="lb-row panel"') == 6
    answers = report.split('id="data-answers">', 1)[1].split("</script>", 1)[0]
    assert answers.count('"o3-2025-04-16\\t') == 15  # the panel's answers are shown too

    board = oab("leaderboard", out, "--format", "json", "--resamples", "200")
    got = json.loads(board.stdout)["rows"]
    assert len(got) == 7 and sum(r["panel"] for r in got) == 6 and board.returncode == 0

    second = run("openai/cand-b", "b")  # another candidate, the same judge: the panel is cached
    assert second.returncode == 0, second.stderr[-3000:]
    assert len(judge_calls(server)) == 105 + 15
    assert "0 to judge now, 90 need no call (in the judgment cache, or empty)" in second.stderr
