"""A fresh machine: `make run` without ../shared runs on the Hub dataset and says so; `make test`
fetches upstream's release (pinned by commit, checked by SHA-256) when ../shared is missing. The
fetcher is tried against a local HTTP server: no test touches the network."""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests import upstream_data as up
from tests.conftest import REPO
from tests.helpers import closed_url


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def serve():
    """A local static server of a folder laid out as raw.githubusercontent.com: /<commit>/<path>."""
    servers = []

    def start(root: Path):
        server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
        server.hits = 0
        handle = server.RequestHandlerClass

        def counted(*args, **kwargs):
            server.hits += 1
            return handle(*args, **kwargs)

        server.RequestHandlerClass = counted
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server, f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for s in servers:
        s.shutdown()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _made_up(root: Path) -> tuple[up.Wanted, ...]:
    """Two made-up upstream files at two commits, one of them cut by the sample's rule."""
    lines = [
        {"question_id": q, "score": i}
        for i, q in enumerate(
            [
                "39_direito_penal_questao_1",
                "40_direito_civil_questao_2",
                "39_direito_administrativo_questao_3",
            ]
        )
    ]
    full = "".join(json.dumps(x) + "\n" for x in lines).encode()
    (root / "c1" / "data").mkdir(parents=True)
    (root / "c1" / "data" / "q.jsonl").write_bytes(b'{"question_id": "x"}\n')
    (root / "c2" / "data").mkdir(parents=True)
    (root / "c2" / "data" / "j.jsonl").write_bytes(full)
    sample = up.sample_lines(full)
    assert sample.count(b"\n") == 2 and b"40_direito_civil" not in sample
    return (
        up.Wanted("v1/q.jsonl", "c1", "data/q.jsonl", _sha(b'{"question_id": "x"}\n')),
        up.Wanted("v1/j.sample.jsonl", "c2", "data/j.jsonl", _sha(sample), up.sample_lines),
    )


def test_the_fetcher_takes_pinned_files_checks_them_and_writes_all_or_nothing(serve, tmp_path):
    files = _made_up(tmp_path / "web")
    server, url = serve(tmp_path / "web")
    dest = tmp_path / "cache" / "release"
    assert up.fetch(dest, base_url=url, files=files) == []
    assert up.complete(dest, files) and server.hits == 2
    assert (dest / "v1/j.sample.jsonl").read_bytes().count(b"\n") == 2

    # a file that changed upstream: refused by its hash, and nothing is written
    (tmp_path / "web" / "c1" / "data" / "q.jsonl").write_bytes(b'{"question_id": "y"}\n')
    other = tmp_path / "cache" / "other"
    problems = up.fetch(other, base_url=url, files=files)
    assert len(problems) == 1 and problems[0].startswith(f"v1/q.jsonl: {url}/c1/data/q.jsonl: SHA-256 ")
    assert not other.exists()


def test_offline_the_fetcher_names_every_file_and_writes_nothing(tmp_path):
    closed = closed_url()
    dest = tmp_path / "cache"
    problems = up.fetch(dest, base_url=closed, files=up.FILES, timeout=5)
    assert len(problems) == len(up.FILES) and all("ConnectError" in p for p in problems)
    assert problems[0].startswith(f"oab_bench_v1/LICENSE: {closed}/{up.RELEASE}/LICENSE: ")
    assert not dest.exists()


def test_the_pinned_files_are_those_of_shared(upstream_v1, judge_prompts_v2, serve, tmp_path):
    """Every hash in the table is ../shared's copy's; served as upstream lays them out (the full
    judgments file of which the sample is 36 lines), they are fetched into a copy of ../shared."""
    shared = upstream_v1.parent
    for w in up.FILES:
        assert _sha((shared / w.target).read_bytes()) == w.sha256, w.target
    web = tmp_path / "web"
    for w in up.FILES:
        data = (shared / w.target).read_bytes()
        if w.select:  # the sample, back among lines of other exams as in upstream's file
            other = json.dumps({"question_id": "41_direito_civil_questao_1", "score": 0}).encode() + b"\n"
            data = other + data.replace(b"\n", b"\n" + other, 5)
            assert w.select(data) == (shared / w.target).read_bytes()
        path = web / w.commit / w.source
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    server, url = serve(web)
    folder, problems = up.data_folder(tmp_path / "no-shared", tmp_path / "cache", base_url=url)
    assert problems == [] and folder == tmp_path / "cache" and server.hits == len(up.FILES)
    for w in up.FILES:
        assert (folder / w.target).read_bytes() == (shared / w.target).read_bytes()
    assert up.data_folder(tmp_path / "no-shared", folder, base_url=url) == (folder, [])  # no fetch again
    assert server.hits == len(up.FILES)
    assert up.data_folder(shared, tmp_path / "unused") == (shared, [])  # ../shared first, untouched


def test_the_command_prints_the_folder_and_says_what_it_could_not_fetch(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(up.URL_ENV, closed_url())
    assert up.main(["--shared", str(tmp_path / "none"), "--cache", str(tmp_path / "cache")]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(tmp_path / "cache")
    assert err.count("upstream_data: not fetched: ") == len(up.FILES)
    assert "the tests that read it are skipped (each says why in pytest's summary)" in err


def _dry(*args: str) -> str:
    proc = subprocess.run(["make", "-n", *args], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_run_without_shared_runs_on_the_hub_dataset_and_says_so(tmp_path):
    fresh = _dry("run", f"DATA={tmp_path / 'no-shared'}")
    assert f"make run: no {tmp_path / 'no-shared'}: running on the Hub dataset" in fresh
    assert "oab-bench build" not in fresh and "--dataset" not in fresh and "oab-bench run --model" in fresh
    assert "OAB_BENCH_ENTRY=make " in fresh  # its advice names DATA=, not --dataset (test_references.py)
    local = _dry("run")
    if (REPO.parent / "shared" / "data" / "oab_bench_v1" / "question.jsonl").exists():
        assert (
            "oab-bench build --source ../shared/data/oab_bench_v1" in local
            and "--dataset out/oab_bench" in local
        )
        assert "running on the Hub dataset" not in local


@pytest.mark.parametrize("target", ["test", "test-fast"])
def test_make_test_fetches_when_shared_is_missing_and_reports_skips(target):
    dry = _dry(target)
    assert "python -m tests.upstream_data --shared ../shared/data" in dry
    assert "OAB_BENCH_SHARED_DATA=$data" in dry and "pytest -q -rs" in dry
