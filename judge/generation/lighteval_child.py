"""The lighteval child of `oab-bench run`: its command, its fresh response cache, and watching it.

lighteval's own `endpoint` command runs as a child on the task file, in the output folder (whatever
lighteval and litellm write lands there, not in the checkout), with a fresh lighteval cache each
time: lighteval 0.13 keys its cache by model and task only and replays failed calls as empty
answers (docs/lighteval-and-vllm.md). Its output is passed on with every API key masked, a local
server that dies stops it at once, and a signal to us stops it within the grace period.
"""

from __future__ import annotations

import argparse
import importlib.util
import secrets
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from oab_bench.conventions import CHILD_STOP_GRACE_S
from oab_bench.judge.generation.lighteval_compat import (
    PERMANENT_EXIT,
    PERMANENT_PREFIX,
    ensure_offline_safe,
)
from oab_bench.judge.generation.processes import (
    die_with_parent,
    end_reaper,
    held_stops,
    kill_group,
    raise_if_stopped,
    reap_if_orphaned,
    stop_group,
)
from oab_bench.judge.generation.run_settings import child_env, model_config
from oab_bench.judge.generation.vllm_server import VllmServer
from oab_bench.judge.output import write_atomic
from oab_bench.judge.redact import redact
from oab_bench.judge.settings import JudgeSettings


def task_file() -> str:
    spec = importlib.util.find_spec("oab_bench_task")
    if spec is None or not spec.origin:
        raise FileNotFoundError("oab_bench_task.py is not importable: install the project (pip install -e .)")
    return spec.origin


def task_spec(tasks: str) -> str:
    return ",".join(t if "|" in t else f"{t}|0" for t in (x.strip() for x in tasks.split(",")) if t)


def run_lighteval(args: argparse.Namespace, settings: JudgeSettings, out: Path) -> int:
    """lighteval generates and judges in its child, in `out`; its exit code."""
    ensure_offline_safe()
    cache_dir = out / f".lighteval-cache-{secrets.token_hex(4)}"  # fresh: no replayed failures
    cache_dir.mkdir()  # (mkdtemp's 0700 would shut a teammate out of what a killed run leaves)
    config = write_atomic(
        out / "model_config.yaml", yaml.safe_dump(model_config(args, cache_dir), sort_keys=False)
    )
    # lighteval's own `endpoint` command, started without its other backends (lighteval_endpoint.py)
    cmd = [
        sys.executable,
        "-m",
        "oab_bench.judge.generation.lighteval_endpoint",
        "endpoint",
        "litellm",
        str(config),
        task_spec(args.tasks),
    ]
    cmd += ["--custom-tasks", task_file(), "--output-dir", str(out), "--save-details"]
    if args.max_samples:
        cmd += ["--max-samples", str(args.max_samples)]
    print("running:", " ".join(cmd), file=sys.stderr)
    try:
        # in the output folder: whatever lighteval and litellm write lands there, not in the checkout
        return run_redacted(cmd, env=child_env(args, out, settings), cwd=out, watch=args.local_servers)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


class CandidateRefused(ValueError):
    """The candidate's provider answered with a permanent error (401, 403, 404, a hopeless 400)."""


def run_redacted(cmd: list[str], *, env: dict[str, str], cwd: Path, watch: list[VllmServer] = ()) -> int:
    """Run `cmd`, passing its output on with every API key masked (lighteval logs raw API errors).

    The child has its own process group and dies with us. If a server in `watch` dies meanwhile,
    stop `cmd` at once: lighteval would retry a dead server for many minutes and then report
    empty answers. On Ctrl-C, SIGTERM or SIGHUP the child gets SIGTERM (it finishes and keeps
    its calls in flight, lighteval_compat.py) and SIGKILL after the grace period; its
    output (a traceback) is no longer shown. A permanent candidate error becomes CandidateRefused.
    """
    with held_stops():  # a signal now is raised below, once the child is ours to stop
        proc = subprocess.Popen(
            cmd,
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent(ctrl_c=True),
        )
        reaper = reap_if_orphaned(proc, grace=CHILD_STOP_GRACE_S + 5)  # if we are SIGKILLed and it hangs
    quiet = threading.Event()
    refused: list[str] = []

    def pump(src, dst) -> None:
        for raw in iter(src.readline, b""):
            line = redact(raw.decode("utf-8", errors="replace"))
            if line.startswith(PERMANENT_PREFIX):
                refused.append(line[len(PERMANENT_PREFIX) :].strip())
            if not quiet.is_set():
                dst.write(line)
                dst.flush()

    threads = [
        threading.Thread(target=pump, args=(proc.stdout, sys.stdout), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, sys.stderr), daemon=True),
    ]
    try:
        for t in threads:
            t.start()
        while (code := proc.poll()) is None:
            raise_if_stopped()
            for server in watch:
                server.check_alive()  # raises ServerError, with the server's last log lines
            time.sleep(0.2)
    except BaseException:
        quiet.set()
        stop_group(proc, grace=CHILD_STOP_GRACE_S + 5)
        raise
    finally:
        kill_group(proc)  # anything the child left in its group
        end_reaper(reaper)
    for t in threads:
        t.join(timeout=10)
    if code == PERMANENT_EXIT and refused:
        raise CandidateRefused(
            f"the candidate's server refused the request, so the run stopped: {refused[-1]}"
        )
    return code
