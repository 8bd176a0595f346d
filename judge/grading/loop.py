"""The event loop a judge run owns, where litellm's per-call request setup runs inline.

Why: at 64 calls in flight the one loop thread is the judge's bottleneck (its CPU per call is
the wall time once the judge answers fast). `litellm.acompletion` hands its synchronous setup
(parameter mapping; no I/O for OpenAI-style providers) to a worker thread on every call and
waits for it: a thread wake-up and a GIL hand-off per call. For calls marked INLINE_SETUP the
loop's default executor runs that setup on the loop thread instead. Anything else given to the
executor (blocking I/O, `asyncio.to_thread`) still goes to a thread. Only loops this module
creates are changed; a caller's own loop is left alone.

uvloop is not used: it costs less CPU per call but made the judge benchmark's wall time worse
(docs/performance.md has the figures, and the other alternatives tried).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import signal
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

# Set by the judge client around a call whose litellm setup does no I/O (OpenAI-compatible).
INLINE_SETUP: contextvars.ContextVar[bool] = contextvars.ContextVar("oab_inline_setup", default=False)


class InlineSetupExecutor(concurrent.futures.ThreadPoolExecutor):
    """A thread pool that runs litellm's async-call setup on the calling thread when the call is
    marked INLINE_SETUP. litellm submits `partial(context.run, partial(completion, ...,
    acompletion=True))` with the caller's copied context, so the mark travels with it; any
    other work (`asyncio.to_thread`, DNS, a plain function) goes to a thread as usual."""

    def submit(self, fn, /, *args, **kwargs):
        if _marked_setup(fn) and not args and not kwargs:
            done: concurrent.futures.Future = concurrent.futures.Future()
            try:
                done.set_result(fn())
            except BaseException as e:  # delivered to the awaiting coroutine, as from a thread
                done.set_exception(e)
            return done
        return super().submit(fn, *args, **kwargs)


def _marked_setup(fn) -> bool:
    context = getattr(getattr(fn, "func", None), "__self__", None)
    if not isinstance(context, contextvars.Context) or not context.get(INLINE_SETUP, False):
        return False
    inner = fn.args[0] if len(fn.args) == 1 and not fn.keywords else None
    return isinstance(inner, functools.partial) and inner.keywords.get("acompletion") is True


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """Ctrl-C, SIGTERM or SIGHUP (named in `signame`): raised once a run has stopped gracefully."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signame = signal.Signals(signum).name


def run(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)` on a loop of our own, with the inline-setup executor.

    Ctrl-C, SIGTERM and SIGHUP stop it alike: the running task is cancelled, so calls in flight
    finish and are stored, then `Stopped` is raised. A second signal is ignored: it must not break
    off that cleanup (asyncio's own Ctrl-C handling raises at once on a second Ctrl-C, losing the
    calls in flight, which are paid for). A signal that lands before the task starts or after it
    ends still raises `Stopped`: never lost. Ctrl-C ignored (a background job) or left to the
    default action stays so; outside the main thread signals are left alone."""
    with asyncio.Runner() as runner:
        loop = runner.get_loop()
        loop.set_default_executor(InlineSetupExecutor(thread_name_prefix="oab-judge"))
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
