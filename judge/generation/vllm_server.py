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

from oab_bench.judge.generation.run_settings import (
    API_CONCURRENCY,
    LOCAL_CONCURRENCY,
    RunSettings,
    served_name,
    vllm_target,
)
from oab_bench.judge.generation.task_run import checkpoint

ACCESS_LINE = re.compile(r"^INFO:\s+127\.0\.0\.1:\d+ - ")  # one per request: noise after a crash
PYTHON_ENV = "OAB_BENCH_VLLM_PYTHON"  # a Python whose environment has vLLM (default: this one)
GRACE_S = 30


class ServerError(RuntimeError):
    pass


class VllmServer:
    """A started server (its process, address, log and watcher); use as a context manager."""

    def __init__(self, target: str, log_dir: Path, *, extra_args: str = "", start_timeout: float = 900.0):
        self.target, self.name, self.start_timeout = target, served_name(target), start_timeout
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url, self.api_base = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{self.port}/v1"
        self.log = Path(log_dir) / f"vllm-{self.name.replace('/', '_')}.log"
        self.extra_args = shlex.split(extra_args or "")
        self.proc = self.watcher = None

    def command(self) -> list[str]:
        """`python -m vllm.entrypoints.openai.api_server`: the CPU package has no `vllm serve`."""
        local = Path(self.target).expanduser()
        model = str(local.resolve()) if local.exists() else self.target
        python = os.environ.get(PYTHON_ENV) or sys.executable
        flags = ["--model", model, "--served-model-name", self.name, "--host", "127.0.0.1", "--port"]
        return [python, "-m", "vllm.entrypoints.openai.api_server", *flags, str(self.port), *self.extra_args]

    def __enter__(self) -> VllmServer:
        import httpx

        cmd = self.command()
        print(f"starting vLLM: {shlex.join(cmd)} (log: {self.log})", file=sys.stderr)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("w", encoding="utf-8") as log:  # its own group: Ctrl-C reaches us alone
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
            )
        script = f"read _; kill -TERM -{self.proc.pid}; sleep {GRACE_S}; kill -KILL -{self.proc.pid}"
        self.watcher = subprocess.Popen(
            ["/bin/sh", "-c", script],
            stdin=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.start_timeout
        try:
            while time.monotonic() < deadline:
                checkpoint()
                self.check_alive("before it was ready")
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                        print(f"vLLM ready: {self.name} at {self.api_base}", file=sys.stderr)
                        return self
                time.sleep(0.5)
            raise ServerError(
                f"vLLM server for {self.target} was not healthy after {self.start_timeout:.0f} s; {self.tail()}"
            )
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    def tail(self, lines: int = 30) -> str:
        try:
            with self.log.open(encoding="utf-8", errors="replace") as f:
                kept = "".join(deque((x for x in f if not ACCESS_LINE.match(x)), maxlen=lines)).rstrip()
        except OSError:
            kept = "(no log)"
        return f"last lines of {self.log}:\n{kept}"

    def check_alive(self, when: str = "during the run") -> None:
        if (code := self.proc.poll()) is not None:
            raise ServerError(f"vLLM server for {self.target} exited with code {code} {when}; {self.tail()}")

    def stop(self) -> None:
        """SIGTERM to the server's group (vLLM shuts its engine down), SIGKILL to what is left."""
        for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, None)):
            with contextlib.suppress(ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, sig)
                self.proc.wait(wait)
        self.watcher.kill()
        self.watcher.wait()
        self.watcher.stdin.close()


def start_local_servers(s: RunSettings, stack: contextlib.ExitStack) -> tuple[RunSettings, list[VllmServer]]:
    """`vllm:` candidate or judge: its server started (one when both are the same model), litellm
    pointed at it, and more requests at a time (a local server batches continuously)."""
    started: dict[str, VllmServer] = {}

    def server(target: str, extra: str | None) -> VllmServer:
        if target not in started:
            made = VllmServer(
                target, s.output_dir, extra_args=extra or "", start_timeout=s.vllm_start_timeout
            )
            started[target] = stack.enter_context(made)
        return started[target]

    update: dict = {"concurrency": s.concurrency or API_CONCURRENCY}
    if candidate := vllm_target(s.model):
        got = server(candidate, s.vllm_args)
        update = {"model": f"openai/{got.name}", "api_base": got.api_base}
        update["concurrency"] = s.concurrency or LOCAL_CONCURRENCY
    if judge := vllm_target(s.judge.judge_model):
        got = server(judge, s.vllm_args if s.judge_vllm_args is None else s.judge_vllm_args)
        judged = {"judge_model": f"openai/{got.name}", "api_base": got.api_base}
        if "concurrency" not in s.judge.model_fields_set:  # neither its flag nor its variable
            judged["concurrency"] = LOCAL_CONCURRENCY
        update["judge"] = s.judge.model_copy(update=judged)
    return s.model_copy(update=update), list(started.values())
