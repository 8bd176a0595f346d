"""The task under inspect-ai (`inspect eval oab_bench_task.py@oab_bench`), against the local stub:
scored by our judge with the judgment cache `oab-bench run` fills, its log read back by our readers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from oab_bench.judge.inspect_log import log_samples
from oab_bench.judge.leaderboard.inputs import load_records
from tests.conftest import REPO, SECRET, oab
from tests.helpers import clean_env, env_for

pytestmark = pytest.mark.e2e
TASK_FILE = str(REPO / "oab_bench_task.py")
UNUSED = "http://127.0.0.1:9/v1"  # a judge address nothing calls


def inspect_cli(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("inspect")
    return subprocess.run([str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def judge_calls(requests) -> list:
    return [r for r in requests if r["body"].get("response_format")]


def table_row(text: str, model: str) -> str:
    (row,) = [line for line in text.splitlines() if line.startswith(f"| {model} |")]
    return row


def test_inspect_eval_scores_every_question_with_the_runs_judgments(
    stub, built_dataset, tmp_path, monkeypatch
):
    server = stub(policy="alternate", served=("cand-i", "judge-i"), max_model_len=1_000_000)
    judge = ["--judge-model", "openai/judge-i", "--judge-api-base", server.url]
    run = ["run", "--model", "openai/cand-i", "--api-base", server.url, "--dataset", built_dataset, *judge]
    run += [  # one area: every question of the task, at a seventh of the calls
        "--tasks",
        "oab_bench:penal",
        "--judge-cache",
        tmp_path / "jc",
        "--answer-cache",
        tmp_path / "ac",
        "--output-dir",
        tmp_path / "run",
    ]
    ran = oab(*run, env=env_for())
    assert ran.returncode == 0, ran.stderr[-3000:]
    before = len(server.requests)

    # the same answers (the stub's depend on the prompt only) and judge: every judgment from the cache
    env = clean_env(OPENAI_API_KEY="dummy", OAB_JUDGE_API_KEY=SECRET, OAB_JUDGE_CACHE=str(tmp_path / "jc"))
    blocked = tmp_path / "no-lighteval" / "lighteval"  # inspect's path imports no lighteval (~7 s a start)
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('inspect eval imported lighteval')\n")
    env |= {
        "INSPECT_CACHE_DIR": str(tmp_path / "inspect-cache"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(blocked.parent), env.get("PYTHONPATH")])),
    }
    args = ["--model", "openai/cand-i", "--model-base-url", server.url, "-M", "responses_api=false"]
    args += [
        "-T",
        "area=penal",
        "-T",
        f"dataset={built_dataset}",
        "-T",
        "judge_model=openai/judge-i",
        "-T",
        f"judge_api_base={server.url}",
    ]
    proc = inspect_cli("eval", f"{TASK_FILE}@oab_bench", *args, "--log-dir", "logs", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    fresh = server.requests[before:]
    assert len(fresh) == 15 and judge_calls(fresh) == []  # 15 answers asked, 0 judgments paid again
    (log,) = (tmp_path / "logs").glob("*.eval")
    from inspect_ai.log import read_eval_log

    dump = read_eval_log(str(log)).model_dump_json()  # as `inspect log dump` prints it
    assert SECRET not in dump
    samples = json.loads(dump)["samples"]
    assert len(samples) == 15 and not any(s.get("error") for s in samples)
    score = samples[0]["scores"]["oab_judge"]
    item = score["metadata"]["items"][0]
    assert (
        set(item) == {"item_id", "allowed_scores", "score", "reason"}
        and item["score"] in item["allowed_scores"]
    )
    assert (
        score["value"] == score["metadata"]["judgment"]["score"] and item["item_id"] in score["explanation"]
    )

    # the log is a results source: the leaderboard's row is the run's
    board = oab("leaderboard", tmp_path / "logs")
    assert board.returncode == 0, board.stderr
    assert table_row(board.stdout, "openai/cand-i") == table_row(ran.stdout, "openai/cand-i")
    assert {(r.question_id, r.score) for r in load_records(log)} == {
        (r.question_id, r.score) for r in load_records(tmp_path / "run" / "judgments.jsonl")
    }
    # ... and so for agreement, export and report: the same item scores, exam scores and pass rates
    agree = oab("agreement", tmp_path / "logs", tmp_path / "run", "--format", "json")
    assert agree.returncode == 0, agree.stderr
    figures = json.loads(agree.stdout)
    assert figures["n_pairs"] == 15 and figures["item"]["exact"]["value"] == 1.0
    (model,) = figures["models"]
    assert model["mean_a"] == model["mean_b"] and model["exams"] == 3
    kept = ["question_id", "status", "score", "items"]
    exported = []
    for source in ("logs", "run"):
        assert oab("export", tmp_path / source, "--output", tmp_path / f"x-{source}").returncode == 0
        (file,) = (tmp_path / f"x-{source}" / "judgments").rglob("*.parquet")
        exported.append(pd.read_parquet(file)[kept].sort_values("question_id").astype(str).to_dict("records"))
    assert exported[0] == exported[1]
    assert oab("report", tmp_path / "logs", "--output", tmp_path / "r.html").returncode == 0
    assert f"{model['mean_a']:.2f}" in (tmp_path / "r.html").read_text()

    # the same eval again: inspect's cache answers, ours judges: nothing reaches the server
    import inspect_ai

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    task_args = dict(
        dataset=str(built_dataset), judge_model="openai/judge-i", judge_api_base=server.url, area="penal"
    )
    (again,) = inspect_ai.eval(
        f"{TASK_FILE}@oab_bench", model="openai/cand-i", model_base_url=server.url,
        model_args={"responses_api": False}, task_args=task_args, log_dir=str(tmp_path / "logs2"), display="none",
    )  # fmt: skip
    assert again.status == "success" and len(server.requests) == before + 15
    assert again.results.scores[0].metrics["exam_score"].value == pytest.approx(
        json.loads(oab("leaderboard", tmp_path / "logs", "--format", "json").stdout)["rows"][0][
            "mean_exam_score"
        ]
    )


def test_a_failed_judgment_is_the_samples_error_never_a_zero(stub, built_dataset, tmp_path, monkeypatch):
    import inspect_ai

    import oab_bench_task

    server = stub(served=("cand-f", "judge-f"), faults=[{"kind": "malformed", "match": "json_schema"}])
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "ic"))
    task = oab_bench_task.oab_bench(
        edition=41, dataset=str(built_dataset), judge_model="openai/judge-f", judge_api_base=server.url,
        judge_cache="off", judge_parse_attempts=1, judge_backoff_initial=0,
    )  # fmt: skip
    ids = ["41_direito_penal_questao_1", "41_direito_penal_questao_2"]
    (log,) = inspect_ai.eval(
        task, model="openai/cand-f", model_base_url=server.url, model_args={"responses_api": False},
        sample_id=ids, fail_on_error=False, log_dir=str(tmp_path / "logs"), display="none",
    )  # fmt: skip
    assert sorted(s.id for s in log.samples) == ids
    for s in log.samples:
        assert not s.scores and "judgment parse_error" in s.error.message
    (file,) = (tmp_path / "logs").glob("*.eval")
    assert [s.judgment for s in log_samples(file)] == [None, None]
    assert load_records(file) == []  # nothing judged, nothing scored: no zero


@pytest.mark.parametrize("field, value", [("area", "penal"), ("edition", 41)])
def test_task_arguments_select_the_questions_of_the_lighteval_subtask(task_module, built_rows, field, value):
    from lighteval.main_inspect import get_inspect_ai_task

    rows, _ = built_rows
    (config,) = [c for c in task_module.TASKS_TABLE if c.name == f"oab_bench:{value}"]
    lighteval_ids = [r.question_id for r in rows if config.hf_filter(r.model_dump(mode="json"))]
    task = task_module.oab_bench(**{field: value}, judge_api_base=UNUSED, judge_cache="off")
    assert [s.id for s in task.dataset] == lighteval_ids and len(lighteval_ids) in (15, 35)
    # lighteval's own inspect backend builds the same samples from the subtask's config
    assert [s.id for s in get_inspect_ai_task(config).dataset] == lighteval_ids


def test_each_mistake_is_one_line_naming_the_task_argument(task_module, monkeypatch):
    def error(**args) -> str:
        with pytest.raises(SystemExit) as e:
            task_module.oab_bench(**{"judge_api_base": UNUSED, "judge_cache": "off", **args})
        assert "\n" not in str(e.value)
        return str(e.value)

    assert "pass -T dataset=FOLDER" in error(dataset="nobody/not-here") and "--dataset" not in error(
        dataset="nobody/not-here"
    )
    assert "-T area=tax: not one of" in error(area="tax")
    assert "its key comes from OAB_JUDGE_API_KEY" in error(judge_api_key=SECRET)  # keys never enter the log
    monkeypatch.delenv("OAB_JUDGE_MODEL")
    assert "pass -T judge_model=" in error()


def test_listing_the_task_needs_no_judge_no_dataset_and_no_network():
    proc = inspect_cli("list", "tasks", "oab_bench_task.py", cwd=REPO, env=clean_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "oab_bench_task.py@oab_bench" in proc.stdout
