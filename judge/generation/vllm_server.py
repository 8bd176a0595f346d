"""vLLM's OpenAI-compatible server for one run (`vllm:` models): a free port on 127.0.0.1, healthy or
its log's last lines, stopped with its process group however the run ends; killed with the run, a
shell watcher reading a pipe only the run holds sees it close and stops the group."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from oab_bench.judge.generation import run_settings
from oab_bench.judge.generation.run_settings import LOCAL_CONCURRENCY, litellm_name, served_name, vllm_target
from oab_bench.judge.generation.task_run import checkpoint

ACCESS_LINE = re.compile(r"^INFO:\s+127\.0\.0\.1:\d+ - ")  # one per request: noise after a crash
PYTHON_ENV = "OAB_BENCH_VLLM_PYTHON"  # a Python whose environment has vLLM (default: this one)
GRACE_S = 30


class ServerError(RuntimeError):
    pass


def command(target: str, port: int, extra_args: str | None) -> list[str]:
    """`python -m vllm.entrypoints.openai.api_server`: the CPU package has no `vllm serve`."""
    local = Path(target).expanduser()
    model = str(local.resolve()) if local.exists() else target
    server = [os.environ.get(PYTHON_ENV) or sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    flags = ["--model", model, "--served-model-name", served_name(target), "--host", "127.0.0.1", "--port"]
    return [*server, *flags, str(port), *shlex.split(extra_args or "")]


def tail(log: Path) -> str:
    try:
        with log.open(encoding="utf-8", errors="replace") as f:
            kept = "".join(deque((x for x in f if not ACCESS_LINE.match(x)), maxlen=30)).rstrip()
    except OSError:
        kept = "(no log)"
    return f"last lines of {log}:\n{kept}"


@contextlib.contextmanager
def vllm_server(target: str, log_dir: Path, extra_args: str | None, start_timeout: float):
    """The server, healthy: yields its api_base and a check that raises ServerError once it has exited;
    on leaving, SIGTERM to its group (vLLM shuts its engine down), then SIGKILL to what is left."""
    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = command(target, port, extra_args)
    log = log_dir / f"vllm-{served_name(target).replace('/', '_')}.log"
    print(f"starting vLLM: {shlex.join(cmd)} (log: {log})", file=sys.stderr)
    with log.open("w", encoding="utf-8") as out:  # its own group: Ctrl-C reaches us alone
        proc = subprocess.Popen(cmd, stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True)
    script = f"read _; kill -TERM -{proc.pid}; sleep {GRACE_S}; kill -KILL -{proc.pid}"
    watcher = subprocess.Popen(
        ["/bin/sh", "-c", script], stdin=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
    )

    def check_alive(when: str = "during the run") -> None:
        if (code := proc.poll()) is not None:
            raise ServerError(f"vLLM server for {target} exited with code {code} {when}; {tail(log)}")

    deadline, url = time.monotonic() + start_timeout, f"http://127.0.0.1:{port}"
    try:
        while True:
            checkpoint()
            check_alive("before it was ready")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                why = f"was not healthy after {start_timeout:.0f} s"
                raise ServerError(f"vLLM server for {target} {why}; {tail(log)}")
            time.sleep(0.5)
        print(f"vLLM ready: {served_name(target)} at {url}/v1", file=sys.stderr)
        yield f"{url}/v1", check_alive
    finally:
        for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, None)):
            with contextlib.suppress(ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, sig)
                proc.wait(wait)
        watcher.kill()
        watcher.wait()
        watcher.stdin.close()


def start_local_servers(s: run_settings.RunSettings, stack: contextlib.ExitStack) -> tuple:
    """Each `vllm:` model's server started (one for both roles), litellm pointed at it with more requests
    at a time (a local server batches continuously); the settings and each server's `check_alive`."""
    started: dict[str, tuple] = {}

    def api_base(target: str, extra: str | None) -> str:
        if target not in started:
            server = vllm_server(target, s.output_dir, extra, s.vllm_start_timeout)
            started[target] = stack.enter_context(server)
        return started[target][0]

    update: dict = {"concurrency": s.concurrency or run_settings.API_CONCURRENCY}
    if candidate := vllm_target(s.model):
        update = {"model": litellm_name(s.model), "api_base": api_base(candidate, s.vllm_args)}
        update["concurrency"] = s.concurrency or LOCAL_CONCURRENCY
    if judge := vllm_target(s.judge.judge_model):
        extra = s.vllm_args if s.judge_vllm_args is None else s.judge_vllm_args
        judged = {"judge_model": litellm_name(s.judge.judge_model), "api_base": api_base(judge, extra)}
        if "concurrency" not in s.judge.model_fields_set:  # neither its flag nor its variable
            judged["concurrency"] = LOCAL_CONCURRENCY
        update["judge"] = s.judge.model_copy(update=judged)
    return s.model_copy(update=update), [alive for _, alive in started.values()]
