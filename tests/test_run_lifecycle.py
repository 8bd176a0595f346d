"""The run's life end to end: a rerun pays nothing, a killed run resumes paying only what is missing,
a permanent candidate error stops the run in seconds, and no signal leaves a process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from oab_bench.judge.generation.answer_store import AnswerStore
from tests.conftest import REPO, oab
from tests.helpers import TASK, candidate_calls, check_no_secret, env_for, is_check_call, judge_calls

pytestmark = pytest.mark.e2e


def command(model, candidate_url, judge_url, dataset, tmp_path, *extra) -> list[str]:
    cmd = [sys.executable, "-m", "oab_bench.scripts.cli", "run", "--model", model, "--dataset", str(dataset)]
    if candidate_url:
        cmd += ["--api-base", candidate_url]
    cmd += ["--tasks", TASK, "--judge-model", "openai/judge-e2e", "--judge-api-base", judge_url]
    cmd += ["--judge-cache", str(tmp_path / "jc"), "--answer-cache", str(tmp_path / "ac")]
    return [*cmd, "--output-dir", str(tmp_path / "run"), *map(str, extra)]


def processes_mentioning(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{proc.name} ({_state(proc)}): {cmdline[:200]}")
    return found


def _state(proc: Path) -> str:
    """State, parent and what it waits in: enough to tell a stuck child from a stray grandchild."""
    try:
        fields = dict(
            line.split(":\t", 1) for line in (proc / "status").read_text().splitlines() if ":\t" in line
        )
        wchan = (proc / "wchan").read_text()
    except OSError:
        return "gone"
    return f"{fields.get('State', '?').strip()}, ppid {fields.get('PPid', '?').strip()}, threads {fields.get('Threads', '?').strip()}, wchan {wchan}"


def wait_for(condition, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        assert proc is None or proc.poll() is None, f"the run ended (code {proc.returncode}) before {what}"
        time.sleep(0.1)


def test_a_rerun_pays_nothing_and_a_killed_run_resumes_paying_only_what_is_missing(
    stub, built_dataset, tmp_path
):
    server = stub(policy="max", latency=0.4)
    cmd = command("openai/cand-resume", server.url, server.url, built_dataset, tmp_path, "--concurrency", "1")
    cmd += ["--judge-concurrency", "2"]
    out = tmp_path / "run"

    def calls_since(before: int) -> SimpleNamespace:
        return SimpleNamespace(requests=server.requests[before:])

    # 1. killed (SIGKILL: no cleanup of its own) half-way through generation
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env_for(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_for(lambda: len(candidate_calls(server)) >= 7, 300, "half the answers", proc)
    proc.kill()
    proc.wait()
    # the lighteval child dies with its parent (and keeps the answer it was waiting for)
    # (its grace for calls in flight is 15 s; a loaded 2-core machine adds its own delay)
    try:
        wait_for(lambda: not processes_mentioning(str(out)), 60, "the lighteval child to end")
    except AssertionError as e:  # which process, in what state: a rare flake on a loaded machine
        raise AssertionError(f"{e}: {processes_mentioning(str(out))}") from None
    kept = len(AnswerStore(tmp_path / "ac"))
    assert 5 <= kept <= len(candidate_calls(server)) < 15 and not judge_calls(server)

    # 2. the resume generates exactly the missing answers; stopped (SIGTERM) while judging
    before = len(server.requests)
    err = tmp_path / "resume.stderr"
    with err.open("w") as stderr:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env_for(), stdout=subprocess.DEVNULL, stderr=stderr)
    wait_for(lambda: len(judge_calls(calls_since(before))) >= 4, 300, "judging", proc)
    proc.terminate()
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    new = calls_since(before)
    assert len(candidate_calls(new)) == 15 - kept
    assert sum(map(is_check_call, new.requests)) == 2  # one check call each: both were going to be called
    judged = len(judge_calls(new))
    assert 4 <= judged < 15
    assert f"kept 15 of 15 answers ({tmp_path / 'ac'}) and {judged} judgments" in err.read_text()

    # 3. the second resume judges exactly the rest: no judgment in flight at SIGTERM was paid twice
    before = len(server.requests)
    resumed = oab(*cmd[3:], env=env_for())  # in this process: no signal is the point from here on
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    new = calls_since(before)
    assert not candidate_calls(new) and len(judge_calls(new)) == 15 - judged
    assert sum(map(is_check_call, new.requests)) == 1  # the judge's only
    first = json.loads((out / "oab_bench_summary.json").read_text())

    # 4. a rerun with the same settings: not one call, and the same figures
    before = len(server.requests)
    again = oab(*cmd[3:], env=env_for())
    assert again.returncode == 0, again.stderr[-3000:]
    assert server.requests[before:] == []
    second = json.loads((out / "oab_bench_summary.json").read_text())
    cost = second["figures"].pop("cost_usd")
    first["figures"].pop("cost_usd")
    assert second["figures"] == first["figures"] and second["figures"]["coverage"] == 1.0
    assert cost is None  # the stub judge has no price: unknown on every run, never NaN then 0
    check_no_secret(tmp_path / "ac", again.stderr)

    # 5. its estimate says the same: every answer stored, every judgment cached, nothing to pay
    est = oab(*cmd[3:], "--estimate", "--format", "json", env=env_for())
    assert est.returncode == 0, est.stderr[-3000:]
    got = json.loads(est.stdout)
    assert (got["generations_cached"], got["generations_to_pay"]) == (15, 0)
    assert (got["judgments_cached"], got["judgments_to_pay"], got["total"]["calls"]) == (15, 0, 0)
    assert got["total"]["cost_usd"] == 0.0 and server.requests[before:] == []


def test_a_permanent_candidate_error_mid_run_stops_it_in_seconds(stub, built_dataset, tmp_path):
    candidate = stub(faults=[{"kind": "401"}])  # quotes the Authorization header, key included
    judge = stub()
    cmd = command("openai/cand-401", candidate.url, judge.url, built_dataset, tmp_path, "--no-check-call")
    proc = subprocess.run(cmd, cwd=REPO, env=env_for(), capture_output=True, text=True, timeout=600)
    ended = time.time()
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert ended - candidate.requests[0]["time"] < 15  # lighteval retried a 401 for 5+ minutes
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("oab-bench run: error:")]
    assert "the candidate's server refused the request, so the run stopped" in line
    assert "AuthenticationError (401)" in line and "Incorrect API key provided: Bearer ***" in line
    assert not judge.requests
    check_no_secret(tmp_path / "run", proc.stdout, proc.stderr)
    assert len(AnswerStore(tmp_path / "ac", access="read")) == 0  # a failed call is never an answer


def standin_vllm(tmp_path: Path, marker: str) -> Path:
    """OAB_BENCH_VLLM_PYTHON for the test: an OpenAI-compatible stub on the port vLLM was given, with a
    child process in its group (as vLLM's engine), both named by `marker`."""
    config = tmp_path / f"{marker}.json"
    config.write_text(json.dumps({"latency": 0.5}))
    script = tmp_path / "python-standin"
    script.write_text(
        "#!/bin/sh\n"
        'port=""; prev=""\n'
        'for a in "$@"; do [ "$prev" = "--port" ] && port="$a"; prev="$a"; done\n'
        f"{sys.executable} -c 'import time; time.sleep(600)' {marker}-engine &\n"
        f'exec {sys.executable} -m tests.openai_stub --port "$port" --config {config}\n'
    )
    script.chmod(0o755)
    return script


@pytest.mark.parametrize(
    "sig, when",
    [(signal.SIGTERM, "generating"), (signal.SIGHUP, "started"), (signal.SIGINT, "started")],
    ids=["SIGTERM", "SIGHUP", "SIGINT"],
)
def test_no_process_outlives_a_signal(stub, built_dataset, tmp_path, sig, when):
    marker = f"oab-standin-{os.getpid()}-{tmp_path.name}"  # tmp_path's name alone recurs in another session
    model = tmp_path / marker
    model.mkdir()
    judge = stub(latency=0.5)
    out = tmp_path / "run"
    cmd = command(f"vllm:{model}", None, judge.url, built_dataset, tmp_path, "--concurrency", "1")
    env = env_for(OAB_BENCH_VLLM_PYTHON=str(standin_vllm(tmp_path, marker)), PYTHONPATH=str(REPO))
    err = tmp_path / "stderr.txt"
    with err.open("w") as stderr:
        proc = subprocess.Popen(  # Ctrl-C as in a terminal (a background job inherits it ignored)
            cmd,
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    if when == "generating":  # a first answer stored: lighteval is mid-generation
        wait_for(lambda: len(AnswerStore(tmp_path / "ac", access="read")), 300, "a first answer", proc)
    else:
        wait_for(lambda: "running:" in err.read_text(), 300, "the lighteval child", proc)
    assert processes_mentioning(marker) and processes_mentioning(str(out))
    proc.send_signal(sig)
    code = proc.wait(timeout=60)
    text = err.read_text()
    name = signal.Signals(sig).name
    assert code == 128 + sig, text[-3000:]
    (line,) = [x for x in text.splitlines() if x.startswith("oab-bench run: stopped")]
    assert (
        line.startswith(f"oab-bench run: stopped ({name}); kept ") and "resume with: oab-bench run " in line
    )
    assert "Traceback" not in text.split("running:")[-1]  # nothing from the interrupted child
    time.sleep(5)
    assert not processes_mentioning(marker), "a server process outlived the run"
    assert not processes_mentioning(str(out)), "the lighteval child outlived the run"
