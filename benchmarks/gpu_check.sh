#!/usr/bin/env bash
# Generation throughput through vLLM's OpenAI-compatible server on a GPU machine, at a few
# concurrencies, measured by vLLM's own benchmark client (`vllm bench serve`, chat endpoint).
# Prepared for the device tool (<= 10 min): `bash benchmarks/gpu_check.sh`; figures go to $OUT.
# Needs vLLM in the Python it runs with (VLLM_PYTHON, default python3): the device image has
# none and cannot download, so carry wheels or use a machine that has it. MODEL: an HF id in
# the local HF cache or a folder; default a small random Qwen3-style model built here.
set -euo pipefail
OUT=${OUT:-/tmp/gpu-check}
PY=${VLLM_PYTHON:-python3}
PORT=${PORT:-8765}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
if ! "$PY" -c "import vllm; print('vllm', vllm.__version__)" | tee "$OUT/vllm.txt"; then
    echo "no vLLM in $PY: install or carry it (pip install -e '.[vllm]')" | tee "$OUT/error.txt"
    exit 2
fi
MODEL=${MODEL:-}
if [ -z "$MODEL" ]; then
    MODEL=/tmp/tiny-qwen3
    "$PY" -m benchmarks.tiny_model "$MODEL" >/dev/null
fi
"$PY" -m vllm.entrypoints.openai.api_server --model "$MODEL" --served-model-name bench --host 127.0.0.1 \
    --port "$PORT" --max-model-len 8192 --gpu-memory-utilization 0.85 >"$OUT/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
timeout 300 sh -c "until curl -sf http://127.0.0.1:$PORT/health >/dev/null; do sleep 2; done"
for c in 1 8 32 128; do
    timeout 120 "$PY" -m vllm.entrypoints.cli.main bench serve --backend openai-chat --endpoint /v1/chat/completions \
        --base-url "http://127.0.0.1:$PORT" --model bench --tokenizer "$MODEL" --dataset-name random \
        --random-input-len 2000 --random-output-len 256 --num-prompts 128 --max-concurrency "$c" \
        --save-result --result-dir "$OUT" --result-filename "throughput-c$c.json" 2>&1 | tee -a "$OUT/log.txt"
done
