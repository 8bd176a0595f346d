"""`--repeats K`: each answer graded K times (own cache entries), the noise report, and the
leaderboard's interval over exams and repeats."""

from __future__ import annotations

import json

import pytest

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.intervals import repeats_ci
from oab_bench.judge.leaderboard import tables as lb
from oab_bench.judge.leaderboard.inputs import load_records
from oab_bench.judge.validity.agreement import render_json
from oab_bench.judge.validity.repeatability import read_repeated, render_repeats, repeats_report
from tests.conftest import oab
from tests.helpers import repeated

EXAMS = ["90_direito_civil", "90_direito_penal", "91_direito_civil", "91_direito_penal"]


@pytest.fixture
def run(tmp_path):
    recs = []
    recs += repeated("m", EXAMS[0], [4.0, 4.0, 4.0])  # 8, 8, 8
    recs += repeated("m", EXAMS[1], [1.0, 2.5, 1.0])  # 5, 6.5, 5: the verdict changes
    recs += repeated("m", EXAMS[2], [0.0, 0.0, 0.0])  # 4, 4, 4
    recs += repeated("m", EXAMS[3], [3.0, 3.0, 2.0])  # 7, 7, 6
    path = tmp_path / "repeated.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path, recs


def test_noise_figures_by_hand(run):
    _, recs = run
    r = repeats_report(recs, resamples=300, seed=0)
    assert (r["repeats"], r["n_questions"], r["n_exam_results"]) == (3, 20, 4)
    # peça SDs: 0, sd(1, 2.5, 1) = 0.866, 0, sd(3, 3, 2) = 0.577; the 16 questões 0
    assert r["question_sd"]["max"] == pytest.approx(0.8660254)
    assert r["question_sd"]["mean"] == pytest.approx((0.8660254 + 0.5773503) / 20)
    assert r["question_sd"]["noisiest"][0]["question_id"] == f"{EXAMS[1]}_peca_praticoprofissional"
    assert r["verdict_changes"]["count"] == 1 and r["verdict_changes"]["share"] == 0.25
    assert r["verdict_changes"]["exams"][0]["totals"] == [5.0, 6.5, 5.0]
    assert 0.5 < r["alpha"]["value"] < 1.0
    text = render_repeats(r)
    assert "exams whose verdict changes between repeats: 1 of 4 (25%)" in text


def test_leaderboard_averages_repeats_and_widens_the_interval(run):
    path, _ = run
    (table,) = lb.build_tables(load_records(path), resamples=2000)[0]
    (row,) = table.rows
    means = {EXAMS[0]: 8.0, EXAMS[1]: 5.5, EXAMS[2]: 4.0, EXAMS[3]: 6.67}
    assert row.exam_totals == pytest.approx(means)
    assert row.mean_exam_score == pytest.approx(sum(means.values()) / 4, abs=0.01)
    assert row.ci_low < row.mean_exam_score < row.ci_high
    # judge noise alone: four identical exams graded differently still get an interval
    low, high = repeats_ci({e: [5.0, 7.0] for e in EXAMS}, resamples=2000, seed=0)
    assert low < 6.0 < high and (low, high) == repeats_ci(
        {e: [5.0, 7.0] for e in EXAMS}, resamples=2000, seed=0
    )


def test_repeats_through_the_stub(stub, judge_key, tmp_path, upstream_v1, built_dataset):
    server = stub(policy="alternate")
    answers = upstream_v1 / "model_answer" / "o3-2025-04-16.jsonl"
    cache, out = tmp_path / "cache", tmp_path / "rep.jsonl"
    common = ["judge", "--dataset", built_dataset, "--answers", answers, "--judge-model", "openai/judge-test"]
    common += ["--questions", "39_direito_penal*", "39_direito_administrativo*", "--api-base", server.url]
    common += ["--cache", cache, "--no-progress"]
    proc = oab(*common, "--repeats", "3", "--output", out, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert server.count == 30  # 10 questions x 3 repeats, each its own call
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 10 and all([m["repeat"] for m in r["repeats"]] == [0, 1, 2] for r in rows)
    # repeat 0 is what a single run grades: a plain run afterwards finds it all in the cache
    plain = oab(*common, "--output", tmp_path / "plain.jsonl", timeout=300)
    assert plain.returncode == 0 and server.count == 30 and "(10 from cache)" in plain.stderr
    report = oab("agreement", "--repeats", out, "--format", "json", "--resamples", "200", timeout=120)
    assert report.returncode == 0, report.stderr
    r = json.loads(report.stdout)
    assert (
        r["repeats"] == 3
        and r["question_sd"]["max"] == pytest.approx(0, abs=1e-9)
        and r["verdict_changes"]["count"] == 0
    )
    text = oab("agreement", "--repeats", out, "--resamples", "200", timeout=120)
    assert "Run-to-run noise: 3 repeats" in text.stdout
    lb_run = oab("leaderboard", out, "--format", "json", "--resamples", "200", timeout=120)
    assert lb_run.returncode == 0 and json.loads(lb_run.stdout)["rows"][0]["exams"] == 2


def test_run_hands_repeats_to_the_task(tmp_path, monkeypatch):
    from oab_bench.judge.generation.run_settings import RunSettings
    from oab_bench.judge.grading.jury import Repeated, make_judge
    from oab_bench.judge.grading.lighteval_judge import settings_from_env
    from oab_bench.judge.settings import JudgeSettings
    from oab_bench.scripts.cli import build_parser

    run = ["run", "--model", "openai/m", "--output-dir", str(tmp_path), "--dataset", str(tmp_path)]
    args = build_parser().parse_args([*run, "--judge-model", "openai/j", "--repeats", "3"])
    judge = make_judge(RunSettings.from_args(args).judge)  # what the run hands the task
    assert isinstance(judge, Repeated) and len(judge.runs) == 3
    monkeypatch.setenv("OAB_JUDGE_MODEL", "openai/j")
    monkeypatch.setenv("OAB_JUDGE_REPEATS", "3")  # the plain lighteval CLI's way
    assert len(make_judge(settings_from_env()).runs) == 3
    with pytest.raises(ValueError, match="--repeats with a jury"):
        make_judge(JudgeSettings(judge_model="openai/a,openai/b", repeats=2))


def _write(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), r"bad.jsonl:2: field 'repeats\[1\].score': nan is not a score"),
        (7.0, r"bad.jsonl:2: field 'repeats\[1\].score': 7.0 is not a score within 0..1.25"),
        (-1, r"bad.jsonl:2: field 'repeats\[1\].score': -1.0 is not a score"),
        ("0.5", r"bad.jsonl:2: field 'repeats\[1\].score': '0.5' is not a number"),
        (None, r"bad.jsonl:2: field 'repeats\[1\].status': missing"),
    ],
)
def test_a_bad_repeat_stops_naming_file_line_and_field(run, tmp_path, value, message):
    """The noise report and the leaderboard read a repeat's score only once it is checked."""
    _, recs = run
    bad = json.loads(json.dumps(recs))
    if value is None:
        del bad[1]["repeats"][1]["status"]
    else:
        bad[1]["repeats"][1]["score"] = value
    path = _write(tmp_path / "bad.jsonl", bad)
    with pytest.raises(SourceError, match=message):
        read_repeated(path)
    with pytest.raises(SourceError, match=message):
        load_records(path)


def test_repeats_report_ignores_line_order_and_identical_copies(run, tmp_path):
    path, recs = run
    again = _write(tmp_path / "again.jsonl", [*reversed(recs), recs[3]])
    report = render_json(repeats_report(read_repeated(path), resamples=200, seed=0))
    assert render_json(repeats_report(read_repeated(again), resamples=200, seed=0)) == report
    other = json.loads(json.dumps(recs[3]))
    other["repeats"][1]["score"] = 0.5  # a repeat other than 0: the record's own score is repeat 0's
    clash = _write(tmp_path / "clash.jsonl", [*recs, other])
    with pytest.raises(SourceError, match=r"clash.jsonl:4: .*differently here and in .*clash.jsonl:21"):
        read_repeated(clash)


def test_a_failed_repeat_is_counted_and_said(run):
    """A repeat that failed is not silently one score fewer: its status is counted, and the exam it
    takes out of the exam figures is said."""
    _, recs = run
    recs = json.loads(json.dumps(recs))
    recs[1]["repeats"][2] |= {"status": "parse_error", "score": None}
    r = repeats_report(recs, resamples=100, seed=0)
    assert r["repeat_statuses"] == {"ok": 59, "parse_error": 1} and r["n_exam_results"] == 3
    assert any(n.startswith("1 of 60 repeat gradings failed (parse_error 1)") for n in r["notes"])
    assert any(n.startswith("1 of 4 (model, exam)s left out of the exam figures") for n in r["notes"])
    assert "repeat gradings failed" in render_repeats(r)


def test_a_run_folder_with_several_judgments_files_is_not_guessed(run, tmp_path):
    """The folder's judgments.jsonl (what `run` writes) is read; other *judgments*.jsonl files
    alone are not picked by name order."""
    _, recs = run
    folder = tmp_path / "run"
    folder.mkdir()
    _write(folder / "a_judgments.jsonl", recs[:5])
    _write(folder / "b_judgments.jsonl", recs)
    with pytest.raises(ValueError, match=r"not one judgments file .*a_judgments.jsonl, b_judgments.jsonl"):
        read_repeated(folder)
    _write(folder / "judgments.jsonl", recs)
    assert len(read_repeated(folder)) == len(recs)


def test_agreement_repeats_honours_the_dataset(run, tmp_path, capsys):
    """`--dataset`: only its questions count, checked against it; its exams say what is complete."""
    from oab_bench.dataset_builder.build import build_rows
    from oab_bench.dataset_builder.publish import write_dataset
    from oab_bench.scripts.cli import main
    from tests import synthetic as syn

    def agreement(*extra) -> dict:
        capsys.readouterr()
        assert main([*map(str, base), *map(str, extra)]) == 0
        return json.loads(capsys.readouterr().out)

    path, recs = run
    src = syn.write_source(tmp_path / "src", syn.exam(90, "civil") + syn.exam(91, "civil"))
    ds = write_dataset(*build_rows(src, src / "errata.yaml"), tmp_path / "ds")
    base = ["agreement", "--repeats", path, "--format", "json", "--resamples", "50"]
    assert agreement()["n_exam_results"] == 4
    r = agreement("--dataset", ds)
    assert (r["n_questions"], r["n_exam_results"]) == (10, 2)  # the penal exams are not in the dataset
    assert any(n.startswith("10 (model, question)s not in --dataset") for n in r["notes"])

    recs = json.loads(json.dumps(recs))
    recs[1]["max_score"] = recs[1]["score"] = 2.0  # 90_direito_civil_questao_1, worth 1.25 in the dataset
    for m in recs[1]["repeats"]:
        m["score"] = 2.0
    path.write_text("".join(json.dumps(x) + "\n" for x in recs))
    r = agreement("--dataset", ds)
    assert r["n_exam_results"] == 1 and any(n.startswith("11 (model, question)s") for n in r["notes"])
