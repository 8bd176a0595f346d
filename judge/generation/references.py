"""Every remote reference of `oab-bench run` resolved once, up front, before any check call, server
start or generation: the dataset (a Hub id, a folder, a path relative to the working folder), the
tasks against the editions and areas it holds, and the judge's Batch API when `--judge-batch` is
given. Each failure is one line and a non-zero exit, in seconds; lighteval then receives the
dataset as a resolved folder on disk.
"""

from __future__ import annotations

import argparse

from oab_bench.judge.dataset import dataset_argument
from oab_bench.judge.generation.preflight import PreflightError, check_tasks
from oab_bench.judge.settings import JudgeSettings


def resolve_references(args: argparse.Namespace, settings: JudgeSettings) -> None:
    """Resolve the dataset into `args.dataset` (a folder on disk) and check the tasks and the judge's
    Batch API against what is really there."""
    from oab_bench.dataset_builder.resolve import resolve_dataset
    from oab_bench.judge.dataset import load_rows

    given, origin = dataset_argument(args)
    args.dataset = resolve_dataset(given, origin)
    check_task_rows(check_tasks(args.tasks), load_rows(args.dataset), given)
    if settings.batch:
        from oab_bench.judge.generation.vllm_server import vllm_target
        from oab_bench.judge.grading.batch.api import check_batch_api

        if not vllm_target(settings.judge_model):  # a vllm: judge's server is not started yet
            check_batch_api(settings)


def check_task_rows(names: list[str], rows: list, dataset: str) -> None:
    """Each task selects questions of this dataset: an edition or area it lacks fails now, listing
    those it has (lighteval would fail after loading, with "has no documents")."""
    for name in names:
        what = name.partition(":")[2]
        if not what or any(what in (r.area, str(r.edition)) for r in rows):
            continue
        kind = "edition" if what.isdigit() else "area"
        have = sorted({str(r.edition) if what.isdigit() else r.area for r in rows})
        raise PreflightError(
            f"--tasks {name}: the dataset {dataset} has no questions of {kind} {what}; "
            f"its {kind}s: {', '.join(have) or 'none'}"
        )
