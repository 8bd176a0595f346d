"""What `oab-bench run` checks before generating: flags, tasks, servers, the check calls."""

from __future__ import annotations

import time

import pytest

from oab_bench.judge.answers import Answer
from oab_bench.judge.generation.run_settings import check_tasks, task_names
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.scripts.cli import build_parser, main
from tests.conftest import oab
from tests.helpers import (
    clean_env,
    made_up_row,
    run_cmd,
    settings,
    standin_python,
)


def test_a_dead_judge_server_stops_the_run_early(tmp_path, judge_key):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: connections are refused

    class Dead:
        url = f"http://127.0.0.1:{port}/v1"

    row = made_up_row()
    pairs = [
        (row, Answer(model="m", question_id=row.question_id, turns=[f"resposta {n}"])) for n in range(40)
    ]
    judge = Judge(settings(Dead, max_attempts=6, backoff_initial=0.5, backoff_max=4, concurrency=4))
    started = time.monotonic()
    judgments = run_judge_all(judge, pairs, progress=False)
    assert time.monotonic() - started < 20
    assert {j.status for j in judgments} == {"api_error"}
    assert sum(j.attempts for j in judgments) < 40
    assert "judge server unreachable" in judgments[-1].error


def test_run_with_a_dead_candidate_server_fails_fast(tmp_path, built_dataset):
    proc = oab(
        "run",
        "--model",
        "openai/x",
        "--api-base",
        "http://127.0.0.1:9/v1",
        "--dataset",
        built_dataset,
        "--judge-api-base",
        "http://127.0.0.1:9/v1",
        "--output-dir",
        tmp_path / "r",
        env=clean_env(),
    )
    assert proc.returncode == 2 and "candidate server at http://127.0.0.1:9/v1 does not answer" in proc.stderr


def test_vllm_args_take_a_single_flag_as_their_value(tmp_path):
    argv = ["run", "--model", "vllm:x", "--output-dir", str(tmp_path), "--vllm-args", "--enforce-eager"]
    args = build_parser().parse_args(
        [*argv, "--judge-vllm-args", "--max-model-len 4096", "--temperature", "0"]
    )
    assert args.vllm_args == "--enforce-eager" and args.judge_vllm_args == "--max-model-len 4096"
    assert args.temperature == 0.0


@pytest.mark.parametrize(
    "flag, value, said",
    [
        ("--max-samples", "-1", "'-1' is not a whole number >= 1"),  # lighteval: all questions but one
        ("--max-samples", "0", "'0' is not a whole number >= 1"),  # was ignored: every question
        ("--concurrency", "0", "'0' is not a whole number >= 1"),  # was the default, silently
        ("--candidate-retries", "0", "'0' is not a whole number >= 1"),  # lighteval: no call, empty answers
        ("--max-new-tokens", "-5", "'-5' is not a whole number >= 1"),
        ("--temperature", "nan", "'nan' is not a number >= 0"),  # NaN compares false: not "at least 0"
        ("--candidate-timeout", "0", "'0' is not a number > 0"),
        ("--vllm-start-timeout", "x", "'x' is not a number > 0"),
    ],
)
def test_the_runs_own_numbers_are_checked_naming_the_flag(tmp_path, capsys, flag, value, said):
    argv = ["run", "--model", "openai/x", "--output-dir", str(tmp_path / "r"), f"{flag}={value}"]
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(argv)
    assert e.value.code == 2
    assert f"argument {flag}: {said}" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_an_unknown_task_fails_at_once_listing_the_valid_ones(tmp_path):
    started = time.monotonic()
    proc = oab("run", "--model", "openai/x", "--tasks", "oab_bench:penall", "--output-dir", tmp_path / "r")
    seconds = time.monotonic() - started
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("oab-bench run: error: unknown task oab_bench:penall; valid tasks: oab_bench,")
    assert all(name in line for name in task_names()) and "oab_bench:penal," in line
    assert seconds < 5, seconds  # 0.65 s measured here (a python start and our imports); it was 23 s
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "tasks, named",
    [
        ("oab_bench:penal,oab_bench:39", "oab_bench:penal and oab_bench:39"),
        ("oab_bench,oab_bench:civil", "oab_bench and oab_bench:civil"),
        ("oab_bench:41,oab_bench:41|0", "oab_bench:41 and oab_bench:41"),
    ],
)
def test_overlapping_tasks_fail_at_once_naming_both(tmp_path, capsys, tasks, named):
    """Each task generated, judged and appended its questions: a question in two tasks was in the
    run's judgments twice, its exam worth 20.00, and left out of the summary's figures."""
    argv = ["run", "--model", "openai/x", "--tasks", tasks, "--output-dir", str(tmp_path / "r")]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"oab-bench run: error: tasks {named} overlap"), line
    assert not (tmp_path / "r").exists()
    assert check_tasks("oab_bench:penal,oab_bench:civil|0") == ["oab_bench:penal", "oab_bench:civil"]
    assert check_tasks("oab_bench:39,oab_bench:40") == ["oab_bench:39", "oab_bench:40"]


@pytest.mark.slow
def test_the_task_names_are_those_of_the_task_file(task_module):
    assert [c.name for c in task_module.TASKS_TABLE] == task_names()


def test_no_check_call_skips_it(stub, tmp_path, built_dataset):
    server = stub(max_model_len=1000, served=("cand",))
    proc = oab(
        *run_cmd(
            tmp_path, built_dataset, server.url, server.url, "--no-check-call", "--max-new-tokens", "2000"
        ),
        env=clean_env(),
    )
    assert proc.returncode == 2 and not server.requests
    # an answer budget larger than the context: every generation would fail, so none is tried
    assert "--max-new-tokens 2000 does not fit the server's context of 1000 tokens" in proc.stderr


def test_remote_checks_run_before_any_local_server_starts(tmp_path, built_dataset):
    started = tmp_path / "server-started"
    model = tmp_path / "tiny"
    model.mkdir()
    t0 = time.monotonic()
    proc = oab(
        "run",
        "--model",
        f"vllm:{model}",
        "--dataset",
        built_dataset,
        "--output-dir",
        tmp_path / "r",
        env=clean_env(OAB_BENCH_VLLM_PYTHON=str(standin_python(tmp_path, started))),
    )
    assert proc.returncode == 2 and "the judge openai/gpt-5.2 needs OAB_JUDGE_API_KEY" in proc.stderr
    assert not started.exists() and "starting vLLM" not in proc.stderr
    assert time.monotonic() - t0 < 60


def test_a_missing_key_is_advised_with_the_knobs_of_the_entry_point(tmp_path, built_dataset):
    """`make run` has no --api-base: its advice names make's variables (the Makefile sets OAB_BENCH_ENTRY)."""
    for entry, base, judge_base in (
        (None, "--api-base", "--judge-api-base"),
        ("make", "API_BASE=", "JUDGE_API_BASE="),
    ):
        env = clean_env(**({"OAB_BENCH_ENTRY": entry} if entry else {}))
        proc = oab(
            "run", "--model", "openai/x", "--dataset", built_dataset, "--output-dir", tmp_path / "r", env=env
        )
        (line,) = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and line.startswith(
            "oab-bench run: error: no API key: the candidate openai/x"
        )
        assert f"(or {base} for a local server)" in line and f"(or {judge_base} for a local server)" in line
        assert not (tmp_path / "r").exists()
