"""What `run` counts in its caches before any call (run_checks.stored_state): the judgments it
would make, counted as the judge will look them up (panel/judging.unstored), so an answer that
calls nothing (empty, or over the answer limit) is never "missing", and a truncated one is looked
up by the text the judge is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from oab_bench.judge.generation.answer_store import AnswerStore, answer_key
from oab_bench.judge.generation.run_checks import stored_state
from oab_bench.judge.generation.run_settings import RunSettings, selected_rows
from oab_bench.judge.generation.task_prompt import candidate_messages
from oab_bench.scripts.cli import build_parser
from tests.helpers import answer

TASKS = "oab_bench:civil"


def run_args(tmp_path: Path, dataset: Path, *extra: str):
    argv = ["run", "--model", "openai/cand", "--dataset", str(dataset), "--tasks", TASKS, "--output-dir"]
    argv += [
        str(tmp_path / "o"),
        "--answer-cache",
        str(tmp_path / "ac"),
        "--judge-cache",
        str(tmp_path / "jc"),
    ]
    argv += ["--judge-model", "openai/j", *extra]
    return RunSettings.from_args(build_parser().parse_args(argv))


def store_answers(s: RunSettings, text: str) -> int:
    """Every question of the run answered `text` in its answer cache, keyed as the run looks it up."""
    rows = selected_rows(s)
    store = AnswerStore(s.answer_cache)
    for row in rows:
        key = answer_key(model="openai/cand", messages=candidate_messages(row), generation=s.generation())
        store.put(answer(key, text))
    return len(rows)


@pytest.mark.parametrize(
    ("text", "extra", "to_make"),
    [
        ("<think>só raciocínio</think>", (), 0),  # empty once reasoning is removed: nothing to call
        ("Resposta longa. " * 50, ("--judge-max-answer-tokens", "5"), 0),  # too long: never sent
        ("Resposta longa. " * 50, ("--judge-max-answer-tokens", "5", "--judge-long-answers", "truncate"), 1),
        ("Resposta.", ("--judge-model", "openai/k"), 2),  # a jury: each member's judgment
        ("Resposta.", ("--repeats", "3"), 3),  # each repeat's
    ],
    ids=["empty", "too long", "truncated", "jury", "repeats"],
)
def test_only_judgments_the_judge_would_make_count_as_missing(
    tmp_path, synthetic_dataset, text, extra, to_make
):
    dataset, _ = synthetic_dataset
    s = run_args(tmp_path, dataset, *extra)
    questions = store_answers(s, text)
    state = stored_state(s)
    assert state.questions == state.answered == questions and state.answers_missing == 0
    assert state.judgments_missing == to_make * questions
    assert state.judged == (questions if to_make == 0 else 0)
    assert not (tmp_path / "jc").exists()  # looked at, never created


def test_a_panels_judgments_count_per_jury_member_beside_the_candidates(tmp_path, synthetic_dataset):
    """`run --panel`: the panel's judgments are among those to make (a read-only cache would not
    keep them), each member's apart; its empty answers call nothing."""
    from oab_bench.judge.answers import Answer

    dataset, rows = synthetic_dataset
    s = run_args(tmp_path, dataset, "--judge-model", "openai/k")
    questions = store_answers(s, "<think>só raciocínio</think>")  # the candidate's: nothing to call
    pairs = [
        (row, Answer(model="p", question_id=qid, turns=["Resposta do painel." if n % 2 else " "]))
        for n, (qid, row) in enumerate(sorted(rows.items()))
    ]
    state = stored_state(s, (None, pairs))
    assert state.judged == questions and state.judgments_missing == 2 * (len(pairs) // 2)
    assert not (tmp_path / "jc").exists()
