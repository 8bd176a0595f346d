"""The judgment cache: what it serves, what it refuses, what it judges again."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.settings import settings_from
from oab_bench.scripts.cli import main
from tests.conftest import REPO, SECRET
from tests.helpers import (
    _answers_file,
    clean_env,
    grade,
)


def test_a_tampered_cache_line_is_judged_again(stub, judge_key, tmp_path, caplog):
    server = stub(policy="max")
    assert grade(server, store=JudgmentStore(tmp_path)).status == "ok"
    path = tmp_path / "judgments.jsonl"
    line = json.loads(path.read_text())
    line["score"] = 99.0
    path.write_text(json.dumps(line) + "\n")
    before = server.count
    with caplog.at_level(logging.WARNING, logger="oab_bench.judge.grading.runner"):
        again = grade(server, store=JudgmentStore(tmp_path))
    assert server.count == before + 1 and again.status == "ok" and again.score == 1.25 and not again.cached
    assert any("cached judgment" in r.message and "judging it again" in r.message for r in caplog.records)


def test_a_cache_with_bad_bytes_is_read_around(stub, judge_key, tmp_path, caplog):
    server = stub(policy="max")
    grade(server, store=JudgmentStore(tmp_path))
    path = tmp_path / "judgments.jsonl"
    path.write_bytes(b"\xff\xfe not utf-8 \x80\n" + path.read_bytes())
    with caplog.at_level(logging.WARNING, logger="oab_bench.judge.grading.judgment_store"):
        store = JudgmentStore(tmp_path)
    assert len(store) == 1
    assert any(
        f"{path}:1: unreadable cache line skipped (not UTF-8)" in r.getMessage() for r in caplog.records
    )


def test_two_judge_processes_sharing_a_cache_pay_once(stub, tmp_path, built_dataset, upstream_v1):

    server = stub(policy="max", latency=0.3)
    answers, ids = _answers_file(tmp_path, upstream_v1, 6)
    cache = tmp_path / "cache"

    def start(n):
        args = [
            "judge",
            "--dataset",
            built_dataset,
            "--answers",
            answers,
            "--judge-model",
            "openai/judge-test",
        ]
        args += [
            "--api-base",
            server.url,
            "--cache",
            cache,
            "--output",
            tmp_path / f"o{n}.jsonl",
            "--no-progress",
            "--questions",
            *ids,
        ]
        cmd = [sys.executable, "-m", "oab_bench.scripts.cli", *map(str, args)]
        return subprocess.Popen(
            cmd, cwd=REPO, env=clean_env(OAB_JUDGE_API_KEY=SECRET), stderr=subprocess.PIPE
        )

    procs = [start(1), start(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert server.count == len(ids)
    for n in (1, 2):
        rows = [json.loads(x) for x in (tmp_path / f"o{n}.jsonl").read_text().splitlines()]
        assert len(rows) == len(ids) and {r["status"] for r in rows} == {"ok"}


def test_a_foreign_judgments_file_in_the_cache_is_refused_untouched(
    tmp_path, upstream_v1, built_dataset, caplog, capsys
):
    """Upstream's judgment file copied into a cache folder: refused before anything is written
    (not even the torn-line seal), one error naming the file, no warning per line; exit 2."""
    import logging
    from argparse import Namespace

    from oab_bench.judge.grading.judge_answers import command_judge
    from oab_bench.judge.grading.judgment_store import StoreError

    upstream = upstream_v1 / "model_judgment" / "o3-2025-04-16_single.sample.jsonl"
    store = tmp_path / "cache" / "judgments.jsonl"
    store.parent.mkdir()
    store.write_bytes(upstream.read_bytes() + b'{"question_id": "torn')
    before = store.read_bytes()
    s = settings_from(None, {"OAB_JUDGE_MODEL": "openai/x"})
    for no_cache in (False, True):
        with (
            caplog.at_level(logging.WARNING, logger="oab_bench.judge.grading.judgment_store"),
            pytest.raises(StoreError) as e,
        ):
            command_judge(Namespace(cache=str(store.parent), no_cache=no_cache), s)
        assert str(e.value).startswith(f"--cache {store}: not an oab-bench judgment store (36 line(s)")
    assert store.read_bytes() == before and not caplog.records

    answers, _ = _answers_file(tmp_path, upstream_v1, 1)
    out = tmp_path / "o.jsonl"
    argv = ["judge", "--dataset", str(built_dataset), "--answers", str(answers), "--judge-model", "openai/x"]
    argv += ["--api-base", "http://127.0.0.1:9/v1", "--output", str(out), "--no-progress"]
    assert main([*argv, "--cache", str(store.parent)]) == 2
    assert "not an oab-bench judgment store" in capsys.readouterr().err
    assert main([*argv, "--cache", str(store)]) == 2  # the store file itself, not its folder
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert f"--cache {store}: not a folder" in err and "Errno" not in err
    assert store.read_bytes() == before and not out.exists()
