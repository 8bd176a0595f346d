"""Checks of `oab-bench run` that need its models: keys, servers that answer, one minimal real call
to each remote model before any local server loads, and, once the servers are up, an answer budget
and prompts that fit the candidate's context.

The checks themselves are preflight.py's and the check call's (grading/check_call.py); this module
decides which of them a run needs (nothing is called when everything it would pay for is stored).
"""

from __future__ import annotations

import argparse
import os
import sys

from oab_bench.judge.generation.defaults import DEFAULT_MAX_MODEL_LENGTH
from oab_bench.judge.generation.preflight import (
    check_credentials,
    check_max_new_tokens,
    check_prompts_fit,
    check_reachable,
    server_max_model_len,
)
from oab_bench.judge.generation.run_caches import stored_state
from oab_bench.judge.generation.run_settings import candidate_prompts
from oab_bench.judge.generation.vllm_server import vllm_target
from oab_bench.judge.grading.check_call import check_call, check_judges
from oab_bench.judge.settings import JudgeSettings, member_settings


def check_remote(args: argparse.Namespace, settings: JudgeSettings, panel=None) -> None:
    """Keys, servers that answer, and one minimal real call to each remote model that this run
    will call (`--no-check-call` skips it; nothing is called when everything is stored, the
    panel's judgments included)."""
    check_credentials(args.model, args.api_base, settings)
    if not vllm_target(args.model):
        check_reachable(args.api_base, "candidate")
    judges = [m for m in member_settings(settings) if not vllm_target(m.judge_model)]  # a jury: each member
    if judges:
        check_reachable(settings.api_base, "judge")
    if args.no_check_call:
        return
    state = stored_state(args, settings, panel)
    questions, answered, judged, _, unmade = state or (1, 0, None, 1, 1)
    if not vllm_target(args.model) and answered < questions:
        local = args.api_base and args.model.startswith("openai/")  # as child_env: any key will do
        key = (os.environ.get("OPENAI_API_KEY") or "EMPTY") if local else None
        check_call("candidate", args.model, api_base=args.api_base, api_key=key)
    if judged is None or unmade:  # the panel's judgments among those to make
        check_judges(judges)


def preflight(args: argparse.Namespace, settings: JudgeSettings) -> None:
    """Servers that answer, an answer budget and prompts that fit: fail in seconds, not after an
    hour of retries (keys and remote models were checked by check_remote)."""
    check_reachable(args.api_base, "candidate")
    check_reachable(settings.api_base, "judge")
    served = args.model.removeprefix("openai/")
    server_len = server_max_model_len(args.api_base, served) if args.api_base else None
    if args.max_model_length is not None:
        check_max_new_tokens(args.max_new_tokens, args.max_model_length, "--max-model-length")
    if args.max_model_length is None:
        args.max_model_length = server_len or DEFAULT_MAX_MODEL_LENGTH
    if server_len:
        limit = min(server_len, args.max_model_length)
        check_max_new_tokens(args.max_new_tokens, limit, "server's")
        counted, tight = check_prompts_fit(
            args.api_base, served, candidate_prompts(args.dataset, args.tasks), args.max_new_tokens, limit
        )
        if counted:
            print(f"preflight: {counted} prompts fit in the model's {limit} tokens", file=sys.stderr)
        for line in tight[:10]:
            print(f"preflight: warning: {line}", file=sys.stderr)
        if len(tight) > 10:
            print(f"preflight: warning: ... and {len(tight) - 10} more", file=sys.stderr)
