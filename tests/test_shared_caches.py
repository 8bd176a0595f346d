"""Caches shared by runs, processes and users: nothing paid twice, modes from the umask, read-only
caches served, and every place a run writes checked before anything is paid or created.

The team tests run `oab-bench run` as ordinary users (tests/users.py): root passes every
permission check, so only they show what a teammate meets."""

from __future__ import annotations

import stat
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import SECRET, oab
from tests.helpers import TASK, answers_file, candidate_calls, env_for, is_check_call, judge_calls
from tests.users import ALICE, BOB, OUTSIDER, TEAM, home_of, require_users, run_as, session_as, team_folder

pytestmark = pytest.mark.e2e
CACHE_FILES = (
    "answers/answers.sqlite",
    "answers/answers.lock",
    "judge/judgments.sqlite",
    "judge/judgments.lock",
)
UNSHARED = ("XDG_CACHE_HOME", "HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")


def calls(requests: list[dict]) -> tuple[int, int, int]:
    """(candidate calls, judge calls, check calls) among `requests` the stub received."""
    received = SimpleNamespace(requests=requests)
    return len(candidate_calls(received)), len(judge_calls(received)), sum(map(is_check_call, requests))


def user_env(home: Path | str, **extra) -> dict:
    """A user's environment: a home of their own, no cache folder or OAB_* setting of the test's."""
    env = env_for(HOME=str(home), USER="oabtest", **extra)
    keep = ("OAB_JUDGE_API_KEY",)
    return {k: v for k, v in env.items() if k not in UNSHARED and (k in keep or not k.startswith("OAB_"))}


def run_args(server, dataset, out, answers, judges, *extra, model: str = "openai/cand-team") -> list[str]:
    return [
        sys.executable,
        "-m",
        "oab_bench.scripts.cli",
        "run",
        "--model",
        model,
        "--api-base",
        server.url,
        "--dataset",
        dataset,
        "--tasks",
        TASK,
        "--judge-model",
        "openai/judge-team",
        "--judge-api-base",
        server.url,
        "--answer-cache",
        answers,
        "--judge-cache",
        judges,
        "--output-dir",
        out,
        *extra,
    ]


def modes(folder: Path) -> dict[str, tuple[str, int]]:
    return {
        str(p.relative_to(folder)): (oct(stat.S_IMODE(p.stat().st_mode)), p.stat().st_gid)
        for p in sorted(folder.rglob("*"))
    }


def test_cache_read_only_writes_no_cache_it_could_write(stub, built_dataset, tmp_path):
    """--cache-read-only means no write to any cache, whatever the permissions: a run that needs new
    answers and judgments says so, serves them to itself only, and leaves the caches as they were."""
    from oab_bench.judge.generation.answer_store import AnswerStore
    from oab_bench.judge.grading.judgment_store import JudgmentStore

    server = stub(policy="max")
    AnswerStore(tmp_path / "ac"), JudgmentStore(tmp_path / "jc")  # writable caches, empty
    before = {p: p.read_bytes() for p in [*(tmp_path / "ac").iterdir(), *(tmp_path / "jc").iterdir()]}
    cmd = run_args(server, built_dataset, tmp_path / "run", tmp_path / "ac", tmp_path / "jc")
    proc = oab(*cmd[3:], "--max-samples", "2", "--cache-read-only", env=env_for())  # in this process
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert calls(server.requests)[:2] == (2, 2)
    said = " ".join(proc.stderr.split())
    assert "this cache is read-only: 2 answers / 2 judgments would not be kept" in said
    assert (
        f"--answer-cache {tmp_path / 'ac'}: --cache-read-only" in said
        and "going on (--cache-read-only)" in said
    )
    assert {p: p.read_bytes() for p in [*(tmp_path / "ac").iterdir(), *(tmp_path / "jc").iterdir()]} == before


def test_a_team_shares_one_cache_folder_and_a_read_only_copy_serves_its_hits(
    stub, built_dataset, built_rows, tmp_path
):
    """Two users of one group, a setgid folder, umask 002: the files are the group's to write. Their
    runs start together on the fresh cache (each with a key of its own) and every answer and judgment
    is paid once, whoever claims it first; later runs reuse them. Made read-only,
    the complete cache serves a rerun without a call; a run that would need new entries (a new
    model) is refused before any call, and goes on with --cache-read-only (a --panel too), keeping
    nothing."""
    require_users()
    server = stub(policy="max", latency=0.5)  # calls last: the two first runs overlap
    team = team_folder(tmp_path / "team")
    answers, judges = team / "answers", team / "judge"
    alice, bob = home_of(tmp_path / "alice", ALICE), home_of(tmp_path / "bob", BOB)

    def run(user, home, *extra, model="openai/cand-team", out="run"):
        before = len(server.requests)
        proc = user(run_args(server, built_dataset, home / out, answers, judges, *extra, model=model)[3:])
        return proc, calls(server.requests[before:])

    keys = {
        who: user_env(home, OPENAI_API_KEY=f"{SECRET}-{who}", OAB_JUDGE_API_KEY=f"{SECRET}-{who}")
        for who, home in (("alice", alice), ("bob", bob))
    }
    with (  # each user's runs in one process of theirs: lighteval's imports paid once a user
        session_as(ALICE, env=keys["alice"], umask=0o002, cwd=alice) as as_alice,
        session_as(BOB, env=keys["bob"], umask=0o002, cwd=bob) as as_bob,
        ThreadPoolExecutor(2) as pool,
    ):
        started = [pool.submit(run, as_alice, alice, "--max-samples", "5"), pool.submit(run, as_bob, bob)]
        (first, _), (second, _) = (f.result() for f in started)
        assert first.returncode == 0, first.stderr[-3000:]
        assert second.returncode == 0, second.stderr[-3000:]
        whose = {
            who: calls(
                [r for r in server.requests if r["headers"].get("Authorization", "").endswith(f"-{who}")]
            )
            for who in keys
        }
        print("calls of each user's first run (answers, judgments, check calls):", whose)
        assert calls(server.requests)[:2] == (15, 15)  # Alice's 5 questions among Bob's 15: each paid once
        assert sum(n for c in whose.values() for n in c) == len(server.requests)
        assert len((alice / "run" / "judgments.jsonl").read_text().splitlines()) == 5
        assert len((bob / "run" / "judgments.jsonl").read_text().splitlines()) == 15
        created = modes(team)
        print("modes after a umask 002 run in a setgid folder:", created)
        assert created == {
            "answers": ("0o2775", TEAM),
            "judge": ("0o2775", TEAM),
            **{name: ("0o664", TEAM) for name in CACHE_FILES},
        }

        made = {name: mode for name, (mode, _) in modes(alice / "run").items()}
        print("modes of the run folder's files:", made)
        ours = (
            ".oab-bench-run",
            "judgments.jsonl",
            "model_config.yaml",
            "oab_bench_summary.json",
            "report.html",
        )
        assert {made[name] for name in ours} == {"0o664"}
        assert stat.S_IMODE((alice / "run").stat().st_mode) == 0o775

        for path in [answers, judges, *answers.iterdir(), *judges.iterdir()]:
            path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o222)
        archived = {p: p.read_bytes() for p in [*answers.iterdir(), *judges.iterdir()]}

        again, paid = run(as_bob, bob, out="again")
        assert again.returncode == 0, again.stderr[-3000:]
        assert paid == (0, 0, 0)
        assert "this cache is read-only: 0 answers / 0 judgments would not be kept" in " ".join(
            again.stderr.split()
        )

        (tmp_path / "panel").mkdir()
        panel = answers_file(
            tmp_path / "panel" / "m-panel.jsonl",
            "m-panel",
            {
                r.question_id: f"Resposta do painel para {r.question_id}."
                for r in built_rows[0]
                if "penal" in r.exam_id
            },
        ).parent
        # (a --panel's judgments count among those a read-only cache would not keep: test_stored_state.py)
        refused, paid = run(as_bob, bob, model="openai/cand-other", out="other")
        assert refused.returncode == 2 and paid == (0, 0, 0)
        message = " ".join(refused.stderr.split())
        print("refused (read-only cache, new model):", paid, refused.stderr[-1500:])
        assert "this cache is read-only: 15 answers / 15 judgments would not be kept" in message
        assert f"--answer-cache {answers}" in message and f"--judge-cache {judges}" in message
        assert "--cache-read-only" in message and "chmod g+w" in message
        assert not (bob / "other").exists()

        went_on, paid = run(
            as_bob,
            bob,
            "--cache-read-only",
            "--max-samples",
            "3",
            "--panel",
            panel,
            model="openai/cand-other",
            out="other",
        )
        assert went_on.returncode == 0, went_on.stderr[-3000:]
        assert paid == (3, 3 + 3, 2)  # the panel judged on the same 3 questions, served, kept nowhere
        assert len((bob / "other" / "panel_judgments.jsonl").read_text().splitlines()) == 3
        assert {
            p: p.read_bytes() for p in [*answers.iterdir(), *judges.iterdir()]
        } == archived  # nothing kept


def refused_run(server, dataset, tmp_path, uid, env, *extra, answers=None, judges=None):
    home = Path(env["HOME"])
    out = tmp_path / "out"
    cmd = run_args(server, dataset, out, answers or tmp_path / "ac", judges or tmp_path / "jc", *extra)
    proc = run_as(uid, cmd, env=env, cwd=tmp_path, team=False, timeout=600)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert server.requests == [] and not out.exists()
    assert not (home / "out").exists()
    return " ".join(proc.stderr.split())


def test_an_unwritable_empty_judgment_cache_is_refused_before_any_call(stub, built_dataset, tmp_path):
    require_users()
    server = stub()
    tmp_path.chmod(0o1777)
    home = home_of(tmp_path / "home", OUTSIDER)
    judges = tmp_path / "judge-cache"
    judges.mkdir()  # root's, 0755: the user can read it, not write it
    message = refused_run(server, built_dataset, tmp_path, OUTSIDER, user_env(home), judges=judges)
    print("refused (unwritable empty judge cache): 0 requests;", message)
    assert "this cache is read-only: 0 answers / 15 judgments would not be kept" in message
    assert f"--judge-cache {judges}: {judges} is not writable by this user" in message
    assert "--cache-read-only" in message and not (tmp_path / "ac").exists()


@pytest.mark.parametrize("case", ["HOME=/nonexistent", "HF_HOME unwritable", "--output-dir unwritable"])
def test_a_place_the_run_cannot_write_is_refused_before_any_call(stub, built_dataset, tmp_path, case):
    require_users()
    server = stub()
    tmp_path.chmod(0o1777)
    home = home_of(tmp_path / "home", OUTSIDER)
    env = user_env(home)
    extra: list[str] = []
    if case == "HOME=/nonexistent":
        env["HOME"] = "/nonexistent"
    elif case == "HF_HOME unwritable":
        env["HF_HOME"] = str(tmp_path / "hf")
        (tmp_path / "hf").mkdir()
    else:
        (tmp_path / "runs").mkdir()
        extra = ["--output-dir", str(tmp_path / "runs" / "one")]
    message = refused_run(server, built_dataset, tmp_path, OUTSIDER, env, *extra)
    print(f"refused ({case}): 0 requests;", message)
    if case == "HOME=/nonexistent":
        assert (
            "HF_HOME (not set: $HOME/.cache/huggingface, HOME=/nonexistent) /nonexistent/.cache/huggingface"
            in message
        )
    elif case == "HF_HOME unwritable":
        assert f"HF_HOME {tmp_path / 'hf'}: {tmp_path / 'hf'} is not writable by this user" in message
    else:
        assert f"--output-dir {tmp_path / 'runs' / 'one'}: {tmp_path / 'runs'} is not writable" in message
        assert "give another --output-dir" in message
    if case == "HOME=/nonexistent":
        assert "set HOME to your home folder, or HF_HOME to a folder you can write" in message
    assert "chmod g+w" in message or "HOME" in message
