"""Benchmark: the same N judge requests against one local stub server (latency L, concurrency C),
sent by our judge and by two bare clients, each in its own process; one table.
The contenders take turns, round after round (`--rounds`, default 3), and each figure is the
median of its rounds: a shared machine drifts between runs (docs/performance.md).

Rows: ours (litellm, cache, validation), an upstream-style loop (a thread pool of C calling the
OpenAI SDK, as upstream's judge does), the bare OpenAI async client (a semaphore of C), our
fully cached rerun, and a floor: raw aiohttp with the bodies serialised beforehand, the least a
client can do, so the table shows what the stub server and the machine allow. Columns: wall
seconds (median, and the range over rounds), wall / ideal (ideal = ceil(N/C) * L), client CPU
ms per call, the stub server's CPU ms per call meanwhile (it shares the cores), peak RSS.
Target: ours <= 1.15x ideal and no slower than the upstream-style loop.

    python -m benchmarks.bench_judge [--n 2520] [--concurrency 64] [--latency 0.25] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLIENTS = {
    "ours": "ours (litellm + cache + validation)",
    "threads": "upstream-style: thread pool + OpenAI SDK",
    "openai-async": "bare AsyncOpenAI client",
    "ours-cached": "ours, fully cached rerun",
    "floor": "floor: raw aiohttp, bodies serialised beforehand",
}


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


def workload(source: str, n: int):
    """N (row, answer) pairs over the dataset's questions, every answer different."""
    from oab_bench.dataset_builder.build import build_rows
    from oab_bench.judge.answers import Answer

    rows, _ = build_rows(Path(source))
    pairs = []
    for i in range(n):
        row = rows[i % len(rows)]
        answer = Answer(
            model=f"model-{i // len(rows)}", question_id=row.question_id, turns=[f"Resposta {i}."]
        )
        pairs.append((row, answer))
    return pairs


def bodies(settings, pairs) -> list[dict]:
    """The request bodies our judge sends, for the bare clients to send too."""
    from oab_bench.judge.grading.prompts import build_messages
    from oab_bench.judge.grading.reply_schema import response_format

    formats: dict[str, dict] = {}
    out = []
    for row, answer in pairs:
        fmt = formats.setdefault(row.question_id, response_format(row))
        out.append(
            {
                "model": settings.judge_model.removeprefix("openai/"),
                "messages": build_messages(row, answer.text, settings.mode),
                "max_tokens": settings.max_tokens,
                "temperature": settings.temperature,
                "response_format": fmt,
            }
        )
    return out


def run_client(client: str, args: argparse.Namespace) -> dict:
    """One contender in this process: (wall, CPU seconds, calls ok) for the whole workload."""
    os.environ.setdefault("OAB_JUDGE_API_KEY", "sk-bench")
    from oab_bench.judge.grading.grader import Judge
    from oab_bench.judge.grading.judgment_store import JudgmentStore
    from oab_bench.judge.grading.runner import run_judge_all
    from oab_bench.judge.settings import JudgeSettings

    settings = JudgeSettings(
        judge_model=args.judge_model, api_base=args.url, concurrency=args.concurrency, timeout=60
    )
    pairs = workload(args.source, args.n)
    if client.startswith("ours"):
        if client == "ours":  # warm up: litellm imports much of itself on the first call
            run_judge_all(Judge(settings), pairs[:1], progress=False)
        judge = Judge(settings, JudgmentStore(args.cache))
        t0, c0 = time.perf_counter(), time.process_time()
        out = run_judge_all(judge, pairs, progress=False)
        ok = sum(j.status == "ok" for j in out)
        if client == "ours-cached":
            ok = sum(j.cached for j in out)
    elif client == "threads":
        t0, c0, ok = _threads(args, bodies(settings, pairs))
    elif client == "floor":
        t0, c0, ok = _floor(args, bodies(settings, pairs))
    else:
        t0, c0, ok = _openai_async(args, bodies(settings, pairs))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"client": client, "wall": wall, "cpu": cpu, "ok": ok, "rss_mb": rss}


def _threads(args, requests: list[dict]):
    """Upstream's loop: a thread pool, one synchronous OpenAI SDK call per judgment."""
    from concurrent.futures import ThreadPoolExecutor

    import openai

    client = openai.OpenAI(base_url=args.url, api_key="sk-bench", max_retries=0, timeout=60)
    client.chat.completions.create(**requests[0])  # warm up
    t0, c0 = time.perf_counter(), time.process_time()

    def one(body):
        return json.loads(client.chat.completions.create(**body).choices[0].message.content) is not None

    with ThreadPoolExecutor(args.concurrency) as pool:
        ok = sum(pool.map(one, requests))
    return t0, c0, ok


def _openai_async(args, requests: list[dict]):
    """The bare async client: a semaphore of C, nothing else."""
    import asyncio

    import openai

    async def main():
        client = openai.AsyncOpenAI(base_url=args.url, api_key="sk-bench", max_retries=0, timeout=60)
        await client.chat.completions.create(**requests[0])  # warm up
        semaphore = asyncio.Semaphore(args.concurrency)
        t0, c0 = time.perf_counter(), time.process_time()

        async def one(body):
            async with semaphore:
                resp = await client.chat.completions.create(**body)
            return json.loads(resp.choices[0].message.content) is not None

        ok = sum(await asyncio.gather(*(one(b) for b in requests)))
        return t0, c0, ok

    return asyncio.run(main())


def _floor(args, requests: list[dict]):
    """What the server and machine allow: the least a client can do (aiohttp, JSON bytes made
    beforehand, no SDK). Far above the ideal means the benchmark measures the server, not clients."""
    import asyncio

    import aiohttp

    payloads = [json.dumps(body).encode() for body in requests]
    headers = {"Authorization": "Bearer sk-bench", "Content-Type": "application/json"}

    async def main():
        url = args.url.rstrip("/") + "/chat/completions"
        async with aiohttp.ClientSession() as session:
            semaphore = asyncio.Semaphore(args.concurrency)

            async def one(payload: bytes) -> bool:
                async with semaphore, session.post(url, data=payload, headers=headers) as resp:
                    reply = await resp.json()
                return json.loads(reply["choices"][0]["message"]["content"]) is not None

            await one(payloads[0])  # warm up
            t0, c0 = time.perf_counter(), time.process_time()
            ok = sum(await asyncio.gather(*(one(p) for p in payloads)))
            return t0, c0, ok

    return asyncio.run(main())


def table(results: list[dict], args: argparse.Namespace) -> str:
    """One row per contender: medians over its rounds (ok: the fewest of any round)."""
    ideal = math.ceil(args.n / args.concurrency) * args.latency
    lines = [
        f"N={args.n} C={args.concurrency} L={args.latency}s, ideal ceil(N/C)*L = {ideal:.2f} s, "
        f"{os.cpu_count()} CPUs, load average before {args.load}, median of {args.rounds} round(s)",
        "",
        "| client | ok | wall s | range s | x ideal | CPU ms/call | server CPU ms/call | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for client in args.clients:
        runs = [r for r in results if r["client"] == client]
        walls = [r["wall"] for r in runs]
        wall, cpu = statistics.median(walls), statistics.median(r["cpu"] for r in runs)
        served = [r["server_cpu"] for r in runs if r.get("server_cpu") is not None]
        server = f"{statistics.median(served) / args.n * 1000:.2f}" if served else "n/a"
        lines.append(
            f"| {CLIENTS[client]} | {min(r['ok'] for r in runs)}/{args.n} | {wall:.2f} "
            f"| {min(walls):.2f}-{max(walls):.2f} | {wall / ideal:.2f} | {cpu / args.n * 1000:.2f} "
            f"| {server} | {max(r['rss_mb'] for r in runs):.0f} |"
        )
    return "\n".join(lines)


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
    parser.add_argument("--clients", nargs="+", default=list(CLIENTS), choices=list(CLIENTS))
    parser.add_argument("--rounds", type=int, default=3, help="turns each contender takes (median reported)")
    parser.add_argument("--one", choices=list(CLIENTS), help=argparse.SUPPRESS)  # a child: one contender
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_client(args.one, args)))
        return

    args.load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    proc, url = start_stub(args.latency)
    results = []
    try:
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as cache:  # each round fills its own cache
                results += [_contender(client, proc.pid, url, cache, args) for client in args.clients]
    finally:
        proc.terminate()
        proc.wait()
    print(table(results, args))


def _contender(client: str, server: int, url: str, cache: str, args: argparse.Namespace) -> dict:
    """One contender's run, in a process of its own; with the server's CPU seconds meanwhile."""
    cmd = [sys.executable, "-m", "benchmarks.bench_judge", "--one", client, "--url", url, "--cache", cache]
    cmd += ["--n", str(args.n), "--concurrency", str(args.concurrency), "--latency", str(args.latency)]
    cmd += ["--judge-model", args.judge_model, "--source", args.source]
    before = cpu_seconds(server)
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True)
    after = cpu_seconds(server)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["server_cpu"] = None if before is None or after is None else after - before
    return result


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) process `pid` has used so far; None off Linux. The stub shares
    this machine's cores with the client: a client that needs more CPU per call than the cores
    have left after the server's share cannot keep its calls in flight, however it is built."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
