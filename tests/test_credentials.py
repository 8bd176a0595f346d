"""Credentials: missing, empty, rejected or malformed keys fail at once, by name, and never land in output."""

from __future__ import annotations

import os
import time

import pytest

from oab_bench.judge.answers import Answer
from oab_bench.judge.generation.run_checks import check_keys
from oab_bench.judge.grading.client import CHECK_PROMPT
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.scripts.cli import main
from tests.conftest import SECRET, oab
from tests.helpers import (
    KEY_VARS,
    _answers_file,
    _no_base_settings,
    clean_env,
    grade,
    made_up_row,
    run_cmd,
)


@pytest.mark.parametrize("code", ["401", "403"])
def test_rejected_credentials_are_permanent_and_never_written(stub, tmp_path, monkeypatch, code):
    monkeypatch.delenv("OAB_JUDGE_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # the provider's variable, echoed back by the server
    server = stub(faults=[{"kind": code}])
    j = grade(server, store=JudgmentStore(tmp_path), max_attempts=6)
    assert j.status == "api_error" and j.attempts == 1 and server.count == 1
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"  # the key was really sent
    assert SECRET not in j.error and "***" in j.error
    assert SECRET not in j.model_dump_json()


def test_missing_credentials_fail_at_once_naming_the_variable(monkeypatch):
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    started = time.monotonic()
    j = run_judge_all(
        Judge(_no_base_settings()),
        [(made_up_row(), Answer(model="m", question_id="90_direito_civil_questao_1", turns=["x"]))],
        progress=False,
    )[0]
    assert j.status == "api_error" and j.attempts == 1 and "OAB_JUDGE_API_KEY" in j.error
    assert time.monotonic() - started < 10


def test_judge_with_api_base_and_no_key_sends_a_dummy_key(stub, tmp_path, built_dataset, upstream_v1):

    server = stub(policy="max")
    answers, ids = _answers_file(tmp_path, upstream_v1, 2)
    out = tmp_path / "out.jsonl"
    args = ["judge", "--dataset", built_dataset, "--answers", answers, "--judge-model", "openai/judge-test"]
    args += ["--api-base", server.url, "--cache", tmp_path / "c", "--output", out, "--no-progress"]
    args += ["--questions", *ids]
    proc = oab(*args, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    assert {r["headers"]["Authorization"] for r in server.requests} == {"Bearer EMPTY"}


def run_without_keys(tmp_path, built_dataset, env: dict):
    """`oab-bench run` of an API model with the keys `env` has (or lacks), into tmp_path/r."""
    return oab(
        "run",
        "--model",
        "openai/gpt-4o-mini",
        "--dataset",
        built_dataset,
        "--output-dir",
        tmp_path / "r",
        env=env,
    )


def test_run_without_keys_fails_in_seconds_naming_them(tmp_path, built_dataset):
    started = time.monotonic()
    proc = run_without_keys(tmp_path, built_dataset, clean_env())
    assert proc.returncode == 2
    assert "OPENAI_API_KEY" in proc.stderr and "OAB_JUDGE_API_KEY" in proc.stderr
    assert time.monotonic() - started < 60
    assert not (tmp_path / "r" / "model_config.yaml").exists()  # nothing was started


def test_empty_key_variables_count_as_missing(tmp_path, built_dataset, monkeypatch):
    for name, value in {"OPENAI_API_KEY": "", "X_KEY": " ", "HOME_X": ""}.items():
        monkeypatch.setenv(name, value)
    check_keys()
    assert "OPENAI_API_KEY" not in os.environ and "X_KEY" not in os.environ and "HOME_X" in os.environ
    started = time.monotonic()
    proc = run_without_keys(tmp_path, built_dataset, clean_env(OPENAI_API_KEY="", OAB_JUDGE_API_KEY=SECRET))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "OPENAI_API_KEY is set but empty" in proc.stderr
    assert "the candidate openai/gpt-4o-mini needs OPENAI_API_KEY" in proc.stderr
    assert time.monotonic() - started < 60
    assert not (tmp_path / "r" / "model_config.yaml").exists()


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
    # lighteval never started, and the refused run left nothing: no output folder, marker or cache
    assert not [p.name for p in tmp_path.iterdir()]


def test_a_key_with_a_newline_is_trimmed_and_one_with_a_control_character_fails_at_once(stub, monkeypatch):
    """A pasted key ending in a newline failed every call as a retried 'server error' (no HTTP
    header may hold one); now it is trimmed, and a control character inside fails once, saying why."""
    from oab_bench.judge.grading.client import call_judge
    from oab_bench.judge.grading.loop import run
    from oab_bench.judge.settings import JudgeSettings

    server = stub()
    settings = JudgeSettings(
        judge_model="openai/judge-test", api_base=server.url, max_attempts=3, backoff_initial=0.01
    )
    messages = [{"role": "user", "content": "oi"}]
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "sk-test-123\n")
    assert run(call_judge(settings, messages, None)).status == "ok"
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "sk-test\n123")
    failed = run(call_judge(settings, messages, None))
    assert (failed.status, failed.attempts) == ("api_error", 1)
    assert "control character" in failed.error and "sk-test" not in failed.error
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "  ")  # blank: no key of ours (the local server's dummy)
    assert run(call_judge(settings, messages, None)).status == "ok"


def test_blank_keys_are_missing_keys_before_anything_runs(monkeypatch):
    """`OPENAI_API_KEY=' '` or a blank OAB_JUDGE_API_KEY passed the run's key check and then failed
    every call; blank is missing, as empty is."""
    from oab_bench.judge.generation.run_checks import check_credentials
    from oab_bench.judge.settings import JudgeSettings

    for var in ("OAB_JUDGE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", " \n")
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "  ")
    with pytest.raises(ValueError) as info:
        check_credentials("openai/gpt-4o-mini", None, JudgeSettings(judge_model="openai/gpt-5.2"))
    said = str(info.value)
    assert "the candidate openai/gpt-4o-mini needs OPENAI_API_KEY" in said
    assert "the judge openai/gpt-5.2 needs OAB_JUDGE_API_KEY" in said


def test_a_candidate_key_with_a_line_break_is_trimmed_or_named(
    stub, tmp_path, built_dataset, capsys, monkeypatch
):
    """OPENAI_API_KEY='sk-...\\r\\n' (a key pasted from a file) made the check call report that the
    candidate's server 'does not answer: Connection error', and lighteval retry it for minutes: the
    judge's own key was trimmed, the provider variables the candidate uses were not."""
    from oab_bench.judge.generation import run as run_module

    server = stub()
    monkeypatch.setattr(run_module, "evaluate", lambda *a: ([], {}))  # stop where lighteval would start
    run = ["run", "--model", "openai/cand", "--api-base", server.url, "--dataset", str(built_dataset)]
    run += ["--tasks", "oab_bench:39", "--judge-model", "openai/j", "--judge-api-base", server.url]
    run += ["--judge-cache", str(tmp_path / "jc"), "--answer-cache", str(tmp_path / "ac")]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cand-123\r\n")
    assert main([*run, "--output-dir", str(tmp_path / "o1")]) == 1  # lighteval's turn: preflight passed
    assert "does not answer" not in capsys.readouterr().err
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cand\n123")
    assert main([*run, "--output-dir", str(tmp_path / "o2")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert (
        line
        == "oab-bench run: error: OPENAI_API_KEY holds a line break or another control character: fix the variable"
    )
    assert not (tmp_path / "o2").exists()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cand-123")
    monkeypatch.setenv("DEPLOY_SSH_KEY", "-----BEGIN KEY-----\nabc\n-----END KEY-----\n")  # not ours
    assert main([*run, "--output-dir", str(tmp_path / "o3")]) == 1


def test_a_credential_inside_a_url_is_masked_wherever_we_print():
    """An --api-base given as https://user:pass@host, or a provider URL with ?key=, holds a secret that
    is in no environment variable: redact masks it too (errors, logs, the probe's and estimate's lines)."""
    from oab_bench.judge.redact import redact

    assert (
        redact("api_base=http://user:s3cr3t@host:8000/v1 failed", {})
        == "api_base=http://***@host:8000/v1 failed"
    )
    assert (
        redact("GET https://g.example/v1/m:gen?key=AIzaXYZ&alt=sse", {})
        == "GET https://g.example/v1/m:gen?key=***&alt=sse"
    )
    assert redact("https://h/x?access_token=abc#frag", {}) == "https://h/x?access_token=***#frag"
    plain = "http://127.0.0.1:8000/v1 answered; write to a@b.example; monkey=1&key"
    assert redact(plain, {}) == plain  # nothing secret: nothing changed
