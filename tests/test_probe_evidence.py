"""`oab-bench probe` gives no verdict without the evidence for it, and a judge that cannot be called
is an error in seconds, not a finding about the judge."""

from __future__ import annotations

import json
import time

import pytest

from oab_bench.judge.validity.probe_report import build_report
from tests.helpers import closed_url
from tests.probe_rows import ROWS, probe, probe_judgment

# --- the report -------------------------------------------------------------------------------------


def test_a_pass_needs_reference_a_failing_probe_and_the_ordering():
    good = {"reference": 1.0, "partial": 0.5, "swapped": 0.0, "empty": 0.0, "injection": 0.0}

    def report(kinds, shares=good):
        return build_report(
            "j", ROWS, [probe_judgment(r, k, shares[k]) for r in ROWS for k in kinds], resamples=200
        )

    assert report(list(good)).verdict == "discriminates" and report(list(good)).missing == []

    no_reference = report(["swapped", "empty", "injection"])
    assert no_reference.verdict == "incomplete"
    assert any(m.startswith("the reference probe (reference not probed)") for m in no_reference.missing)
    assert any(m.startswith("the ordering") for m in no_reference.missing)

    only_reference = report(["reference"], {"reference": 1.0})
    assert only_reference.verdict == "incomplete"
    assert any("a failing probe, swapped or empty" in m for m in only_reference.missing)

    no_ordering = report(["reference", "empty"])  # reference and a failing probe, no ordering
    assert no_ordering.verdict == "incomplete" and len(no_ordering.missing) == 1
    assert "partial not probed; swapped not probed" in no_ordering.missing[0]

    # a measured failure is a finding even with evidence missing
    full_marks = report(["swapped"], {"swapped": 1.0})
    assert full_marks.verdict == "does not discriminate" and full_marks.missing


def test_a_probe_with_too_few_ok_judgments_is_not_measured():
    good = {"reference": 1.0, "partial": 0.5, "swapped": 0.0, "empty": 0.0, "injection": 0.0}
    judgments = [probe_judgment(r, k, s) for r in ROWS for k, s in good.items()]
    for i, row in enumerate(ROWS[:5]):  # 5 of 20 swapped judgments failed: 75% ok
        judgments[5 * i + 2] = probe_judgment(row, "swapped", None)
    report = build_report("j", ROWS, judgments, resamples=200)
    assert report.verdict == "incomplete"
    assert "swapped: 15 of 20 judgments ok (95% needed)" in " ".join(report.missing)
    checks = {c.name: c for c in report.checks}
    assert not checks["swapped_mean_pct"].measured and not checks["swapped_mean_pct"].ok
    assert checks["reference_mean_pct"].measured and checks["reference_mean_pct"].ok
    assert not checks["ordering"].measured
    assert checks["judged_ok"].value == pytest.approx(95 / 100)  # overall still at the bar


def test_every_judgment_failed_is_incomplete_not_a_finding():
    kinds = ["reference", "partial", "swapped", "empty", "injection"]
    report = build_report("j", ROWS, [probe_judgment(r, k, None) for r in ROWS for k in kinds], resamples=200)
    assert report.verdict == "incomplete" and len(report.missing) == 3
    assert all(not c.measured for c in report.checks if c.name != "judged_ok")


# --- the command ------------------------------------------------------------------------------------


def test_a_judge_that_fails_everything_without_a_reference_is_incomplete(
    stub, built_dataset, tmp_path, capsys
):
    server = stub(policy="min")
    rc, out, _ = probe(
        capsys, built_dataset, server, tmp_path, "--probes", "swapped,empty,injection", "--strict"
    )
    assert rc == 1 and "verdict: incomplete" in out
    assert "missing: the reference probe (reference not probed)" in out
    assert "missing: the ordering, which needs reference, partial and swapped" in out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["verdict"] == "incomplete" and len(report["missing"]) == 2


def test_a_judge_that_gives_full_marks_to_the_reference_alone_is_incomplete(
    stub, built_dataset, tmp_path, capsys
):
    server = stub(policy="max")
    rc, out, _ = probe(capsys, built_dataset, server, tmp_path, "--probes", "reference", "--strict")
    assert rc == 1 and "verdict: incomplete" in out and "FAIL" not in out
    assert "missing: a failing probe, swapped or empty" in out
    rc, out, _ = probe(capsys, built_dataset, server, tmp_path, "--probes", "reference")
    assert rc == 0 and "verdict: incomplete" in out  # without --strict: the report, exit 0


@pytest.mark.parametrize("kind", ["401", "403", "404"])
def test_a_refused_judge_stops_at_the_check_call_and_writes_nothing(
    stub, built_dataset, tmp_path, capsys, judge_key, kind
):
    server = stub(policy="max", faults=[{"kind": kind}])
    started = time.perf_counter()
    rc, out, err = probe(capsys, built_dataset, server, tmp_path)
    took = time.perf_counter() - started
    print(f"probe with a {kind} judge: exit {rc} after {took:.2f} s, {server.count} calls")
    assert rc == 2 and out == "" and server.count == 1  # the check call, and nothing else
    assert "oab-bench probe: error: the judge openai/judge-probe" in err and "refused the check call" in err
    assert ("Incorrect API key" in err) if kind != "404" else ("does not exist" in err)
    assert judge_key not in err  # the provider quotes the key: masked
    assert not (tmp_path / "out").exists()


def test_a_dead_judge_url_stops_at_the_check_call(built_dataset, tmp_path, capsys):
    args = ["probe", "--dataset", str(built_dataset), "--questions", "39_direito_penal"]
    args += ["--judge-model", "openai/judge-probe", "--api-base", f"{closed_url()}/v1"]
    args += ["--cache", str(tmp_path / "cache"), "--output", str(tmp_path / "out"), "--no-progress"]
    from oab_bench.scripts.cli import main

    capsys.readouterr()
    rc = main(args)
    err = capsys.readouterr().err
    assert rc == 2 and "does not answer" in err
    assert not (tmp_path / "out").exists()


def test_refused_calls_without_the_check_call_are_an_error_not_a_verdict(
    stub, built_dataset, tmp_path, capsys, judge_key
):
    """--no-check-call: every judgment refused (401) is still an error naming the provider's message,
    with no report; the 'does not discriminate' of 0a498f3 was a key problem."""
    server = stub(policy="max", faults=[{"kind": "401"}])
    rc, out, err = probe(capsys, built_dataset, server, tmp_path, "--no-check-call")
    assert rc == 2 and out == "" and server.count == 50
    assert "the judge refused 50 of 50 calls, so nothing was written: AuthenticationError" in err
    assert judge_key not in err and not (tmp_path / "out").exists()


def test_a_key_revoked_half_way_keeps_what_was_judged(stub, built_dataset, tmp_path, capsys, judge_key):
    """The check call passes, the key is refused after 20 judgments: an error, no report; the rerun
    (key fixed) pays only for the rest."""
    server = stub(policy="overlap", faults=[{"kind": "401", "after": 21}])
    args = ["--concurrency", "1"]
    rc, _, err = probe(capsys, built_dataset, server, tmp_path, *args)
    assert rc == 2 and "the judge refused 30 of 50 calls" in err
    assert not (tmp_path / "out").exists()
    server.faults.clear()
    before = server.count
    rc, out, err = probe(capsys, built_dataset, server, tmp_path, *args)
    assert rc == 0 and "20 of 50 member gradings already in the cache: 30 calls" in err
    assert server.count - before == 31 and "verdict: discriminates" in out
