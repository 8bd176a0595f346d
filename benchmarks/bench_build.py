"""Benchmark: build time from an upstream folder (target: well under 2 s after imports).
python -m benchmarks.bench_build [--source DIR] [--repeat 5]"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.publish import write_dataset

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--source", default=str(Path(__file__).resolve().parents[2] / "shared/data/oab_bench_v1"))
parser.add_argument("--repeat", type=int, default=5)

if __name__ == "__main__":
    args = parser.parse_args()
    times: dict[str, list[float]] = {"read+parse+check": [], "write parquet+card": [], "build total": []}
    for _ in range(args.repeat):
        started = time.perf_counter()
        rows, report = build_rows(Path(args.source))
        built = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            write_dataset(rows, report, Path(tmp) / "ds")
        times["read+parse+check"].append(built - started)
        times["write parquet+card"].append(time.perf_counter() - built)
        times["build total"].append(time.perf_counter() - started)
    print(f"questions: {len(rows)}  exams: {report.exams}  runs: {args.repeat}")
    for what, got in times.items():
        print(f"{what}: median {statistics.median(got) * 1000:.1f} ms  (max {max(got) * 1000:.1f} ms)")
