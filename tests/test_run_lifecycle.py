"""The run's life end to end: a killed run resumes paying only what is missing and its total cost is
an uninterrupted run's, a rerun pays nothing, a permanent candidate error stops the run in seconds, a
local server that dies stops it naming the server, and no signal (SIGKILL included) leaves a process
paying. Subprocesses only where the process is the point (a signal to it, its death)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from oab_bench.judge.generation.answer_store import AnswerStore
from tests.conftest import REPO, oab
from tests.helpers import TASK, candidate_calls, check_no_secret, env_for, is_check_call, judge_calls

pytestmark = pytest.mark.e2e
PRICED = ("--judge-price-input", "1.5", "--judge-price-output", "6")  # USD per million tokens


def command(model, candidate_url, judge_url, dataset, tmp_path, *extra, out="run") -> list[str]:
    cmd = [sys.executable, "-m", "oab_bench.scripts.cli", "run", "--model", model, "--dataset", str(dataset)]
    if candidate_url:
        cmd += ["--api-base", candidate_url]
    cmd += ["--tasks", TASK, "--judge-model", "openai/judge-e2e", "--judge-api-base", judge_url]
    cmd += ["--judge-cache", str(tmp_path / "jc"), "--answer-cache", str(tmp_path / "ac")]
    return [*cmd, "--output-dir", str(tmp_path / out), *map(str, extra)]


def processes_mentioning(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(f"{proc.name}: {cmdline[:200]}")
    return found


def wait_for(condition, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        assert proc is None or proc.poll() is None, f"the run ended (code {proc.returncode}) before {what}"
        time.sleep(0.1)


def summary(out: Path) -> dict:
    return json.loads((out / "oab_bench_summary.json").read_text())


def test_a_killed_run_resumes_paying_only_what_is_missing_and_costs_what_an_uninterrupted_one_does(
    stub, built_dataset, tmp_path
):
    server = stub(policy="max", latency=0.4)
    cmd = command("openai/cand-resume", server.url, server.url, built_dataset, tmp_path, "--concurrency", "1")
    cmd += ["--judge-concurrency", "2", *PRICED]

    def since(before: int) -> SimpleNamespace:
        return SimpleNamespace(requests=server.requests[before:])

    # 1. killed (SIGKILL: no cleanup of its own) half-way through generation: nothing outlives it
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env_for(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_for(lambda: len(candidate_calls(server)) >= 7, 300, "half the answers", proc)
    proc.kill()
    proc.wait()
    kept = len(AnswerStore(tmp_path / "ac"))
    assert 5 <= kept <= len(candidate_calls(server)) < 15 and not judge_calls(server)

    # 2. the resume generates exactly the missing answers; stopped (SIGTERM) while judging
    before = len(server.requests)
    err = tmp_path / "resume.stderr"
    with err.open("w") as stderr:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env_for(), stdout=subprocess.DEVNULL, stderr=stderr)
    wait_for(lambda: len(judge_calls(since(before))) >= 4, 300, "judging", proc)
    proc.terminate()
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM, err.read_text()[-3000:]
    assert len(candidate_calls(since(before))) == 15 - kept
    assert sum(map(is_check_call, since(before).requests)) == 2  # both were going to be called
    judged = len(judge_calls(since(before)))
    assert 4 <= judged < 15
    assert f"kept 15 of 15 answers ({tmp_path / 'ac'}) and {judged} judgments" in err.read_text()

    # 3. the second resume judges exactly the rest: no judgment in flight at SIGTERM was paid twice;
    # it paid for those, and the run's total counts every judgment at what it cost when it was paid
    before = len(server.requests)
    resumed = oab(*cmd[3:], env=env_for())
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert not candidate_calls(since(before)) and len(judge_calls(since(before))) == 15 - judged
    first = summary(tmp_path / "run")
    paid, total = first["figures"]["cost_usd"], first["cost_usd_total"]
    assert 0 < paid < total

    # 4. the same answers judged without a stop (a judgment cache of its own): the same total, to the cent
    whole = oab(
        *cmd[3:], "--judge-cache", tmp_path / "jc2", "--output-dir", tmp_path / "whole", env=env_for()
    )
    assert whole.returncode == 0, whole.stderr[-3000:]
    uninterrupted = summary(tmp_path / "whole")
    assert (
        round(uninterrupted["cost_usd_total"], 2)
        == round(total, 2)
        == round(uninterrupted["figures"]["cost_usd"], 2)
    )
    assert f"judge cost: ${paid:.4f} this run, ${total:.4f} in all" in resumed.stderr

    # 5. a rerun with the same settings: not one call, the same figures, and its estimate says so
    before = len(server.requests)
    again = oab(*cmd[3:], env=env_for())
    assert again.returncode == 0, again.stderr[-3000:]
    assert server.requests[before:] == []
    second = summary(tmp_path / "run")
    assert second["figures"].pop("cost_usd") == 0.0 and second["cost_usd_total"] == total
    report = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert f"judging them cost in all: ${total:.4f} " in report  # the details say $0: the report says all
    # a folder given twice counts once; two run folders sharing cached judgments are not added up
    for inputs in ([tmp_path / "run", tmp_path / "run"], [tmp_path / "run", tmp_path / "whole"]):
        assert oab("report", *inputs, "--output", tmp_path / "r.html", env=env_for()).returncode == 0
        page = (tmp_path / "r.html").read_text(encoding="utf-8")
        assert (
            f"${2 * total:.4f}" not in page and f"${total + uninterrupted['cost_usd_total']:.4f}" not in page
        )
        (said,) = re.findall(r"judging them cost in all: \$([0-9.]+)", page)
        print("judging cost said for", [p.name for p in inputs], said)
        assert float(said) == pytest.approx(total, abs=0.01)  # what judging these answers cost, once
    first["figures"].pop("cost_usd")
    assert second["figures"] == first["figures"] and second["figures"]["coverage"] == 1.0
    check_no_secret(tmp_path / "ac", again.stderr)
    est = oab(*cmd[3:], "--estimate", "--format", "json", env=env_for())
    assert est.returncode == 0, est.stderr[-3000:]
    got = json.loads(est.stdout)
    assert (got["generations_cached"], got["generations_to_pay"]) == (15, 0)
    assert (got["judgments_cached"], got["judgments_to_pay"], got["total"]["calls"]) == (15, 0, 0)
    assert server.requests[before:] == []


def test_a_permanent_candidate_error_mid_run_stops_it_in_seconds(stub, built_dataset, tmp_path):
    candidate = stub(faults=[{"kind": "401"}])  # quotes the Authorization header, key included
    judge = stub()
    cmd = command("openai/cand-401", candidate.url, judge.url, built_dataset, tmp_path, "--no-check-call")
    proc = oab(*cmd[3:], env=env_for())
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
    child process in its group (as vLLM's engine), all named by `marker`; it exits (code 3) once the
    file `<marker>.die` exists, as a server that crashes."""
    config = tmp_path / f"{marker}.json"
    config.write_text(json.dumps({"latency": 0.5}))
    script = tmp_path / "python-standin"
    script.write_text(
        "#!/bin/sh\n"
        'port=""; prev=""\n'
        'for a in "$@"; do [ "$prev" = "--port" ] && port="$a"; prev="$a"; done\n'
        f"cd {REPO}; {sys.executable} -c 'import time; time.sleep(600)' {marker}-engine &\n"
        f'{sys.executable} -m tests.openai_stub --port "$port" --config {config} &\n'
        f"while [ ! -e {tmp_path / marker}.die ]; do sleep 0.2; done\n"
        "kill %2; exit 3\n"
    )
    script.chmod(0o755)
    return script


def vllm_command(tmp_path: Path, dataset: Path, judge_url: str) -> tuple[str, list[str], dict]:
    marker = f"oab-standin-{os.getpid()}-{tmp_path.name}"  # tmp_path's name alone recurs in another session
    (tmp_path / marker).mkdir()
    cmd = command(f"vllm:{tmp_path / marker}", None, judge_url, dataset, tmp_path, "--concurrency", "1")
    env = env_for(OAB_BENCH_VLLM_PYTHON=str(standin_vllm(tmp_path, marker)))
    return marker, cmd, env


def when_answered(tmp_path: Path, then) -> threading.Thread:
    """`then()` once a first answer is stored (lighteval is mid-generation), from another thread."""
    from oab_bench.judge.generation.answer_store import AnswerStore

    def answered() -> bool:
        try:
            return len(AnswerStore(tmp_path / "ac", access="read")) > 0
        except Exception:  # not created yet, or being created
            return False

    def wait() -> None:
        wait_for(answered, 300, "a first answer")
        then()

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread


def test_a_signal_or_a_kill_leaves_no_server_process(stub, built_dataset, tmp_path):
    """SIGTERM (in this process: the run's own signal path) stops the server with the run; SIGKILL
    (a process of its own, killed) leaves its watcher to stop the server's group at once."""
    judge = stub(latency=0.5)
    marker, cmd, env = vllm_command(tmp_path, built_dataset, judge.url)
    when_answered(tmp_path, lambda: os.kill(os.getpid(), signal.SIGTERM))
    proc = oab(*cmd[3:], env=env)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr[-3000:]
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("oab-bench run: stopped")]
    assert (
        line.startswith("oab-bench run: stopped (SIGTERM); kept ") and "resume with: oab-bench run " in line
    )
    assert "Traceback" not in proc.stderr and not processes_mentioning(marker)  # stopped before it returned

    killed = subprocess.Popen([*cmd, "--output-dir", str(tmp_path / "killed")], cwd=REPO, env=env)
    wait_for(
        lambda: len(processes_mentioning(marker)) >= 3, 300, "the server, its engine, its watcher", killed
    )
    killed.kill()
    killed.wait()
    wait_for(lambda: not processes_mentioning(marker), 20, "the server's processes to end")


def test_a_local_server_that_dies_stops_the_run_naming_it(stub, built_dataset, tmp_path):
    judge = stub()
    marker, cmd, env = vllm_command(tmp_path, built_dataset, judge.url)
    died = []
    when_answered(tmp_path, lambda: ((tmp_path / f"{marker}.die").touch(), died.append(time.monotonic())))
    proc = oab(*cmd[3:], env=env)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert time.monotonic() - died[0] < 20  # lighteval would retry a dead server for minutes
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("oab-bench run: error: vLLM server for")]
    assert "exited with code 3 during the run; last lines of" in line and "Traceback" not in proc.stderr
    assert not judge_calls(judge) and not (tmp_path / "run" / "oab_bench_summary.json").exists()
    wait_for(lambda: not processes_mentioning(marker), 40, "the server's processes to end")
