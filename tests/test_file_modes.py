"""What the project creates gets its modes from the umask and its group from a setgid parent, as
any other tool's files do: a team sharing a folder under umask 002 can write each other's."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

from oab_bench.judge.output import write_atomic
from tests.conftest import REPO
from tests.users import TEAM, team_folder


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode_and_group(path: Path) -> tuple[str, int]:
    return oct(stat.S_IMODE(path.stat().st_mode)), path.stat().st_gid


def test_a_dataset_folder_keeps_the_setgid_bit_and_group_of_its_parent(built_rows, tmp_path):
    from oab_bench.dataset_builder.publish import write_dataset

    team = team_folder(tmp_path / "team")
    with umask(0o002):
        out = write_dataset(*built_rows, team / "ds")
    assert mode_and_group(out) == mode_and_group(out / "data") == ("0o2775", TEAM)
    assert {mode_and_group(p) for p in out.rglob("*") if p.is_file()} == {("0o664", TEAM)}


def test_an_output_file_is_made_as_open_would_make_it(tmp_path):
    team = team_folder(tmp_path / "team")
    with umask(0o002):
        path = write_atomic(team / "sub" / "out.json", "{}")
    assert mode_and_group(path) == ("0o664", TEAM) and mode_and_group(path.parent) == ("0o2775", TEAM)
    with umask(0o077):
        path = write_atomic(team / "private.json", "{}")
    assert mode_and_group(path) == ("0o600", TEAM)


CACHE_WRITER = textwrap.dedent(
    """
    import asyncio, os, sqlite3, sys
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
        log.append("submit", "c1", judge_model="j", endpoint="e", requests={})
        async with log.submitting():
            pass
    asyncio.run(claim())
    with sqlite3.connect(folder / "answers.sqlite") as db:  # a commit under way: its journal exists
        db.execute("INSERT INTO answers VALUES ('x', x'00')")
        journal = os.stat(folder / "answers.sqlite-journal")
        print(oct(journal.st_mode & 0o777), journal.st_gid)
    """
)


def test_cache_files_take_their_modes_from_the_umask_and_their_group_from_a_setgid_parent(tmp_path):
    """The stores' databases and lock files, and sqlite's journal (given its database's mode)."""
    team = team_folder(tmp_path / "team")
    proc = subprocess.run(
        [sys.executable, "-c", CACHE_WRITER, str(team)], cwd=REPO, umask=0o002, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0o664", str(TEAM)]
    made = {p.name: mode_and_group(p) for p in (team / "cache").iterdir()}
    assert mode_and_group(team / "cache") == ("0o2775", TEAM)
    names = ("answers.sqlite", "answers.lock", "judgments.sqlite", "judgments.lock")
    assert made == {name: ("0o664", TEAM) for name in names}
