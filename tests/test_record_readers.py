"""One reader per record kind: a judgment of the wrong shape is `file:line: field: what is wrong`,
exit 2, in every command that reads judgments (never a traceback), the judgment cache skips it
with the same words, and human grades follow the judges' rule for what FGV annulled."""

from __future__ import annotations

import json
import logging
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.validity.agreement import compare_all
from oab_bench.judge.validity.sources import load_source
from oab_bench.keyed_store import KeyedStore
from oab_bench.scripts.cli import main
from tests.helpers import AGREEMENT_EXAMS as EXAMS
from tests.helpers import details_run, exam, made_up_row, source_a
from tests.helpers import write_jsonl as write

# id -> (what the second line's record gets, the field the error names)
SHAPE_CASES = {
    "items-numbers": ({"items": [1, 2]}, "items[0]"),  # AttributeError in trust.problem
    "items-object": ({"items": {"A1": 0.5}}, "items"),  # AttributeError in trust.problem
    "items-text": ({"items": "A1"}, "items"),
    "items-null-item": ({"items": [None]}, "items[0]"),  # "None is not a score within 0..None"
    "item-without-id": ({"items": [{"score": 0.5, "max_score": 0.625}]}, "items[0].item_id"),  # KeyError
    "item-id-a-list": (
        {"items": [{"item_id": ["A1"], "score": 0.5, "max_score": 0.625}]},
        "items[0].item_id",
    ),
    "item-score-text": ({"items": [{"item_id": "A1", "score": "0.5", "max_score": 0.625}]}, "items[0].score"),
    "score-text": ({"score": "1.0"}, "score"),
    "score-bool": ({"score": True}, "score"),
    "max-score-list": ({"max_score": [1.25]}, "max_score"),
    "status-unknown": ({"status": "fine"}, "status"),  # taken as a failure of its own kind before
    "mode-unknown": ({"mode": "freestyle"}, "mode"),
    "members-object": ({"members": {"a": {"status": "ok"}}}, "members"),
    "member-items-list": (
        {"members": [{"judge_model": "a", "status": "ok", "score": 1.0, "items": [0.5]}]},
        "members[0].items",
    ),
    "repeats-numbers": ({"repeats": [1]}, "repeats[0]"),
    "question-id-null": ({"question_id": None}, "question_id"),
    "judge-text-number": ({"judge_text": 5}, "judge_text"),  # TypeError in the report's json.loads
    "error-list": ({"error": ["x"]}, "error"),  # a pydantic dump in the report
}
SHAPES = list(SHAPE_CASES.values())
IDS = list(SHAPE_CASES)
COMMANDS = {
    "leaderboard": lambda bad, good, tmp: ["leaderboard", bad, "--resamples", "50"],
    "leaderboard --members": lambda bad, good, tmp: ["leaderboard", bad, "--members", "--resamples", "50"],
    "compare": lambda bad, good, tmp: ["compare", "m1", "m2", bad, "--resamples", "50"],
    "report": lambda bad, good, tmp: ["report", bad, "--output", tmp / "r.html", "--resamples", "50"],
    "agreement": lambda bad, good, tmp: ["agreement", good, bad, "--resamples", "50"],
    "agreement (first)": lambda bad, good, tmp: ["agreement", bad, good, "--resamples", "50"],
}


def _bad_file(tmp_path, change: dict):
    good = source_a(tmp_path, "good.jsonl")
    recs = [json.loads(line) for line in good.read_text().splitlines()]
    recs[1] = {**recs[1], **change}
    return write(tmp_path / "bad.jsonl", recs), good


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("change", "field"), SHAPES, ids=IDS)
def test_a_wrong_shape_is_file_line_field_in_every_command(tmp_path, capsys, command, change, field):
    bad, good = _bad_file(tmp_path, change)
    argv = [str(a) for a in COMMANDS[command](bad, good, tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    name = argv[0]
    assert f"oab-bench {name}: error: {bad}:2: field '{field}':" in err, err
    assert "Traceback" not in err and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(("change", "field"), SHAPES[:5], ids=IDS[:5])
def test_a_wrong_shape_in_a_jury_or_repeats_file(tmp_path, capsys, change, field):
    """`agreement JURY.jsonl` and `agreement --repeats RUN` read nested records through the same reader."""
    recs = exam("m1", EXAMS[0], 4.0, 1.0)
    member = {"judge_model": "a", "status": "ok", "score": 1.0, "items": {}}
    jury = [{**r, "members": [{**member, "score": r["score"]}, {**member, "judge_model": "b"}]} for r in recs]
    reps = [{**r, "repeats": [{**member, "repeat": 0, "score": r["score"]}]} for r in recs]
    for argv, records in ((["agreement"], jury), (["agreement", "--repeats"], reps)):
        records[1] = {**records[1], **change}
        path = write(tmp_path / "nested.jsonl", records)
        assert main([*argv, str(path), "--resamples", "50"]) == 2
        err = capsys.readouterr().err
        assert f"{path}:2: field '{field}':" in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    ("items", "field"),
    [([1, 2], "items[0]"), ([{"score": 0.5, "max_score": 0.625}], "items[0].item_id")],
)
def test_a_wrong_shape_in_lighteval_details_names_the_file_and_row(tmp_path, capsys, items, field):
    (record,) = exam("m1", EXAMS[0], 4.0, 1.0, skip=(1, 2, 3, 4))
    record.pop("model")  # details carry none: the model is the folder's
    run = details_run(tmp_path / "run", "m1", [{**record, "items": items}])
    assert main(["leaderboard", str(run), "--resamples", "50"]) == 2
    err = capsys.readouterr().err
    assert ".parquet:1: field '" + field + "':" in err and "Traceback" not in err, err


def test_details_read_back_as_json_lines_are(tmp_path):
    """The same judgments in a details file and a judgments file: the same records, items included."""
    recs = exam("m1", EXAMS[0], 4.0, 1.0)
    run = details_run(tmp_path / "run", "m1", [{k: v for k, v in r.items() if k != "model"} for r in recs])
    jsonl = write(tmp_path / "j.jsonl", recs)
    from_details = load_source("A", run).graded
    assert from_details == load_source("B", jsonl).graded
    assert from_details[("m1", recs[0]["question_id"])].items == {"P1": 2.5, "P2": 1.5}


def test_the_cache_skips_a_wrong_shape_in_the_reports_words(tmp_path, caplog):
    """The cache read `"items": [1, 2]` as "not a judgment" and took `"score": "1.0"` as 1.0; it
    now skips both, naming the field as the reports do, and keeps the sound line."""
    from oab_bench.judge.records import Judgment

    rec = {**exam("m1", EXAMS[0], 4.0, 1.0)[1], "prompt_version": "oab-pt-v2", "cache_key": "k0"}
    good = Judgment.model_validate(rec).model_dump_json()
    lines = [
        json.dumps({**rec, "cache_key": "k1", "items": [1, 2]}),
        json.dumps({**rec, "cache_key": "k2", "score": "1.0"}),
        good,
    ]
    KeyedStore(tmp_path / "judgments.sqlite", "judgments", str).write(
        [(f"k{n}", line) for n, line in enumerate(lines, 1)]
    )
    with caplog.at_level(logging.WARNING, logger="oab_bench.keyed_store"):
        store = JudgmentStore(tmp_path)
        assert [j.cache_key for j in store.judgments()] == ["k0"]
    said = [r.getMessage() for r in caplog.records]
    assert any("judgments k1: unreadable row skipped (items[0]: 1 is not an object)" in m for m in said), said
    assert any("judgments k2: unreadable row skipped (score: '1.0' is not a number)" in m for m in said), said


# --- human grades: what FGV annulled counts in full, as for the judges ------------------------------

ROW = made_up_row(annulled=True)  # A1 0.65, B1 0.3, B2 0.3 annulled


def _judge_file(tmp_path):
    items = {"A1": 0.65, "B1": 0.0, "B2": 0.3}  # a judge's annulled item is full (trust.problem)
    record = {
        "question_id": ROW.question_id,
        "exam_id": ROW.exam_id,
        "model": "m1",
        "judge_model": "openai/j",
        "prompt_version": "oab-pt-v1",
        "mode": "structured",
        "status": "ok",
        "score": 0.95,
        "max_score": ROW.max_score,
        "items": [{"item_id": k, "score": v, "max_score": 0.65} for k, v in items.items()],
    }
    return write(tmp_path / "judge.jsonl", [record])


@pytest.mark.parametrize("b2", ["0", "0.1", None])
def test_a_human_grading_an_annulled_item_below_full_is_counted_in_full(tmp_path, b2):
    """A human CSV giving B2 (annulled) 0 was kept as given while the judge's was full: a fake
    0.30-point disagreement. Now counted in full with a note (and added in full when not graded)."""
    rows = [f"{ROW.exam_id},{ROW.question_id},A1,0.65,ana,m1", f"{ROW.exam_id},{ROW.question_id},B1,0,ana,m1"]
    if b2 is not None:
        rows.append(f"{ROW.exam_id},{ROW.question_id},B2,{b2},ana,m1")
    human = tmp_path / "h.csv"
    human.write_text("exam_id,question_id,item_id,score,grader,model\n" + "\n".join(rows) + "\n")
    dataset = {ROW.question_id: ROW}
    src = load_source("H", human, dataset)
    graded = src.graded[("m1", ROW.question_id)]
    assert graded.score == pytest.approx(0.95) and graded.items == {"A1": 0.65, "B1": 0.0, "B2": 0.3}
    assert bool(src.notes) == (b2 is not None)
    report = compare_all([load_source("J", _judge_file(tmp_path), dataset), src], dataset, resamples=50)
    assert report["question"]["mae"]["value"] == 0.0 and report["item"]["exact"]["value"] == 1.0
    if b2 is not None:
        assert any("FGV annulled were below full: counted in full" in n for n in report["notes"])


def test_without_the_dataset_a_human_grade_is_kept_as_given(tmp_path):
    """What was annulled is the dataset's word: without --dataset nothing is raised."""
    human = tmp_path / "h.csv"
    human.write_text(
        "exam_id,question_id,item_id,score,grader\n"
        f"{ROW.exam_id},{ROW.question_id},A1,0.65,ana\n{ROW.exam_id},{ROW.question_id},B2,0,ana\n"
    )
    src = load_source("H", human)
    assert src.graded[(None, ROW.question_id)].items == {"A1": 0.65, "B2": 0.0} and not src.notes


# --- answers in lighteval details: the same reader's words -----------------------------------------


@pytest.mark.parametrize(
    ("row", "said"),
    [
        ({"doc": "q", "model_response": {"text": ["a"]}}, "field 'doc': 'q' is not an object"),
        (
            {"doc": {"specific": {"id": 1}}, "model_response": {"text": ["a"]}},
            "field 'doc.specific.question_id': missing",
        ),
        (
            {"doc": {"specific": {"question_id": "q"}}, "model_response": {"text": "a"}},
            "field 'model_response.text'",
        ),
    ],
    ids=["doc-text", "no-question-id", "text-not-a-list"],
)
def test_answers_of_the_wrong_shape_in_details_name_file_and_row(tmp_path, capsys, row, said):
    """`doc` a string was `AttributeError: 'str' object has no attribute 'get'` in judge and report."""
    from oab_bench.judge.answers import load_answers

    where = tmp_path / "run" / "details" / "m1" / "2025-01-01T00-00-00"
    where.mkdir(parents=True)
    file = where / "details_oab_bench|0_2025.parquet"
    pq.write_table(pa.Table.from_pylist([row]), file)
    with pytest.raises(SourceError, match=re.escape(f"{file}:1: {said}")):
        load_answers(tmp_path / "run")
