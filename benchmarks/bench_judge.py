"""Benchmark: N judge requests to a local stub (latency L, concurrency C), by our judge and by
litellm.completion in a thread pool, in turns; target at L = 1 s: ours / peer <= 1.10."""

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
CLIENTS = {"ours": "ours (run_judge_all)", "peer": "peer: litellm.completion in a thread pool"}


def run_client(client: str, args: argparse.Namespace) -> dict:
    """One contender in this process, warmed up by one call: wall and CPU seconds, calls answered ok."""
    from concurrent.futures import ThreadPoolExecutor

    import litellm

    from oab_bench.dataset_builder.build import build_rows
    from oab_bench.judge.answers import Answer
    from oab_bench.judge.grading.grader import Judge
    from oab_bench.judge.grading.judgment_store import JudgmentStore
    from oab_bench.judge.grading.runner import run_judge_all
    from oab_bench.judge.settings import JudgeSettings

    os.environ.setdefault("OAB_JUDGE_API_KEY", "sk-bench")
    rows = build_rows(Path(args.source))[0]
    rows = (rows * (args.n // len(rows) + 1))[: args.n]
    pairs = [
        (r, Answer(model=f"m{i}", question_id=r.question_id, turns=[f"Resposta {i}."]))
        for i, r in enumerate(rows)
    ]
    settings = JudgeSettings(judge_model=args.judge_model, api_base=args.url, concurrency=args.concurrency)
    judge = Judge(settings, JudgmentStore(args.cache))
    requests = [judge.request(row, a.text) for row, a in pairs]  # the same bodies, built before timing
    sent = {"model": args.judge_model, "api_base": args.url, "api_key": "sk-bench", "temperature": 0.0}

    def peer(request: tuple[list[dict], dict | None]) -> bool:
        kw = {"max_tokens": settings.max_tokens, "drop_params": True, "num_retries": 0}
        reply = litellm.completion(**sent, **kw, messages=request[0], response_format=request[1])
        return json.loads(reply.choices[0].message.content) is not None

    if client == "peer":
        peer(requests[0])
        t0, c0 = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(args.concurrency) as pool:
            ok = sum(pool.map(peer, requests))
    else:
        run_judge_all(Judge(settings), pairs[:1], progress=False)
        t0, c0 = time.perf_counter(), time.process_time()
        ok = sum(j.status == "ok" for j in run_judge_all(judge, pairs, progress=False))
    return {"client": client, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "ok": ok}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=640)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--judge-model", default="openai/gpt-5.2", help="the name sent (any)")
    shared = os.environ.get("OAB_BENCH_SHARED_DATA") or REPO.parent / "shared/data"
    parser.add_argument("--source", default=f"{shared}/oab_bench_v1")
    parser.add_argument("--one", choices=list(CLIENTS), help=argparse.SUPPRESS)  # a child: one contender
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_client(args.one, args)))
        return
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "stub.json").write_text(json.dumps({"latency": args.latency, "policy": "max"}))
        stub = [sys.executable, "-m", "tests.openai_stub", "--port", "0", "--config", f"{tmp}/stub.json"]
        server = subprocess.Popen(stub, cwd=REPO, stdout=subprocess.PIPE, text=True)
        url = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
        try:
            for n in range(args.rounds):
                for client in CLIENTS:
                    cmd = [sys.executable, "-m", "benchmarks.bench_judge", *sys.argv[1:], "--one", client]
                    cmd += ["--url", url, "--cache", f"{tmp}/cache{n}"]
                    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True)
                    results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        finally:
            server.terminate()
            server.wait()
    ideal = math.ceil(args.n / args.concurrency) * args.latency
    setup = f"N={args.n} C={args.concurrency} L={args.latency}s, ideal {ideal:.2f} s, {os.cpu_count()} CPUs"
    print(f"{setup}, median of {args.rounds} round(s)")
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
