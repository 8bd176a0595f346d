"""Benchmark: the same N judge requests to one local stub server (latency L seconds, concurrency C),
sent by our judge (`run_judge_all`: litellm, cache, validation, records) and by a plain peer
(litellm.completion in a thread pool of C, the same bodies), then our fully cached rerun. Each
contender runs in a process of its own; the contenders take turns for `--rounds`, and each figure
is the median over the rounds (a shared machine drifts). Target: ours / peer <= 1.10 at L = 1 s.

    python -m benchmarks.bench_judge [--n 640] [--concurrency 64] [--latency 1.0] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLIENTS = {
    "ours": "ours (run_judge_all)",
    "peer": "peer: litellm.completion in a thread pool",
    "cached": "ours, fully cached rerun",
}


def run_client(client: str, args: argparse.Namespace) -> dict:
    """One contender in this process: wall and CPU seconds, calls answered ok."""
    from oab_bench.dataset_builder.build import build_rows
    from oab_bench.judge.answers import Answer
    from oab_bench.judge.grading.grader import Judge
    from oab_bench.judge.grading.judgment_store import JudgmentStore
    from oab_bench.judge.grading.runner import run_judge_all
    from oab_bench.judge.settings import JudgeSettings

    os.environ.setdefault("OAB_JUDGE_API_KEY", "sk-bench")
    rows, _ = build_rows(Path(args.source))
    pairs = [
        (
            rows[i % len(rows)],
            Answer(
                model=f"m{i // len(rows)}",
                question_id=rows[i % len(rows)].question_id,
                turns=[f"Resposta {i}."],
            ),
        )
        for i in range(args.n)
    ]
    settings = JudgeSettings(
        judge_model=args.judge_model, api_base=args.url, concurrency=args.concurrency, timeout=60
    )
    judge = Judge(settings, JudgmentStore(args.cache))
    if client == "peer":
        from concurrent.futures import ThreadPoolExecutor

        import litellm

        bodies = [
            dict(zip(("messages", "response_format"), judge.request(row, answer.text), strict=True))
            for row, answer in pairs
        ]
        common = {
            "model": args.judge_model,
            "api_base": args.url,
            "api_key": "sk-bench",
            "max_tokens": settings.max_tokens,
        }

        def one(body: dict) -> bool:
            reply = litellm.completion(**common, **body, temperature=0.0, num_retries=0)
            return json.loads(reply.choices[0].message.content) is not None

        one(bodies[0])  # warm up: litellm imports much of itself on the first call
        t0, c0 = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(args.concurrency) as pool:
            ok = sum(pool.map(one, bodies))
    else:
        if client == "ours":
            run_judge_all(Judge(settings), pairs[:1], progress=False)  # warm up, as the peer does
        t0, c0 = time.perf_counter(), time.process_time()
        out = run_judge_all(judge, pairs, progress=False)
        ok = sum(j.status == "ok" and (j.cached or client == "ours") for j in out)
    return {"client": client, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "ok": ok}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=640)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--judge-model", default="openai/gpt-5.2", help="the name sent (the stub answers any)"
    )
    parser.add_argument("--source", default=str(REPO.parent / "shared/data/oab_bench_v1"))
    parser.add_argument("--one", choices=list(CLIENTS), help=argparse.SUPPRESS)  # a child: one contender
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_client(args.one, args)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "stub.json"
        config.write_text(json.dumps({"latency": args.latency, "policy": "max"}))
        stub = [sys.executable, "-m", "tests.openai_stub", "--port", "0", "--config", str(config)]
        server = subprocess.Popen(stub, cwd=REPO, stdout=subprocess.PIPE, text=True)
        url = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
        results = []
        try:
            for n in range(args.rounds):  # each round fills a cache of its own
                for client in CLIENTS:
                    cmd = [sys.executable, "-m", "benchmarks.bench_judge", "--one", client, "--url", url]
                    cmd += [
                        "--cache",
                        f"{tmp}/cache{n}",
                        "--n",
                        str(args.n),
                        "--concurrency",
                        str(args.concurrency),
                    ]
                    cmd += ["--judge-model", args.judge_model, "--source", args.source]
                    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True).stdout
                    results.append(json.loads(out.strip().splitlines()[-1]))
        finally:
            server.terminate()
            server.wait()
    ideal = math.ceil(args.n / args.concurrency) * args.latency
    print(
        f"N={args.n} C={args.concurrency} L={args.latency}s, ideal ceil(N/C)*L = {ideal:.2f} s, {os.cpu_count()} CPUs, median of {args.rounds} round(s)"
    )
    print("\n| client | ok | wall s | x ideal | CPU ms/call |\n|---|---:|---:|---:|---:|")
    wall = {}
    for client, label in CLIENTS.items():
        runs = [r for r in results if r["client"] == client]
        wall[client] = statistics.median(r["wall"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs) / args.n * 1000
        ok = min(r["ok"] for r in runs)
        print(f"| {label} | {ok}/{args.n} | {wall[client]:.2f} | {wall[client] / ideal:.2f} | {cpu:.2f} |")
    print(f"\nours / peer wall time: {wall['ours'] / wall['peer']:.2f} (target <= 1.10)")


if __name__ == "__main__":
    main()
