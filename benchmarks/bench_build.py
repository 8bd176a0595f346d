"""Benchmark: build time of the dataset from an upstream folder (target: well under 2 s after imports).

python -m benchmarks.bench_build [--source DIR] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.publish import write_dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--source", default=str(Path(__file__).resolve().parents[2] / "shared/data/oab_bench_v1")
    )
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    parse_times, write_times = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        rows, report = build_rows(Path(args.source))
        t1 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            write_dataset(rows, report, Path(tmp) / "ds")
        t2 = time.perf_counter()
        parse_times.append(t1 - t0)
        write_times.append(t2 - t1)
    print(f"questions: {len(rows)}  exams: {report.exams}  runs: {args.repeat}")
    print(
        f"read+parse+check: median {statistics.median(parse_times) * 1000:.1f} ms  (max {max(parse_times) * 1000:.1f} ms)"
    )
    print(
        f"write parquet+card: median {statistics.median(write_times) * 1000:.1f} ms  (max {max(write_times) * 1000:.1f} ms)"
    )
    total = statistics.median(p + w for p, w in zip(parse_times, write_times, strict=True))
    print(f"build total: median {total:.3f} s  (target: well under 2 s)")


if __name__ == "__main__":
    main()
