"""Issue 15 (items 4-6): never touch a folder we did not write; results that do not depend on
the order of the inputs; answers too long for the judge are never sent."""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from pathlib import Path

import pytest

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.publish import DATA_FILE, MARKER, MARKER_HEAD, write_dataset
from oab_bench.judge.aggregate import QuestionResult, task_figures
from oab_bench.judge.answers import load_answers
from oab_bench.judge.grading.answer_limit import count_tokens, excess
from oab_bench.judge.grading.judge_answers import pair_answers
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.leaderboard import render
from oab_bench.judge.leaderboard import tables as lb
from oab_bench.judge.leaderboard.inputs import read_inputs, recorded_dataset
from oab_bench.judge.settings import add_arguments, settings_from
from tests import synthetic as syn
from tests.conftest import oab
from tests.test_hardening import judged, write_jsonl
from tests.test_judge_server import grade
from tests.test_leaderboard import J1, exam_records


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


# --- 4. build --overwrite: only our own, untouched build ---------------------------------------------


@pytest.fixture
def source(tmp_path):
    return syn.write_source(tmp_path / "src", syn.exam())


def build(src, out, *extra):
    return oab("build", "--source", src, "--output", out, "--errata", Path(src) / "errata.yaml", *extra)


def test_a_folder_that_looks_like_a_hub_dataset_is_refused_and_untouched(tmp_path, source):
    hub = tmp_path / "clone"
    (hub / "data").mkdir(parents=True)
    (hub / DATA_FILE).write_bytes(b"PAR1 someone else's parquet")
    (hub / "README.md").write_text("---\nlicense: mit\n---\nA clone of someone's dataset.\n")
    for name in ("HEAD", "config", "index", "objects/ab/cdef"):
        (hub / ".git" / name).parent.mkdir(parents=True, exist_ok=True)
        (hub / ".git" / name).write_text(name)
    before = snapshot(hub)
    proc = build(source, hub, "--overwrite")
    assert proc.returncode == 2, proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("oab-bench build: error:") and "not a folder written by `oab-bench build`" in line
    assert ".git/ (" in line and "README.md" in line and DATA_FILE in line  # what it would have removed
    assert snapshot(hub) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clone", "src"]  # no temporary folder left


def test_our_build_with_a_users_notebook_is_refused_naming_it(tmp_path, source):
    rows, report = build_rows(source, source / "errata.yaml")
    out = write_dataset(rows, report, tmp_path / "ds")
    (out / "analysis.ipynb").write_text("{}")
    (out / "data" / "extra.csv").write_text("a,b\n")
    before = snapshot(out)
    with pytest.raises(FileExistsError) as e:
        write_dataset(rows, report, out, overwrite=True)
    assert "analysis.ipynb" in str(e.value) and "data/extra.csv" in str(e.value)
    assert "README.md" not in str(e.value)  # ours: not listed
    assert snapshot(out) == before
    proc = build(source, out, "--overwrite")
    assert proc.returncode == 2 and "would have removed: analysis.ipynb, data/extra.csv" in proc.stderr
    assert snapshot(out) == before


def test_an_edited_card_is_not_what_we_wrote(tmp_path, source):
    rows, report = build_rows(source, source / "errata.yaml")
    out = write_dataset(rows, report, tmp_path / "ds")
    (out / "README.md").write_text((out / "README.md").read_text() + "\nMy notes.\n")
    with pytest.raises(FileExistsError, match=r"README.md \(changed since the build\)"):
        write_dataset(rows, report, out, overwrite=True)
    assert (out / "README.md").read_text().endswith("My notes.\n")


def test_our_clean_build_is_replaced(tmp_path, source):
    out = tmp_path / "ds"
    assert build(source, out).returncode == 0
    marker = (out / MARKER).read_text().splitlines()
    assert marker[0] == MARKER_HEAD and any(line.endswith("  README.md") for line in marker)
    proc = build(source, out, "--overwrite")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "src"]
    # a build from before markers listed files (head line only) is still ours
    (out / MARKER).write_text(MARKER_HEAD + "\n")
    rows, report = build_rows(source, source / "errata.yaml")
    assert write_dataset(rows, report, out, overwrite=True) == out.resolve()
    # a marker with another text is not ours
    (out / MARKER).write_text("hello\n")
    with pytest.raises(FileExistsError, match=r"no \.oab-bench-build marker"):
        write_dataset(rows, report, out, overwrite=True)


# --- 5. results do not depend on the order of the inputs ----------------------------------------------

EXAMS = ("90_direito_civil", "90_direito_penal", "91_direito_civil")


def model_file(path: Path, model: str, *, tamper: bool = False, failed: str | None = None) -> Path:
    """Three made-up exams of `model`; `tamper`: one questão worth 2.00, another filed under a wrong exam."""
    recs = []
    for exam in EXAMS:
        recs += exam_records(model, J1, exam, 4.0, 1.0)
    if tamper:
        recs[1]["max_score"] = 2.0  # 90_direito_civil_questao_1
        recs[7]["exam_id"] = "91_direito_penal"  # 90_direito_penal_questao_2
    if failed:  # an earlier failed judgment of this question, as another run would have left it
        recs = [dict(r, status="api_error", score=None) for r in recs if r["question_id"] == failed]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def board(paths, dataset=None) -> tuple[dict, str]:
    got = read_inputs([str(p) for p in paths], dataset)
    tables, notes = lb.build_tables(got.records, expected_ids=got.expected, truth=got.truth, resamples=300)
    return json.loads(render.render_json(tables, notes + got.notes)), render.render_markdown(tables, notes)


def rows_of(data: dict) -> dict[str, dict]:
    return {r["model"]: r for r in data["rows"]}


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
    assert "90_direito_civil_questao_1: the inputs disagree on its value or exam" in notes
    assert "model-bad: 2 judgments disagree" in notes and "model-clean: " not in notes.replace(
        "model-clean has", ""
    )
    assert "a tie: what its id says (1.25 in exam 90_direito_civil) is used" in notes
    assert "an ok judgment, if any, is used over failures" in notes


def test_without_a_dataset_the_majority_decides_and_dropped_exams_show_in_coverage(tmp_path):
    alone = model_file(tmp_path / "bad.jsonl", "model-bad", tamper=True)
    data, md = board([alone])
    (row,) = data["rows"]
    # its own exams 90 civil (worth 10.75) and 90/91 penal (4 and 1 questions) cannot count
    assert row["exams"] == 1 and row["coverage"] == pytest.approx(5 / 15) and not row["complete"]
    assert "| model-bad * |" in md
    assert any("worth 10.75, not 10.00" in n and "coverage" in n for n in data["notes"])
    # two tampered models against one clean: without a dataset, the majority is the truth
    files = [
        model_file(tmp_path / "clean.jsonl", "model-clean"),
        alone,
        model_file(tmp_path / "bad2.jsonl", "model-bad-2", tamper=True),
    ]
    outputs = {json.dumps(board(order)) for order in itertools.permutations(files)}
    assert len(outputs) == 1
    data = json.loads(outputs.pop())[0]
    rows = rows_of(data)
    assert rows["model-clean"]["coverage"] == pytest.approx(5 / 15)  # as the tampered ones: 91 civil only
    assert any("model-clean: 2 judgments disagree" in n for n in data["notes"])
    assert any("the majority (2.00 in exam 90_direito_civil) is used" in n for n in data["notes"])


@pytest.fixture
def dataset(tmp_path):
    """A made-up exam (edition 90, civil) built into a dataset folder, with its rows."""
    src = syn.write_source(tmp_path / "src", syn.exam())
    rows, report = build_rows(src, src / "errata.yaml")
    return write_dataset(rows, report, tmp_path / "ds"), rows


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
    # and without it, two tampered records outvote the clean one
    (run / "results" / "m" / "results_2026.json").unlink()
    assert not rows_of(board(files)[0])["model-clean"]["complete"]


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


def answers_file(path: Path, model: str, answers: dict[str, str]) -> Path:
    lines = [
        {
            "question_id": q,
            "answer_id": q,
            "model_id": model,
            "choices": [{"index": 0, "turns": [t]}],
            "tstamp": 0,
        }
        for q, t in answers.items()
    ]
    return write_jsonl(path, lines)


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


# --- 6. answers too long for the judge are never sent -------------------------------------------------


def test_a_5mb_answer_is_never_sent_to_the_judge(stub, judge_key, tmp_path):
    server = stub(policy="max")
    huge = "Resposta longa do candidato, repetida sem fim. " * 110_000  # 5.2 MB
    assert len(huge.encode()) > 5_000_000
    started = time.monotonic()
    j = grade(server, answer=huge, store=JudgmentStore(tmp_path))
    assert time.monotonic() - started < 5
    assert server.count == 0
    assert j.status == "too_long" and j.score is None and j.cost_usd == 0.0
    assert "over max_answer_tokens 32768" in j.error
    store = tmp_path / "judgments.jsonl"
    assert not store.exists() or not store.read_text()  # not stored: nothing was judged
    # counted in coverage, never a score
    fig = task_figures([QuestionResult.model_validate(j.record())])
    assert fig["coverage"] == 0.0 and math.isnan(fig["exam_score"])


def test_the_limit_is_a_setting_and_near_it_tokens_are_counted(stub, judge_key):
    server = stub(policy="max")
    answer = "Resposta do candidato com fundamentação. " * 300  # about 2,000 tokens, 12,600 characters
    assert grade(server, answer=answer).status == "ok" and server.count == 1
    j = grade(server, answer=answer, max_answer_tokens=1000)  # between the bounds: really counted
    assert j.status == "too_long" and server.count == 1
    assert excess(answer, "openai/judge-test", 1000) == count_tokens(answer, "openai/judge-test") > 1000
    assert excess(answer, "openai/judge-test", 5000) is None
    args = argparse.Namespace(max_answer_tokens=None, long_answers=None)
    env = {"OAB_JUDGE_MODEL": "m", "OAB_JUDGE_MAX_ANSWER_TOKENS": "77", "OAB_JUDGE_LONG_ANSWERS": "truncate"}
    got = settings_from(args, env)
    assert (got.max_answer_tokens, got.long_answers) == (77, "truncate")
    parser = argparse.ArgumentParser()
    add_arguments(parser, prefix="judge-")
    run_args = parser.parse_args(["--judge-max-answer-tokens", "500", "--judge-long-answers", "truncate"])
    assert settings_from(run_args, {"OAB_JUDGE_MODEL": "m"}, prefix="judge-").max_answer_tokens == 500


def test_long_answers_truncate_judges_a_cut_answer_with_a_note(stub, judge_key):
    server = stub(policy="max")
    huge = "Resposta longa do candidato, repetida sem fim. " * 110_000
    j = grade(server, answer=huge, long_answers="truncate", max_answer_tokens=2000)
    assert j.status == "ok" and server.count == 1 and j.note.startswith("answer cut from about")
    sent = server.requests[0]["body"]["messages"][-1]["content"]
    assert "resposta cortada em 2000 tokens" in sent and len(sent) < 40_000


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


def test_push_sends_only_our_unchanged_build_and_says_why_not(tmp_path, source, monkeypatch):
    import huggingface_hub
    import pyarrow as pa
    import pyarrow.parquet as pq

    from oab_bench.dataset_builder.publish import push_dataset

    calls = []

    class FakeApi:
        def __getattr__(self, name):
            return lambda *a, **kw: calls.append(name)

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    foreign = tmp_path / "foreign"
    (foreign / "data").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1, 2]}), foreign / DATA_FILE)  # someone's dataset, our file names
    (foreign / "README.md").write_text("# notes\n")
    with pytest.raises(FileNotFoundError, match=r"not a dataset folder made by `oab-bench build`"):
        push_dataset(foreign, "org/x")
    rows, report = build_rows(source, source / "errata.yaml")
    out = write_dataset(rows, report, tmp_path / "ds")
    built = (out / DATA_FILE).read_bytes()
    pq.write_table(pq.read_table(out / DATA_FILE).slice(1), out / DATA_FILE)  # a row removed by hand
    with pytest.raises(ValueError, match=rf"{DATA_FILE}: changed since the build"):
        push_dataset(out, "org/x")
    (out / DATA_FILE).write_bytes(built)
    (out / "README.md").write_text("My own card, no metadata.\n")
    with pytest.raises(ValueError, match=r"README.md: .*front matter"):
        push_dataset(out, "org/x")
    assert calls == []  # nothing reached the Hub
