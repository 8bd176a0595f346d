"""lighteval's own commands on the task, as a lighteval user types them: an evaluation without a judge
fails before its first call; what is missing is one line naming the variable to set, never a traceback.
Browsing the task needs no judge: `tasks inspect` in test_raw_layout.py, `tasks dump` in
test_packaging.py."""

from __future__ import annotations

import os
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


def test_an_evaluation_without_a_judge_fails_before_its_first_call(stub, built_dataset, tmp_path):
    """A plain `lighteval endpoint litellm` run: no answer is paid for only to stay unjudged. (A judge
    set up wrong, e.g. a foreign OAB_JUDGE_CACHE, fails the same check: test_task.py, in process.)"""
    server = stub()
    config = tmp_path / "model.yaml"
    params = {"model_name": "openai/cand-nojudge", "base_url": server.url, "max_model_length": 32768}
    config.write_text(yaml.safe_dump({"model_parameters": params | {"cache_dir": str(tmp_path / "lc")}}))
    env = {"OAB_BENCH_DATASET": str(built_dataset), "OPENAI_API_KEY": "sk-test-candidate"}
    out = tmp_path / "out"
    proc = lighteval(
        "endpoint", "litellm", str(config), f"{TASK}|0", "--custom-tasks", str(REPO / "oab_bench_task.py"),
        "--output-dir", str(out), cwd=tmp_path, **env,
    )  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("oab_bench:")]
    assert line.startswith(f"oab_bench: error: {NO_JUDGE}"), proc.stderr[-3000:]  # one line, the variable
    assert server.requests == []  # not one generation call
    assert not list(out.rglob("results_*.json"))
