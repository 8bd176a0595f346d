"""What the project creates gets its modes from the umask and its group from a setgid parent, as
any other tool's files do: a team sharing a folder under umask 002 can write each other's."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from oab_bench.judge.output import write_atomic
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
