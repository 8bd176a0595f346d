"""Kept Batch replies leave the batch state once their judgments are stored and committed, never
before: whatever happens in between, a rerun pays for nothing (counted at the stub)."""

from __future__ import annotations

import os
import sqlite3

import pytest

from oab_bench.judge.grading import runner
from oab_bench.judge.grading.batch.state import BatchLog, prune_kept
from oab_bench.judge.grading.batch.submit import BatchPending
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.keyed_store import KeyedStore
from tests.helpers import PRICES, pairs, settings


def _keep_two(server, tmp_path):
    """A batch of 4 judgments collected by a run over 2 of them: the other 2 replies, paid for,
    are kept in the batch state. The settings of a run that waits for its batches."""
    s = settings(server, batch=True, batch_wait=0, **PRICES)
    with pytest.raises(BatchPending):
        run_judge_all(Judge(s, JudgmentStore(tmp_path)), pairs(4), progress=False)
    server.release_batches()
    waits = s.model_copy(update={"batch_wait": None})
    run_judge_all(Judge(waits, JudgmentStore(tmp_path)), pairs(4)[:2], progress=False)
    assert len(_kept(tmp_path)) == 2
    return waits


def _kept(folder) -> dict[str, dict]:
    return BatchLog(folder, access="read").kept()


def _paid(server) -> tuple[int, int]:
    """What the stub was asked to answer (direct calls and batch lines alike), and batches made."""
    return len(server.requests), server.batch_creations


@pytest.mark.parametrize("batch", [True, False], ids=["batch", "direct"])
def test_the_run_that_stores_kept_replies_judgments_prunes_them(stub, judge_key, tmp_path, capsys, batch):
    server = stub(batch_hold=True)
    waits = _keep_two(server, tmp_path).model_copy(update={"batch": batch})
    paid = _paid(server)
    out = run_judge_all(Judge(waits, JudgmentStore(tmp_path)), pairs(4), progress=False)
    assert [j.status for j in out] == ["ok"] * 4 and [j.cached for j in out] == [True, True, False, False]
    assert _paid(server) == paid  # graded from the kept replies
    assert _kept(tmp_path) == {}
    assert f"batch: 2 kept repl(ies) pruned from {tmp_path / 'judgments.sqlite'}" in capsys.readouterr().err
    store = JudgmentStore(tmp_path)
    assert all(
        store.get(request.key)
        for chunk in BatchLog(tmp_path).chunks().values()
        for request in chunk.requests.values()
    )
    before = (tmp_path / "judgments.sqlite").read_bytes()
    again = run_judge_all(Judge(waits, JudgmentStore(tmp_path)), pairs(4), progress=False)
    assert all(j.cached for j in again) and _paid(server) == paid
    assert (tmp_path / "judgments.sqlite").read_bytes() == before  # nothing left to prune: nothing written


@pytest.mark.parametrize("batch", [True, False], ids=["batch", "direct"])
def test_a_kill_between_storing_and_pruning_leaves_a_log_a_rerun_pays_nothing_for(
    stub, judge_key, tmp_path, monkeypatch, batch
):
    """Stopped right after the judgments were stored and committed, before the prune: the replies are
    still in the log and the judgments in the cache; a rerun calls nothing and prunes them."""
    server = stub(batch_hold=True)
    waits = _keep_two(server, tmp_path)

    def killed(store):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "prune_kept", killed)
    with pytest.raises(KeyboardInterrupt):
        run_judge_all(Judge(waits, JudgmentStore(tmp_path)), pairs(4), progress=False)
    monkeypatch.undo()
    assert len(JudgmentStore(tmp_path)) == 4 and len(_kept(tmp_path)) == 2
    paid = _paid(server)
    rerun = waits.model_copy(update={"batch": batch})
    out = run_judge_all(Judge(rerun, JudgmentStore(tmp_path)), pairs(4), progress=False)
    assert all(j.cached and j.status == "ok" for j in out)
    assert _paid(server) == paid and _kept(tmp_path) == {}


def test_a_prune_that_fails_keeps_the_replies_and_the_run_goes_on(
    stub, judge_key, tmp_path, monkeypatch, caplog
):
    server = stub(batch_hold=True)
    waits = _keep_two(server, tmp_path)

    def full(store, pairs):
        if store.table == "kept":  # the prune's deletes
            raise sqlite3.OperationalError("database or disk is full")
        return write(store, pairs)

    write = KeyedStore.write

    monkeypatch.setattr(KeyedStore, "write", full)
    out = run_judge_all(Judge(waits, JudgmentStore(tmp_path)), pairs(4), progress=False)
    monkeypatch.undo()
    assert [j.status for j in out] == ["ok"] * 4
    assert "kept replies not pruned (database or disk is full); a later run tries again" in caplog.text
    assert len(_kept(tmp_path)) == 2 and sorted(os.listdir(tmp_path)) == [
        "judgments.lock",
        "judgments.sqlite",
    ]
    assert prune_kept(JudgmentStore(tmp_path)) == 2 and _kept(tmp_path) == {}


def test_a_reply_whose_judgment_failed_stays_in_the_log(stub, judge_key, tmp_path):
    """Failures are not stored: the reply of a refused judgment is the only copy of what was paid
    for, so it stays (a later run grades it again from there, for nothing)."""
    server = stub(batch_hold=True, faults=[{"kind": "refusal", "match": "resposta 3\\n"}])
    waits = _keep_two(server, tmp_path)
    out = run_judge_all(Judge(waits, JudgmentStore(tmp_path)), pairs(4), progress=False)
    assert [j.status for j in out] == ["ok", "ok", "ok", "refused"]
    assert list(_kept(tmp_path)) == [out[3].cache_key]
    paid = _paid(server)
    again = run_judge_all(Judge(waits, JudgmentStore(tmp_path)), pairs(4), progress=False)
    assert (
        again[3].status == "refused" and _paid(server) == paid and list(_kept(tmp_path)) == [out[3].cache_key]
    )


def test_a_cache_opened_to_read_prunes_nothing(stub, judge_key, tmp_path, monkeypatch):
    server = stub(batch_hold=True)
    waits = _keep_two(server, tmp_path)
    monkeypatch.setattr(runner, "prune_kept", lambda store: 0)
    run_judge_all(Judge(waits, JudgmentStore(tmp_path)), pairs(4), progress=False)  # stored, not pruned
    before = (tmp_path / "judgments.sqlite").read_bytes()
    assert prune_kept(JudgmentStore(tmp_path, access="read")) == 0
    assert (tmp_path / "judgments.sqlite").read_bytes() == before
    assert prune_kept(JudgmentStore(tmp_path)) == 2
