"""What `oab-bench run` hands the task in its process (RUN; None under the plain lighteval CLI, whose
task reads `OAB_*` variables), and how it stops: once STOPPING is set no call starts; signals are only
recorded (SIGNALLED) and raised as Stopped at the main thread's next `checkpoint`."""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
from typing import Any

from oab_bench.judge.grading.loop import Stopped

STOPPING = threading.Event()
REFUSED: list[str] = []  # a permanent candidate error's message
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
    """Ctrl-C, SIGTERM and SIGHUP recorded for the checkpoints, the first one only; an ignored Ctrl-C
    (a background job) stays ignored; outside the main thread signals are left alone."""

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
