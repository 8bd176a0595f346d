"""Shared fixtures. No test touches the network; the upstream data is read from ../shared."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.publish import write_dataset
from tests import synthetic as syn

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# The signal tests expect a terminal's dispositions, whatever started pytest: `nohup` (SIGHUP) or a
# shell's background job without job control (SIGINT) leave them ignored, and children inherit that.
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGHUP, signal.SIG_DFL)

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("OAB_BENCH_SHARED_DATA", REPO.parent / "shared" / "data")).resolve()

# The modules that take longest (`make test --durations`, docs/performance.md), handed out first: with
# `--no-loadscope-reorder` xdist gives modules out in collection order, so none of them starts last
# and keeps one core busy alone (xdist's own order, most tests first, started them last).
LONGEST_FIRST = [
    "test_run_lifecycle.py",
    "test_judge_loop.py",
    "test_shared_caches.py",
    "test_lighteval_cli.py",
    "test_raw_layout.py",
    "test_inspect.py",
    "test_judge_sweep.py",
    "test_packaging.py",
    "test_judge_sweep_stops.py",
    "test_sharing.py",
    "test_e2e.py",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest as collected


def _require(path: Path) -> Path:
    if path.exists():
        return path
    message = (
        f"upstream data not found at {path}: no ../shared here and upstream's release was not fetched "
        "(`make test` fetches it with internet: python -m tests.upstream_data; or set OAB_BENCH_SHARED_DATA)"
    )
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)  # under CI missing data is a failure, never a skip
    pytest.skip(message)


@pytest.fixture(scope="session")
def upstream_v1() -> Path:
    return _require(SHARED_DATA / "oab_bench_v1")


@pytest.fixture(scope="session")
def judge_prompts_v2() -> Path:
    return _require(SHARED_DATA / "judge_prompts_v2.jsonl")


@pytest.fixture(scope="session")
def built_rows(upstream_v1):
    from oab_bench.dataset_builder.build import build_rows

    return build_rows(upstream_v1)


@pytest.fixture(scope="session")
def built_dataset(tmp_path_factory, built_rows) -> Path:
    from oab_bench.dataset_builder.publish import write_dataset

    rows, report = built_rows
    return write_dataset(rows, report, tmp_path_factory.mktemp("ds") / "oab_bench")


SECRET = "sk-oabtest-0123456789abcdefghijKLMNOP"


@pytest.fixture
def judge_key(monkeypatch):
    """A distinctive key in the environment: it must reach the server and nothing we write."""
    monkeypatch.setenv("OAB_JUDGE_API_KEY", SECRET)
    return SECRET


@pytest.fixture
def stub():
    """Start OpenAI-compatible stub servers on 127.0.0.1: `stub(policy=..., faults=[...])`."""
    from tests.openai_stub import StubServer

    servers = []

    def start(**kwargs):
        server = StubServer(**kwargs).start()
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.stop()


# Settings a library reads once, when it is imported: a test that changes them needs a process of its own.
READ_AT_IMPORT = ("HOME", "USER", "XDG_", "HF_", "HUGGINGFACE_", "LITELLM_", "PYTHON", "TMPDIR")


def oab(*args, env: dict | None = None, cwd: Path = REPO, timeout: float = 900, process: bool = False):
    """`oab-bench ARGS...`, output captured as text: in this process (no start-up cost) unless
    `process` is asked for or `env` changes a setting read at import (then in a child process)."""
    argv = [str(a) for a in args]
    if process or _changes_import_settings(env):
        cmd = [sys.executable, "-m", "oab_bench.scripts.cli", *argv]
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return in_process(argv, env=env, cwd=cwd)


def _changes_import_settings(env: dict | None) -> bool:
    if env is None:
        return False
    changed = {k for k in set(env) | set(os.environ) if env.get(k) != os.environ.get(k)}
    return any(k.startswith(READ_AT_IMPORT) for k in changed)


def _stream_handlers() -> list[logging.StreamHandler]:
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    found = {
        id(h): h
        for lg in loggers
        for h in getattr(lg, "handlers", [])
        if isinstance(h, logging.StreamHandler)
        and not isinstance(h, logging.FileHandler)
        and not isinstance(getattr(type(h), "stream", None), property)  # follows sys.stderr already
    }
    return list(found.values())


def in_process(argv: list[str], *, env: dict | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """`oab-bench ARGV` called in this process with `env` as its environment and `cwd` as its folder,
    stdout and stderr captured: what a child process would give, without its seconds of imports."""
    from oab_bench.scripts.cli import main

    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    out, err = io.StringIO(), io.StringIO()
    handlers = [h for h in _stream_handlers() if h.stream in (sys.stderr, sys.__stderr__)]
    try:
        for h in handlers:  # logs a library set up at import go where a child's would: its stderr
            h.setStream(err)
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        sys.argv = ["oab-bench", *argv]  # what a command quotes back (a resume line) reads it
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:  # argparse's usage errors
                code = e.code if isinstance(e.code, int) else 2
    finally:
        for h in handlers:
            h.setStream(sys.stderr)
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["oab-bench", *argv], code, out.getvalue(), err.getvalue())


@pytest.fixture
def synthetic_dataset(tmp_path):
    """A made-up exam (edition 90, civil) built into a dataset folder, with its rows."""
    src = syn.write_source(tmp_path / "src", syn.exam())
    rows, report = build_rows(src, src / "errata.yaml")
    return write_dataset(rows, report, tmp_path / "ds"), {r.question_id: r for r in rows}


@pytest.fixture
def source(tmp_path):
    return syn.write_source(tmp_path / "src", syn.exam())


@pytest.fixture
def dataset(tmp_path):
    """A made-up exam (edition 90, civil) built into a dataset folder, with its rows."""
    src = syn.write_source(tmp_path / "src", syn.exam())
    rows, report = build_rows(src, src / "errata.yaml")
    return write_dataset(rows, report, tmp_path / "ds"), rows


@pytest.fixture(scope="module")
def task_module(built_dataset):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OAB_BENCH_DATASET", str(built_dataset))
        mp.setenv("OAB_JUDGE_MODEL", "openai/judge-unit")
        import oab_bench_task

        assert oab_bench_task.TASKS_TABLE  # made, and lighteval patched, when lighteval first reads it
        yield oab_bench_task
