"""Commands run as other, ordinary users: what permissions do is only seen without root.

Needs root (to switch users) and util-linux's `setpriv`; the users are bare ids (nothing is added
to /etc/passwd). Each keeps one capability, CAP_DAC_READ_SEARCH (read any file, search any
folder), so it can start this checkout's Python wherever it lies (under /root, say); it writes
only where its ids and groups allow, which is what these tests are about.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

TEAM = 4240  # the shared group
ALICE, BOB, OUTSIDER = 4241, 4242, 4243  # two members of TEAM, and a user in no group of ours


def require_users() -> None:
    if os.geteuid() != 0:
        pytest.skip("acting as other users needs root (and root itself passes every permission check)")
    if shutil.which("setpriv") is None:
        pytest.skip("acting as other users needs util-linux's setpriv")


def as_user(uid: int, *, team: bool = True) -> list[str]:
    """The command prefix that runs what follows as `uid` (in TEAM when `team`)."""
    groups = ["--groups", str(TEAM)] if team else ["--clear-groups"]
    caps = ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", *groups, *caps]


def run_as(uid: int, cmd: list[str], *, env: dict, umask: int = 0o022, team: bool = True, **kw):
    return subprocess.run(
        [*as_user(uid, team=team), *map(str, cmd)], env=env, umask=umask, capture_output=True, text=True, **kw
    )


def team_folder(path: Path) -> Path:
    """A folder of TEAM with the setgid bit: what it holds gets the team's group."""
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another group needs root")
    path.mkdir(parents=True)
    os.chown(path, 0, TEAM)
    path.chmod(0o2775)
    return path


def home_of(path: Path, uid: int) -> Path:
    path.mkdir(parents=True)
    os.chown(path, uid, uid)
    return path
