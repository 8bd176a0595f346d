"""Benchmark: N judge calls against the local stub server with a fixed latency L at concurrency C.

Prints wall time / ideal, where ideal = ceil(N/C) * L (target <= 1.15 at N=2520, C=64,
L=0.25 s), then the time of a fully cached rerun.

    python -m scripts.bench_judge [--n 2520] [--concurrency 64] [--latency 0.25]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def start_stub(latency: float) -> tuple[subprocess.Popen, str]:
    cfg = Path(tempfile.mkstemp(suffix=".json")[1])
    cfg.write_text(json.dumps({"latency": latency, "policy": "max"}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.openai_stub", "--port", "0", "--config", str(cfg)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/v1"


def _cpu_seconds(pid: int) -> float:
    """user+system CPU of another process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2520)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.25)
    parser.add_argument(
        "--judge-model",
        default="openai/gpt-5.2",
        help="the name sent (the stub answers any); upstream's recommended judge, priced by litellm's cost map",
    )
    parser.add_argument("--source", default=str(REPO.parent / "shared/data/oab_bench_v1"))
    args = parser.parse_args()

    os.environ.setdefault("OAB_JUDGE_API_KEY", "sk-bench")
    from dataset_builder.build import build_rows
    from judge.answers import Answer
    from judge.runner import Judge, run_judge_all
    from judge.settings import JudgeSettings
    from judge.store import JudgmentStore

    rows, _ = build_rows(Path(args.source))
    pairs = []
    for i in range(args.n):
        row = rows[i % len(rows)]
        pairs.append(
            (
                row,
                Answer(
                    model=f"model-{i // len(rows)}",
                    question_id=row.question_id,
                    turns=[f"Resposta {i} ao caso."],
                ),
            )
        )

    proc, url = start_stub(args.latency)
    try:
        settings = JudgeSettings(
            judge_model=args.judge_model, api_base=url, concurrency=args.concurrency, timeout=60
        )
        with tempfile.TemporaryDirectory() as cache:
            # warm up: litellm imports much of itself on the first call
            run_judge_all(
                Judge(settings),
                [(rows[0], Answer(model="warmup", question_id=rows[0].question_id, turns=["x"]))],
                progress=False,
            )
            t0, c0, s0 = time.perf_counter(), time.process_time(), _cpu_seconds(proc.pid)
            out = run_judge_all(Judge(settings, JudgmentStore(cache)), pairs, progress=False)
            wall = time.perf_counter() - t0
            client_cpu, server_cpu = time.process_time() - c0, _cpu_seconds(proc.pid) - s0
            ok = sum(j.status == "ok" for j in out)
            t1 = time.perf_counter()
            again = run_judge_all(Judge(settings, JudgmentStore(cache)), pairs, progress=False)
            cached_wall = time.perf_counter() - t1
    finally:
        proc.terminate()
        proc.wait()

    ideal = math.ceil(args.n / args.concurrency) * args.latency
    print(f"N={args.n} C={args.concurrency} L={args.latency}s: {ok}/{args.n} ok")
    print(f"wall {wall:.2f} s, ideal ceil(N/C)*L = {ideal:.2f} s, ratio {wall / ideal:.3f} (target <= 1.15)")
    print(
        f"CPU per call: client {client_cpu / args.n * 1000:.2f} ms, stub server {server_cpu / args.n * 1000:.2f} ms"
    )
    print(f"fully cached rerun: {cached_wall:.2f} s ({sum(j.cached for j in again)}/{args.n} from cache)")


if __name__ == "__main__":
    main()
