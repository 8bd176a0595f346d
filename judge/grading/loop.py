"""The event loop a judge run owns: Ctrl-C, SIGTERM or SIGHUP stops it once (calls in flight finish
and are stored, then `Stopped`); a second signal does not break that off, as asyncio's would."""

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
    """`asyncio.run(coro)` where the first signal cancels the task (before or after it: `Stopped`);
    an ignored or default Ctrl-C stays so, and outside the main thread signals are left alone."""
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
