"""Children that never outlive `oab-bench run`, however it ends.

Each child (the lighteval run, a vLLM server) gets its own process group, so stopping it
stops its workers too, and asks the kernel to send it SIGTERM if we die first (Linux
PR_SET_PDEATHSIG: a SIGKILL, a crash, a closed terminal's parent). Ctrl-C, SIGTERM and SIGHUP to
us become `Stopped`, a KeyboardInterrupt, so one cleanup runs for all of them.

A handler's exception is not always delivered: Python runs signal handlers wherever the main
thread is, and one raised inside an at-fork callback (every Popen with a preexec_fn runs them) or
a finalizer is printed ("Exception ignored in ...") and dropped. So a signal is also recorded,
`raise_if_stopped` raises a recorded one at the run's checkpoints, and a block that ends normally
after a signal raises it on the way out: no signal is lost, however late or badly placed it lands.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
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


@dataclasses.dataclass
class _Taken:
    """The signal a stop_signals block took, and whether a checkpoint has raised it (once is enough)."""

    signum: int | None = None
    raised: bool = False


_TAKEN: list[_Taken] = []  # one per open stop_signals block, innermost last
_HELD: list[bool] = []  # open held_stops blocks: record a signal, raise it at the next checkpoint


@contextlib.contextmanager
def stop_signals(signals=(signal.SIGTERM, signal.SIGHUP, signal.SIGINT)):
    """SIGTERM, SIGHUP and Ctrl-C raise `Stopped` in the main thread while inside this block, once:
    a second signal must not break off the cleanup the first one started. A signal whose `Stopped`
    was lost is raised again at the next `raise_if_stopped`, or when the block ends."""
    taken = _Taken()

    def handler(signum, frame):
        if taken.signum is None:  # no lock taken inside a handler
            taken.signum = signum
            if not _HELD:
                raise Stopped(signum)

    previous = {}
    for sig in signals:
        if sig == signal.SIGINT and signal.getsignal(sig) is not signal.default_int_handler:
            continue  # Ctrl-C ignored (a background job) or handled by someone else: leave it
        with contextlib.suppress(ValueError):  # not the main thread: leave signals alone
            previous[sig] = signal.signal(sig, handler)
    _TAKEN.append(taken)
    try:
        yield
        raise_if_stopped()  # the body ended as if no signal came: its Stopped was lost
    finally:
        _TAKEN.remove(taken)
        for sig, old in previous.items():
            signal.signal(sig, old)


def raise_if_stopped() -> None:
    """A checkpoint for the main thread between steps and in its waiting loops: raise the `Stopped`
    of a signal an open stop_signals block took and nothing has raised yet (its handler's was lost,
    or held). Never call it while cleaning up after one."""
    for taken in _TAKEN:
        if taken.signum is not None and not taken.raised:
            taken.raised = True
            raise Stopped(taken.signum)


@contextlib.contextmanager
def held_stops():
    """Signals in this block are recorded, not raised: raised inside Popen, a `Stopped` leaves a
    started child that nobody stops, and its at-fork callbacks drop it. Call `raise_if_stopped`
    once the child is in the caller's hands."""
    _HELD.append(True)
    try:
        yield
    finally:
        _HELD.pop()


def stop_group(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM to the child's group, SIGKILL to what is left after `grace` seconds. A signal
    meanwhile waits for the end of it (held_stops): a cleanup is never broken off."""
    with held_stops():
        with contextlib.suppress(ProcessLookupError):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
        kill_group(proc)


def kill_group(proc: subprocess.Popen) -> None:
    """Whatever is left in the child's group (its own children included) ends now."""
    with held_stops():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)


def reap_if_orphaned(proc: subprocess.Popen, grace: float) -> subprocess.Popen | None:
    """A backstop for PR_SET_PDEATHSIG: if we die (SIGKILL) and the child, sent SIGTERM by the
    kernel, has not ended `grace` seconds later, SIGKILL its group: what is left of it, even when
    the child itself has ended (a worker of its group that ignored the SIGTERM). The child's own
    stop runs in Python (lighteval_compat.py), and Python can hang: a lighteval child deadlocked in
    its own SIGTERM handler outlived a killed run for minutes (fixed there; this catches the next
    such hang, or a vLLM server's). A shell loop outside both processes: it checks once a second,
    and ends with the child while we live (we stop its group then; no-op off Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    parent, child = os.getpid(), proc.pid
    script = (
        f"while kill -0 {parent} && kill -0 {child}; do sleep 1; done 2>/dev/null; "
        f"kill -0 {parent} 2>/dev/null && exit 0; sleep {grace:g}; kill -KILL -{child} 2>/dev/null; exit 0"
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
    with held_stops():
        try:
            reaper.wait(timeout=3)
        except subprocess.TimeoutExpired:
            reaper.kill()
            reaper.wait()
