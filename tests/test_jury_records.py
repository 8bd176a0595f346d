"""A jury's records read as its members' (`leaderboard --members`): every error names file and line."""

from __future__ import annotations

import json

from oab_bench.scripts.cli import main

QID = "90_direito_civil_questao_1"


def jury_record(b_score: float) -> dict:
    member = {"status": "ok", "items": {}, "cached": False, "cost_usd": 0.0}
    return {
        "question_id": QID,
        "exam_id": "90_direito_civil",
        "model": "m",
        "judge_model": "jury-median(openai/a, openai/b, openai/c)",
        "prompt_version": "oab-pt-v1",
        "mode": "legacy",
        "status": "ok",
        "score": 1.0,
        "max_score": 1.25,
        "members": [
            {**member, "judge_model": "openai/a", "score": 1.0},
            {**member, "judge_model": "openai/b", "score": b_score},
            {**member, "judge_model": "openai/c", "score": 1.0},
        ],
    }


def test_a_members_clash_names_both_lines(tmp_path, capsys):
    """The jury's score is the same on both lines (the median), member b's is not."""
    path = tmp_path / "jury.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (jury_record(0.25), jury_record(1.25))))
    assert main(["leaderboard", str(path), "--format", "json", "--resamples", "10"]) == 0  # the jury: copies
    capsys.readouterr()
    assert main(["leaderboard", str(path), "--members", "--format", "json", "--resamples", "10"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"oab-bench leaderboard: error: {path}:1: m on {QID} (judge openai/b")
    assert f"in {path}:2: pass one of them" in line


def test_a_bad_member_grading_names_its_line_and_field(tmp_path, capsys):
    bad = jury_record(1.0)
    bad["members"][2]["score"] = "1.0"  # a string is not a score
    path = tmp_path / "jury.jsonl"
    path.write_text(json.dumps(jury_record(1.0)) + "\n" + json.dumps(bad) + "\n")
    assert main(["leaderboard", str(path), "--members", "--resamples", "10"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: field 'members[2].score'" in err


def test_one_member_at_two_efforts_is_two_judges_in_any_order(tmp_path, capsys):
    """Two juries of the same members, where openai/a sat at another effort: its member records are
    two judges, never merged (and each jury is a judge of its own)."""
    files = []
    for effort in ("low", "high"):
        settings = {
            "jury_combine": "median",
            "members": [{"judge_model": "openai/a", "reasoning_effort": effort}]
            + [{"judge_model": m, "reasoning_effort": None} for m in ("openai/b", "openai/c")],
        }
        path = tmp_path / f"{effort}.jsonl"
        path.write_text(json.dumps({**jury_record(1.0), "settings": settings}) + "\n")
        files.append(str(path))
    judges = []
    for order in (files, files[::-1]):
        capsys.readouterr()
        assert main(["leaderboard", *order, "--members", "--format", "json", "--resamples", "10"]) == 0
        judges.append(sorted({r["judge"] for r in json.loads(capsys.readouterr().out)["rows"]}))
    assert judges[0] == judges[1]
    prompt = "oab-pt-v1, legacy"
    assert [j for j in judges[0] if j.startswith("openai/a")] == [
        f"openai/a [{prompt}, reasoning_effort=high] (jury member)",
        f"openai/a [{prompt}, reasoning_effort=low] (jury member)",
    ]
    assert f"openai/b [{prompt}] (jury member)" in judges[0]
    jury = "jury-median(openai/a, openai/b, openai/c)"
    assert {j for j in judges[0] if j.startswith("jury")} == {
        f"{jury} [{prompt}, openai/a reasoning_effort=high]",
        f"{jury} [{prompt}, openai/a reasoning_effort=low]",
    }


def test_a_member_missing_from_the_recorded_settings_names_its_line(tmp_path, capsys):
    """A jury's record whose settings leave a member out: its settings are unknown, never the defaults."""
    settings = {"jury_combine": "median", "members": [{"judge_model": m} for m in ("openai/a", "openai/b")]}
    path = tmp_path / "jury.jsonl"
    path.write_text(json.dumps({**jury_record(1.0), "settings": settings}) + "\n")
    assert main(["leaderboard", str(path), "--members", "--resamples", "10"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: field 'settings.members'" in err and "'openai/c'" in err


def test_agreement_over_a_jury_file_keeps_one_model_at_two_efforts_apart(tmp_path, capsys):
    """One file holding two juries where openai/a sat at two efforts (on other models): openai/a is
    two members, each named with its settings, never one source of mixed gradings (so they share
    nothing to compare)."""
    records = []
    for model, effort in (("m", "low"), ("m2", "high")):
        own = [{"judge_model": "openai/a", "reasoning_effort": effort}, {"judge_model": "openai/b"}]
        settings = {"jury_combine": "median", "members": [*own, {"judge_model": "openai/c"}]}
        records.append({**jury_record(1.0), "model": model, "settings": settings})
    path = tmp_path / "jury.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    capsys.readouterr()
    assert main(["agreement", str(path), "--resamples", "10"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "A (openai/a reasoning_effort=high;" in err and "B (openai/a reasoning_effort=low;" in err
    assert "no (model, question) graded ok by both" in err
