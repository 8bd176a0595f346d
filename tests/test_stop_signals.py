"""Ctrl-C, SIGTERM and SIGHUP stop a block once, however badly placed they land: a `Stopped` that
Python drops (raised inside an at-fork callback or a finalizer) is raised again at the next
checkpoint or when the block ends, and a signal while a child starts waits until the child is ours."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from oab_bench.judge.generation.processes import Stopped, held_stops, raise_if_stopped, stop_signals
from tests.conftest import REPO

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
started = time.monotonic()
try:
    with stop_signals():
        if sys.argv[1] == "lighteval child":
            from oab_bench.judge.generation.run import run_redacted
            code = run_redacted([sys.executable, "-c", "import time; time.sleep(60)", sys.argv[3]], env=dict(os.environ), cwd=Path("."))
        else:
            os.environ["OAB_BENCH_VLLM_PYTHON"] = sys.argv[2]
            from oab_bench.judge.generation.vllm_server import VllmServer
            with VllmServer("some/model", Path(sys.argv[3]), start_timeout=60):
                code = "ready"
    print("finished", code, flush=True)
except Stopped as e:
    print("stopped", e.signame, round(time.monotonic() - started), flush=True)
"""


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("kind", ["lighteval child", "vLLM server"])
def test_a_signal_while_a_child_starts_stops_the_run_and_the_child(kind, tmp_path):
    never_ready = tmp_path / "python"  # a "vLLM" that never answers /health
    never_ready.write_text("#!/bin/sh\nexec sleep 60\n")
    never_ready.chmod(0o755)
    proc = subprocess.run(
        [sys.executable, "-c", AT_FORK, kind, str(never_ready), str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=50,
    )
    word, *rest = proc.stdout.split()
    assert word == "stopped", proc.stdout + proc.stderr[-2000:]
    assert rest[0] == "SIGHUP" and int(rest[1]) < 20  # at once, not when the child would have ended
    assert "Exception ignored" not in proc.stderr  # held while the child started: never dropped
    left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout
    assert not left.strip(), "the child outlived the stop"
