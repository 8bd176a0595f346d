"""`oab-bench judge-sweep` stopped while a judge grades: as `judge` does (test_judge_loop.py), the calls
in flight finish and are stored, no new call starts, one line says so, and the exit code is 128 + the
signal; the sweep's own files are never half-written, and a rerun pays only for what was not stored.
In a process of its own: the signal is the point. Ctrl-C here: SIGTERM and SIGHUP stop a sweep
through the same handlers (judge/grading/loop.py, scripts/cli.py), each tested in test_judge_loop.py
and test_cli.py; the sweep has no signal code of its own."""

from __future__ import annotations

import json
import signal
import time

import pytest

from oab_bench.conventions import SWEEP_FILE, SWEEP_MARKER, SWEEP_PAGE_FILE
from oab_bench.judge.grading.judgment_store import JudgmentStore
from tests.helpers import _cli
from tests.sweep_cases import made_up_answers, spec, sweep, sweep_args

STOPS = [signal.SIGINT]
PER_JUDGE = 80  # 50 probes + 3 models x 10 questions


@pytest.mark.slow  # a sweep in a process of its own, importing litellm
@pytest.mark.parametrize("sig", STOPS, ids=[s.name for s in STOPS])
def test_a_stop_while_a_candidate_grades_keeps_what_was_paid(
    stub, built_rows, built_dataset, tmp_path, sig, capsys
):
    material = made_up_answers(built_rows[0], tmp_path)
    fast, slow = stub(policy="overlap"), stub(policy="overlap", latency=1.0)
    ref, cand = spec("ref", fast), spec("content", slow) + ",concurrency=4"
    proc = _cli(
        sweep_args(built_dataset, material, tmp_path, ref, cand),
        command="judge-sweep",
        # as from a terminal: Ctrl-C handled even when this test runs as a background job (SIG_IGN)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    while slow.count < 4:  # the reference is judged and written; the candidate's first calls in flight
        time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()
    time.sleep(0.3)
    signalled = time.time()
    proc.send_signal(sig)
    time.sleep(0.2)
    proc.send_signal(sig)  # impatient: a second one must not break off the calls in flight
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 128 + sig, err
    stopped = [line for line in err.splitlines() if "stopped" in line]
    assert stopped == [
        f"oab-bench judge-sweep: stopped by {sig.name}: the judgments made are stored; "
        "run the same command again to continue"
    ], err
    assert "Traceback" not in err and "never retrieved" not in err and out == "", err
    assert not any(r["time"] > signalled for r in slow.requests)  # nothing started after the signal
    stored = slow.count
    assert fast.count == PER_JUDGE and len(JudgmentStore(tmp_path / "cache")) == PER_JUDGE + stored
    folder = tmp_path / "out"
    assert not (folder / SWEEP_FILE).exists() and not (folder / SWEEP_PAGE_FILE).exists()
    hidden = [p.name for p in folder.rglob(".*")]
    assert hidden == [SWEEP_MARKER], hidden  # no temporary file of a write broken off
    assert len(list(folder.glob("00_*/judgments.jsonl"))) == 1  # the reference's, written whole
    assert not list(folder.glob("01_*/*.jsonl"))  # the candidate's: whole or not at all

    slow.latency = 0.0
    rc, out, err = sweep(capsys, built_dataset, material, tmp_path, ref, cand)
    assert rc == 0, err
    assert fast.count == PER_JUDGE and slow.count == PER_JUDGE  # only what was not stored is paid for
    calls = {j["judge"]: j["calls"] for j in json.loads(out)["judges"]}
    assert calls == {ref: 0, cand: PER_JUDGE - stored}
    assert (folder / SWEEP_FILE).exists() and (folder / SWEEP_PAGE_FILE).exists()


@pytest.mark.slow
def test_a_stop_between_the_report_and_its_page_leaves_no_older_page(
    stub, built_rows, built_dataset, tmp_path, capsys, monkeypatch
):
    import oab_bench.judge.sweep.sweep as sweep_mod

    material = made_up_answers(built_rows[0], tmp_path)
    server = stub(policy="overlap")
    ref, cand = spec("ref", server), spec("content", server)
    assert sweep(capsys, built_dataset, material, tmp_path, ref, cand)[0] == 0
    page = tmp_path / "out" / SWEEP_PAGE_FILE
    assert "0.99" not in page.read_text(encoding="utf-8")

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_mod, "write_page", ctrl_c)
    rc, _, err = sweep(capsys, built_dataset, material, tmp_path, ref, cand, extra=["--min-kappa", "0.99"])
    assert rc == 130 and "stopped by SIGINT" in err and server.count == 160
    assert json.loads((tmp_path / "out" / SWEEP_FILE).read_text())["rule"].count("0.99") == 1
    assert not page.exists()  # the page of the rule 0.8 is gone, not left beside the report of 0.99
