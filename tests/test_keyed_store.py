"""The one keyed store under the judgment cache, the answer store and the batch log: key claims
across threads, coroutines and processes; torn lines; modes from the umask; read-only stores."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from oab_bench.judge.generation.answer_store import AnswerStore, StoredAnswer
from oab_bench.judge.grading.batch.state import BatchLog
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.keyed_store import KeyedStore, NotWritable
from tests.conftest import REPO
from tests.users import BOB, TEAM, require_users, run_as, team_folder


def _parse(raw: bytes):
    line = json.loads(raw)
    return line["key"], line["value"]


def _line(key: str, value: str) -> bytes:
    return (json.dumps({"key": key, "value": value}) + "\n").encode()


# Each process: 8 threads claim the same 40 keys in their own random order and "pay" (append to
# paid.log) for a key nobody stored yet. Blocking record locks made this fail with EDEADLK.
CLAIMER = textwrap.dedent(
    """
    import json, os, random, sys, threading, time
    from oab_bench.keyed_store import KeyedStore
    folder, seed = sys.argv[1], int(sys.argv[2])
    store = KeyedStore(os.path.join(folder, "s.jsonl"), lambda raw: tuple(json.loads(raw)))
    keys = [f"{i:02x}" * 32 for i in range(40)]
    errors = []
    def work(order):
        for key in order:
            try:
                with store.claim(key):
                    if key not in store.items:
                        with open(os.path.join(folder, "paid.log"), "a") as f:
                            f.write(key + "\\n")
                        time.sleep(0.02)
                        store.put(key, seed, (json.dumps([key, seed]) + "\\n").encode())
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
    assert [json.loads(o) for o in outputs] == [[], []]  # no EDEADLK, nothing else
    paid = (tmp_path / "paid.log").read_text().split()
    assert len(paid) == len(set(paid)) == 40
    assert len(KeyedStore(tmp_path / "s.jsonl", lambda raw: tuple(json.loads(raw))).items) == 40


def test_threads_and_coroutines_claiming_one_key_pay_once(tmp_path):
    store = KeyedStore(tmp_path / "s.jsonl", _parse)
    paid = []

    def pay(who: str) -> None:
        if "k" not in store.items:
            paid.append(who)
            time.sleep(0.05)
            store.put("k", who, _line("k", who))

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


def test_a_torn_last_line_is_ended_by_the_next_writer_and_never_by_a_reader(tmp_path):
    path = tmp_path / "answers.jsonl"
    store = AnswerStore(tmp_path)
    store.put(StoredAnswer(key="a" * 64, model="m", texts=["A."]))
    with path.open("ab") as f:
        f.write(b'{"key": "bbbb", "te')  # killed mid-write
    torn = path.read_bytes()
    assert len(AnswerStore(tmp_path)) == 1 and len(AnswerStore(tmp_path, access="read")) == 1
    assert path.read_bytes() == torn  # opening never writes
    AnswerStore(tmp_path).put(StoredAnswer(key="c" * 64, model="m", texts=["C."]))
    assert path.read_bytes().startswith(torn + b"\n")
    assert set(AnswerStore(tmp_path)._items) == {"a" * 64, "c" * 64}


def test_a_store_opened_to_read_creates_and_writes_nothing(tmp_path):
    where = tmp_path / "not" / "yet"
    assert len(JudgmentStore(where, access="read")) == 0
    log = BatchLog(where, access="read")
    assert log.chunks() == {} and not where.exists()
    store = AnswerStore(where, access="read")
    assert not store.put(StoredAnswer(key="d" * 64, model="m", texts=["D."]))  # kept in memory only
    assert store.get("d" * 64) is not None and not where.exists()


def test_files_and_folders_take_their_modes_from_the_umask_and_their_group_from_a_setgid_parent(tmp_path):
    team = team_folder(tmp_path / "team")
    code = textwrap.dedent(
        """
        import asyncio, sys
        from pathlib import Path
        from oab_bench.judge.generation.answer_store import AnswerStore, StoredAnswer
        from oab_bench.judge.grading.batch.state import BatchLog
        from oab_bench.judge.grading.judgment_store import JudgmentStore
        folder = Path(sys.argv[1]) / "cache"
        store = AnswerStore(folder)
        with store.claim("a" * 64):
            store.put(StoredAnswer(key="a" * 64, model="m", texts=["A."]))
        async def claim():
            async with JudgmentStore(folder).claim("b" * 64):
                pass
            log = BatchLog(folder)
            log.append("submit", "c1", judge_model="j", requests={})
            async with log.submitting():
                pass
        asyncio.run(claim())
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(team)], cwd=REPO, umask=0o002, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    modes = {p.name: (stat.S_IMODE(p.stat().st_mode), p.stat().st_gid) for p in (team / "cache").iterdir()}
    folder = team / "cache"
    assert (stat.S_IMODE(folder.stat().st_mode), folder.stat().st_gid) == (0o2775, TEAM)
    expected = {"answers.jsonl", "answers.lock", "judgments.lock", "batches.jsonl", "batches.lock"}
    assert modes == {name: (0o664, TEAM) for name in expected}


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
    store = AnswerStore(sys.argv[1], access="either")
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
    with (cache / "answers.jsonl").open("ab") as f:
        f.write(b'{"key": "torn')
    before = {p.name: p.read_bytes() for p in cache.iterdir()}
    proc = run_as(BOB, [sys.executable, "-c", READER, cache], env=dict(os.environ), cwd=REPO, team=False)
    assert proc.returncode == 0, proc.stderr
    refused, served = proc.stdout.splitlines()
    assert refused.startswith(f"refused: answer cache {cache} is not writable by this user")
    assert "chmod g+w" in refused
    assert json.loads(served) == {"hit": ["A."], "kept": False, "writable": False}
    assert {p.name: p.read_bytes() for p in cache.iterdir()} == before  # the torn line is not sealed


def test_a_writer_refused_by_the_store_says_what_to_do(tmp_path):
    (tmp_path / "judgments.jsonl").write_text("")
    os.chmod(tmp_path / "judgments.jsonl", 0o444)
    if os.access(tmp_path / "judgments.jsonl", os.W_OK):  # root writes anyway
        require_users()
        code = "import sys; from oab_bench.judge.grading.judgment_store import JudgmentStore; JudgmentStore(sys.argv[1])"
        proc = run_as(BOB, [sys.executable, "-c", code, tmp_path], env=dict(os.environ), cwd=REPO, team=False)
        message = proc.stderr
    else:
        with pytest.raises(NotWritable) as e:
            JudgmentStore(tmp_path)
        message = str(e.value)
    assert "is not writable by this user" in message and "another folder" in message


def test_the_lock_protocol_does_not_leak_descriptors(tmp_path):
    store = KeyedStore(Path(tmp_path) / "s.jsonl", _parse)
    before = len(os.listdir("/proc/self/fd"))
    for n in range(200):
        with store.claim(f"{n:064x}"):
            pass
    assert len(os.listdir("/proc/self/fd")) == before
