"""A jury member that fails every probe grading: the probe's verdict is `incomplete`, naming it."""

from __future__ import annotations

import json

import pytest

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.publish import write_dataset
from oab_bench.judge.records import MemberScore
from oab_bench.judge.validity.probe_report import failed_members
from oab_bench.scripts.cli import main
from tests import synthetic as syn
from tests.helpers import made_up_judgment


@pytest.fixture
def dataset(tmp_path):
    src = syn.write_source(tmp_path / "src", syn.exam(90) + syn.exam(91, "penal"))  # probes swap across exams
    rows, report = build_rows(src, src / "errata.yaml")
    return write_dataset(rows, report, tmp_path / "ds")


@pytest.mark.slow
def test_a_member_failing_every_grading_makes_the_verdict_incomplete(stub, dataset, tmp_path, capsys):
    server = stub(policy="overlap", faults=[{"kind": "500", "match": '"judge-dead"'}])
    args = ["probe", "--dataset", str(dataset), "--api-base", server.url, "--max-attempts", "1"]
    args += [
        "--judge-model",
        "openai/judge-ok",
        "--judge-model",
        "openai/judge-dead",
        "--judge-model",
        "openai/judge-ok2",
    ]
    args += ["--cache", str(tmp_path / "cache"), "--output", str(tmp_path / "out"), "--no-progress"]
    args += ["--resamples", "50"]
    capsys.readouterr()
    assert main([*args, "--strict"]) == 1  # not a verdict to rely on
    out = capsys.readouterr().out
    assert "verdict: incomplete" in out
    assert "jury member openai/judge-dead failed every probe grading (api_error 50)" in out
    assert main([*args, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "incomplete"
    assert report["failed_members"] == {"openai/judge-dead": {"api_error": 50}}
    assert json.loads((tmp_path / "out" / "report.json").read_text()) == report


def _judgment(members):
    return made_up_judgment(
        model="probe:reference",
        judge_model="jury-median(a, b)",
        prompt_version="oab-pt-v1",
        members=[MemberScore(judge_model=m, status=s, score=1.0 if s == "ok" else None) for m, s in members],
    )


def test_a_member_with_one_grading_is_there():
    got = [_judgment([("a", "ok"), ("b", "api_error")]), _judgment([("a", "ok"), ("b", "ok")])]
    assert failed_members(got) == {}
    got = [_judgment([("a", "ok"), ("b", "api_error")]), _judgment([("a", "ok"), ("b", "parse_error")])]
    assert failed_members(got) == {"b": {"api_error": 1, "parse_error": 1}}
    one = _judgment([]).model_copy(update={"members": None, "judge_model": "a", "status": "api_error"})
    assert failed_members([one]) == {}  # one judge: no members, nothing to say
