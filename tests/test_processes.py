"""A child that ignores the SIGTERM the kernel sends when `oab-bench run` is SIGKILLed still ends:
the backstop (scripts/processes.py reap_if_orphaned) SIGKILLs its group after the grace."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

# the parent: starts a child that ignores SIGTERM (as a lighteval child whose Python cannot run its
# handler), with the same protections as run_redacted, prints the child's pid, then waits forever
PARENT = """
import subprocess, sys, time
from oab_bench.judge.generation.processes import die_with_parent, end_reaper, reap_if_orphaned
child = subprocess.Popen(
    [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(600)"],
    start_new_session=True, preexec_fn=die_with_parent(), stdout=subprocess.PIPE,
)
child.stdout.readline()  # SIGTERM ignored from now on
reaper = reap_if_orphaned(child, grace=float(sys.argv[1]))
print(child.pid, reaper.pid, flush=True)
if sys.argv[2] == "finish":
    child.kill(); child.wait(); end_reaper(reaper); print("done", flush=True)
else:
    time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; its parent (init, here) has yet to collect it


def wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


def start_parent(grace: str, how: str) -> tuple[subprocess.Popen, int, int]:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, grace, how], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    child, reaper = map(int, parent.stdout.readline().split())
    return parent, child, reaper


def test_a_child_that_ignores_sigterm_dies_after_the_grace_when_its_parent_is_killed():
    parent, child, reaper = start_parent("1", "wait")
    try:
        parent.kill()  # SIGKILL: no cleanup of its own; the kernel sends the child SIGTERM, ignored
        parent.wait()
        time.sleep(0.5)
        assert alive(child)  # within the grace it may still finish its calls in flight
        assert wait_gone(child, 10), "the orphaned child outlived the grace"
        assert wait_gone(reaper, 5)  # and the backstop itself ends
    finally:
        for pid in (child, reaper):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


# the child ends on SIGTERM, as a vLLM server does, but a worker of its group ignores it
GROUP = """
import subprocess, sys, time
from oab_bench.judge.generation.processes import die_with_parent, reap_if_orphaned
worker = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(600)"
child = subprocess.Popen(
    [sys.executable, "-c", f"import subprocess, sys, time; w = subprocess.Popen([sys.executable, '-c', {worker!r}], stdout=subprocess.PIPE); w.stdout.readline(); print(w.pid, flush=True); time.sleep(600)"],
    start_new_session=True, preexec_fn=die_with_parent(), stdout=subprocess.PIPE,
)
worker_pid = int(child.stdout.readline())
reaper = reap_if_orphaned(child, grace=1)
print(child.pid, worker_pid, reaper.pid, flush=True)
time.sleep(600)
"""


def test_a_worker_left_in_the_group_of_an_ended_child_dies_after_the_grace():
    parent = subprocess.Popen([sys.executable, "-c", GROUP], cwd=REPO, stdout=subprocess.PIPE, text=True)
    child, worker, reaper = map(int, parent.stdout.readline().split())
    try:
        parent.kill()
        parent.wait()
        assert wait_gone(child, 5)  # the kernel's SIGTERM ended the child at once
        assert wait_gone(worker, 10), "a worker of the child's group outlived the grace"
        assert wait_gone(reaper, 5)
    finally:
        for pid in (child, worker, reaper):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_the_backstop_ends_with_a_child_that_ended_normally():
    parent, child, reaper = start_parent("60", "finish")
    out, _ = parent.communicate(timeout=30)
    assert parent.returncode == 0 and "done" in out
    assert not alive(child) and not alive(reaper)


# the lighteval child's SIGTERM handler (judge/lighteval_compat.py), a second SIGTERM landing while the
# first is being handled: oab-bench SIGKILLed dies thread by thread, and the kernel sends its
# parent-death signal again as each thread that inherited the child ends. The handler took a lock
# (Event.set) and the second run of it, in the same thread, waited for that lock forever.
REENTERED = """
import signal, threading, time
from oab_bench.judge.generation import lighteval_compat as compat

class SecondSigtermWhileHeld(threading.Event):
    def set(self):
        with self._cond:
            signal.raise_signal(signal.SIGTERM)
            self._flag = True
            self._cond.notify_all()

compat.STOPPING = SecondSigtermWhileHeld()
compat.CHILD_STOP_GRACE_S = 1.0
compat._stop_gracefully_on_sigterm()
try:
    print("ready", flush=True)
    threading.Event().wait()  # the main thread blocked, as in lighteval's wait for its calls
except KeyboardInterrupt:
    print("interrupted", flush=True)
    time.sleep(60)  # a run that does not end by itself: the grace ends it
"""


def test_a_second_sigterm_during_the_first_neither_deadlocks_nor_outlives_the_grace():
    child = subprocess.Popen([sys.executable, "-c", REENTERED], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate(timeout=15)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "interrupted" in out  # Ctrl-C's path first (calls in flight finish, the judge stores)
    assert child.returncode == 128 + signal.SIGTERM  # then the grace's end
