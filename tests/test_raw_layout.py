"""The task with no set-up: upstream's raw layout is built on the fly, once per revision, then cached."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from oab_bench.dataset_builder import resolve
from tests import synthetic as syn
from tests.conftest import REPO


def without_provenance(rows):
    return [r.model_dump(mode="json", exclude={"provenance"}) for r in rows]


@pytest.fixture
def builds(tmp_path, monkeypatch):
    monkeypatch.setattr(resolve, "builds_dir", lambda: tmp_path / "builds")
    monkeypatch.setattr(resolve, "_SAID", set())
    return tmp_path / "builds"


@pytest.fixture(scope="module")
def raw_folder(upstream_v1, tmp_path_factory):
    return syn.hub_layout_from_files(upstream_v1, tmp_path_factory.mktemp("raw") / "oab-bench")


def test_raw_folder_is_built_once_then_cached(raw_folder, built_rows, builds, capsys):
    from oab_bench.judge.dataset import load_rows

    first = resolve.prepare_dataset(str(raw_folder))
    err = capsys.readouterr().err
    assert first.startswith(str(builds)) and err.count("oab_bench: ") == 1
    assert "is upstream's raw layout" in err and "built 105 questions in memory" in err
    started = time.perf_counter()
    resolve._SAID.clear()  # a new process
    assert resolve.prepare_dataset(str(raw_folder)) == first
    assert time.perf_counter() - started < 1.0
    assert resolve.prepare_dataset(str(raw_folder)) == first  # said once per process
    err = capsys.readouterr().err
    assert err.count("oab_bench: ") == 1 and "using the build cached at" in err
    rows, _ = built_rows
    assert without_provenance(load_rows(str(raw_folder))) == without_provenance(rows)


def test_a_changed_raw_folder_gets_a_new_build(tmp_path, builds):
    pairs = syn.exam(92, "civil")
    folder = syn.write_hub_layout(tmp_path / "raw", [q for q, _ in pairs], [g for _, g in pairs])
    errata = tmp_path / "errata.yaml"
    errata.write_text("[]\n")
    first = resolve.prepare_dataset(str(folder), errata)
    pairs[0][0]["system"] = "Outro prompt de sistema inventado."
    syn.write_hub_layout(folder, [q for q, _ in pairs], [g for _, g in pairs])
    assert resolve.prepare_dataset(str(folder), errata) != first


def test_oab_bench_run_takes_a_raw_folder(raw_folder, builds):
    """`oab-bench run --dataset RAW`: the preflight's prompts come from the on-the-fly build, and the
    run hands lighteval the built folder (the e2e test below runs lighteval on a raw one)."""
    from oab_bench.judge.generation.run_checks import resolve_references
    from oab_bench.judge.generation.run_settings import RunSettings, selected_rows
    from oab_bench.scripts.cli import build_parser

    argv = [
        "run",
        "--model",
        "m",
        "--output-dir",
        "o",
        "--dataset",
        str(raw_folder),
        "--tasks",
        "oab_bench:penal",
    ]
    s = resolve_references(RunSettings.from_args(build_parser().parse_args(argv)))
    assert s.dataset.startswith(str(builds)) and len(selected_rows(s)) == 15


def test_built_layouts_pass_through(built_dataset, upstream_v1, builds):
    assert resolve.prepare_dataset(str(built_dataset)) == str(built_dataset)
    assert resolve.raw_source(str(upstream_v1)) == str(upstream_v1)  # upstream's JSONL files: raw
    assert not builds.exists()


@pytest.mark.slow  # imports the task file, so lighteval (seconds)
def test_task_and_run_default_to_upstreams_hub_id(built_dataset, monkeypatch):
    monkeypatch.delenv("OAB_BENCH_DATASET", raising=False)
    monkeypatch.setenv("OAB_JUDGE_MODEL", "openai/judge-unit")
    import oab_bench_task
    from oab_bench.scripts.cli import build_parser

    assert oab_bench_task.DEFAULT_DATASET == "maritaca-ai/oab-bench"
    # the tasks made offline fetch nothing: hf_repo is the id as given, the folder found when a task runs
    assert oab_bench_task.TASKS_TABLE[0].hf_repo == "maritaca-ai/oab-bench"
    monkeypatch.setenv("OAB_BENCH_DATASET", str(built_dataset))
    oab_bench_task.dataset_path.cache_clear()
    assert oab_bench_task.TASKS_TABLE[0].hf_repo == str(built_dataset)
    oab_bench_task.dataset_path.cache_clear()
    monkeypatch.delenv("OAB_BENCH_DATASET")
    args = build_parser().parse_args(["run", "--model", "openai/x", "--output-dir", "o"])
    from oab_bench.judge.dataset import dataset_argument

    assert dataset_argument(args) == ("maritaca-ai/oab-bench", "--dataset (default)")


@pytest.mark.e2e
def test_the_readme_plain_lighteval_commands_on_a_raw_folder_then_again(
    stub, built_rows, raw_folder, tmp_path
):
    """What a lighteval user types: the README's block (model YAML, task name, custom-tasks file),
    run by bash in a checkout-like folder; only the model, server and dataset change, and the
    dataset is upstream's Hub layout on disk, as the README's default is (no `oab-bench build`).
    model.yaml and lighteval's files land in ~/oab-bench-runs, not in the checkout; a second plain
    `lighteval` start, browsing the task with no judge set, reuses the build."""
    from tests.helpers import (
        TASK,
        check_candidate_requests,
        check_no_secret,
        env_for,
        expected_figures,
        readme_block,
        results_json,
    )

    rows, _ = built_rows
    server = stub(policy="alternate")
    root, home = tmp_path / "checkout", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    (root / ".venv").symlink_to(REPO / ".venv")
    (root / "oab_bench_task.py").symlink_to(REPO / "oab_bench_task.py")
    block = readme_block("## With the plain lighteval CLI")
    for old, new in (
        ("model_name: openai/gpt-4o-mini", "model_name: openai/cand-raw"),
        ("# base_url: http://127.0.0.1:8000/v1", f"base_url: {server.url}"),
        ("/tmp/lighteval-cache-1", str(tmp_path / "lighteval-cache-1")),
        ('"oab_bench|0"', f'"{TASK}|0"'),
    ):
        assert old in block, old
        block = block.replace(old, new)
    env = env_for(
        HOME=str(home),
        OAB_BENCH_DATASET=str(raw_folder),  # offline; the README's default is upstream's Hub id
        HF_HOME=str(tmp_path / "hf"),
        OAB_JUDGE_API_BASE=server.url,
        OAB_JUDGE_CACHE=str(tmp_path / "jc"),
    )
    first = subprocess.run(
        ["bash", "-e", "-c", block], cwd=root, env=env, capture_output=True, text=True, timeout=600
    )
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stderr.count("oab_bench: ") == 1  # one log line, though lighteval imports the task twice
    assert "is upstream's raw layout" in first.stderr and "built 105 questions in memory" in first.stderr
    got = results_json(home / "oab-bench-runs" / "results")["results"][f"{TASK}|0"]
    for key, value in expected_figures(rows).items():
        assert got[key] == pytest.approx(value), key
    written = sorted(p.name for p in root.iterdir() if p.name != "__pycache__")  # (Python's own, gitignored)
    assert written == [".venv", "oab_bench_task.py"]  # nothing of ours or lighteval's written there
    assert f"|{TASK}:0|" in first.stdout.replace(" ", "")  # the label the README explains
    check_candidate_requests(server, rows)  # the exam's rules as a system message, one token limit
    check_no_secret(home / "oab-bench-runs", first.stdout, first.stderr)

    # a second plain start, browsing the task (no judge needed), reuses the build
    judge_free = {k: v for k, v in env.items() if not k.startswith("OAB_JUDGE_")} | {"COLUMNS": "400"}
    cmd = [sys.executable, "-m", "lighteval", "tasks", "inspect", f"{TASK}|0", "--num-samples", "1"]
    cmd += ["--custom-tasks", str(REPO / "oab_bench_task.py")]
    second = subprocess.run(cmd, cwd=tmp_path, env=judge_free, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "using the build cached at" in second.stderr and "built 105" not in second.stderr
    assert len(list((tmp_path / "hf" / "oab-bench" / "builds").iterdir())) == 1  # one build, reused
    assert "-- sample 0 --" in second.stdout and "-- sample 1 --" not in second.stdout
    text = re.sub(r"['\"]\n\s*['\"]", "", second.stdout)  # pformat's long strings joined back
    (question_id,) = re.findall(r"'question_id': '([^']+)'", text)[:1]
    row = next(r for r in rows if r.question_id == question_id)
    assert repr(row.statement[:60])[1:-1] in text  # the statement, in the query
    assert f"'oab_system_prompt': {repr(row.system_prompt[:60])[:-1]}" in text  # the exam's rules
