"""The CLI's contract: one-line errors naming the flag, outputs that never replace inputs, signals."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from oab_bench.judge.settings import settings_from
from oab_bench.scripts.cli import main
from tests.conftest import REPO, oab
from tests.helpers import (
    clean_env,
)


def test_empty_answers_file_is_an_error(tmp_path, built_dataset):
    empty = tmp_path / "answers.jsonl"
    empty.write_text("")
    args = ["judge", "--dataset", built_dataset, "--answers", empty, "--judge-model", "openai/j"]
    proc = oab(
        *args, "--api-base", "http://127.0.0.1:9/v1", "--output", tmp_path / "o.jsonl", env=clean_env()
    )
    assert proc.returncode == 2 and f"{empty}: no answers in it" in proc.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_no_litellm_cache_is_tracked():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True).stdout.split()
    assert not [p for p in tracked if p.startswith((".litellm_cache", "results/"))]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ["--max-cost-usd", "-1"],
            "--max-cost-usd (OAB_JUDGE_MAX_COST_USD): Input should be greater than or equal to 0",
        ),
        (["--repeats", "0"], "--repeats (OAB_JUDGE_REPEATS): Input should be greater than or equal to 1"),
        (
            ["--batch", "--max-cost-usd", "1"],
            "--batch (OAB_JUDGE_BATCH) and --max-cost-usd (OAB_JUDGE_MAX_COST_USD) do not go together",
        ),
        (["--price-input", "nan"], "--price-input (OAB_JUDGE_PRICE_INPUT): nan is not a number"),
        (
            ["--api-base", " localhost:1/v1"],
            "--api-base (OAB_JUDGE_API_BASE): 'localhost:1/v1' is not an http",
        ),
    ],
)
def test_bad_settings_are_one_line_each_naming_the_flag(flags, said, tmp_path, capsys):
    answers = tmp_path / "a.jsonl"
    answers.write_text("{}\n")
    args = [
        "judge",
        "--dataset",
        str(tmp_path),
        "--answers",
        str(answers),
        "--output",
        str(tmp_path / "j.jsonl"),
    ]
    assert main([*args, "--judge-model", "openai/x", *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0] and "pydantic" not in err[0], err


def test_output_never_overwrites_an_input(tmp_path, capsys):
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"question_id": "q", "model_id": "m", "choices": [{"turns": ["x"]}]}\n')
    before = answers.read_bytes()
    for argv in (
        ["judge", "--dataset", str(tmp_path / "ds"), "--answers", str(answers), "--output", str(answers)],
        ["agreement", str(answers), str(answers), "--output", str(answers)],
        ["report", str(answers), "--output", str(answers)],
        ["leaderboard", str(answers), "--output", str(answers)],
        ["build", "--source", str(tmp_path), "--output", str(tmp_path), "--overwrite"],
    ):
        assert main([*argv, *(["--judge-model", "openai/x"] if argv[0] == "judge" else [])]) == 2, argv
        assert "would overwrite the input" in capsys.readouterr().err
        assert answers.read_bytes() == before


def test_settings_error_names_the_run_flag(monkeypatch):
    monkeypatch.delenv("OAB_JUDGE_REPEATS", raising=False)
    import argparse

    from oab_bench.judge.settings import add_arguments

    p = argparse.ArgumentParser()
    add_arguments(p, prefix="judge-")
    with pytest.raises(ValueError, match=r"^--judge-max-tokens \(OAB_JUDGE_MAX_TOKENS\)"):
        settings_from(
            p.parse_args(["--judge-model", "openai/x", "--judge-max-tokens", "0"]), {}, prefix="judge-"
        )


def test_a_folder_that_is_no_dataset_is_refused_naming_it(stub, tmp_path, capsys, monkeypatch):
    """A random folder as --dataset reached `datasets`: `judge` said 'Unknown split "test"', and
    `run` made its check calls and started lighteval, which died on a KeyError traceback."""
    server = stub()
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "todo.txt").write_text("not a dataset\n")
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"question_id": "q", "model_id": "m", "choices": [{"index": 0, "turns": ["x"]}]}\n')
    judge = ["judge", "--answers", str(answers), "--judge-model", "openai/j", "--api-base", server.url]
    run = ["run", "--model", "openai/cand", "--api-base", server.url, "--tasks", "oab_bench:39"]
    run += ["--judge-model", "openai/j", "--judge-api-base", server.url, "--output-dir", str(tmp_path / "o")]
    for argv in (
        [*judge, "--dataset", str(notes), "--output", str(tmp_path / "j.jsonl")],
        [*run, "--dataset", str(notes)],
        [*run, "--dataset", str(answers)],
    ):
        assert main(argv) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        given = argv[argv.index("--dataset") + 1]
        assert line.startswith(f"oab-bench {argv[0]}: error: {given}: not a dataset"), line
    assert not server.requests and not (tmp_path / "o").exists() and not (tmp_path / "j.jsonl").exists()
    assert sorted(p.name for p in notes.iterdir()) == ["sub", "todo.txt"]


@pytest.mark.parametrize("sig, code", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_signal_before_judging_starts_is_one_line_too(monkeypatch, capsys, sig, code):
    """SIGTERM or SIGHUP while a command still loaded its dataset or answers (the first seconds)
    killed it silently: only the judge loop and `run` turned them into one line."""
    import signal

    import oab_bench.judge.grading.judge_answers

    def slow_start(args, *_):
        os.kill(os.getpid(), getattr(signal, sig))
        time.sleep(5)  # a handler raises before this ends
        return 0

    monkeypatch.setattr(oab_bench.judge.grading.judge_answers, "run_judge_command", slow_start)
    argv = ["judge", "--dataset", "d", "--answers", "a.jsonl", "--judge-model", "openai/j", "--output", "o"]
    started = time.monotonic()
    assert main(argv) == code
    assert time.monotonic() - started < 4
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"oab-bench judge: stopped by {sig}")
    assert signal.getsignal(getattr(signal, sig)) is signal.SIG_DFL  # put back after the command
