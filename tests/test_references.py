"""Every remote reference of `oab-bench run` resolved once, up front, in seconds: the dataset (Hub id,
folder, relative path), the tasks' editions and areas, the judge's Batch API. A failure is one line
and a non-zero exit before any check call, server start or generation. No test touches the network:
"the Hub" is a closed local port, or a local server answering 404."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from oab_bench.dataset_builder import resolve
from oab_bench.dataset_builder.errors import SourceError
from tests.conftest import oab
from tests.helpers import clean_env, closed_url, env_for


def _run_args(server, out, *extra) -> list:
    args = ["run", "--model", "openai/cand-ref", "--api-base", server.url, "--output-dir", out]
    args += ["--judge-model", "openai/judge-ref", "--judge-api-base", server.url, *extra]
    return args


def _offline_env(tmp_path, **extra) -> dict:
    """No Hub: offline mode off, its address a closed local port; a fresh HF cache."""
    env = clean_env(OPENAI_API_KEY="sk-test", OAB_JUDGE_API_KEY="sk-test")
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "OAB_BENCH_DATASET"):
        env.pop(name, None)
    hub = {"HF_ENDPOINT": closed_url(), "HF_HOME": str(tmp_path / "hf")}
    return env | hub | extra


def _one_error_line(proc) -> str:
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("offline_mode, entry", [(False, None), (True, None), (True, "make")])
def test_the_default_hub_dataset_offline_fails_in_seconds_naming_what_to_pass(
    stub, tmp_path, offline_mode, entry
):
    """`oab-bench run` names its flag; under `make run` (the Makefile sets OAB_BENCH_ENTRY) make's DATA=."""
    server = stub()
    env = _offline_env(tmp_path, **({"HF_HUB_OFFLINE": "1"} if offline_mode else {}))
    if entry:
        env["OAB_BENCH_ENTRY"] = entry
    started = time.perf_counter()
    proc = oab(*_run_args(server, tmp_path / "run"), env=env, cwd=tmp_path)
    took = time.perf_counter() - started
    print(
        f"offline default dataset (HF_HUB_OFFLINE={int(offline_mode)}): exit {proc.returncode} in {took:.1f} s"
    )
    line = _one_error_line(proc)
    assert line.startswith("oab-bench run: error: --dataset (default) maritaca-ai/oab-bench: ")
    assert "maritaca-ai/oab-bench is a Hugging Face Hub dataset, which cannot be reached from here" in line
    if entry == "make":
        assert (
            "pass DATA=FOLDER to make run: upstream's files (question.jsonl" in line
            and "--dataset F" not in line
        )
    else:
        assert "pass --dataset FOLDER: a folder made by `oab-bench build`, or upstream's files" in line
    assert server.count == 0 and not (tmp_path / "run").exists()  # no check call, nothing made


def test_a_relative_dataset_variable_from_another_folder_is_not_taken_for_a_hub_id(
    stub, tmp_path, built_dataset
):
    server = stub()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = _offline_env(tmp_path, OAB_BENCH_DATASET="out/oab_bench")  # exported in the repo, then cd
    proc = oab(*_run_args(server, tmp_path / "run"), env=env, cwd=elsewhere)
    line = _one_error_line(proc)
    assert line.startswith("oab-bench run: error: OAB_BENCH_DATASET out/oab_bench: ")
    assert f"no folder out/oab_bench in {elsewhere}, and out/oab_bench is a Hugging Face Hub dataset" in line
    assert server.count == 0

    # a path relative to the working folder that exists is that folder, as lighteval receives it
    # (read from disk, no Hub: in this process)
    (elsewhere / "data").symlink_to(built_dataset.parent, target_is_directory=True)
    env = env_for(OAB_BENCH_DATASET="data/oab_bench")
    proc = oab(
        *_run_args(
            server,
            tmp_path / "run",
            "--tasks",
            "oab_bench:41",
            "--estimate",
            "--answer-cache",
            tmp_path / "ac",
            "--judge-cache",
            tmp_path / "jc",
        ),
        env=env,
        cwd=elsewhere,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "generations: 0 in the answer store (cost 0), 35 to generate" in proc.stdout


def test_a_missing_folder_that_cannot_be_a_hub_id_is_named(tmp_path):
    with pytest.raises(SourceError, match=r"^--dataset \.\./nowhere/ds: no such folder /"):
        resolve.resolve_dataset("../nowhere/ds")
    with pytest.raises(SourceError, match="no such folder"):
        resolve.resolve_dataset(f"hf:{tmp_path / 'absent'}")


class _FakeHub(BaseHTTPRequestHandler):
    """The Hub's answers: `someone/lookalike` is a dataset in neither layout, anything else is not found."""

    def do_GET(self):
        if "/api/datasets/someone/lookalike" in self.path:
            status, headers = 200, {}
            body = {"id": "someone/lookalike", "sha": "0" * 40, "siblings": [{"rfilename": "train.csv"}]}
        else:
            status, headers = 404, {"X-Error-Code": "RepoNotFound"}
            body = {"error": "Repository not found"}
        data = json.dumps(body).encode()
        self.send_response(status)
        for k, v in {**headers, "Content-Type": "application/json", "Content-Length": str(len(data))}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize(
    ("dataset", "said"),
    [
        ("someone/oab_bench", "no dataset someone/oab_bench on the Hugging Face Hub"),
        ("someone/lookalike", "the Hub dataset someone/lookalike is in neither layout"),
    ],
)
def test_a_hub_id_the_hub_does_not_have_or_that_only_looks_like_ours_is_one_line(
    stub, tmp_path, dataset, said
):
    hub = ThreadingHTTPServer(("127.0.0.1", 0), _FakeHub)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    try:
        env = _offline_env(tmp_path) | {"HF_ENDPOINT": f"http://127.0.0.1:{hub.server_address[1]}"}
        server = stub()
        proc = oab(*_run_args(server, tmp_path / "run", "--dataset", dataset), env=env, cwd=tmp_path)
    finally:
        hub.shutdown()
    line = _one_error_line(proc)
    assert f"--dataset {dataset}: no folder {dataset} in {tmp_path}, and {said}" in line
    assert server.count == 0


def test_offline_the_last_resolution_of_a_hub_id_is_used_saying_so(
    tmp_path, monkeypatch, built_dataset, capsys
):
    monkeypatch.setattr(resolve, "builds_dir", lambda: tmp_path / "builds")
    resolve._hub_folder.cache_clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SourceError, match="was never resolved here before"):
        resolve.resolve_dataset("someone/oab_bench")
    record = tmp_path / "builds" / "hub" / "someone_oab_bench_main.json"  # where a resolution is recorded
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"revision": "0123456789abcdef", "folder": str(built_dataset)}))
    assert resolve.resolve_dataset("someone/oab_bench") == str(built_dataset)
    assert (
        "the Hub cannot be reached: using someone/oab_bench as last resolved here (revision 0123456789ab)"
        in (capsys.readouterr().err)
    )


def test_an_edition_the_dataset_lacks_fails_listing_those_it_has(stub, tmp_path, built_dataset):
    server = stub()
    env = clean_env(OPENAI_API_KEY="sk-test", OAB_JUDGE_API_KEY="sk-test")
    started = time.perf_counter()
    proc = oab(
        *_run_args(server, tmp_path / "run", "--dataset", built_dataset, "--tasks", "oab_bench:44"), env=env
    )
    took = time.perf_counter() - started
    print(f"--tasks oab_bench:44 on a 39-41 dataset: exit {proc.returncode} in {took:.1f} s")
    line = _one_error_line(proc)
    assert line == (
        f"oab-bench run: error: --tasks oab_bench:44: the dataset {built_dataset} has no questions of "
        "edition 44; its editions: 39, 40, 41"
    )
    assert server.count == 0 and not (tmp_path / "run").exists()


def test_an_area_the_dataset_lacks_fails_listing_those_it_has():
    from oab_bench.judge.generation.run_checks import check_task_rows
    from tests.probe_rows import made_up

    rows = [made_up(90, "civil", n) for n in range(5)]
    check_task_rows(["oab_bench", "oab_bench:civil", "oab_bench:90"], rows, "ds")
    with pytest.raises(
        ValueError,
        match="oab_bench:penal: the dataset ds has no questions of area penal; its areas: civil",
    ):
        check_task_rows(["oab_bench:penal"], rows, "ds")


def test_a_judge_batch_endpoint_without_files_fails_before_generating(stub, tmp_path, built_dataset):
    candidate, judge = stub(), stub(batch_routes=False)  # a judge server with no /v1/files (vLLM, say)
    env = clean_env(OPENAI_API_KEY="sk-test", OAB_JUDGE_API_KEY="sk-test")
    args = ["run", "--model", "openai/cand-ref", "--api-base", candidate.url, "--dataset", built_dataset]
    args += ["--tasks", "oab_bench:41", "--output-dir", tmp_path / "run", "--judge-model", "openai/judge-ref"]
    args += ["--judge-api-base", judge.url, "--judge-batch", "--judge-cache", tmp_path / "jc"]
    proc = oab(*args, env=env)
    line = _one_error_line(proc)
    assert "--batch: the judge openai/judge-ref at" in line and "has no usable Batch API" in line
    assert "listing its files: NotFoundError (404)" in line and "go on running" not in proc.stderr
    assert candidate.count == judge.count == 0 and not (tmp_path / "run").exists()
