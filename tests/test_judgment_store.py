"""The judgment cache: what it serves, what it refuses, what it judges again."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3

import pytest

from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.settings import settings_from
from oab_bench.keyed_store import KeyedStore
from oab_bench.scripts.cli import main
from tests.helpers import _answers_file, _ok, grade, made_up_row


def test_a_tampered_cache_row_is_judged_again(stub, judge_key, tmp_path, caplog):
    server = stub(policy="max")
    assert grade(server, store=JudgmentStore(tmp_path)).status == "ok"
    with sqlite3.connect(tmp_path / "judgments.sqlite") as db:
        (key, value), *_ = db.execute("SELECT key, value FROM judgments").fetchall()
        db.execute(
            "UPDATE judgments SET value = ? WHERE key = ?",
            (json.dumps(json.loads(value) | {"score": 99.0}), key),
        )
    before = server.count
    with caplog.at_level(logging.WARNING, logger="oab_bench.judge.grading.runner"):
        again = grade(server, store=JudgmentStore(tmp_path))
    assert server.count == before + 1 and again.status == "ok" and again.score == 1.25 and not again.cached
    assert any("cached judgment" in r.message and "judging it again" in r.message for r in caplog.records)


def test_append_returns_once_committed(tmp_path):
    """Each append is seen by another process (another connection) when it returns."""
    row, store = made_up_row(), JudgmentStore(tmp_path)

    async def one(n: int) -> bool:
        await store.append(_ok(row, f"k{n}"))
        return JudgmentStore(tmp_path, access="read").get(f"k{n}") is not None

    async def main() -> list[bool]:
        return await asyncio.gather(*(one(n) for n in range(20)))

    assert asyncio.run(main()) == [True] * 20


def test_a_failed_commit_fails_every_append_waiting_for_it(tmp_path, monkeypatch):
    def full(self, pairs):
        raise sqlite3.OperationalError("database or disk is full")

    store = JudgmentStore(tmp_path)
    monkeypatch.setattr(KeyedStore, "write", full)

    async def main():
        return await asyncio.gather(
            *(store.append(_ok(made_up_row(), f"k{n}")) for n in range(3)), return_exceptions=True
        )

    assert [str(e) for e in asyncio.run(main())] == ["database or disk is full"] * 3


def test_a_foreign_judgments_file_in_the_cache_is_refused_untouched(
    tmp_path, upstream_v1, built_dataset, caplog, capsys
):
    """Upstream's judgment file copied into a cache folder: refused before anything is written, one
    error naming the file, no warning per line; exit 2."""
    import logging
    from argparse import Namespace

    from oab_bench.judge.grading.judge_answers import command_judge
    from oab_bench.judge.grading.judgment_store import StoreError

    upstream = upstream_v1 / "model_judgment" / "o3-2025-04-16_single.sample.jsonl"
    store = tmp_path / "cache" / "judgments.jsonl"
    store.parent.mkdir()
    store.write_bytes(upstream.read_bytes())
    before = store.read_bytes()
    s = settings_from(None, {"OAB_JUDGE_MODEL": "openai/x"})
    for no_cache in (False, True):
        with (
            caplog.at_level(logging.WARNING, logger="oab_bench.judge.grading.judgment_store"),
            pytest.raises(StoreError) as e,
        ):
            command_judge(Namespace(cache=str(store.parent), no_cache=no_cache), s)
        assert str(e.value).startswith(f"--cache {store}: not an oab-bench judgment store")
    assert store.read_bytes() == before and not caplog.records and os.listdir(store.parent) == [store.name]

    answers, _ = _answers_file(tmp_path, upstream_v1, 1)
    out = tmp_path / "o.jsonl"
    argv = ["judge", "--dataset", str(built_dataset), "--answers", str(answers), "--judge-model", "openai/x"]
    argv += ["--api-base", "http://127.0.0.1:9/v1", "--output", str(out), "--no-progress"]
    assert main([*argv, "--cache", str(store.parent)]) == 2
    assert "not an oab-bench judgment store" in capsys.readouterr().err
    assert main([*argv, "--cache", str(store)]) == 2  # the store file itself, not its folder
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert f"--cache {store}: is a file, not a folder" in err and "Errno" not in err
    assert store.read_bytes() == before and not out.exists()
