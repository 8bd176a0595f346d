"""Commands run as other, ordinary users: what permissions do is only seen without root.

Needs root (to switch users) and util-linux's `setpriv`; the users are bare ids (nothing is added
to /etc/passwd). Each keeps one capability, CAP_DAC_READ_SEARCH (read any file, search any
folder), so it can start this checkout's Python wherever it lies (under /root, say); it writes
only where its ids and groups allow, which is what these tests are about.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
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


@contextlib.contextmanager
def session_as(uid: int, *, env: dict, umask: int = 0o022, cwd: Path, team: bool = True):
    """One process of `uid` that runs `oab-bench` commands one after another (tests/cli_session.py):
    `run(argv)` gives each one's CompletedProcess. For a user's several runs where a process each is
    not the point: lighteval's imports are paid once, the user, umask, folder and environment kept."""
    cmd = [*as_user(uid, team=team), sys.executable, "-m", "tests.cli_session"]
    repo = Path(__file__).resolve().parent.parent
    env = env | {"PYTHONPATH": os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH", "")]))}
    with (
        tempfile.TemporaryFile("w+") as log,
        subprocess.Popen(
            cmd,
            env=env,
            umask=umask,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        ) as proc,
    ):

        def run(argv: list) -> subprocess.CompletedProcess:
            proc.stdin.write(json.dumps([str(a) for a in argv]) + "\n")
            proc.stdin.flush()
            if not (line := proc.stdout.readline()):
                log.seek(0)
                raise AssertionError(f"the session of user {uid} ended: {log.read()[-3000:]}")
            reply = json.loads(line)
            return subprocess.CompletedProcess(argv, reply["code"], reply["stdout"], reply["stderr"])

        try:
            yield run
        finally:
            proc.stdin.close()
            proc.wait(timeout=60)


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
