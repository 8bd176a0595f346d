"""Ctrl-C, SIGTERM and SIGHUP stop a block once, however badly placed they land: a `Stopped` that
Python drops (raised inside an at-fork callback or a finalizer) is raised again at the next
checkpoint or when the block ends, and a signal while a child starts waits until the child is ours.

`oab-bench run` stopped at each of its phases ends with the signal's code (128 + its number) and one
line saying what it kept, or that it had already finished; never exit 0 as if no signal came, never
a half-written summary. Its lighteval child is a stand-in here (the end-to-end runs are in
test_run_lifecycle.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from oab_bench.conventions import SUMMARY_FILE
from oab_bench.judge.generation.processes import Stopped, held_stops, raise_if_stopped, stop_signals
from oab_bench.scripts.cli import main
from tests.conftest import REPO
from tests.helpers import made_up_judgment

STOPS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


class Dropped:
    """Raises `sig` inside a finalizer: the handler's `Stopped` is printed ("Exception ignored in")
    and dropped, as in the at-fork callback where a run lost its SIGHUP."""

    def __init__(self, sig: int):
        self.sig = sig

    def __del__(self):
        signal.raise_signal(self.sig)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("sig", STOPS, ids=[s.name for s in STOPS])
def test_a_dropped_stop_is_raised_at_the_next_checkpoint_and_at_the_block_end(sig):
    with pytest.raises(Stopped, match=sig.name), stop_signals():
        Dropped(sig)  # collected at once: the handler ran, its exception went nowhere
        raise_if_stopped()
    ended = []
    with pytest.raises(Stopped, match=sig.name), stop_signals():
        Dropped(sig)
        ended.append(True)  # the body ends as if no signal came
    assert ended
    raise_if_stopped()  # no open block: nothing to raise


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_dropped_stop_is_raised_once_even_from_an_inner_block():
    """The CLI's block took the signal and lost it; the run's block raises it at its checkpoint and
    reports it: the CLI's block must not raise it a second time (two "stopped" lines)."""
    caught = []
    with stop_signals():
        Dropped(signal.SIGHUP)
        try:
            with stop_signals():
                raise_if_stopped()
        except Stopped as e:
            caught.append(e.signame)
        raise_if_stopped()
    assert caught == ["SIGHUP"]


@pytest.mark.parametrize("sig", STOPS, ids=[s.name for s in STOPS])
def test_a_held_stop_waits_for_its_checkpoint_and_a_second_signal_is_ignored(sig):
    steps = []
    with pytest.raises(Stopped, match=sig.name), stop_signals():
        with held_stops():
            signal.raise_signal(sig)
            steps.append("held")  # not broken off
            signal.raise_signal(signal.SIGTERM)  # a second signal: the first one counts
            steps.append("second")
        steps.append("released")
        raise_if_stopped()
        steps.append("never")
    assert steps == ["held", "second", "released"]


# A signal that lands while Python runs its at-fork callbacks (every Popen with a preexec_fn runs them):
# the SIGHUP a run lost under load, once, so that it finished with exit 0. Here the callback itself sends
# it, once; the child sleeps, so a lost signal shows as a run that does not stop.
AT_FORK = """
import os, signal, sys, time
from pathlib import Path
from oab_bench.judge.generation.processes import Stopped, stop_signals
armed = [True]
def send():
    if armed:
        armed.clear()
        os.kill(os.getpid(), signal.SIGHUP)
os.register_at_fork(after_in_parent=send)
try:
    with stop_signals():
        if sys.argv[1] == "lighteval child":
            from oab_bench.judge.generation.lighteval_child import run_redacted
            code = run_redacted([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[3]], env=dict(os.environ), cwd=Path("."))
        else:
            os.environ["OAB_BENCH_VLLM_PYTHON"] = sys.argv[2]
            from oab_bench.judge.generation.vllm_server import VllmServer
            with VllmServer("some/model", Path(sys.argv[3]), start_timeout=600):
                code = "ready"
    print("finished", code, flush=True)
except Stopped as e:
    print("stopped", e.signame, flush=True)
"""


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("kind", ["lighteval child", "vLLM server"])
def test_a_signal_while_a_child_starts_stops_the_run_and_the_child(kind, tmp_path):
    never_ready = tmp_path / "python"  # a "vLLM" that never answers /health
    never_ready.write_text("#!/bin/sh\nexec sleep 600\n")
    never_ready.chmod(0o755)
    proc = subprocess.run(
        [sys.executable, "-c", AT_FORK, kind, str(never_ready), str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,  # a lost signal: the child would run its 600 s
    )
    word, *rest = proc.stdout.split()
    assert word == "stopped", proc.stdout + proc.stderr[-2000:]
    assert rest[0] == "SIGHUP"  # a lost signal: "finished 0" once the child had slept its 600 s
    assert "Exception ignored" not in proc.stderr  # held while the child started: never dropped
    left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout
    assert not left.strip(), "the child outlived the stop"


TASK = "oab_bench:39"

# what the lighteval child leaves in the output folder; "child" phase: it signals us first, then
# sleeps as a child mid-generation or mid-judging would
CHILD = """
import os, sys, time
from pathlib import Path
line, sig = sys.argv[1], int(sys.argv[2])
if sig:
    os.kill(os.getppid(), sig)
    time.sleep(60)
(Path("results") / "m").mkdir(parents=True, exist_ok=True)
(Path("results") / "m" / "results_1.json").write_text("{}")
Path("judgments.jsonl").write_text(line + "\\n")
"""


def signal_now(sig: int, dropped: bool) -> None:
    if dropped:
        Dropped(sig)
    else:
        signal.raise_signal(sig)


@pytest.fixture
def bench(stub, built_rows, built_dataset, tmp_path, monkeypatch):
    """`run(phase, sig, dropped)`: `oab-bench run` in this process with `sig` at `phase`; returns
    (exit code, the output folder, whether the child started)."""
    import oab_bench.judge.generation.lighteval_child as child_mod
    import oab_bench.judge.generation.run as run_mod
    import oab_bench.judge.generation.run_summary as summary_mod

    rows, _ = built_rows
    row = next(r for r in rows if r.edition == 39)
    judged = made_up_judgment(
        question_id=row.question_id,
        exam_id=row.exam_id,
        model="openai/cand",
        judge_model="openai/j",
        prompt_version="oab-pt-v1",
        score=0.0,
        max_score=row.max_score,
    )
    server = stub()
    args = ["run", "--model", "openai/cand", "--api-base", server.url, "--dataset", str(built_dataset)]
    args += ["--tasks", TASK, "--judge-model", "openai/j", "--judge-api-base", server.url, "--no-check-call"]
    args += ["--judge-cache", str(tmp_path / "jc"), "--answer-cache", str(tmp_path / "ac")]

    def run(phase: str, sig: int, dropped: bool = False):
        out = tmp_path / f"{phase}-{sig.name}-{dropped}"
        started = []
        real_run_redacted, real_preflight = child_mod.run_redacted, run_mod.preflight
        real_write, real_leaderboard = summary_mod.write_atomic, summary_mod.leaderboard

        def child(cmd, *, env, cwd, watch=()):
            started.append(True)
            at_child = int(sig) if phase == "child" else 0
            line = json.dumps(judged.record())
            return real_run_redacted([sys.executable, "-c", CHILD, line, str(at_child)], env=env, cwd=cwd)

        def at(phase_name, real):
            def wrapped(*a, **k):
                # the summary phase is the summary's write, not an earlier one (model_config.yaml)
                if phase == phase_name and (phase_name != "summary" or Path(a[0]).name == SUMMARY_FILE):
                    signal_now(sig, dropped)
                return real(*a, **k)

            return wrapped

        with monkeypatch.context() as m:
            m.setattr(child_mod, "run_redacted", child)
            m.setattr(run_mod, "preflight", at("preflight", real_preflight))
            m.setattr(summary_mod, "write_atomic", at("summary", real_write))
            m.setattr(summary_mod, "leaderboard", at("after", real_leaderboard))
            code = main([*args, "--output-dir", str(out)])
        return code, out, bool(started)

    return run


def stopped_line(capsys) -> str:
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("oab-bench run: stopped")]
    return line


@pytest.mark.parametrize("sig", STOPS, ids=[s.name for s in STOPS])
@pytest.mark.parametrize("phase", ["preflight", "child", "summary", "after"])
def test_a_signal_at_each_phase_ends_the_run_with_its_code(bench, capsys, phase, sig):
    code, out, started = bench(phase, sig)
    assert code == 128 + sig
    line = stopped_line(capsys)
    summary = out / "oab_bench_summary.json"
    if phase == "after":  # the summary was written: the run says it had finished
        assert line == f"oab-bench run: stopped ({sig.name}) after the run had finished: {summary}"
        assert json.loads(summary.read_text())["figures"]
    else:
        assert line.startswith(f"oab-bench run: stopped ({sig.name}); kept ") and "resume with: " in line
        assert not summary.exists() and not list(
            out.glob(".oab_bench_summary.json.*")
        )  # nothing half-written
    assert started == (phase != "preflight")  # stopped in the preflight: no child started
    if phase == "child":  # stopped, not waited for: it would have written its results after its sleep
        assert not (out / "results").exists()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("phase", ["preflight", "summary", "after"])
def test_a_dropped_signal_still_ends_the_run_with_its_code(bench, capsys, phase):
    """The SIGHUP a run lost under load (it finished with exit 0): raised again at the next
    checkpoint, or when the run ends."""
    code, out, started = bench(phase, signal.SIGHUP, dropped=True)
    assert code == 128 + signal.SIGHUP
    line = stopped_line(capsys)
    if phase == "preflight":  # raised before the child starts
        assert line.startswith("oab-bench run: stopped (SIGHUP); kept ") and not started
    else:  # lost while the summary was written: it was written whole, the run had finished
        assert line.startswith("oab-bench run: stopped (SIGHUP) after the run had finished")
        assert json.loads((out / "oab_bench_summary.json").read_text())["figures"]
