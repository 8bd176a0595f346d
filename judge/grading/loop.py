"""The event loop a judge run owns, and how a signal stops it.

Ctrl-C, SIGTERM and SIGHUP stop a run alike: calls in flight finish and are stored (they are paid
for), nothing new starts, then `Stopped` is raised; a second signal must not break that off, as
asyncio's own Ctrl-C handling would.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """Ctrl-C, SIGTERM or SIGHUP (named in `signame`): raised once a run has stopped gracefully."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signame = signal.Signals(signum).name


def run(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)` where a signal cancels the running task once and later ones are ignored.
    A signal that lands before the task starts or after it ends still raises `Stopped`. Ctrl-C
    ignored or left to the default action stays so; outside the main thread signals are left alone."""
    with asyncio.Runner() as runner:
        loop = runner.get_loop()
        main_task: list[asyncio.Task] = []
        fired: list[int] = []

        async def main() -> T:
            main_task.append(asyncio.current_task())
            if fired:  # stopped before it began
                coro.close()
                raise asyncio.CancelledError
            return await coro

        def on_signal(signum, frame):
            if not fired:
                fired.append(signum)
                if main_task:
                    loop.call_soon_threadsafe(main_task[0].cancel)

        previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                if sig == signal.SIGINT and not callable(signal.getsignal(sig)):
                    continue  # SIG_IGN or SIG_DFL: not ours to change
                previous[sig] = signal.signal(sig, on_signal)
        try:
            result = runner.run(main())
        except asyncio.CancelledError:
            if fired:
                raise Stopped(fired[0]) from None
            raise
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)
        if fired:  # it came as the task ended: what was judged is stored, and we stop
            raise Stopped(fired[0])
        return result
