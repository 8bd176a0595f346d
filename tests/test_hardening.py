"""Issue 8: no silent wrong figures, no data loss, fast clear failures. One test (or more) per item."""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.publish import MARKER, write_dataset
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.runner import Judge, run_judge_all
from tests import synthetic as syn
from tests.conftest import REPO, SECRET, oab
from tests.test_judge_parsing import made_up_row
from tests.test_judge_server import grade, settings
from tests.test_leaderboard import J1, exam_records

KEY_VARS = ("OPENAI_API_KEY", "OAB_JUDGE_API_KEY", "ANTHROPIC_API_KEY")


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    return env | {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"} | extra


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def synthetic_dataset(tmp_path):
    """A made-up exam (edition 90, civil) built into a dataset folder, with its rows."""
    src = syn.write_source(tmp_path / "src", syn.exam())
    rows, report = build_rows(src, src / "errata.yaml")
    return write_dataset(rows, report, tmp_path / "ds"), {r.question_id: r for r in rows}


def judged(row, score_of=max) -> dict:
    """Our judgment of `row`, each rubric item scored by `score_of(allowed)`, as a judgments file line."""
    items = [
        {"item_id": r.item_id, "score": score_of(r.allowed_scores), "max_score": r.max_score, "analysis": ""}
        for r in row.rubric
    ]
    return {
        "question_id": row.question_id,
        "exam_id": row.exam_id,
        "model": "model-x",
        "judge_model": J1,
        "prompt_version": "oab-pt-v1",
        "mode": "structured",
        "status": "ok",
        "score": round(sum(i["score"] for i in items), 2),
        "max_score": row.max_score,
        "items": items,
    }


# --- 1. leaderboard and cache trust ---------------------------------------------------------------


@pytest.mark.parametrize(
    "change, field",
    [
        ({"score": math.nan}, "score"),
        ({"score": -0.5}, "score"),
        ({"score": 1.3}, "score"),
        ({"max_score": "x"}, "max_score"),
    ],
)
def test_leaderboard_rejects_impossible_scores(tmp_path, change, field):
    recs = exam_records("model-a", J1, "90_direito_civil", 4.0, 1.0)
    recs[2].update(change)  # a questão worth 1.25
    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))  # json writes NaN as NaN
    proc = oab("leaderboard", path)
    assert proc.returncode == 2, proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"oab-bench leaderboard: error: {path}:3: field '{field}':"), line


def test_leaderboard_rejects_items_that_are_not_the_rubrics(tmp_path, synthetic_dataset):
    ds, rows = synthetic_dataset
    recs = [judged(r) for r in rows.values()]
    recs[1]["items"][0]["item_id"] = "Z9"
    path = write_jsonl(tmp_path / "j.jsonl", recs)
    proc = oab("leaderboard", path, "--dataset", ds, env=clean_env())
    assert proc.returncode == 2
    assert f"{path}:2: field 'items': items" in proc.stderr and "do not match the rubric" in proc.stderr
    recs = [judged(r) for r in rows.values()]
    recs[1]["items"][0]["score"] = 0.01  # a score the rubric does not allow
    recs[1]["score"] = round(sum(i["score"] for i in recs[1]["items"]), 2)
    proc = oab("leaderboard", write_jsonl(path, recs), "--dataset", ds, env=clean_env())
    assert proc.returncode == 2 and "field 'items[0].score'" in proc.stderr
    proc = oab(
        "leaderboard", write_jsonl(path, [judged(r) for r in rows.values()]), "--dataset", ds, env=clean_env()
    )
    assert proc.returncode == 0, proc.stderr


def test_a_judgment_disagreeing_with_the_dataset_shows_in_coverage_and_a_note(tmp_path, synthetic_dataset):
    ds, rows = synthetic_dataset
    recs = [judged(r) for r in rows.values()]
    recs[1]["max_score"] = 2.0  # the dataset says 1.25
    proc = oab("leaderboard", write_jsonl(tmp_path / "j.jsonl", recs), "--dataset", ds, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    (row,) = data["rows"]
    assert row["exams"] == 0 and row["coverage"] == pytest.approx(4 / 5)
    assert any("disagree" in n and recs[1]["question_id"] in n for n in data["notes"])


def test_an_exam_whose_values_do_not_make_ten_is_noted(tmp_path):
    recs = exam_records("model-a", J1, "90_direito_civil", 4.0, 1.0)
    for r in recs:
        if r["question_id"].endswith("questao_1"):
            r["max_score"] = 2.0
    proc = oab("leaderboard", write_jsonl(tmp_path / "j.jsonl", recs), "--format", "json")
    data = json.loads(proc.stdout)
    assert data["rows"][0]["exams"] == 0
    assert any("worth 10.75, not 10.00" in n for n in data["notes"])


def test_a_rebuilt_dataset_folder_never_loads_stale_rows(tmp_path):
    """`datasets` caches a local folder whose card declares `configs` by its name alone."""
    from oab_bench.judge.dataset import load_rows

    loaded = []
    for n, edition in enumerate((90, 91)):
        src = syn.write_source(tmp_path / f"src{n}", syn.exam(edition=edition))
        rows, report = build_rows(src, src / "errata.yaml")
        for where in (tmp_path / f"a{n}" / "same-name", tmp_path / "a0" / "same-name"):
            write_dataset(rows, report, where, overwrite=True)
            time.sleep(0.05)
            loaded.append((edition, {r.edition for r in load_rows(str(where))}))
    assert all({edition} == got for edition, got in loaded), loaded


def test_a_tampered_cache_line_is_judged_again(stub, judge_key, tmp_path, caplog):
    server = stub(policy="max")
    assert grade(server, store=JudgmentStore(tmp_path)).status == "ok"
    path = tmp_path / "judgments.jsonl"
    line = json.loads(path.read_text())
    line["score"] = 99.0
    path.write_text(json.dumps(line) + "\n")
    before = server.count
    with caplog.at_level(logging.WARNING, logger="oab_bench.judge.grading.runner"):
        again = grade(server, store=JudgmentStore(tmp_path))
    assert server.count == before + 1 and again.status == "ok" and again.score == 1.25 and not again.cached
    assert any("cached judgment" in r.message and "judging it again" in r.message for r in caplog.records)


# --- 2. build: never delete what is not ours, clear lines for bad sources ---------------------------


def build(src, out, *extra):
    return oab("build", "--source", src, "--output", out, "--errata", Path(src) / "errata.yaml", *extra)


def test_overwrite_refuses_a_folder_that_is_not_a_build(tmp_path):
    src = syn.write_source(tmp_path / "src", syn.exam())
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    proc = build(src, precious, "--overwrite")
    assert proc.returncode == 2 and "not a folder written by `oab-bench build`" in proc.stderr
    assert (precious / "thesis.tex").read_text() == "years of work"
    out = tmp_path / "ds"
    assert build(src, out).returncode == 0 and (out / MARKER).is_file()
    assert build(src, out, "--overwrite").returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "precious", "src"]  # nothing left aside


@pytest.mark.parametrize("target", ["file", "under-a-file"])
def test_output_that_cannot_be_a_folder(tmp_path, target):
    src = syn.write_source(tmp_path / "src", syn.exam())
    blocker = tmp_path / "blocker"
    blocker.write_text("a file")
    out = blocker if target == "file" else blocker / "ds"
    proc = build(src, out, "--overwrite")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("oab-bench build: error:") and str(blocker) in line
    assert blocker.read_text() == "a file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker", "src"]


def test_bad_sources_are_one_line_naming_file_and_line(tmp_path):
    src = syn.write_source(tmp_path / "src", syn.exam())
    questions = src / "question.jsonl"
    lines = questions.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"a", b"\xe9", 1)  # latin-1, not UTF-8
    questions.write_bytes(b"\n".join(lines))
    cases = {"non-UTF-8": (src, "question.jsonl:2: not UTF-8")}
    empty = syn.write_source(tmp_path / "empty", syn.exam())
    (empty / "question.jsonl").write_text("")
    cases["empty"] = (empty, "question.jsonl:1: no questions")
    folder = syn.write_source(tmp_path / "folder", syn.exam())
    (folder / "question.jsonl").unlink()
    (folder / "question.jsonl").mkdir()
    cases["folder"] = (folder, "question.jsonl: is a folder")
    cases["source is a file"] = (questions, "is a file: expected the upstream data folder")
    for name, (source, expected) in cases.items():
        out = tmp_path / f"out-{name}"
        proc = oab("build", "--source", source, "--output", out, "--errata", src / "errata.yaml")
        assert proc.returncode == 2, name
        (line,) = proc.stderr.strip().splitlines()
        assert expected in line, (name, line)
        assert not out.exists()


# --- 3-5. credentials, dead servers, dummy keys, secrets -------------------------------------------


@pytest.mark.parametrize("code", ["401", "403"])
def test_rejected_credentials_are_permanent_and_never_written(stub, tmp_path, monkeypatch, code):
    monkeypatch.delenv("OAB_JUDGE_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # the provider's variable, echoed back by the server
    server = stub(faults=[{"kind": code}])
    j = grade(server, store=JudgmentStore(tmp_path), max_attempts=6)
    assert j.status == "api_error" and j.attempts == 1 and server.count == 1
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"  # the key was really sent
    assert SECRET not in j.error and "***" in j.error
    assert SECRET not in j.model_dump_json()


def test_missing_credentials_fail_at_once_naming_the_variable(monkeypatch):
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    started = time.monotonic()
    j = run_judge_all(
        Judge(_no_base_settings()),
        [(made_up_row(), Answer(model="m", question_id="90_direito_civil_questao_1", turns=["x"]))],
        progress=False,
    )[0]
    assert j.status == "api_error" and j.attempts == 1 and "OAB_JUDGE_API_KEY" in j.error
    assert time.monotonic() - started < 10


def _no_base_settings():
    from oab_bench.judge.settings import JudgeSettings

    return JudgeSettings(judge_model="openai/gpt-4o-mini", max_attempts=6, backoff_initial=1.0)


def test_a_dead_judge_server_stops_the_run_early(tmp_path, judge_key):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: connections are refused

    class Dead:
        url = f"http://127.0.0.1:{port}/v1"

    row = made_up_row()
    pairs = [
        (row, Answer(model="m", question_id=row.question_id, turns=[f"resposta {n}"])) for n in range(40)
    ]
    judge = Judge(settings(Dead, max_attempts=6, backoff_initial=0.5, backoff_max=4, concurrency=4))
    started = time.monotonic()
    judgments = run_judge_all(judge, pairs, progress=False)
    assert time.monotonic() - started < 20
    assert {j.status for j in judgments} == {"api_error"}
    assert sum(j.attempts for j in judgments) < 40
    assert "judge server unreachable" in judgments[-1].error


def test_judge_with_api_base_and_no_key_sends_a_dummy_key(stub, tmp_path, built_dataset, upstream_v1):
    from tests.test_judge_server import _answers_file

    server = stub(policy="max")
    answers, ids = _answers_file(tmp_path, upstream_v1, 2)
    out = tmp_path / "out.jsonl"
    args = ["judge", "--dataset", built_dataset, "--answers", answers, "--judge-model", "openai/judge-test"]
    args += ["--api-base", server.url, "--cache", tmp_path / "c", "--output", out, "--no-progress"]
    args += ["--questions", *ids]
    proc = oab(*args, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    assert {r["headers"]["Authorization"] for r in server.requests} == {"Bearer EMPTY"}


def test_run_without_keys_fails_in_seconds_naming_them(tmp_path, built_dataset):
    started = time.monotonic()
    proc = oab(
        "run",
        "--model",
        "openai/gpt-4o-mini",
        "--dataset",
        built_dataset,
        "--output-dir",
        tmp_path / "r",
        env=clean_env(),
    )
    assert proc.returncode == 2
    assert "OPENAI_API_KEY" in proc.stderr and "OAB_JUDGE_API_KEY" in proc.stderr
    assert time.monotonic() - started < 60
    assert not (tmp_path / "r" / "model_config.yaml").exists()  # nothing was started


def test_run_with_a_dead_candidate_server_fails_fast(tmp_path, built_dataset):
    proc = oab(
        "run",
        "--model",
        "openai/x",
        "--api-base",
        "http://127.0.0.1:9/v1",
        "--dataset",
        built_dataset,
        "--judge-api-base",
        "http://127.0.0.1:9/v1",
        "--output-dir",
        tmp_path / "r",
        env=clean_env(),
    )
    assert proc.returncode == 2 and "candidate server at http://127.0.0.1:9/v1 does not answer" in proc.stderr


# --- 7. empty answers, unreadable cache -------------------------------------------------------------


def test_empty_answers_file_is_an_error(tmp_path, built_dataset):
    empty = tmp_path / "answers.jsonl"
    empty.write_text("")
    args = ["judge", "--dataset", built_dataset, "--answers", empty, "--judge-model", "openai/j"]
    proc = oab(
        *args, "--api-base", "http://127.0.0.1:9/v1", "--output", tmp_path / "o.jsonl", env=clean_env()
    )
    assert proc.returncode == 2 and f"{empty}: no answers in it" in proc.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_a_cache_with_bad_bytes_is_read_around(stub, judge_key, tmp_path, caplog):
    server = stub(policy="max")
    grade(server, store=JudgmentStore(tmp_path))
    path = tmp_path / "judgments.jsonl"
    path.write_bytes(b"\xff\xfe not utf-8 \x80\n" + path.read_bytes())
    with caplog.at_level(logging.WARNING, logger="oab_bench.judge.grading.judgment_store"):
        store = JudgmentStore(tmp_path)
    assert len(store) == 1
    assert any(
        f"{path}:1: unreadable cache line skipped (not UTF-8)" in r.getMessage() for r in caplog.records
    )


# --- 8. repo hygiene, leftovers of a killed run -----------------------------------------------------


def test_no_litellm_cache_is_tracked():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True).stdout.split()
    assert not [p for p in tracked if p.startswith((".litellm_cache", "results/"))]


def test_leaderboard_skips_the_folder_of_a_killed_run(tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", exam_records("model-a", J1, "90_direito_civil", 4.0, 1.0))
    killed = tmp_path / "runs" / "killed"
    (killed / ".lighteval-cache-x").mkdir(parents=True)
    (killed / "model_config.yaml").write_text("model_parameters: {}\n")
    (killed / "judgments.jsonl").write_text('{"question_id": "90_dir')  # torn
    proc = oab("leaderboard", good, killed)
    assert proc.returncode == 0, proc.stderr
    assert "model-a" in proc.stdout and "skipped" in proc.stderr and str(killed) in proc.stderr


# --- 10. two processes, one cache, one payment ------------------------------------------------------


def test_two_judge_processes_sharing_a_cache_pay_once(stub, tmp_path, built_dataset, upstream_v1):
    from tests.test_judge_server import _answers_file

    server = stub(policy="max", latency=0.3)
    answers, ids = _answers_file(tmp_path, upstream_v1, 6)
    cache = tmp_path / "cache"

    def start(n):
        args = [
            "judge",
            "--dataset",
            built_dataset,
            "--answers",
            answers,
            "--judge-model",
            "openai/judge-test",
        ]
        args += [
            "--api-base",
            server.url,
            "--cache",
            cache,
            "--output",
            tmp_path / f"o{n}.jsonl",
            "--no-progress",
            "--questions",
            *ids,
        ]
        cmd = [sys.executable, "-m", "oab_bench.scripts.cli", *map(str, args)]
        return subprocess.Popen(
            cmd, cwd=REPO, env=clean_env(OAB_JUDGE_API_KEY=SECRET), stderr=subprocess.PIPE
        )

    procs = [start(1), start(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert server.count == len(ids)
    for n in (1, 2):
        rows = [json.loads(x) for x in (tmp_path / f"o{n}.jsonl").read_text().splitlines()]
        assert len(rows) == len(ids) and {r["status"] for r in rows} == {"ok"}
