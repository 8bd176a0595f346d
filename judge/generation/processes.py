"""Children that never outlive `oab-bench run`, however it ends.

Each child (the lighteval run, a vLLM server) gets its own process group, so stopping it
stops its workers too, and asks the kernel to send it SIGTERM if we die first (Linux
PR_SET_PDEATHSIG: a SIGKILL, a crash, a closed terminal's parent). Ctrl-C, SIGTERM and SIGHUP to
us become `Stopped`, a KeyboardInterrupt, so one cleanup runs for all of them.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys

from oab_bench.judge.grading.loop import Stopped  # one "stopped by a signal" for the run and the judge loop

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM, *, ctrl_c: bool = False):
    """A preexec_fn: the child gets `sig` when this process dies (no-op off Linux). `ctrl_c`: the
    child handles SIGINT even when we were started with it ignored (a background job), since
    the lighteval child interrupts itself with SIGINT on SIGTERM (lighteval_compat.py)."""
    if not sys.platform.startswith("linux"):
        return None
    parent = os.getpid()

    def preexec() -> None:
        if ctrl_c:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: do it ourselves
            os.kill(os.getpid(), sig)

    return preexec


@contextlib.contextmanager
def stop_signals(signals=(signal.SIGTERM, signal.SIGHUP, signal.SIGINT)):
    """SIGTERM, SIGHUP and Ctrl-C raise `Stopped` in the main thread while inside this block, once:
    a second signal must not break off the cleanup the first one started."""
    fired = []

    def handler(signum, frame):
        if not fired:
            fired.append(signum)
            raise Stopped(signum)

    previous = {}
    for sig in signals:
        if sig == signal.SIGINT and signal.getsignal(sig) is not signal.default_int_handler:
            continue  # Ctrl-C ignored (a background job) or handled by someone else: leave it
        with contextlib.suppress(ValueError):  # not the main thread: leave signals alone
            previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def stop_group(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM to the child's group, SIGKILL to what is left after `grace` seconds."""
    with contextlib.suppress(ProcessLookupError):
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    kill_group(proc)


def kill_group(proc: subprocess.Popen) -> None:
    """Whatever is left in the child's group (its own children included) ends now."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


def reap_if_orphaned(proc: subprocess.Popen, grace: float) -> subprocess.Popen | None:
    """A backstop for PR_SET_PDEATHSIG: if we die (SIGKILL) and the child, sent SIGTERM by the
    kernel, has not ended `grace` seconds later, SIGKILL its group. The child's own stop runs in
    Python (lighteval_compat.py), and Python can hang: a lighteval child deadlocked in its own
    SIGTERM handler outlived a killed run for minutes (fixed there; this catches the next such
    hang, or a vLLM server's). A shell loop outside both
    processes: it checks once a second and ends with the child (no-op off Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    parent, child = os.getpid(), proc.pid
    script = (
        f"while kill -0 {parent} && kill -0 {child}; do sleep 1; done 2>/dev/null; "
        f"kill -0 {child} 2>/dev/null || exit 0; sleep {grace:g}; kill -KILL -{child} 2>/dev/null; exit 0"
    )
    return subprocess.Popen(
        ["/bin/sh", "-c", script],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not in our group or the child's: a signal to either leaves it be
    )


def end_reaper(reaper: subprocess.Popen | None) -> None:
    """The backstop's child has ended (it checks once a second): collect it, never leave it behind."""
    if reaper is None:
        return
    try:
        reaper.wait(timeout=3)
    except subprocess.TimeoutExpired:
        reaper.kill()
        reaper.wait()
