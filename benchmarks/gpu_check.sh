#!/usr/bin/env bash
# Generation throughput through vLLM's server on a GPU machine, at a few concurrencies.
# Prepared for the device tool (<= 10 min): `bash benchmarks/gpu_check.sh`; figures go to $OUT.
# Needs vLLM in the Python it runs with (VLLM_PYTHON, default python3): the device image has
# none and cannot download, so carry wheels or use a machine that has it. MODEL: an HF id in
# the local HF cache or a folder; default a small random Qwen3-style model built here.
set -euo pipefail
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
PY=${VLLM_PYTHON:-python3}
export OAB_BENCH_VLLM_PYTHON=$PY PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
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
timeout 540 "$PY" -m benchmarks.bench_generation --vllm "$MODEL" \
    --vllm-args "--max-model-len 8192 --gpu-memory-utilization 0.85" \
    --concurrency 1 8 32 128 --requests 128 --max-tokens 256 --output "$OUT/throughput.json" \
    2>&1 | tee "$OUT/log.txt"
