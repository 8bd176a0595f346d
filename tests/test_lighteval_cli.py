"""lighteval's own commands on the task, as a lighteval user types them: browsing the task
(`tasks inspect`, `tasks dump`) needs no judge; an evaluation without one fails before its first call;
what is missing is one line naming the variable to set, never a traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

pytestmark = pytest.mark.e2e
NO_JUDGE = "OAB_JUDGE_MODEL is not set: the oab_bench task needs a judge"
TASK = "oab_bench:penal"


def lighteval(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """The `lighteval` command with every OAB_JUDGE_* variable unset, unless given in `env`."""
    script = Path(sys.executable).with_name("lighteval")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "lighteval"]
    base = {k: v for k, v in os.environ.items() if not k.startswith("OAB_JUDGE_")}  # offline: conftest
    base["COLUMNS"] = "400"  # rich wraps at the terminal's width: one line per line here
    return subprocess.run(
        [*cmd, *args], cwd=cwd, env={**base, **env}, capture_output=True, text=True, timeout=600
    )


def joined(printed: str) -> str:
    """pformat's output with each long string's pieces ('...'\\n  '...') joined back."""
    return re.sub(r"['\"]\n\s*['\"]", "", printed)


def test_tasks_inspect_needs_no_judge(built_rows, built_dataset, tmp_path):
    rows, _ = built_rows
    proc = lighteval(
        "tasks", "inspect", "oab_bench|0", "--custom-tasks", str(REPO / "oab_bench_task.py"),
        "--num-samples", "1", cwd=tmp_path, OAB_BENCH_DATASET=str(built_dataset),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "-- sample 0 --" in proc.stdout and "-- sample 1 --" not in proc.stdout
    text = joined(proc.stdout)
    (question_id,) = re.findall(r"'question_id': '([^']+)'", text)[:1]
    row = next(r for r in rows if r.question_id == question_id)
    assert repr(row.statement[:60])[1:-1] in text  # the statement, in the query
    assert f"'oab_system_prompt': {repr(row.system_prompt[:60])[:-1]}" in text  # the exam's rules


def test_tasks_inspect_without_a_dataset_names_the_variable_in_one_line(tmp_path):
    """Offline, no OAB_BENCH_DATASET: upstream's Hub id cannot be reached. The advice is the plain
    CLI's (`OAB_BENCH_DATASET`), not `oab-bench`'s flag, in one line; lighteval's traceback was 89."""
    proc = lighteval(
        "tasks", "inspect", "oab_bench|0", "--custom-tasks", str(REPO / "oab_bench_task.py"),
        "--num-samples", "1", cwd=tmp_path, HF_HOME=str(tmp_path / "hf"),
    )  # fmt: skip
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "--dataset" not in proc.stderr, proc.stderr[-3000:]
    (line,) = [x for x in proc.stderr.splitlines() if "oab_bench: error:" in x]
    assert line.startswith("oab_bench: error: the task's default dataset maritaca-ai/oab-bench: ")
    assert "cannot be reached from here" in line and "set OAB_BENCH_DATASET=FOLDER" in line


def test_tasks_dump_needs_no_judge(built_dataset, tmp_path):
    proc = lighteval(
        "tasks", "dump", "--custom-tasks", str(REPO / "oab_bench_task.py"),
        cwd=tmp_path, OAB_BENCH_DATASET=str(built_dataset),  # (a dump resolves hf_repo: the dataset, offline here)
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OAB-Bench" in proc.stdout and "oab_bench" in proc.stdout  # the task file's docstring and tasks
    json.loads(proc.stdout)


@pytest.mark.parametrize("judge", ["none", "foreign cache"])
def test_an_evaluation_without_a_usable_judge_fails_before_its_first_call(
    stub, built_dataset, tmp_path, judge
):
    """A plain `lighteval endpoint litellm` run: no answer is paid for only to stay unjudged."""
    server = stub()
    config = tmp_path / "model.yaml"
    params = {"model_name": "openai/cand-nojudge", "base_url": server.url, "max_model_length": 32768}
    config.write_text(yaml.safe_dump({"model_parameters": params | {"cache_dir": str(tmp_path / "lc")}}))
    env = {"OAB_BENCH_DATASET": str(built_dataset), "OPENAI_API_KEY": "sk-test-candidate"}
    expected = f"oab_bench: error: {NO_JUDGE}"
    if judge == "foreign cache":
        foreign = tmp_path / "notes"
        foreign.mkdir()
        (foreign / "judgments.jsonl").write_text('{"question_id": "q", "score": 1}\n')
        env |= {
            "OAB_JUDGE_MODEL": "openai/judge",
            "OAB_JUDGE_API_BASE": server.url,
            "OAB_JUDGE_CACHE": str(foreign),
        }
        expected = (
            f"oab_bench: error: OAB_JUDGE_CACHE: {foreign}/judgments.jsonl: not an oab-bench judgment store"
        )
    out = tmp_path / "out"
    proc = lighteval(
        "endpoint", "litellm", str(config), f"{TASK}|0", "--custom-tasks", str(REPO / "oab_bench_task.py"),
        "--output-dir", str(out), cwd=tmp_path, **env,
    )  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("oab_bench:")]
    assert line.startswith(expected), proc.stderr[-3000:]  # one line, the variable named
    assert server.requests == []  # not one generation call
    assert not list(out.rglob("results_*.json"))
