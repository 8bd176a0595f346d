"""vLLM's OpenAI-compatible server for one run: `--model vllm:HF_ID_OR_PATH` (and a `vllm:` judge).

lighteval 0.13's in-process vLLM backend needs vllm<0.10.2 and cuts long prompts from the left
without a word, so we start vLLM's own server on 127.0.0.1 and talk to it through litellm like any
API (`python -m vllm.entrypoints.openai.api_server`: the CPU package has no `vllm serve`).

The server is ours for the run: a free port, waited for on /health (one that never gets healthy
fails with its last log lines), its log in OUTPUT_DIR/vllm-<name>.log, and stopped with its whole
process group however the run ends. If the run itself is killed (SIGKILL), a watcher stops it:
a shell beside the server reads a pipe only the run holds open, so the kernel closing it is the
signal (SIGTERM to the server's group, SIGKILL 30 s later); no ctypes, no polling.
"""

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

ACCESS_LINE = re.compile(r"^INFO:\s+127\.0\.0\.1:\d+ - ")
PYTHON_ENV = "OAB_BENCH_VLLM_PYTHON"  # a Python whose environment has vLLM (default: this one)
STOP_GRACE_S = 30


class ServerError(RuntimeError):
    pass


def tail(path: Path, lines: int = 30) -> str:
    """The log's last lines, without the access log's one line per request (noise after a crash)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return "".join(deque((x for x in f if not ACCESS_LINE.match(x)), maxlen=lines)).rstrip()
    except OSError:
        return "(no log)"


class VllmServer:
    """A started server (state: its process, port, log and watcher); use as a context manager."""

    def __init__(self, target: str, log_dir: Path, *, extra_args: str = "", start_timeout: float = 900.0):
        self.target, self.name = target, served_name(target)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.api_base = f"{self.url}/v1"
        self.log = Path(log_dir) / f"vllm-{self.name.replace('/', '_')}.log"
        self.extra_args = shlex.split(extra_args or "")
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.watcher: subprocess.Popen | None = None

    def command(self) -> list[str]:
        local = Path(self.target).expanduser()
        model = str(local.resolve()) if local.exists() else self.target
        python = os.environ.get(PYTHON_ENV) or sys.executable
        served = ["--served-model-name", self.name, "--host", "127.0.0.1", "--port", str(self.port)]
        return [
            python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model,
            *served,
            *self.extra_args,
        ]

    def __enter__(self) -> VllmServer:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        cmd = self.command()
        print(f"starting vLLM: {shlex.join(cmd)} (log: {self.log})", file=sys.stderr)
        with self.log.open("w", encoding="utf-8") as log:
            # its own group: stopping it stops its engine and workers; not in the terminal's, so
            # Ctrl-C reaches us alone and we stop it
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        try:
            self.watcher = _watch(self.proc.pid)
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _wait_healthy(self) -> None:
        import httpx  # ~0.3 s: not for `run -h` or a bad --tasks

        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            checkpoint()
            self.check_alive("before it was ready")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    print(f"vLLM ready: {self.name} at {self.api_base}", file=sys.stderr)
                    return
            time.sleep(0.5)
        raise ServerError(
            f"vLLM server for {self.target} was not healthy after {self.start_timeout:.0f} s; "
            f"last lines of {self.log}:\n{tail(self.log)}"
        )

    def check_alive(self, when: str = "during the run") -> None:
        code = self.proc.poll() if self.proc is not None else None
        if code is not None:
            raise ServerError(
                f"vLLM server for {self.target} exited with code {code} {when}; "
                f"last lines of {self.log}:\n{tail(self.log)}"
            )

    def stop(self) -> None:
        """SIGTERM to the server's group (vLLM shuts its engine down), SIGKILL to what is left."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=STOP_GRACE_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if self.watcher is not None:
            self.watcher.kill()  # the server's group is gone: nothing left to watch
            self.watcher.wait()
            self.watcher.stdin.close()


def _watch(pid: int) -> subprocess.Popen:
    """A shell in a session of its own that waits on a pipe we alone hold: when we die, however we
    die, the kernel closes it and the shell stops the server's group."""
    script = f"read _; kill -TERM -{pid} 2>/dev/null; sleep {STOP_GRACE_S}; kill -KILL -{pid} 2>/dev/null"
    return subprocess.Popen(
        ["/bin/sh", "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def start_local_servers(s: RunSettings, stack: contextlib.ExitStack) -> tuple[RunSettings, list[VllmServer]]:
    """`vllm:MODEL` candidate or judge: its server started (one when both are the same model), and
    litellm pointed at it; local servers batch continuously, so more requests at a time."""
    started: dict[str, VllmServer] = {}

    def server(target: str, extra: str | None) -> VllmServer:
        if target not in started:
            started[target] = stack.enter_context(
                VllmServer(target, s.output_dir, extra_args=extra or "", start_timeout=s.vllm_start_timeout)
            )
        return started[target]

    update: dict = {"concurrency": s.concurrency or API_CONCURRENCY}
    if candidate := vllm_target(s.model):
        got = server(candidate, s.vllm_args)
        update = {"model": f"openai/{got.name}", "api_base": got.api_base}
        update["concurrency"] = s.concurrency or LOCAL_CONCURRENCY
    if judge := vllm_target(s.judge.judge_model):
        got = server(judge, s.judge_vllm_args if s.judge_vllm_args is not None else s.vllm_args)
        judged = {"judge_model": f"openai/{got.name}", "api_base": got.api_base}
        if "concurrency" not in s.judge.model_fields_set:  # neither its flag nor its variable
            judged["concurrency"] = LOCAL_CONCURRENCY
        update["judge"] = s.judge.model_copy(update=judged)
    return s.model_copy(update=update), list(started.values())
