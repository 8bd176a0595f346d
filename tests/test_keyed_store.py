"""The one keyed store under the answer store, the judgment cache and its batch state: key claims
across threads, coroutines and processes; a killed writer's commits kept; read-only stores; files
that are not ours."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from oab_bench.judge.generation.answer_store import AnswerStore, StoredAnswer
from oab_bench.judge.grading.batch.state import BatchLog
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.keyed_store import APP_ID, KeyedStore, NotWritable, StoreError
from tests.conftest import REPO
from tests.users import BOB, require_users, run_as


def _store(path, **kw) -> KeyedStore:
    return KeyedStore(path, "t", json.loads, **kw)


# Each process: 8 threads claim the same 40 keys in their own random order and "pay" (append to
# paid.log) for a key nobody stored yet. Blocking record locks made this fail with EDEADLK.
CLAIMER = textwrap.dedent(
    """
    import json, os, random, sys, threading, time
    from oab_bench.keyed_store import KeyedStore
    folder, seed = sys.argv[1], int(sys.argv[2])
    store = KeyedStore(os.path.join(folder, "s.sqlite"), "t", json.loads)
    keys = [f"{i:02x}" * 32 for i in range(40)]
    errors = []
    def work(order):
        for key in order:
            try:
                with store.claim(key):
                    if store.get(key) is None:
                        with open(os.path.join(folder, "paid.log"), "a") as f:
                            f.write(key + "\\n")
                        time.sleep(0.02)
                        store.write([(key, json.dumps(seed))])
            except Exception as e:
                errors.append(repr(e))
    rng = random.Random(seed)
    threads = [threading.Thread(target=work, args=(rng.sample(keys, len(keys)),)) for _ in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    print(json.dumps(errors))
    """
)


def test_two_processes_of_eight_threads_each_pay_every_key_once_and_never_deadlock(tmp_path):
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(tmp_path), str(seed)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for seed in (1, 2)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert [json.loads(o) for o in outputs] == [[], []]  # no EDEADLK, no "database is locked"
    paid = (tmp_path / "paid.log").read_text().split()
    assert len(paid) == len(set(paid)) == 40
    assert len(_store(tmp_path / "s.sqlite")) == 40


def test_a_store_created_beside_a_check_is_ours_whenever_the_check_reads_it(tmp_path, monkeypatch):
    """Another process creates the store (application id, then its table) while this one checks the
    file: whichever statement of the check it lands before, the store is ours, never "another
    application's database" (two jobs starting at once on a fresh cache)."""
    import oab_bench.keyed_store as keyed_store

    path = tmp_path / "s.sqlite"
    path.touch()  # the other process's os.open: an empty file
    connect, landed = sqlite3.connect, []

    def creator(statement: str) -> None:  # runs as each statement of the check starts
        if not landed and "sqlite_master" in statement:
            landed.append(statement)
            _store(path).close()

    def traced(*args, **kwargs):
        db = connect(*args, **kwargs)
        db.set_trace_callback(creator)
        return db

    monkeypatch.setattr(keyed_store.sqlite3, "connect", traced)
    db = keyed_store.check_store(path)
    assert landed and db is not None
    db.close()


def test_threads_and_coroutines_claiming_one_key_pay_once(tmp_path):
    store = _store(tmp_path / "s.sqlite")
    paid = []

    def pay(who: str) -> None:
        if store.get("k") is None:
            paid.append(who)
            time.sleep(0.05)
            store.write([("k", json.dumps(who))])

    def thread() -> None:
        with store.claim("k"):
            pay("thread")

    async def coroutine() -> None:
        async with store.aclaim("k"):
            pay("coroutine")

    async def both() -> None:
        threads = [threading.Thread(target=thread) for _ in range(3)]
        for t in threads:
            t.start()
        await asyncio.gather(*(coroutine() for _ in range(3)))
        for t in threads:
            t.join()

    asyncio.run(both())
    assert len(paid) == 1


def test_a_second_store_on_the_same_file_in_one_process_waits_for_the_first(tmp_path):
    """Record locks belong to the process: two stores of one file share this process's holds."""
    first, second = JudgmentStore(tmp_path), JudgmentStore(tmp_path)
    order = []

    async def hold(store, who: str, pause: float) -> None:
        async with store.claim("a" * 64):
            order.append(f"{who} in")
            await asyncio.sleep(pause)
            order.append(f"{who} out")

    async def both() -> None:
        await asyncio.gather(hold(first, "first", 0.1), hold(second, "second", 0))

    asyncio.run(both())
    assert order == ["first in", "first out", "second in", "second out"]


def test_writes_waiting_for_a_commit_share_the_next_one(tmp_path):
    """A commit waits for the disk: the threads that wrote meanwhile are committed together."""
    store = _store(tmp_path / "s.sqlite")

    def commits() -> int:  # sqlite's file change counter: one per write transaction
        return int.from_bytes((tmp_path / "s.sqlite").read_bytes()[24:28], "big")

    before = commits()
    with store._mutex:  # a commit under way
        threads = [threading.Thread(target=store.write, args=([(f"k{n}", "1")],)) for n in range(10)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while len(store._pending) < 10:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    for t in threads:
        t.join()
    assert commits() == before + 1 and len(store) == 10


WRITER = textwrap.dedent(
    """
    import json, sys
    from oab_bench.keyed_store import KeyedStore
    store = KeyedStore(sys.argv[1], "t", json.loads)
    for n in range(100000):
        store.write([(f"k{n}", json.dumps("v" * 1000))])
        print(n + 1, flush=True)
    """
)


def test_a_killed_writer_keeps_every_value_it_committed(tmp_path):
    path = tmp_path / "s.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    committed = 0
    while committed < 20:
        committed = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    store = _store(path)
    assert len(store) >= committed and store.get("k0") == "v" * 1000
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)


# Killed while its journal is hot (a transaction spilled to the file, uncommitted): the next writer
# rolls it back. Opened read-only first, that journal made the store "not an oab-bench store".
SPILLER = textwrap.dedent(
    """
    import sqlite3, sys, time
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("PRAGMA cache_size = 1")
    db.execute("BEGIN IMMEDIATE")
    for i in range(200):
        db.execute("INSERT OR REPLACE INTO t VALUES (?, ?)", (f"x{i}", b"y" * 5000))
    print("spilled", flush=True)
    time.sleep(60)
    """
)


def test_a_writer_killed_mid_transaction_leaves_a_journal_the_next_writer_rolls_back(tmp_path):
    path = tmp_path / "s.sqlite"
    _store(path).write([("k0", '"v"')])
    proc = subprocess.Popen([sys.executable, "-c", SPILLER, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "spilled\n"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (tmp_path / "s.sqlite-journal").exists()
    store = _store(path)
    assert store.items() == {"k0": "v"}
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_store_opened_to_read_creates_and_writes_nothing(tmp_path):
    where = tmp_path / "not" / "yet"
    assert len(JudgmentStore(where, access="read")) == 0
    assert BatchLog(where, access="read").chunks() == {} and not where.exists()
    store = AnswerStore(where, access="read")
    assert not store.put(StoredAnswer(key="d" * 64, model="m", texts=["D."]))  # kept in memory only
    assert store.get("d" * 64) is not None and not where.exists()

    AnswerStore(tmp_path).put(StoredAnswer(key="a" * 64, model="m", texts=["A."]))
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir() if p.is_file()}
    looker = AnswerStore(tmp_path, access="read")
    with looker.claim("b" * 64):
        assert not looker.put(StoredAnswer(key="b" * 64, model="m", texts=["B."]))
    assert looker.get("a" * 64).texts == ["A."] and looker.get("b" * 64).texts == ["B."]
    assert {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir() if p.is_file()
    } == before


READER = textwrap.dedent(
    """
    import json, sys
    from oab_bench.judge.generation.answer_store import AnswerStore, StoredAnswer
    from oab_bench.keyed_store import NotWritable
    try:
        AnswerStore(sys.argv[1])
        print("opened to write")
    except NotWritable as e:
        print("refused:", e)
    store = AnswerStore(sys.argv[1], access="read")
    with store.claim("a" * 64):
        hit = store.get("a" * 64)
    kept = store.put(StoredAnswer(key="b" * 64, model="m", texts=["B."]))
    print(json.dumps({"hit": hit.texts if hit else None, "kept": kept, "writable": store.writable}))
    """
)


def test_a_store_its_user_cannot_write_is_refused_or_served_as_it_is(tmp_path):
    require_users()
    cache = tmp_path / "cache"
    AnswerStore(cache).put(StoredAnswer(key="a" * 64, model="m", texts=["A."]))
    before = {p.name: p.read_bytes() for p in cache.iterdir()}
    proc = run_as(BOB, [sys.executable, "-c", READER, cache], env=dict(os.environ), cwd=REPO, team=False)
    assert proc.returncode == 0, proc.stderr
    refused, served = proc.stdout.splitlines()
    assert refused.startswith(f"refused: {cache} is not writable by this user")
    assert "chmod g+w" in refused
    assert json.loads(served) == {"hit": ["A."], "kept": False, "writable": False}
    assert {p.name: p.read_bytes() for p in cache.iterdir()} == before


def test_a_writer_refused_by_the_store_says_what_to_do(tmp_path):
    JudgmentStore(tmp_path)
    os.chmod(tmp_path / "judgments.sqlite", 0o444)
    if os.access(tmp_path / "judgments.sqlite", os.W_OK):  # root writes anyway
        require_users()
        code = "import sys; from oab_bench.judge.grading.judgment_store import JudgmentStore; JudgmentStore(sys.argv[1])"
        proc = run_as(BOB, [sys.executable, "-c", code, tmp_path], env=dict(os.environ), cwd=REPO, team=False)
        message = proc.stderr
    else:
        with pytest.raises(NotWritable) as e:
            JudgmentStore(tmp_path)
        message = str(e.value)
    assert "is not writable by this user" in message and "another folder" in message


def test_a_file_that_is_not_our_store_is_refused_and_left_as_it_is(tmp_path):
    text, other = tmp_path / "text" / "answers.sqlite", tmp_path / "other" / "answers.sqlite"
    text.parent.mkdir()
    text.write_text('{"key": "a"}\n')
    other.parent.mkdir()
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
    for path in (text, other):
        before = path.read_bytes()
        for access in ("write", "read"):
            with pytest.raises(StoreError, match=f"^{path}: not an oab-bench store .*: left as it is"):
                AnswerStore(path.parent, access=access)
        assert path.read_bytes() == before and sorted(os.listdir(path.parent)) == ["answers.sqlite"]
    with sqlite3.connect(tmp_path / "s.sqlite") as db:  # ours, with a table of another shape
        db.execute(f"PRAGMA application_id = {APP_ID}")
        db.execute("CREATE TABLE t (name TEXT)")
    with pytest.raises(StoreError, match=f"^{tmp_path / 's.sqlite'}: table t: "):
        _store(tmp_path / "s.sqlite")


def test_an_unreadable_row_is_skipped_with_a_warning_naming_it(tmp_path, caplog):
    store = AnswerStore(tmp_path)
    store.put(StoredAnswer(key="a" * 64, model="m", texts=["A."]))
    with sqlite3.connect(tmp_path / "answers.sqlite") as db:
        db.execute("INSERT INTO answers VALUES ('b', ?), ('c', ?)", (b"\xff not utf-8", b'{"key": "c"}'))
    with caplog.at_level(logging.WARNING, logger="oab_bench.keyed_store"):
        assert len(AnswerStore(tmp_path)) == 1 and store.get("b") is None
    said = [r.getMessage() for r in caplog.records]
    assert any(f"{tmp_path / 'answers.sqlite'}: answers b: unreadable row skipped" in m for m in said), said
    assert any(
        "answers c: unreadable row skipped (2 validation errors for StoredAnswer)" in m for m in said
    ), said


def test_the_lock_protocol_does_not_leak_descriptors(tmp_path):
    store = _store(tmp_path / "s.sqlite")
    with store.claim("first"):  # opens the lock file's one descriptor, kept for the next claims
        before = len(os.listdir("/proc/self/fd"))
    for n in range(200):
        with store.claim(f"{n:064x}"):
            pass
    assert len(os.listdir("/proc/self/fd")) == before
