"""Ctrl-C, SIGTERM and SIGHUP stop `oab-bench run` at whatever it is doing: no new candidate call or
judgment starts, those in flight finish and are stored, one "stopped" line says what was kept and how
to resume, and the exit code is 128 + the signal's number; a signal after the summary was written
says the run had finished. Never exit 0 as if no signal came, never a half-written summary.

In this process (the process is not the point here: the run's signal handlers only record, and its
main thread stops at its next checkpoint): the signal is sent from inside the phase it stops."""

from __future__ import annotations

import json
import os
import signal

import pytest

from oab_bench.conventions import SUMMARY_FILE
from oab_bench.judge.audit import write as report
from oab_bench.judge.generation import answer_store, run, run_checks
from oab_bench.judge.generation.answer_store import AnswerStore
from oab_bench.judge.grading import runner
from oab_bench.scripts.cli import main
from tests.helpers import candidate_calls, judge_calls

TASK = "oab_bench:39"  # 35 questions


def send(sig: int):
    """Send `sig` to this process once, from whichever thread the phase runs in."""
    sent = []

    def now(*_a, **_k):
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), sig)

    return now


@pytest.fixture
def bench(stub, built_dataset, tmp_path, monkeypatch):
    """`run(phase, sig)`: `oab-bench run` in this process, `sig` sent during `phase`; returns
    (exit code, its stderr lines, the output folder, the stub)."""
    server = stub(policy="max")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def go(phase: str, sig: int, capsys):
        out = tmp_path / f"{phase}-{sig.name}"
        args = ["run", "--model", "openai/cand", "--api-base", server.url, "--dataset", str(built_dataset)]
        args += ["--tasks", TASK, "--judge-model", "openai/j", "--judge-api-base", server.url]
        args += ["--judge-cache", str(tmp_path / "jc"), "--answer-cache", str(tmp_path / "ac")]
        args += ["--output-dir", str(out), "--concurrency", "2", "--judge-concurrency", "2"]
        with monkeypatch.context() as m:
            if phase == "checks":
                real = run_checks.check_remote
                m.setattr(run_checks, "check_remote", lambda *a: (send(sig)(), real(*a)))
            elif phase == "generating":  # once a first answer is stored: calls are in flight
                put = AnswerStore.put
                m.setattr(answer_store.AnswerStore, "put", lambda self, a: (put(self, a), send(sig)())[0])
            elif phase == "judging":
                judge_all = runner.judge_all
                signalled = send(sig)

                async def judging(*a, **k):
                    signalled()
                    return await judge_all(*a, **k)

                m.setattr(runner, "judge_all", judging)
            elif phase == "summary":  # the signal lands as the summary is being made
                m.setattr(runner, "dump_jsonl", lambda j, real=runner.dump_jsonl: (send(sig)(), real(j))[1])
            else:  # after it was written
                m.setattr(report, "write_run_report", send(sig))
            code = main(args)
        return code, capsys.readouterr().err.splitlines(), out, server

    return go


@pytest.mark.parametrize(
    "phase, sig",
    [
        ("checks", signal.SIGHUP),
        ("generating", signal.SIGTERM),
        ("judging", signal.SIGINT),
        ("summary", signal.SIGTERM),
        ("after", signal.SIGHUP),
    ],
)
@pytest.mark.slow
def test_a_signal_at_each_phase_ends_the_run_with_its_code(bench, capsys, tmp_path, phase, sig):
    code, err, out, server = bench(phase, sig, capsys)
    assert code == 128 + sig, err[-20:]
    (line,) = [x for x in err if x.startswith("oab-bench run: stopped")]
    summary = out / SUMMARY_FILE
    if phase == "after":  # the summary was written: the run says it had finished
        assert line == f"oab-bench run: stopped ({sig.name}) after the run had finished: {summary}"
        assert json.loads(summary.read_text())["figures"]
        return
    assert line.startswith(f"oab-bench run: stopped ({sig.name}); kept ") and "resume with: oab-bench" in line
    assert not summary.exists() and not list(out.glob(".oab_bench_summary.json.*"))  # nothing half-written
    answers, judged = len(candidate_calls(server)), len(judge_calls(server))
    stored = len(AnswerStore(tmp_path / "ac")) if (tmp_path / "ac").exists() else 0
    assert stored == answers  # every call in flight finished and was kept: none is paid twice
    assert f"kept {stored} of 35 answers" in line
    if phase == "checks":
        assert not out.exists() and answers == 0  # nothing made, nothing paid
    if phase == "generating":  # stopped, not finished: no new call started once it came
        assert 1 <= answers < 35 and judged == 0 and not run.HUNG
    if phase == "judging":
        assert answers == 35 and judged < 35 and f"and {judged} judgments" in line
