"""Dataset rows from a folder or Hub id (our built layout, or upstream's raw one, built on the fly),
and the advice of each entry point in its own knobs (KNOBS: `oab-bench`'s flags, the plain lighteval
CLI's variables, `make run`'s, which the Makefile announces with OAB_BENCH_ENTRY=make)."""

from __future__ import annotations

import argparse
import fnmatch
import os

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.resolve import INSTEAD, UPSTREAM_DATASET, resolve_dataset
from oab_bench.dataset_builder.schema import QuestionRow

DATASET_ENV = "OAB_BENCH_DATASET"
ENTRY_ENV = "OAB_BENCH_ENTRY"  # set by the Makefile's `run` target: advice names make's variables
UPSTREAM = "upstream's files (question.jsonl and reference_answer/, e.g. a clone of github.com/maritaca-ai/oab-bench)"
MAKE = f"pass DATA=FOLDER to make run: {UPSTREAM}"
LIGHTEVAL = f"set {DATASET_ENV}=FOLDER: a folder made by `oab-bench build`, or {UPSTREAM}"
KNOBS = {  # entry point -> setting -> what its advice names
    "oab-bench": dict(dataset=INSTEAD, api_base="--api-base", judge_api_base="--judge-api-base"),
    "make": dict(dataset=MAKE, api_base="API_BASE=", judge_api_base="JUDGE_API_BASE="),
    "lighteval": dict(dataset=LIGHTEVAL, judge_api_base="OAB_JUDGE_API_BASE"),
    "inspect": dict(
        dataset=LIGHTEVAL.replace(f"set {DATASET_ENV}", "pass -T dataset"), judge_api_base="-T judge_api_base"
    ),
}


def knob(name: str, entry: str = "oab-bench") -> str:
    """How the entry point the user typed (`entry`, unless OAB_BENCH_ENTRY says) names a setting."""
    return KNOBS[os.environ.get(ENTRY_ENV) or entry][name]


def dataset_argument(
    args: argparse.Namespace | None, default: str = "--dataset (default)"
) -> tuple[str, str]:
    """(the dataset asked for, where it came from), for the entry points whose dataset may be left out."""
    if getattr(args, "dataset", None):
        return args.dataset, "--dataset"
    if os.environ.get(DATASET_ENV, "").strip():
        return os.environ[DATASET_ENV].strip(), DATASET_ENV
    return UPSTREAM_DATASET, default


def advised(error: SourceError, entry: str) -> str:
    """The error's line with the advice of the entry point the user typed."""
    return str(error).replace(INSTEAD, knob("dataset", entry))


def load_rows(
    dataset: str, *, questions: list[str] | None = None, origin: str = "--dataset"
) -> list[QuestionRow]:
    """`dataset` (a folder or Hub id) resolved to a folder on disk first; `questions`: glob patterns on
    question or exam ids; `origin` names where `dataset` came from in errors."""
    import datasets

    from oab_bench.dataset_builder.source import quiet

    with quiet(datasets):  # no "Generating test split" bars for a folder of a hundred rows
        ds = datasets.load_dataset(resolve_dataset(dataset, origin), split="test")
    return select_rows([QuestionRow.model_validate(r) for r in ds.to_list()], questions)


def select_rows(rows: list[QuestionRow], questions: list[str] | None) -> list[QuestionRow]:
    """The rows whose question or exam id matches a glob pattern (all rows without patterns)."""
    if not questions:
        return rows
    match = fnmatch.fnmatch
    return [r for r in rows if any(match(r.question_id, p) or match(r.exam_id, p) for p in questions)]
