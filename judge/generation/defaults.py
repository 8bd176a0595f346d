"""Defaults of `oab-bench run` that its flags show and its code applies (no heavy import: the CLI reads them)."""

DEFAULT_MAX_MODEL_LENGTH = 32768
API_CONCURRENCY = 10
LOCAL_CONCURRENCY = 64  # enough requests in flight for vLLM's continuous batching
VALUE_FLAGS = ("--vllm-args", "--judge-vllm-args")  # their value starts with "--"
