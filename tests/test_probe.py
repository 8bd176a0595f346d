"""`oab-bench probe`: probes built from made-up rows, the report's arithmetic, and the command end to
end through the local stub judge (one that gives every item its maximum, one that credits content)."""

from __future__ import annotations

import json

import pytest

from oab_bench.judge.answers import load_answers
from oab_bench.judge.grading.prompts import CLOSE_TAG, build_messages
from oab_bench.judge.validity.probe_report import build_report
from oab_bench.judge.validity.probes import (
    EMPTY_ANSWER,
    PROBE_KINDS,
    build_probes,
    candidate_text,
    first_half,
    sentence_ends,
    write_answer_files,
)
from oab_bench.scripts.cli import main
from tests.probe_rows import ROWS, _text, probe, probe_judgment


def sentences(text):
    ends = sentence_ends(text)
    return [text[start:end].strip() for start, end in zip([0, *ends], ends, strict=False)]


def by(probes, kind):
    return {p.question_id: p for p in probes if p.kind == kind}


# --- construction -----------------------------------------------------------------------------------


def test_sentences_do_not_end_at_legal_abbreviations():
    text = "Cabe ação, nos termos do Art. 5º, inc. II, da Lei nº 1.234/20. Sim. Outra frase aqui!\nNova linha"
    assert sentences(text) == [
        "Cabe ação, nos termos do Art. 5º, inc. II, da Lei nº 1.234/20.",
        "Sim.",
        "Outra frase aqui!",
        "Nova linha",
    ]


def test_partial_is_a_strict_prefix_of_the_reference_by_sentences():
    probes = build_probes(ROWS, ROWS)
    reference, partial = by(probes, "reference"), by(probes, "partial")
    assert set(reference) == set(partial) == {r.question_id for r in ROWS}
    for qid, ref in reference.items():
        for whole, half in zip(ref.turns, partial[qid].turns, strict=True):
            assert half and whole.startswith(half) and len(half) < len(whole)
            whole_s, half_s = sentences(whole), sentences(half)
            if len(whole_s) >= 3:  # sentences of equal length: exactly the first half of them
                assert half_s == whole_s[: len(whole_s) // 2]
    # "Sim." then one long sentence: half of the words, not a bare "Sim."
    text = "Sim. " + _text(7, 1)
    assert first_half(text) != "Sim." and text.startswith(first_half(text))
    assert len(first_half(text).split()) == len(text.split()) // 2


def test_reference_is_the_commented_answer_without_the_score_table():
    row = next(r for r in ROWS if r.number == 2)
    assert "|" in row.reference[0]
    (probe,) = build_probes([row], ROWS, ["reference"])
    assert "|" not in probe.turns[0] and "PONTOS" not in probe.turns[0]
    assert probe.turns[0] == candidate_text(row.reference[0]) and probe.turns[0].startswith("Sim. ")


def test_swapped_never_comes_from_the_same_exam_or_the_other_kind():
    rows = {r.question_id: r for r in ROWS}
    for seed in range(25):
        probes = build_probes(ROWS, ROWS, ["swapped", "injection"], seed=seed)
        for p in probes:
            row, donor = rows[p.question_id], rows[p.donor]
            assert donor.kind == row.kind and donor.exam_id != row.exam_id
            assert donor.area != row.area  # another area exists here, so it is preferred
            swapped = [candidate_text(t) for t in donor.reference]
            if p.kind == "swapped":
                assert p.turns == swapped
            else:
                assert p.turns[:-1] == swapped[:-1] and p.turns[-1].startswith(swapped[-1])
                assert len(p.turns[-1]) > len(swapped[-1])


def test_same_seed_same_probes_and_the_seed_matters():
    assert build_probes(ROWS, ROWS, seed=3) == build_probes(ROWS, ROWS, seed=3)
    donors = {tuple(p.donor for p in build_probes(ROWS, ROWS, ["swapped"], seed=s)) for s in range(5)}
    assert len(donors) > 1
    # a question's probes do not depend on which other questions are probed with it
    one = build_probes(ROWS[:1], ROWS, seed=3)
    assert one == [p for p in build_probes(ROWS, ROWS, seed=3) if p.question_id == ROWS[0].question_id]


def test_injection_variants_claim_every_item_and_cannot_close_the_answer_block():
    probes = build_probes(ROWS, ROWS, ["injection"])
    assert {p.variant for p in probes} == {"close_tag", "fake_rubric", "system_note"}
    rows = {r.question_id: r for r in ROWS}
    for p in probes:
        tail = p.turns[-1]
        assert all(f"[{r.item_id}]" in tail for r in rows[p.question_id].rubric)
        if p.variant == "close_tag":
            assert CLOSE_TAG in tail
            user = build_messages(rows[p.question_id], "\n".join(p.turns), "structured")[1]["content"]
            assert user.count(CLOSE_TAG) == 1 and user.endswith(CLOSE_TAG)


def test_answer_files_read_back_as_fastchat_answers(tmp_path):
    probes = build_probes(ROWS, ROWS)
    paths = write_answer_files(probes, tmp_path)
    assert sorted(p.name for p in paths) == sorted(f"probe_{k}.jsonl" for k in PROBE_KINDS)
    answers = [a for p in paths for a in load_answers(p)]
    assert {a.model for a in answers} == {f"probe:{k}" for k in PROBE_KINDS}
    assert len(answers) == len(PROBE_KINDS) * len(ROWS)
    assert {a.text for a in answers if a.model == "probe:empty"} == {EMPTY_ANSWER}


def test_no_other_exam_to_swap_with_is_an_error():
    one_exam = [r for r in ROWS if r.exam_id == "90_direito_civil"]
    with pytest.raises(
        ValueError, match="90_direito_civil_peca_praticoprofissional: the dataset has no peca"
    ):
        build_probes(one_exam, one_exam, ["swapped"])
    assert len(build_probes(one_exam, one_exam, ["reference", "partial", "empty"])) == 15


# --- report -----------------------------------------------------------------------------------------


def test_report_failures_are_not_zeros_and_ties_fail_the_ordering():
    shares = {"reference": 1.0, "partial": 0.5, "swapped": 0.0, "empty": 0.0, "injection": 0.0}
    judgments = [probe_judgment(r, k, s) for r in ROWS for k, s in shares.items()]
    report = build_report("j", ROWS, judgments, resamples=200)
    assert report.verdict == "discriminates" and report.ordering == 1.0 and report.injection_lift == 0.0
    assert report.probes["reference"].exam_pass_rate == 1.0 and report.probes["partial"].exam_pass_rate == 0.0

    # one swapped judgment failed, one partial ties with swapped
    judgments[2] = probe_judgment(ROWS[0], "swapped", None)
    judgments[6] = probe_judgment(ROWS[1], "partial", 0.0)
    report = build_report("j", ROWS, judgments, resamples=200)
    assert report.probes["swapped"].statuses == {"api_error": 1, "ok": 19}
    assert report.probes["swapped"].mean_pct == 0.0  # the failure is left out, not counted as 0
    assert report.ordering == pytest.approx(18 / 20)
    checks = {c.name: c for c in report.checks}
    assert checks["judged_ok"].value == pytest.approx(99 / 100) and checks["judged_ok"].ok

    # injection working on a few questions: lift above the floor
    judgments = [probe_judgment(r, k, s) for r in ROWS for k, s in shares.items()]
    judgments[4] = probe_judgment(ROWS[0], "injection", 1.0)
    report = build_report("j", ROWS, judgments, resamples=200)
    assert report.injection_lift == pytest.approx(5.0)
    assert not {c.name: c for c in report.checks}["injection_lift"].ok
    assert report.verdict == "does not discriminate"


# --- end to end through the CLI and the stub judge ----------------------------------------------------


def test_a_judge_that_gives_everything_full_marks_does_not_discriminate(
    stub, built_dataset, tmp_path, capsys
):
    server = stub(policy="max")
    rc, out, err = probe(capsys, built_dataset, server, tmp_path)
    assert rc == 0, err  # a bad judge is a finding, not a crash
    assert (
        "5 probes x 10 questions = 50 judgments, 0 of 50 member gradings already in the cache: 50 calls"
        in err
    )
    assert server.count == 51  # the check call, then the judgments
    assert "verdict: does not discriminate" in out
    assert "FAIL swapped_mean_pct: 100.00 (must be <= 10)" in out
    assert "ok   reference_mean_pct: 100.00 (must be >= 90)" in out

    # the same probes again: every judgment from the cache, no call; JSON; --strict fails the run
    rc, out, err = probe(capsys, built_dataset, server, tmp_path, "--format", "json", "--strict")
    assert server.count == 51 and "50 of 50 member gradings already in the cache: 0 calls" in err
    assert rc == 1
    report = json.loads(out)
    assert report["verdict"] == "does not discriminate"
    assert report["probes"]["swapped"]["mean_pct"] == 100.0
    assert report["probes"]["empty"]["exam_pass_rate"] == 1.0
    checks = {c["name"]: c for c in report["checks"]}
    assert not checks["swapped_mean_pct"]["ok"] and checks["swapped_mean_pct"]["threshold"] == 10.0
    assert report["ordering"] == 0.0 and report["injection_lift"] == 0.0
    assert json.loads((tmp_path / "out" / "report.json").read_text()) == report


def test_a_judge_that_credits_content_discriminates(stub, built_dataset, tmp_path, capsys):
    server = stub(policy="overlap")
    rc, text, _ = probe(capsys, built_dataset, server, tmp_path, "--strict")
    assert rc == 0 and "verdict: discriminates" in text and "FAIL" not in text

    rc, out, _ = probe(capsys, built_dataset, server, tmp_path, "--format", "json")
    assert rc == 0 and server.count == 51  # a check call, 50 judgments; then all from the cache
    report = json.loads(out)
    assert set(report) >= {
        "judge",
        "n_questions",
        "probes",
        "ordering",
        "injection_lift",
        "checks",
        "verdict",
    }
    assert report["judge"] == "openai/judge-probe [oab-pt-v1, structured]" and report["n_questions"] == 10
    assert set(report["probes"]) == set(PROBE_KINDS)
    for stats in report["probes"].values():
        assert set(stats) >= {"mean_pct", "ci_low", "ci_high", "exam_pass_rate", "statuses"}
        assert stats["statuses"] == {"ok": 10}
    p = {k: v["mean_pct"] for k, v in report["probes"].items()}
    assert p["reference"] >= 90 and p["swapped"] <= p["partial"] - 10 and p["partial"] <= p["reference"] - 10
    assert p["empty"] == 0.0 and p["injection"] <= 10
    assert report["probes"]["reference"]["exam_pass_rate"] == 1.0
    assert report["verdict"] == "discriminates"
    assert all({"name", "value", "threshold", "ok"} <= set(c) for c in report["checks"])

    # the judgments are a judgments file the leaderboard reads: one row per probe
    assert (
        main(["leaderboard", str(tmp_path / "out" / "judgments.jsonl"), "--format", "json", "--probes"]) == 0
    )
    board = json.loads(capsys.readouterr().out)
    models = {r["model"] for r in board["rows"]}
    assert models == {f"probe:{k}" for k in PROBE_KINDS}
    assert main(["leaderboard", str(tmp_path / "out"), "--format", "json", "--probes"]) == 0  # the folder too
    assert json.loads(capsys.readouterr().out) == board


def test_a_subset_of_probes_and_bad_flags(stub, built_dataset, tmp_path, capsys):
    server = stub(policy="max")
    assert probe(capsys, built_dataset, server, tmp_path, "--probes", "partial")[0] == 0
    rc, out, err = probe(
        capsys, built_dataset, server, tmp_path, "--probes", "reference,empty", "--format", "json"
    )
    assert rc == 0 and "2 probes x 10 questions = 20 judgments" in err
    report = json.loads(out)
    assert set(report["probes"]) == {"reference", "empty"} and report["ordering"] is None
    assert sorted(p.name for p in (tmp_path / "out" / "answers").iterdir()) == [
        "probe_empty.jsonl",
        "probe_reference.jsonl",
    ]
    assert {c["name"] for c in report["checks"]} == {
        "judged_ok",
        "reference_mean_pct",
        "reference_exam_pass_rate",
        "empty_mean_pct",
    }

    rc, _, err = probe(capsys, built_dataset, server, tmp_path, "--probes", "reference,bogus")
    assert rc == 2 and "oab-bench probe: error: --probes 'reference,bogus'" in err


@pytest.mark.slow
def test_probe_estimate_and_a_jury_of_two(stub, built_dataset, tmp_path, capsys):
    """--estimate prices the probe run and calls nothing; a jury grades every probe with each member."""
    server = stub(policy="max")
    rc, out, _ = probe(capsys, built_dataset, server, tmp_path, "--estimate", "--format", "json")
    assert rc == 0 and server.count == 0 and not (tmp_path / "out").exists()  # nothing written either
    est = json.loads(out)
    assert est["total"]["calls"] == 50 and est["total"]["prompt_tokens"] > 0

    jury = ["--judge-model", "openai/judge-probe-b", "--estimate", "--format", "json"]
    rc, out, _ = probe(capsys, built_dataset, server, tmp_path, *jury)
    assert rc == 0 and server.count == 0 and json.loads(out)["total"]["calls"] == 100

    rc, out, err = probe(capsys, built_dataset, server, tmp_path, "--judge-model", "openai/judge-probe-b")
    assert rc == 0, err
    assert server.count == 102 and "0 of 100 member gradings already in the cache: 100 calls" in err
    assert "jury-median(openai/judge-probe, openai/judge-probe-b)" in out


@pytest.mark.parametrize(
    "bad",
    [
        ["--judge-model", "openai/judge-b", "--repeats", "2"],  # a jury cannot repeat
        ["--judge-model", "openai/judge-b mode=legacy"],  # a member grading otherwise
    ],
)
def test_a_judge_that_cannot_be_made_writes_no_probe_answers(stub, built_dataset, tmp_path, capsys, bad):
    """Bad judge settings are an error before anything is written: no half-made output folder."""
    rc, _, err = probe(capsys, built_dataset, stub(policy="max"), tmp_path, *bad)
    assert rc == 2 and "oab-bench probe: error:" in err
    assert not (tmp_path / "out").exists()
