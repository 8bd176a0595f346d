"""Strict where ambiguity changes a figure: agreement without common pairs, a folder holding
several runs, repeat numbers and a repeated record's own score, probe:* rows in the leaderboard."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.answers import load_answers
from oab_bench.scripts.cli import main
from tests.helpers import AGREEMENT_EXAMS as EXAMS
from tests.helpers import details_run, exam, repeated, source_a
from tests.helpers import write_jsonl as write

# --- agreement without common pairs --------------------------------------------------------------


def test_agreement_without_common_pairs_is_an_error(tmp_path, capsys):
    """Two sources grading different models exited 0 with every figure n/a."""
    a = write(tmp_path / "a.jsonl", exam("m1", EXAMS[0], 4.0, 1.0))
    b = write(tmp_path / "b.jsonl", exam("m2", EXAMS[0], 4.0, 1.0))
    out = tmp_path / "agreement.json"
    assert main(["agreement", str(a), str(b), "--output", str(out), "--resamples", "50"]) == 2
    err = capsys.readouterr().err
    assert "no (model, question) graded ok by both (only in A 5; only in B 5)" in err, err
    assert not out.exists()


def test_agreement_where_one_side_only_failed_is_an_error(tmp_path, capsys):
    recs = exam("m1", EXAMS[0], 4.0, 1.0)
    failed = [{**r, "status": "api_error", "score": None, "items": []} for r in recs]
    a, b = write(tmp_path / "a.jsonl", recs), write(tmp_path / "b.jsonl", failed)
    assert main(["agreement", str(a), str(b), "--resamples", "50"]) == 2
    assert "no (model, question) graded ok by both (B: api_error 5)" in capsys.readouterr().err


def test_three_sources_where_a_later_pair_shares_nothing_say_so(tmp_path, capsys):
    """A and B compared in full; a further pair sharing nothing (a jury member that failed
    everywhere, say) gets null figures and a note rather than stopping the report."""
    a = source_a(tmp_path)
    c = write(tmp_path / "c.jsonl", exam("m9", EXAMS[0], 4.0, 1.0))
    assert main(["agreement", str(a), str(a), str(c), "--format", "json", "--resamples", "50"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert any(n.startswith("A vs C: no (model, question) graded ok by both") for n in report["notes"])
    assert main(["agreement", str(c), str(a), str(a), "--resamples", "50"]) == 2
    assert "graded ok by both" in capsys.readouterr().err


# --- a folder holding several runs ---------------------------------------------------------------


def _two_runs(tmp_path):
    """runs/t0 and runs/t7: one model at two temperatures, different scores."""
    for run, questao in (("t0", 1.0), ("t7", 0.5)):
        recs = [{k: v for k, v in r.items() if k != "model"} for r in exam("m1", EXAMS[0], 4.0, questao)]
        details_run(tmp_path / "runs" / run, "m1", recs)
    return tmp_path / "runs"


@pytest.mark.parametrize(
    "argv",
    [
        ["agreement", "{runs}/t0", "{runs}"],
        ["leaderboard", "{runs}"],
        ["report", "{runs}", "--output", "{tmp}/r.html"],
        ["compare", "m1", "m2", "{runs}"],
    ],
    ids=["agreement", "leaderboard", "report", "compare"],
)
def test_a_folder_holding_several_runs_is_refused(tmp_path, capsys, argv):
    """Read as one, the two runs collapsed into whichever sorted last (t7 over t0)."""
    runs = _two_runs(tmp_path)
    argv = [a.format(runs=runs, tmp=tmp_path) for a in argv]
    assert main([*argv, "--resamples", "50"]) == 2
    err = capsys.readouterr().err
    assert f"{runs}: holds 2 runs (t0, t7): name one run folder, or give each as its own input" in err, err
    assert not (tmp_path / "r.html").exists()


def test_each_run_named_is_its_own_input(tmp_path, capsys):
    runs = _two_runs(tmp_path)
    assert (
        main(["agreement", str(runs / "t0"), str(runs / "t7"), "--format", "json", "--resamples", "50"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["n_pairs"] == 5 and report["question"]["mae"]["value"] > 0


def test_a_run_resumed_in_its_own_folder_is_one_run(tmp_path, capsys):
    """Two timestamps of one run folder (a rerun there): one run, the later judgment, as before."""
    recs = [{k: v for k, v in r.items() if k != "model"} for r in exam("m1", EXAMS[0], 4.0, 1.0)]
    run = details_run(tmp_path / "run", "m1", recs)
    later = run / "details" / "m1" / "2025-02-01T00-00-00"
    later.mkdir()
    table = pa.Table.from_pylist([{"metric": {"oab_judgment": r}} for r in recs])
    pq.write_table(table, later / "details_oab_bench|0_2025-02-01T00-00-00.parquet")
    assert main(["leaderboard", str(run), "--format", "json", "--resamples", "50"]) == 0
    assert [r["model"] for r in json.loads(capsys.readouterr().out)["rows"]] == ["m1"]


def test_answers_from_a_folder_holding_several_runs_are_refused(tmp_path):
    """`judge --answers runs/` merged two runs' answers of one model the same way."""
    for run in ("a", "b"):
        where = tmp_path / "runs" / run / "details" / "m1" / "2025-01-01T00-00-00"
        where.mkdir(parents=True)
        row = {
            "doc": {"specific": {"question_id": f"{EXAMS[0]}_questao_1"}},
            "model_response": {"text": [run]},
        }
        pq.write_table(pa.Table.from_pylist([row]), where / "details_oab_bench|0_2025.parquet")
    with pytest.raises(SourceError, match=r"runs: holds 2 runs \(a, b\)"):
        load_answers(tmp_path / "runs")
    assert [a.text for a in load_answers(tmp_path / "runs" / "b")] == ["b"]


# --- repeat numbers and a repeated record's own score --------------------------------------------


def _repeated_file(tmp_path, change):
    recs = repeated("m", EXAMS[0], [4.0, 3.0, 2.0])
    change(recs[0])
    return write(tmp_path / "rep.jsonl", recs)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda r: r["repeats"][1].update(repeat=-1), "field 'repeats[1].repeat': -1 is not a number >= 0"),
        (
            lambda r: r["repeats"][2].update(repeat=1),
            "field 'repeats': repeat numbers [0, 1, 1] are not 0..2",
        ),
        (
            lambda r: r["repeats"][2].update(repeat=5),
            "field 'repeats': repeat numbers [0, 1, 5] are not 0..2",
        ),
        (lambda r: r.update(score=3.0), "field 'score': 3.0 (ok) is not repeat 0's 4.0 (ok)"),
        (
            lambda r: r["repeats"][0].update(status="api_error", score=None),
            "field 'score': 4.0 (ok) is not repeat 0's None (api_error)",
        ),
    ],
    ids=["negative", "twice", "gap", "score", "status"],
)
@pytest.mark.parametrize("command", ["leaderboard", "agreement --repeats"])
def test_repeat_numbers_and_the_records_own_score_are_checked(tmp_path, capsys, change, said, command):
    """A negative repeat number was taken; a record whose score is not repeat 0's was ranked by
    its repeats' mean while its own score said another thing."""
    path = _repeated_file(tmp_path, change)
    assert main([*command.split(), str(path), "--resamples", "50"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: {said}" in err, err


# --- probe:* rows in the leaderboard -------------------------------------------------------------


def test_the_leaderboard_leaves_probes_out_unless_asked(tmp_path, capsys):
    """The report kept `oab-bench probe`'s rows apart; the CLI leaderboard ranked them among models."""
    recs = exam("m1", EXAMS[0], 4.0, 1.0) + exam("probe:reference", EXAMS[0], 5.0, 1.25)
    path = write(tmp_path / "j.jsonl", recs)
    assert main(["leaderboard", str(path), "--format", "json", "--resamples", "50"]) == 0
    out = capsys.readouterr()
    board = json.loads(out.out)
    assert [r["model"] for r in board["rows"]] == ["m1"]
    assert "1 probe:* models left out (probe:reference): pass --probes to rank them" in out.err
    assert main(["leaderboard", str(path), "--format", "json", "--probes", "--resamples", "50"]) == 0
    assert {r["model"] for r in json.loads(capsys.readouterr().out)["rows"]} == {"m1", "probe:reference"}
    only = write(tmp_path / "p.jsonl", exam("probe:empty", EXAMS[0], 0.0, 0.0))
    assert main(["leaderboard", str(only), "--resamples", "50"]) == 2
    assert "only probe:* models in the inputs (probe:empty): pass --probes" in capsys.readouterr().err
