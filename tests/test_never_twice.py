"""Issue 15 (fast part): answers kept, in-flight judgments kept at Ctrl-C, credentials and sizes
checked before anything is generated or loaded, flags that parse. No lighteval run here
(those are in test_run_lifecycle.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from oab_bench.judge.answers import Answer
from oab_bench.judge.generation.answer_store import (
    STORE_FILE,
    AnswerStore,
    StoredAnswer,
    answer_key,
    generation_settings,
)
from oab_bench.judge.generation.preflight import CHECK_PROMPT, check_tasks, drop_empty_keys, task_names
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.runner import Judge, judge_all
from oab_bench.scripts.cli import build_parser, main
from tests.conftest import REPO, SECRET, oab
from tests.test_judge_parsing import made_up_row
from tests.test_judge_server import settings
from tests.test_task import task_module  # noqa: F401 (a fixture: the task file, imported once)

KEY_VARS = ("OPENAI_API_KEY", "OAB_JUDGE_API_KEY", "ANTHROPIC_API_KEY")


def clean_env(**extra) -> dict:
    """No keys, no OAB_* settings (the task_module fixture sets some for its module)."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS and not k.startswith("OAB_")}
    return env | {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"} | extra


def answer(key: str, text: str) -> StoredAnswer:
    return StoredAnswer(key=key, model="m", texts=[text], finish_reasons=["stop"])


# --- the answer store -------------------------------------------------------------------------------


def test_the_answer_store_keeps_good_answers_only_and_survives_a_torn_line(tmp_path):
    store = AnswerStore(tmp_path)
    assert store.put(answer("a" * 64, "Resposta A."))
    assert not store.put(answer("b" * 64, ""))  # an empty generation is never an answer
    assert not store.put(answer("c" * 64, "   \n"))
    path = tmp_path / STORE_FILE
    with path.open("ab") as f:
        f.write(b'{"key": "dddd", "model": "m", "te')  # killed mid-write
    again = AnswerStore(tmp_path)
    assert len(again) == 1 and again.get("a" * 64).texts == ["Resposta A."]
    assert again.put(answer("e" * 64, "Resposta E."))  # appends after sealing the torn line
    assert {k for k in (AnswerStore(tmp_path)._items)} == {"a" * 64, "e" * 64}
    assert len(AnswerStore(tmp_path, read=False)) == 0  # --fresh-answers: nothing served


def test_the_key_is_model_settings_and_prompt_never_the_server():
    messages = [{"role": "user", "content": "Pergunta"}]
    base = {
        "model": "openai/m",
        "messages": messages,
        "generation": generation_settings({"temperature": 0.7}, 8192),
    }
    key = answer_key(**base)
    assert key == answer_key(
        **base | {"generation": generation_settings({"temperature": 0.7, "seed": None}, 8192)}
    )
    for change in (
        {"model": "openai/other"},
        {"messages": [{"role": "user", "content": "Outra"}]},
        {"generation": generation_settings({"temperature": 0.0}, 8192)},
        {"generation": generation_settings({"temperature": 0.7}, 4096)},
    ):
        assert answer_key(**base | change) != key, change


def test_two_threads_asking_for_one_answer_pay_once(tmp_path):
    store = AnswerStore(tmp_path)
    calls = []

    def generate() -> None:
        with store.claim("f" * 64):
            if store.get("f" * 64) is None:
                calls.append(1)
                time.sleep(0.2)
                store.put(answer("f" * 64, "Resposta."))

    threads = [threading.Thread(target=generate) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1


# --- Ctrl-C while judging: calls in flight are kept --------------------------------------------------


def test_judgments_in_flight_at_ctrl_c_are_stored(stub, judge_key, tmp_path):
    server = stub(policy="max", latency=1.0)
    row = made_up_row()
    pairs = [(row, Answer(model="m", question_id=row.question_id, turns=[f"resposta {n}"])) for n in range(6)]
    judge = Judge(settings(server, concurrency=2), JudgmentStore(tmp_path))

    async def interrupted() -> None:
        task = asyncio.ensure_future(judge_all(judge, pairs, progress=False))
        while server.count < 2:
            await asyncio.sleep(0.05)
        task.cancel()  # what asyncio.run does on Ctrl-C
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupted())
    assert server.count == 2  # nothing new was started after Ctrl-C
    assert len(JudgmentStore(tmp_path)) == 2  # both calls already paid for were kept


# --- flags, tasks, keys -----------------------------------------------------------------------------


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
        ("--max-samples", "-1", "must be at least 1, not -1"),  # lighteval: all questions but one
        ("--max-samples", "0", "must be at least 1, not 0"),  # was ignored: every question
        ("--concurrency", "0", "must be at least 1, not 0"),  # was the default, silently
        ("--candidate-retries", "0", "must be at least 1, not 0"),  # lighteval: no call, empty answers
        ("--max-new-tokens", "-5", "must be at least 1, not -5"),
        ("--temperature", "nan", "must be at least 0, not nan"),
        ("--candidate-timeout", "0", "must be more than 0, not 0"),
        ("--vllm-start-timeout", "x", "'x' is not a number"),
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


def test_the_task_names_are_those_of_the_task_file(task_module):  # noqa: F811 (the fixture)
    assert [c.name for c in task_module.TASKS_TABLE] == task_names()


def test_empty_key_variables_count_as_missing(tmp_path, built_dataset):
    assert drop_empty_keys({"OPENAI_API_KEY": "", "X_KEY": " ", "HOME": ""}) == ["OPENAI_API_KEY", "X_KEY"]
    started = time.monotonic()
    proc = oab(
        "run",
        "--model",
        "openai/gpt-4o-mini",
        "--dataset",
        built_dataset,
        "--output-dir",
        tmp_path / "r",
        env=clean_env(OPENAI_API_KEY="", OAB_JUDGE_API_KEY=SECRET),
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "OPENAI_API_KEY is set but empty" in proc.stderr
    assert "the candidate openai/gpt-4o-mini needs OPENAI_API_KEY" in proc.stderr
    assert time.monotonic() - started < 60
    assert not (tmp_path / "r" / "model_config.yaml").exists()


def run_cmd(tmp_path, dataset, candidate_url, judge_url, *extra) -> list:
    args = ["run", "--model", "openai/cand", "--api-base", candidate_url, "--dataset", dataset]
    args += ["--tasks", "oab_bench:penal", "--judge-model", "openai/judge-x", "--judge-api-base", judge_url]
    args += [
        "--judge-cache",
        tmp_path / "jc",
        "--answer-cache",
        tmp_path / "ac",
        "--output-dir",
        tmp_path / "r",
    ]
    return [*args, *extra]


@pytest.mark.parametrize("who, code", [("candidate", "401"), ("judge", "404")])
def test_a_rejected_key_or_model_fails_in_seconds_with_the_providers_words(
    stub, tmp_path, built_dataset, who, code
):
    bad = stub(faults=[{"kind": code}])
    good = stub()
    urls = (bad.url, good.url) if who == "candidate" else (good.url, bad.url)
    started = time.monotonic()
    proc = oab(*run_cmd(tmp_path, built_dataset, *urls), env=clean_env(OPENAI_API_KEY=SECRET))
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert time.monotonic() - started < 60
    assert f"the {who} openai/" in proc.stderr and "refused the check call" in proc.stderr
    words = "Incorrect API key provided: Bearer ***" if code == "401" else "does not exist"
    assert words in proc.stderr and SECRET not in proc.stderr
    assert [r["body"]["messages"][-1]["content"] for r in bad.requests] == [CHECK_PROMPT]
    assert bad.requests[0]["body"]["max_tokens"] == 1  # the fewest output tokens
    assert not (tmp_path / "r" / "model_config.yaml").exists()  # lighteval never started


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


def standin_python(tmp_path: Path, started: Path) -> Path:
    """A `python` for OAB_BENCH_VLLM_PYTHON that only records it was asked to start a server."""
    script = tmp_path / "python-standin"
    script.write_text(f"#!/bin/sh\ntouch {started}\nsleep 60\n")
    script.chmod(0o755)
    return script


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


def test_make_test_vllm_fails_without_its_data_or_vllm(tmp_path):
    dry = subprocess.run(["make", "-n", "test-vllm"], cwd=REPO, capture_output=True, text=True, timeout=60)
    (line,) = [x for x in dry.stdout.splitlines() if "pytest" in x]
    assert "CI=true" in line and "OAB_BENCH_REQUIRE_VLLM=1" in line
    env_part, _, command = line.partition(".venv-vllm/bin/python")
    env = clean_env(OAB_BENCH_SHARED_DATA=str(tmp_path / "nowhere"))
    env |= dict(pair.split("=", 1) for pair in env_part.split())
    proc = subprocess.run(
        [sys.executable, *command.split()], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "skipped" not in proc.stdout.splitlines()[-1]


def test_answer_store_lines_are_json(tmp_path):
    store = AnswerStore(tmp_path)
    store.put(answer("9" * 64, "Resposta com acentuação."))
    (line,) = (tmp_path / STORE_FILE).read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["texts"] == ["Resposta com acentuação."]


def test_the_lighteval_child_gets_the_stores_and_fresh_answers(tmp_path, monkeypatch):
    from oab_bench.judge.generation import run as run_mod

    monkeypatch.chdir(tmp_path)
    argv = ["run", "--model", "openai/x", "--output-dir", "o", "--answer-cache", "ac", "--judge-cache", "jc"]
    args = build_parser().parse_args(argv)
    env = run_mod.child_env(args, tmp_path / "o")
    # absolute: lighteval runs in the output folder
    assert env["OAB_ANSWER_CACHE"] == str(tmp_path / "ac") and env["OAB_JUDGE_CACHE"] == str(tmp_path / "jc")
    assert "OAB_FRESH_ANSWERS" not in env
    fresh = build_parser().parse_args([*argv, "--fresh-answers", "--answer-cache", "off"])
    env = run_mod.child_env(fresh, tmp_path / "o")
    assert env["OAB_FRESH_ANSWERS"] == "1" and env["OAB_ANSWER_CACHE"] == "off"
    monkeypatch.setattr(sys, "argv", ["oab-bench", *argv, "--fresh-answers"])
    monkeypatch.setattr(run_mod, "stored_progress", lambda *a: (15, 7, 3))
    line = run_mod.stopped_line(args, run_mod.judge_settings(args), "SIGTERM")
    assert line == (
        f"oab-bench run: stopped (SIGTERM); kept 7 of 15 answers ({tmp_path / 'ac'}) and 3 judgments "
        f"({tmp_path / 'jc'}); resume with: oab-bench {' '.join(argv)}"
    )
