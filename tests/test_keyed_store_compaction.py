"""KeyedStore.compact: the file written anew without what a store drops, renamed over the old one
under the writers' flock; writers and readers of the old file move to the new one."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from oab_bench import whole_file
from oab_bench.keyed_store import KeyedStore
from tests.conftest import REPO
from tests.users import ALICE, BOB, TEAM, require_users, run_as, team_folder


def _parse(raw: bytes):
    line = json.loads(raw)
    return line["key"], line["value"]


def _line(key: str, value: str) -> bytes:
    return (json.dumps({"key": key, "value": value}) + "\n").encode()


def _drop(value: str):
    """A rewrite dropping every line whose value is `value`."""
    return lambda raw: None if json.loads(raw)["value"] == value else raw


def _filled(path: Path, *pairs: tuple[str, str]) -> KeyedStore:
    store = KeyedStore(path, _parse)
    for key, value in pairs:
        store.put(key, value, _line(key, value))
    return store


def _leftovers(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}."))


def _blocked_flock(path: Path) -> bool:
    """Whether some process waits for a flock on the file at `path` (/proc/locks' `->` lines)."""
    ino = f":{os.stat(path).st_ino} "
    with open("/proc/locks") as f:
        return any("->" in line and "FLOCK" in line and ino in line for line in f)


def _until(check, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_compaction_keeps_exactly_the_lines_kept_and_leaves_a_torn_tail_as_it_was(tmp_path):
    path = tmp_path / "s.jsonl"
    store = _filled(path, ("a", "keep"), ("b", "drop"), ("c", "old"), ("d", "keep"))
    with path.open("ab") as f:
        f.write(b'{"key": "torn"')  # a writer killed mid-line

    def rewrite(raw: bytes) -> bytes | None:
        line = json.loads(raw)
        if line["value"] == "drop":
            return None
        return _line(line["key"], "new")[:-1] if line["value"] == "old" else raw

    before = os.stat(path).st_ino
    assert store.compact(rewrite)
    expected = _line("a", "keep") + _line("c", "new") + _line("d", "keep") + b'{"key": "torn"'
    assert path.read_bytes() == expected and os.stat(path).st_ino != before
    assert store.items == {"a": "keep", "c": "new", "d": "keep"} and store.offset == len(expected) - 14
    assert _leftovers(path) == []
    same = os.stat(path).st_ino
    assert not store.compact(lambda raw: raw)  # nothing to drop: nothing written
    assert os.stat(path).st_ino == same
    store.put("e", "keep", _line("e", "keep"))  # the torn line is ended first, as ever
    assert path.read_bytes() == expected + b"\n" + _line("e", "keep")


APPENDER = textwrap.dedent(
    """
    import json, sys
    from oab_bench.keyed_store import KeyedStore
    path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = KeyedStore(path, lambda raw: tuple(json.loads(raw).values()), read=False)
    for i in range(n):
        key = f"{who}-{i}"
        store.put(key, "keep", (json.dumps({"key": key, "value": "keep"}) + "\\n").encode(), sync=False)
    """
)


def _appender(path: Path, who: str, n: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", APPENDER, str(path), who, str(n)], cwd=REPO)


def test_an_append_waiting_for_a_compaction_lands_in_the_new_file(tmp_path):
    """Another process appends while the compaction holds the flock: it waits on the old file,
    sees that a new one was renamed over it, and appends there."""
    path = tmp_path / "s.jsonl"
    store = _filled(path, ("a", "keep"), ("b", "drop"))
    old = os.stat(path).st_ino
    child: list[subprocess.Popen] = []

    def rewrite(raw: bytes) -> bytes | None:
        if not child:  # the compaction holds the flock now: start an append and let it wait
            child.append(_appender(path, "late", 1))
            _until(lambda: _blocked_flock(path), "the append to wait for the flock")
        return _drop("drop")(raw)

    assert store.compact(rewrite)
    assert child[0].wait(timeout=60) == 0
    assert os.stat(path).st_ino != old
    assert [json.loads(line) for line in path.read_bytes().splitlines()] == [
        {"key": "a", "value": "keep"},
        {"key": "late-0", "value": "keep"},
    ]


def test_appends_from_two_processes_survive_repeated_compactions(tmp_path):
    path = tmp_path / "s.jsonl"
    store = _filled(path, ("seed", "keep"))
    procs = [_appender(path, who, 150) for who in ("p", "q")]
    rounds = 0
    while any(p.poll() is None for p in procs) or rounds < 5:
        store.put(f"x{rounds}", "drop", _line(f"x{rounds}", "drop"))
        assert store.compact(_drop("drop"))
        rounds += 1
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    lines = path.read_bytes().splitlines()
    keys = [json.loads(line)["key"] for line in lines]
    assert sorted(keys) == sorted(["seed", *(f"{w}-{i}" for w in "pq" for i in range(150))])
    assert _leftovers(path) == []


def test_a_reader_opened_before_a_compaction_reads_the_new_file_after_it(tmp_path):
    path = tmp_path / "s.jsonl"
    writer = _filled(path, ("a", "keep"), ("b", "drop"), ("c", "keep"))
    reader = KeyedStore(path, _parse)
    looker = KeyedStore(path, _parse, access="read")
    assert not looker.put("mine", "memory", _line("mine", "memory"))  # held in memory only
    assert set(reader.items) == {"a", "b", "c"}
    assert writer.compact(_drop("drop"))
    writer.put("d", "keep", _line("d", "keep"))
    for store in (reader, looker):
        store.refresh()
        assert store.offset == path.stat().st_size and store.lines == 3
    assert reader.items == {"a": "keep", "c": "keep", "d": "keep"}
    assert looker.items == {"a": "keep", "c": "keep", "d": "keep", "mine": "memory"}
    reader.put("e", "keep", _line("e", "keep"))  # its own line, not read back
    writer.refresh()
    assert set(writer.items) == set(reader.items) == {"a", "c", "d", "e"}


def test_a_store_that_cannot_write_never_compacts(tmp_path):
    path = tmp_path / "s.jsonl"
    _filled(path, ("a", "keep"), ("b", "drop"))
    before = path.read_bytes(), os.stat(path).st_ino
    assert not KeyedStore(path, _parse, access="read").compact(_drop("drop"))
    assert (path.read_bytes(), os.stat(path).st_ino) == before and _leftovers(path) == []
    assert not KeyedStore(tmp_path / "none.jsonl", _parse).compact(_drop("drop"))  # no file: none made
    assert not (tmp_path / "none.jsonl").exists()


EITHER = textwrap.dedent(
    """
    import json, sys
    from oab_bench.keyed_store import KeyedStore
    store = KeyedStore(sys.argv[1], lambda raw: tuple(json.loads(raw).values()), access="either")
    print(json.dumps([store.writable, store.compact(lambda raw: None)]))
    """
)


def test_a_store_served_read_only_to_another_user_never_compacts(tmp_path):
    """--cache-read-only over a cache this user cannot write: served as it is, never rewritten."""
    require_users()
    path = tmp_path / "cache" / "s.jsonl"
    _filled(path, ("a", "keep"), ("b", "drop"))
    before = {p.name: p.read_bytes() for p in path.parent.iterdir()}
    proc = run_as(BOB, [sys.executable, "-c", EITHER, path], env=dict(os.environ), cwd=REPO, team=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [False, False]
    assert {p.name: p.read_bytes() for p in path.parent.iterdir()} == before


COMPACT = textwrap.dedent(
    """
    import json, sys
    from oab_bench.keyed_store import KeyedStore
    store = KeyedStore(sys.argv[1], lambda raw: tuple(json.loads(raw)))
    if sys.argv[2] == "put":
        store.put("k", "v", b'["k", "v"]\\n')
    else:
        print(store.compact(lambda raw: None if b"drop" in raw else raw))
    """
)


def test_a_compacted_file_keeps_its_mode_and_group_whoever_compacts_it(tmp_path):
    """Alice made the file (umask 002, setgid team folder: 0664, the team's group); Bob compacts it
    under umask 077: the new file is still 0664 and the team's, so Alice appends to it after."""
    require_users()
    team = team_folder(tmp_path / "team")
    path = team / "s.jsonl"
    env = dict(os.environ)
    made = run_as(ALICE, [sys.executable, "-c", COMPACT, path, "put"], env=env, cwd=REPO, umask=0o002)
    assert made.returncode == 0, made.stderr
    with path.open("ab") as f:
        f.write(b'["x", "drop"]\n')
    assert (stat.S_IMODE(path.stat().st_mode), path.stat().st_gid) == (0o664, TEAM)
    done = run_as(BOB, [sys.executable, "-c", COMPACT, path, "compact"], env=env, cwd=REPO, umask=0o077)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr
    assert (stat.S_IMODE(path.stat().st_mode), path.stat().st_gid, path.stat().st_uid) == (0o664, TEAM, BOB)
    again = run_as(ALICE, [sys.executable, "-c", COMPACT, path, "put"], env=env, cwd=REPO, umask=0o002)
    assert again.returncode == 0, again.stderr
    assert path.read_bytes() == b'["k", "v"]\n' * 2


def test_a_private_mode_is_kept_not_widened_by_the_umask(tmp_path):
    path = tmp_path / "s.jsonl"
    store = _filled(path, ("a", "keep"), ("b", "drop"))
    path.chmod(0o600)
    old = os.umask(0o000)
    try:
        assert store.compact(_drop("drop"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("where", ["rewrite", "write", "fsync", "rename"])
@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_compaction_that_fails_leaves_the_file_whole_and_no_new_file(tmp_path, monkeypatch, where, error):
    path = tmp_path / "s.jsonl"
    store = _filled(path, ("a", "keep"), ("b", "drop"))
    before = path.read_bytes(), os.stat(path).st_ino, stat.S_IMODE(path.stat().st_mode)

    def fail(*args, **kwargs):
        raise error

    rewrite = _drop("drop")
    if where == "rewrite":
        rewrite = fail
    elif where == "write":
        real = os.fdopen
        monkeypatch.setattr(whole_file.os, "fdopen", lambda fd, mode: _FailingFile(real(fd, mode), error))
    elif where == "fsync":
        monkeypatch.setattr(whole_file.os, "fsync", fail)
    else:
        monkeypatch.setattr(whole_file.os, "replace", fail)
    with pytest.raises(type(error)):
        store.compact(rewrite)
    monkeypatch.undo()
    assert (path.read_bytes(), os.stat(path).st_ino, stat.S_IMODE(path.stat().st_mode)) == before
    assert _leftovers(path) == []
    store.put("c", "keep", _line("c", "keep"))  # the flock was let go
    assert store.compact(_drop("drop"))
    assert path.read_bytes() == _line("a", "keep") + _line("c", "keep")


class _FailingFile:
    """A file whose writes fail (a full disk) after it was opened."""

    def __init__(self, file, error: BaseException):
        self.file, self.error = file, error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def writelines(self, chunks):
        self.file.write(b"part of it")
        raise self.error


def test_a_new_file_a_killed_compaction_left_is_removed_by_the_next(tmp_path):
    path = tmp_path / "s.jsonl"
    store = _filled(path, ("a", "keep"), ("b", "drop"))
    (tmp_path / ".s.jsonl.k1ll3d").write_bytes(b"half of a log")
    (tmp_path / ".other.jsonl.k1ll3d").write_bytes(b"not ours")
    assert store.compact(_drop("drop"))
    assert _leftovers(path) == [] and (tmp_path / ".other.jsonl.k1ll3d").exists()
