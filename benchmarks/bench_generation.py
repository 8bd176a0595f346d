"""Generation throughput of an OpenAI-compatible server at a few concurrencies (prints figures).

Against a server you started (`--api-base URL --served NAME`) or one this script starts
(`--vllm HF_ID_OR_FOLDER [--vllm-args "..."]`, through the same code as `oab-bench run`).
Prompts are the dataset's candidate prompts when `--dataset` is given, else made-up text.

    python -m benchmarks.bench_generation --vllm /tmp/tiny --vllm-args "--dtype float32 ..." \
        --concurrency 1 8 64 --requests 64 --max-tokens 256
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

MADE_UP = "Redija a peça cabível ao caso, com fundamentos e pedidos. " * 40


async def _one(client: httpx.AsyncClient, url: str, served: str, messages: list[dict], max_tokens: int):
    started = time.perf_counter()
    body = {"model": served, "messages": messages, "max_tokens": max_tokens, "temperature": 0.7}
    resp = await client.post(f"{url}/chat/completions", json=body)
    resp.raise_for_status()
    usage = resp.json()["usage"]
    return time.perf_counter() - started, usage["prompt_tokens"], usage["completion_tokens"]


async def measure(
    url: str, served: str, prompts: list[list[dict]], concurrency: int, max_tokens: int
) -> dict:
    semaphore = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(1800), limits=httpx.Limits(max_connections=concurrency)
    ) as client:

        async def bounded(messages):
            async with semaphore:
                return await _one(client, url, served, messages, max_tokens)

        started = time.perf_counter()
        results = await asyncio.gather(*(bounded(m) for m in prompts))
        wall = time.perf_counter() - started
    latencies = [r[0] for r in results]
    completion = sum(r[2] for r in results)
    return {
        "concurrency": concurrency,
        "requests": len(prompts),
        "wall_s": round(wall, 2),
        "prompt_tokens": sum(r[1] for r in results),
        "completion_tokens": completion,
        "output_tok_per_s": round(completion / wall, 1),
        "latency_p50_s": round(statistics.median(latencies), 2),
        "latency_max_s": round(max(latencies), 2),
    }


def prompts_for(dataset: str | None, n: int) -> list[list[dict]]:
    if dataset:
        from oab_bench.judge.generation.run_settings import candidate_prompts

        found = [m for _, m in candidate_prompts(dataset, "oab_bench")]
        return [found[i % len(found)] for i in range(n)]
    return [[{"role": "user", "content": f"{MADE_UP} ({i})"}] for i in range(n)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--api-base", help="a running server, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--served", help="the model name it serves")
    p.add_argument("--vllm", help="start vLLM for this HF id or folder instead")
    p.add_argument("--vllm-args", default="")
    p.add_argument("--dataset", help="use the dataset's prompts (folder made by `oab-bench build`)")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    p.add_argument("--requests", type=int, default=64)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--output", help="also write the figures as JSON here")
    args = p.parse_args(argv)

    prompts = prompts_for(args.dataset, args.requests)
    figures = []
    with contextlib.ExitStack() as stack:
        url, served = args.api_base, args.served
        if args.vllm:
            from oab_bench.judge.generation.vllm_server import VllmServer

            logs = Path(tempfile.mkdtemp(prefix="bench-vllm-"))
            server = stack.enter_context(VllmServer(args.vllm, logs, extra_args=args.vllm_args))
            url, served = server.api_base, server.name
        if not url or not served:
            p.error("give --vllm, or --api-base and --served")
        asyncio.run(measure(url, served, prompts[: min(4, len(prompts))], 1, 8))  # warm-up
        for c in args.concurrency:
            row = asyncio.run(measure(url, served, prompts, c, args.max_tokens))
            figures.append(row)
            print(json.dumps(row), flush=True)
    if args.output:
        Path(args.output).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
