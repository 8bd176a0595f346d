"""Figures that do not depend on the order of the inputs, and ambiguous inputs named as errors."""

from __future__ import annotations

import itertools
import json

import pytest

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.answers import load_answers
from oab_bench.judge.grading.judge_answers import pair_answers
from oab_bench.judge.leaderboard.inputs import recorded_dataset
from tests.conftest import oab
from tests.helpers import (
    answers_file,
    board,
    judged,
    model_file,
    rows_of,
    write_jsonl,
)


def test_a_tampered_file_never_counts_against_a_clean_one_in_any_order(tmp_path):
    files = [
        model_file(tmp_path / "clean.jsonl", "model-clean"),
        model_file(tmp_path / "bad.jsonl", "model-bad", tamper=True),
        model_file(tmp_path / "retry.jsonl", "model-clean", failed="91_direito_civil_questao_3"),
    ]
    outputs = {json.dumps(board(order)) for order in itertools.permutations(files)}
    assert len(outputs) == 1  # the same tables, notes and markdown for all 6 orders
    data, md = json.loads(outputs.pop())
    rows = rows_of(data)
    clean, bad = rows["model-clean"], rows["model-bad"]
    assert (clean["exams"], clean["coverage"], clean["complete"]) == (3, 1.0, True)
    assert (bad["exams"], bad["coverage"], bad["complete"]) == (1, pytest.approx(13 / 15), False)
    assert "| model-clean |" in md and "| model-bad * |" in md
    notes = "\n".join(data["notes"])
    assert "model-bad: 2 judgments disagree" in notes and "model-clean: " not in notes.replace(
        "model-clean has", ""
    )
    assert "an ok judgment, if any, is used over failures" in notes


def test_without_a_dataset_the_question_id_is_the_truth_and_no_majority_outvotes_it(tmp_path):
    alone = model_file(tmp_path / "bad.jsonl", "model-bad", tamper=True)
    data, md = board([alone])
    (row,) = data["rows"]
    # its 90 civil (a questão said to be worth 2.00) and 90 penal (a questão filed under 91) cannot count
    assert row["exams"] == 1 and row["coverage"] == pytest.approx(13 / 15) and not row["complete"]
    assert "| model-bad * |" in md
    assert any(
        "model-bad: 2 judgments disagree with the dataset (or, without one, the question's id)" in n
        for n in data["notes"]
    )
    files = [
        model_file(tmp_path / "clean.jsonl", "model-clean"),
        alone,
        model_file(tmp_path / "bad2.jsonl", "model-bad-2", tamper=True),
    ]
    outputs = {json.dumps(board(order)) for order in itertools.permutations(files)}
    assert len(outputs) == 1
    data = json.loads(outputs.pop())[0]
    assert rows_of(data)["model-clean"]["complete"]  # two tampered records do not outvote it
    assert not any("model-clean: " in n for n in data["notes"])


def test_the_dataset_is_the_truth_given_or_recorded_by_the_run(tmp_path, dataset):
    ds, rows = dataset
    clean = [dict(judged(r), model="model-clean") for r in rows]
    bad = [dict(judged(r), model=f"model-bad-{n}") for n in (1, 2) for r in rows]
    for r in bad:
        if r["question_id"].endswith("questao_1"):
            r["max_score"] = 2.0
    files = [
        write_jsonl(tmp_path / "clean.jsonl", clean),
        write_jsonl(tmp_path / "bad.jsonl", bad),
    ]
    for order in itertools.permutations(files):
        rows_ = rows_of(board(order, str(ds))[0])
        assert rows_["model-clean"]["complete"] and rows_["model-clean"]["exams"] == 1
        assert rows_["model-bad-1"]["coverage"] == pytest.approx(4 / 5)
    # a run folder records its dataset (lighteval's results JSON): it is the truth without --dataset
    run = tmp_path / "run"
    (run / "results" / "m").mkdir(parents=True)
    (run / "results" / "m" / "results_2026.json").write_text(
        json.dumps({"config_tasks": {"oab_bench|0": {"hf_repo": str(ds)}}})
    )
    files[0] = write_jsonl(run / "judgments.jsonl", clean)
    assert recorded_dataset(files[0]) == str(ds)
    outputs = {json.dumps(board(order)) for order in itertools.permutations(files)}
    assert len(outputs) == 1
    assert rows_of(json.loads(outputs.pop())[0])["model-clean"]["complete"]
    # and without it, the question ids say the same: two tampered records do not outvote the clean one
    (run / "results" / "m" / "results_2026.json").unlink()
    assert rows_of(board(files)[0])["model-clean"]["complete"]


def test_two_different_judgments_of_one_question_are_an_error_naming_both(tmp_path):
    a = model_file(tmp_path / "a.jsonl", "model-a")
    recs = [json.loads(line) for line in a.read_text().splitlines()]
    recs[3]["score"] = 0.5
    b = write_jsonl(tmp_path / "b.jsonl", recs)
    for order in ([a, b], [b, a]):
        proc = oab("leaderboard", *order)
        assert proc.returncode == 2
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith(f"oab-bench leaderboard: error: {a}:4:") and f"{b}:4" in line, line
    copy = write_jsonl(tmp_path / "copy.jsonl", [json.loads(line) for line in a.read_text().splitlines()])
    data, _ = board([a, copy])
    assert data["rows"][0]["complete"] and any("same result: each counted once" in n for n in data["notes"])


def test_one_models_answer_given_twice_differently_is_an_error_naming_both(tmp_path, dataset):
    _, rows = dataset
    texts = {r.question_id: f"resposta {n}" for n, r in enumerate(rows)}
    a = load_answers(answers_file(tmp_path / "a.jsonl", "m", texts))
    same = load_answers(answers_file(tmp_path / "same.jsonl", "m", texts))
    pairs, missing, _ = pair_answers(rows, a + same)  # identical copies: one answer each
    assert len(pairs) == len(rows) and not missing
    other = dict(texts, **{rows[2].question_id: "outra resposta"})
    b = load_answers(answers_file(tmp_path / "b.jsonl", "m", other))
    for answers in (a + b, b + a):
        with pytest.raises(SourceError) as e:
            pair_answers(rows, answers)
        assert str(e.value).startswith(
            f"{tmp_path / 'a.jsonl'}:3: m answers {rows[2].question_id} differently"
        )
        assert f"{tmp_path / 'b.jsonl'}:3" in str(e.value)


def test_judge_writes_the_same_file_whatever_the_order_of_the_answer_files(
    stub, judge_key, tmp_path, dataset
):
    """`oab-bench judge --answers b a` wrote model b's judgments first: the output followed the order
    in which the models first appeared in the inputs."""
    from oab_bench.scripts.cli import main

    ds, rows = dataset
    server = stub(policy="max")
    half = {r.question_id: f"resposta {n}" for n, r in enumerate(rows[:3])}
    files = [answers_file(tmp_path / f"{m}.jsonl", m, half) for m in ("model-b", "model-a")]
    written = []
    for n, order in enumerate((files, files[::-1])):
        out = tmp_path / f"out{n}.jsonl"
        argv = ["judge", "--dataset", str(ds), "--answers", *map(str, order), "--output", str(out)]
        argv += ["--judge-model", "openai/judge-test", "--api-base", server.url, "--no-progress"]
        assert main([*argv, "--cache", str(tmp_path / f"cache{n}")]) == 1  # unanswered questions
        written.append(out.read_bytes())
    assert written[0] == written[1]
    models = [json.loads(line)["model"] for line in written[0].decode().splitlines()]
    assert models[:6] == ["model-a"] * 3 + ["model-b"] * 3  # judged, then the unanswered, by model
