"""`oab-bench run` with vllm: models, without vLLM: which servers start, and what the run then uses."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from types import SimpleNamespace

import pytest

from oab_bench.judge.generation import vllm_server
from oab_bench.judge.generation.run_settings import RunSettings, served_name, vllm_target
from oab_bench.scripts.cli import build_parser
from tests.conftest import REPO
from tests.helpers import (
    clean_env,
)


@pytest.fixture
def fake(monkeypatch):
    started = SimpleNamespace(started=[])

    @contextlib.contextmanager
    def server(target, log_dir, extra_args, start_timeout):
        started.started.append(target)
        yield f"http://127.0.0.1:{9000 + len(started.started)}/v1", lambda: None

    monkeypatch.setattr(vllm_server, "vllm_server", server)
    monkeypatch.delenv("OAB_JUDGE_CONCURRENCY", raising=False)
    return started


def local(tmp_path, *argv):
    args = build_parser().parse_args(["run", "--output-dir", str(tmp_path), *argv])
    with contextlib.ExitStack() as stack:
        s, _ = vllm_server.start_local_servers(RunSettings.from_args(args), stack)
        return s, s.judge


def test_same_model_for_candidate_and_judge_is_one_server(fake, tmp_path):
    args, settings = local(
        tmp_path, "--model", "vllm:Qwen/Qwen3.5-35B-A3B", "--judge-model", "vllm:Qwen/Qwen3.5-35B-A3B"
    )
    assert fake.started == ["Qwen/Qwen3.5-35B-A3B"]
    assert args.model == settings.judge_model == "openai/Qwen/Qwen3.5-35B-A3B"
    assert args.api_base == settings.api_base
    assert args.concurrency == 64 and settings.concurrency == 64  # continuous batching wants many


def test_another_judge_model_is_a_second_server_with_its_own_args(fake, tmp_path):
    _, settings = local(
        tmp_path,
        "--model",
        "vllm:a/cand",
        "--vllm-args",
        "--max-model-len 8192",
        "--judge-model",
        "vllm:b/judge",
        "--judge-vllm-args",
        "--max-model-len 4096",
        "--judge-concurrency",
        "8",
    )
    assert fake.started == ["a/cand", "b/judge"] and settings.concurrency == 8


def test_api_models_start_nothing(fake, tmp_path):
    args, settings = local(tmp_path, "--model", "openai/gpt-4o-mini")
    assert fake.started == [] and args.concurrency == 10 and settings.judge_model == "openai/gpt-5.2"


def test_server_names_and_command(tmp_path):
    assert vllm_target("vllm:org/name") == "org/name" and vllm_target("openai/x") is None
    folder = tmp_path / "my-model"
    folder.mkdir()
    assert served_name(str(folder)) == "my-model" and served_name("org/name") == "org/name"
    cmd = vllm_server.command(str(folder), 8000, "--dtype float32")
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"] and cmd[-2:] == ["--dtype", "float32"]
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1" and str(folder.resolve()) in cmd


@pytest.mark.slow
def test_make_test_vllm_fails_without_its_data_or_vllm(tmp_path):
    dry = subprocess.run(["make", "-n", "test-vllm"], cwd=REPO, capture_output=True, text=True, timeout=60)
    (line,) = [x for x in dry.stdout.splitlines() if "pytest" in x]
    assert "CI=true" in line and "OAB_BENCH_REQUIRE_VLLM=1" in line
    env_part, _, command = line.partition(".venv-vllm/bin/python")
    env = clean_env(OAB_BENCH_SHARED_DATA=str(tmp_path / "nowhere"))
    env |= dict(pair.split("=", 1) for pair in env_part.split())
    proc = subprocess.run(
        [sys.executable, *command.split()], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "skipped" not in proc.stdout.splitlines()[-1]
