"""`--panel upstream`: the six published files, fetched from a local HTTP server standing in for
GitHub, verified by SHA-256, and never used or cached when a byte is wrong or the connection is cut."""

from __future__ import annotations

import hashlib
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from oab_bench.judge.panel import upstream
from oab_bench.judge.panel.published import resolve_panel


class FileServer:
    """Serves the six files from a folder, one fault at a time: `corrupt` (a byte changed), `cut`
    (half the body, then the connection closed), `short` (half the body, no length announced),
    `missing` (404); counts the requests."""

    def __init__(self, folder: Path, fault: str | None = None, only: str | None = None):
        self.folder, self.fault, self.only, self.requests = folder, fault, only, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                name = self.path.rsplit("/", 1)[-1]
                outer.requests.append(name)
                body = (outer.folder / name).read_bytes() if (outer.folder / name).is_file() else None
                fault = outer.fault if outer.only in (None, name) else None
                if body is None or fault == "missing":
                    self.send_error(404)
                    return
                if fault == "corrupt":
                    body = body[:1000] + bytes([body[1000] ^ 1]) + body[1001:]
                self.send_response(200)
                if fault != "short":
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if fault in ("cut", "short"):
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/maritaca-ai/oab-bench/{upstream.COMMIT}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def files(upstream_v1, monkeypatch, tmp_path):
    """A server of the six files and an empty panel cache; stops the server afterwards."""
    servers = []

    def start(fault: str | None = None, only: str | None = None) -> FileServer:
        server = FileServer(upstream_v1 / "model_answer", fault, only)
        servers.append(server)
        monkeypatch.setenv(upstream.URL_ENV, server.url)
        return server

    monkeypatch.setenv(upstream.CACHE_ENV, str(tmp_path / "panel"))
    yield start
    for s in servers:
        s.stop()


def cached(tmp_path: Path) -> list[str]:
    folder = tmp_path / "panel"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_the_pinned_hashes_are_those_of_the_shared_copy(upstream_v1):
    for name, (sha, size) in upstream.FILES.items():
        data = (upstream_v1 / "model_answer" / name).read_bytes()
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (sha, size), name
    assert sorted(p.name for p in (upstream_v1 / "model_answer").glob("*.jsonl")) == sorted(upstream.FILES)


def test_downloaded_once_verified_then_served_from_the_cache(files, tmp_path):
    server = files()
    got = upstream.upstream_files()
    assert [p.name for p in got] == sorted(upstream.FILES) and all(upstream.is_intact(p) for p in got)
    assert sorted(server.requests) == sorted(upstream.FILES) and cached(tmp_path) == sorted(upstream.FILES)
    panel = resolve_panel(["upstream"])
    assert len(server.requests) == 6  # the second use reads the cache only
    assert len(panel.models) == 6 and len(panel.answers) == 630
    assert set(panel.sources.values()) == {f"upstream maritaca-ai/oab-bench@{upstream.COMMIT}"}


@pytest.mark.parametrize("fault", ["corrupt", "cut", "short"])
def test_a_wrong_byte_or_a_cut_connection_is_refused_and_nothing_is_cached(files, tmp_path, fault):
    name = "gpt-4o-2024-08-06.jsonl"
    files(fault, only=name)
    with pytest.raises(upstream.PanelUnavailable) as e:
        upstream.upstream_files()
    assert name in str(e.value) and "\n" not in str(e.value)
    if fault == "cut":  # the two files before it (sorted) are cached; it and the three after are not
        assert "4 of the 6 published answer files are not cached" in str(e.value)
        assert cached(tmp_path) == [
            "Qwen2.5-72B-Instruct-deepinfra.jsonl",
            "claude-3-5-sonnet-20240620.jsonl",
        ]
    assert name not in cached(tmp_path)  # neither the file nor a leftover part of it
    assert not any(n.endswith(".part") for n in cached(tmp_path))
    files()  # the next try, from a good server, completes the cache
    assert len(upstream.upstream_files()) == 6 and cached(tmp_path) == sorted(upstream.FILES)


def test_a_cached_file_changed_since_is_fetched_again(files, tmp_path):
    server = files()
    upstream.upstream_files()
    edited = tmp_path / "panel" / "o3-2025-04-16.jsonl"
    edited.write_bytes(edited.read_bytes().replace(b"a", b"b", 1))
    upstream.upstream_files()
    assert server.requests.count("o3-2025-04-16.jsonl") == 2 and upstream.is_intact(edited)


def test_a_missing_file_on_the_server_is_refused(files, tmp_path):
    files("missing", only="o3-2025-04-16.jsonl")
    with pytest.raises(upstream.PanelUnavailable, match="HTTP 404"):
        upstream.upstream_files()
    assert "o3-2025-04-16.jsonl" not in cached(tmp_path)


def test_offline_with_nothing_cached_is_one_line_naming_what_to_pass(monkeypatch, tmp_path):
    monkeypatch.delenv(upstream.URL_ENV, raising=False)
    monkeypatch.setenv(upstream.CACHE_ENV, str(tmp_path / "panel"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(upstream.PanelUnavailable) as e:
        upstream.upstream_files()
    text = str(e.value)
    assert "\n" not in text and "pass --panel with the answer files or their folder" in text
    assert upstream.COMMIT in text and str(tmp_path / "panel") in text


def test_an_unreachable_mirror_is_the_same_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv(upstream.URL_ENV, "http://127.0.0.1:9/nothing")  # discard port: refused at once
    monkeypatch.setenv(upstream.CACHE_ENV, str(tmp_path / "panel"))
    with pytest.raises(upstream.PanelUnavailable, match="could not be read") as e:
        upstream.upstream_files()
    assert "\n" not in str(e.value) and not cached(tmp_path)
    assert "6 of the 6 published answer files are not cached" in str(e.value)


def test_the_cache_honours_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv(upstream.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert upstream.cache_dir() == tmp_path / "xdg" / "oab-bench" / "panel" / upstream.COMMIT


def test_judge_and_run_offline_say_so_in_one_line_before_any_call(
    stub, built_dataset, tmp_path, upstream_v1, monkeypatch, capsys
):
    from oab_bench.scripts.cli import main

    server = stub()
    for var, value in (("OAB_JUDGE_API_KEY", "sk-test"), ("OPENAI_API_KEY", "sk-test")):
        monkeypatch.setenv(var, value)
    monkeypatch.setenv(upstream.CACHE_ENV, str(tmp_path / "p"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(upstream.URL_ENV, raising=False)
    answers = upstream_v1 / "model_answer" / "o3-2025-04-16.jsonl"
    judge = ["judge", "--dataset", built_dataset, "--answers", answers, "--judge-model", "openai/j"]
    judge += ["--api-base", server.url, "--cache", tmp_path / "jc", "--output", tmp_path / "o.jsonl"]
    run = ["run", "--model", "openai/cand", "--api-base", server.url, "--dataset", built_dataset]
    run += ["--judge-model", "openai/j", "--judge-api-base", server.url, "--output-dir", tmp_path / "run"]
    for args in (judge, run):
        code = main([str(a) for a in [*args, "--panel", "upstream"]])
        lines = [x for x in capsys.readouterr().err.splitlines() if "error" in x]  # (datasets' progress bars)
        assert code == 2 and len(lines) == 1, lines
        assert "--panel upstream:" in lines[0] and "pass --panel with the answer files" in lines[0]
    assert server.count == 0 and not (tmp_path / "o.jsonl").exists() and not (tmp_path / "p").exists()
    assert not (tmp_path / "run").exists()


def test_offline_a_cached_file_that_fails_its_hash_is_said_so(upstream_v1, monkeypatch, tmp_path):
    """It was reported as `not cached`, as if it were not there."""
    monkeypatch.delenv(upstream.URL_ENV, raising=False)
    monkeypatch.setenv(upstream.CACHE_ENV, str(tmp_path / "panel"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    shutil.copytree(upstream_v1 / "model_answer", tmp_path / "panel")
    edited = tmp_path / "panel" / "o3-2025-04-16.jsonl"
    edited.write_bytes(edited.read_bytes().replace(b"a", b"b", 1))
    with pytest.raises(upstream.PanelUnavailable) as e:
        upstream.upstream_files()
    assert "1 of the 6 published answer files are not cached" in str(e.value)
    assert "(o3-2025-04-16.jsonl there, failing its SHA-256 check)" in str(e.value)
