"""Batch replies kept in the log for a later run are pruned once their judgments are stored, and
never before: a reply whose judgment failed, or was not made, stays."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from oab_bench.dataset_builder.build import build_rows
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.batch.state import BatchLog
from oab_bench.judge.grading.batch.submit import BatchPending
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.judge.settings import JudgeSettings
from tests import synthetic as syn


@pytest.fixture
def row(tmp_path):
    src = syn.write_source(tmp_path / "src", syn.exam())
    return build_rows(src, src / "errata.yaml")[0][1]  # a made-up questão


def pairs(row, n: int):
    return [
        (row, Answer(model=f"m{i}", question_id=row.question_id, turns=[f"resposta {i}"])) for i in range(n)
    ]


def kept_replies(cache) -> int:
    return sum(len(c.kept) for c in BatchLog(cache).chunks().values())


def settings(server, **kw) -> JudgeSettings:
    base = {
        "judge_model": "openai/judge-prune",
        "api_base": server.url,
        "backoff_initial": 0.01,
        "timeout": 5,
    }
    return JudgeSettings(**(base | kw))


def keep_two(server, row, cache) -> JudgeSettings:
    """A batch of 4 judgments collected by a run over 2: the other 2 replies kept in the log."""
    s = settings(server, batch=True, batch_wait=0)
    with pytest.raises(BatchPending):
        run_judge_all(Judge(s, JudgmentStore(cache)), pairs(row, 4), progress=False)
    waits = s.model_copy(update={"batch_wait": None})
    run_judge_all(Judge(waits, JudgmentStore(cache)), pairs(row, 4)[:2], progress=False)
    assert kept_replies(cache) == 2
    return waits


@pytest.mark.parametrize("direct", [False, True], ids=["batch", "direct"])
def test_kept_replies_go_once_their_judgments_are_stored(stub, judge_key, row, tmp_path, direct):
    server = stub(batch_delay=0.3)
    cache = tmp_path / "cache"
    s = keep_two(server, row, cache)
    if direct:
        s = s.model_copy(update={"batch": False})
    calls = len(server.requests)
    run_judge_all(Judge(s, JudgmentStore(cache)), pairs(row, 3), progress=False)  # serves one of the two
    assert len(server.requests) == calls  # graded from the kept reply, no call
    assert kept_replies(cache) == 1  # its judgment stored: pruned; the other's is not: kept
    out = run_judge_all(Judge(s, JudgmentStore(cache)), pairs(row, 4), progress=False)
    assert [j.status for j in out] == ["ok"] * 4 and len(server.requests) == calls
    assert kept_replies(cache) == 0 and '"event": "kept"' not in (cache / "batches.jsonl").read_text()
    chunks = BatchLog(cache).chunks()  # the rest of the log as it was: nothing to resubmit
    assert [c.done for c in chunks.values()] == ["completed"] and len(JudgmentStore(cache)) == 4


def test_a_reply_whose_judgment_failed_is_not_pruned(stub, judge_key, row, tmp_path, monkeypatch):
    server = stub(batch_delay=0.3)
    cache = tmp_path / "cache"
    s = keep_two(server, row, cache)
    monkeypatch.setattr(JudgmentStore, "append", _refuse)  # nothing reaches the store
    with pytest.raises(OSError):
        run_judge_all(Judge(s, JudgmentStore(cache)), pairs(row, 4), progress=False)
    assert kept_replies(cache) == 2


async def _refuse(self, judgment):
    raise OSError("disk full")


def test_prune_keeps_what_another_process_appends_meanwhile(tmp_path):
    """An append waiting on the log while a prune renames a new log over it lands in the new log."""
    log = BatchLog(tmp_path)
    requests = {
        "c0": {"key": "k0", "question_id": "q", "model": "m"},
        "c1": {"key": "k1", "question_id": "q", "model": "m"},
    }
    log.append("submit", "ch", judge_model="j", requests=requests)
    log.append("kept", "ch", replies={"c0": {"a": 1}, "c1": {"b": 2}})
    unreadable = b'{"event": "kept", "chunk": "ch", "replies": [1]}\n{torn'
    with open(log.path, "ab") as f:
        f.write(unreadable + b"\n")

    def slow_stored(key: str) -> bool:
        time.sleep(0.3)  # the prune holds the log's lock meanwhile
        return key == "k0"

    appended = threading.Thread(
        target=lambda: (time.sleep(0.1), log.append("done", "ch", status="completed"))
    )
    appended.start()
    assert log.prune(slow_stored) == 1
    appended.join()
    text = log.path.read_text()
    assert '"replies": {"c1": {"b": 2}}' in text and '{"a": 1}' not in text
    assert unreadable.decode() in text  # lines it cannot read are left as they were
    assert log.chunks()["ch"].done == "completed" and log.chunks()["ch"].kept == {"c1": {"b": 2}}
    assert sorted(os.listdir(tmp_path)) == ["batches.jsonl"]  # no temporary file left
    assert json.loads(text.splitlines()[0])["event"] == "submit"
    assert log.prune(lambda key: False) == 0
