"""Dataset rows from a folder made by `oab-bench build` or a Hub id."""

from __future__ import annotations

import fnmatch

from dataset_builder.schema import QuestionRow, dataset_source


def load_rows(dataset: str, *, questions: list[str] | None = None) -> list[QuestionRow]:
    """`dataset` is a local folder (any path) or a Hub id; `questions` are glob patterns on question/exam ids."""
    import datasets

    ds = datasets.load_dataset(dataset_source(dataset), split="test")
    return select_rows([QuestionRow.model_validate(r) for r in ds], questions)


def select_rows(rows: list[QuestionRow], questions: list[str] | None) -> list[QuestionRow]:
    """The rows whose question or exam id matches one of the glob patterns (all rows without patterns)."""
    if not questions:
        return rows
    return [
        r
        for r in rows
        if any(fnmatch.fnmatch(r.question_id, p) or fnmatch.fnmatch(r.exam_id, p) for p in questions)
    ]
