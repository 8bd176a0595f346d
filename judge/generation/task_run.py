"""What `oab-bench run` tells the task it runs in its own process, set before lighteval's pipeline
starts: the dataset folder, the answer budget, the judge (its store opened as the run allows), the
answer store. None under the plain lighteval CLI, where the task reads `OAB_*` variables instead.

STOPPING and REFUSED are shared by both: set, no new candidate call or judgment starts (a signal to
`oab-bench run`, or a permanent error from the candidate, whose message REFUSED keeps).
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
from typing import Any

from oab_bench.judge.grading.loop import Stopped

STOPPING = threading.Event()
REFUSED: list[str] = []


@dataclasses.dataclass
class TaskRun:
    dataset: str  # the folder lighteval loads
    max_new_tokens: int
    judge: Any  # a Judge (or jury, repeats): what the metric grades with
    candidate: str  # the model named in the judgments
    answers: Any = None  # the AnswerStore served and filled; None: off
    judged: list = dataclasses.field(default_factory=list)  # every judgment made, for the summary


RUN: TaskRun | None = None


def start(run: TaskRun | None) -> None:
    """`run` is the task's until the next start (None: the plain CLI's variables again)."""
    global RUN
    RUN = run
    STOPPING.clear()
    REFUSED.clear()


SIGNALLED: list[int] = []  # the signal `stop_signals` took: the run stops at its next checkpoint


def checkpoint() -> None:
    """Between the run's steps and in its waits: a signal taken raises Stopped here, never inside a
    library's code, a child's start or a write (the handler only records it)."""
    if SIGNALLED:
        STOPPING.set()
        raise Stopped(SIGNALLED[0])


@contextlib.contextmanager
def stop_signals():
    """Ctrl-C, SIGTERM and SIGHUP recorded for the run's checkpoints; a second one changes nothing.
    Ctrl-C ignored (a background job) stays ignored; outside the main thread signals are left alone."""

    def record(signum, frame) -> None:
        if not SIGNALLED:  # list.append only: no lock taken inside a handler
            SIGNALLED.append(signum)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if sig != signal.SIGINT or signal.getsignal(sig) is signal.default_int_handler:
            with contextlib.suppress(ValueError):
                previous[sig] = signal.signal(sig, record)
    SIGNALLED.clear()
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        SIGNALLED.clear()
