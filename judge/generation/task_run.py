"""What `oab-bench run` tells the task it runs in its own process (RUN, set before lighteval's
pipeline starts: the dataset folder, the answer budget, the judge with its store opened as the run
allows, the answer store; None under the plain lighteval CLI, where the task reads `OAB_*`
variables), and how the run stops.

STOPPING set (a signal, a dead server, a permanent candidate error, whose message REFUSED keeps): no
candidate call or judgment starts. ERRORS: the last error of each candidate prompt. The run's signal
handlers only record (SIGNALLED); its main thread raises Stopped at its next `checkpoint`, never
inside a library's code, a child's start or a write.
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
ERRORS: dict[str, str] = {}  # a candidate prompt's user message -> its last call's error
SIGNALLED: list[int] = []


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
    """`run` is the task's from now (None: the plain CLI's variables again); nothing stopped."""
    global RUN
    RUN = run
    STOPPING.clear()
    REFUSED.clear()
    ERRORS.clear()


def checkpoint() -> None:
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
        STOPPING.clear()  # the run is over: whatever runs next in this process may call
