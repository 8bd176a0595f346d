"""A lighteval details folder holding two runs of one model: never the later one silently.

Identical copies are one; two different answers (or scores) stop, naming both runs' files,
until one run is chosen by passing its file or its timestamped folder."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.answers import load_answers, one_per_question
from oab_bench.judge.leaderboard.inputs import load_records
from oab_bench.judge.leaderboard.tables import build_tables

QID = "90_direito_civil_questao_1"


def details(out: Path, model: str, stamp: str, answer: str, score: float) -> Path:
    """One run's details file, as lighteval lays it out: details/<model>/<timestamp>/details_*.parquet."""
    judgment = {
        "question_id": QID,
        "exam_id": "90_direito_civil",
        "model": model,
        "judge_model": "openai/j",
        "prompt_version": "oab-pt-v1",
        "mode": "structured",
        "status": "ok",
        "score": score,
        "max_score": 1.25,
    }
    row = {
        "doc": {"specific": {"question_id": QID}},
        "model_response": {"text": [answer]},
        "metric": {"oab_judgment": judgment},
    }
    path = out / "details" / model / stamp / f"details_community|oab_bench|0_{stamp}.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([row]), path)
    return path


def test_two_runs_answering_differently_are_an_error_naming_both(tmp_path):
    first = details(tmp_path, "org/m", "2026-01-01T00-00-00", "Sim.", 1.0)
    second = details(tmp_path, "org/m", "2026-02-01T00-00-00", "Não.", 0.25)
    with pytest.raises(SourceError) as e:
        one_per_question(load_answers(tmp_path))
    assert str(e.value).startswith(f"{first}:1: org/m answers {QID} differently here and in {second}:1")
    assert "pass one of them" in str(e.value)
    with pytest.raises(SourceError) as e:
        build_tables(load_records(tmp_path))
    assert str(e.value).startswith(f"{first}:1: org/m on {QID}") and f"in {second}:1" in str(e.value)

    # one run chosen: its file, or its timestamped folder
    [a] = one_per_question(load_answers(second)).values()
    assert a.text == "Não."
    [r] = load_records(first.parent)
    assert r.score == 1.0


def test_two_runs_with_the_same_answers_are_one(tmp_path):
    for stamp in ("2026-01-01T00-00-00", "2026-02-01T00-00-00"):  # a rerun served from the caches
        details(tmp_path, "org/m", stamp, "Sim.", 1.0)
    assert len(one_per_question(load_answers(tmp_path))) == 1
    _, notes = build_tables(load_records(tmp_path))
    assert any("each counted once" in n for n in notes)


def test_two_models_in_one_folder_are_two_models(tmp_path):
    details(tmp_path, "org/a", "2026-01-01T00-00-00", "Sim.", 1.0)
    details(tmp_path, "org/b", "2026-01-01T00-00-00", "Não.", 0.25)
    assert sorted(one_per_question(load_answers(tmp_path))) == [("org/a", QID), ("org/b", QID)]
