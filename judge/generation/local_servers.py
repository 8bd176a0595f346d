"""The vLLM servers a run's `vllm:` models need, started for the run and stopped however it ends."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

from oab_bench.judge.generation.defaults import API_CONCURRENCY, LOCAL_CONCURRENCY
from oab_bench.judge.generation.vllm_server import VllmServer, vllm_target
from oab_bench.judge.settings import JudgeSettings, env_var


def start_local_servers(
    args: argparse.Namespace, settings: JudgeSettings, out: Path, stack: contextlib.ExitStack
) -> tuple[argparse.Namespace, JudgeSettings]:
    """`vllm:MODEL` candidate or judge: start vLLM's server (one when both are the same model) and
    point litellm at it; local servers batch continuously, so more requests at a time."""
    args = argparse.Namespace(**vars(args))
    started: dict[str, VllmServer] = {}
    args.local_servers = []

    def server(target: str, extra: str | None) -> VllmServer:
        if target not in started:
            started[target] = stack.enter_context(
                VllmServer(target, out, extra_args=extra or "", start_timeout=args.vllm_start_timeout)
            )
            args.local_servers.append(started[target])
        return started[target]

    candidate = vllm_target(args.model)
    if candidate:
        s = server(candidate, args.vllm_args)
        args.model, args.api_base = f"openai/{s.name}", s.api_base
        args.concurrency = args.concurrency or LOCAL_CONCURRENCY
    judge = vllm_target(settings.judge_model)
    if judge:
        s = server(judge, args.judge_vllm_args if args.judge_vllm_args is not None else args.vllm_args)
        update = {"judge_model": f"openai/{s.name}", "api_base": s.api_base}
        if args.judge_concurrency is None and not os.environ.get(env_var("concurrency")):
            update["concurrency"] = LOCAL_CONCURRENCY
        settings = settings.model_copy(update=update)
    args.concurrency = args.concurrency or API_CONCURRENCY
    return args, settings
