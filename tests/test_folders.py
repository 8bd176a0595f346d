"""Folders we write: only into a new or empty folder, or one the same command marked; anything
else is refused, untouched, in the same words (oab_bench/folders.py, shared by run, build, probe)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.publish import BUILD, DATA_FILE, MARKER, MARKER_HEAD, write_dataset
from oab_bench.folders import Writer, check_folder, claim, listed
from oab_bench.judge.generation.run_checks import RUN
from oab_bench.judge.sweep.sweep import SWEEP
from oab_bench.scripts.cli import main
from oab_bench.scripts.cmd_probe import PROBE
from tests import synthetic as syn
from tests.helpers import (
    _answers_file,
    answers_file,
    cli_build,
    snapshot,
)


def test_overwrite_refuses_a_folder_that_is_not_a_build(tmp_path):
    src = syn.write_source(tmp_path / "src", syn.exam())
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    proc = cli_build(src, precious, "--overwrite")
    assert proc.returncode == 2 and "not a folder written by `oab-bench build`" in proc.stderr
    assert (precious / "thesis.tex").read_text() == "years of work"
    out = tmp_path / "ds"
    assert cli_build(src, out).returncode == 0 and (out / MARKER).is_file()
    assert cli_build(src, out, "--overwrite").returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "precious", "src"]  # nothing left aside


@pytest.mark.parametrize("target", ["file", "under-a-file"])
def test_output_that_cannot_be_a_folder(tmp_path, target):
    src = syn.write_source(tmp_path / "src", syn.exam())
    blocker = tmp_path / "blocker"
    blocker.write_text("a file")
    out = blocker if target == "file" else blocker / "ds"
    proc = cli_build(src, out, "--overwrite")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("oab-bench build: error:") and str(blocker) in line
    assert blocker.read_text() == "a file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker", "src"]


def test_a_folder_that_looks_like_a_hub_dataset_is_refused_and_untouched(tmp_path, source):
    hub = tmp_path / "clone"
    (hub / "data").mkdir(parents=True)
    (hub / DATA_FILE).write_bytes(b"PAR1 someone else's parquet")
    (hub / "README.md").write_text("---\nlicense: mit\n---\nA clone of someone's dataset.\n")
    for name in ("HEAD", "config", "index", "objects/ab/cdef"):
        (hub / ".git" / name).parent.mkdir(parents=True, exist_ok=True)
        (hub / ".git" / name).write_text(name)
    before = snapshot(hub)
    proc = cli_build(source, hub, "--overwrite")
    assert proc.returncode == 2, proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("oab-bench build: error:") and "not a folder written by `oab-bench build`" in line
    assert ".git/ (" in line and "README.md" in line and DATA_FILE in line  # what it would have removed
    assert snapshot(hub) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clone", "src"]  # no temporary folder left


def test_our_build_with_a_users_notebook_is_refused_naming_it(tmp_path, source):
    rows, report = build_rows(source, source / "errata.yaml")
    out = write_dataset(rows, report, tmp_path / "ds")
    (out / "analysis.ipynb").write_text("{}")
    (out / "data" / "extra.csv").write_text("a,b\n")
    before = snapshot(out)
    with pytest.raises(FileExistsError) as e:
        write_dataset(rows, report, out, overwrite=True)
    assert "analysis.ipynb" in str(e.value) and "data/extra.csv" in str(e.value)
    assert "README.md" not in str(e.value)  # ours: not listed
    assert snapshot(out) == before
    proc = cli_build(source, out, "--overwrite")
    assert proc.returncode == 2 and "would have removed: analysis.ipynb, data/extra.csv" in proc.stderr
    assert snapshot(out) == before


def test_an_edited_card_is_not_what_we_wrote(tmp_path, source):
    rows, report = build_rows(source, source / "errata.yaml")
    out = write_dataset(rows, report, tmp_path / "ds")
    (out / "README.md").write_text((out / "README.md").read_text() + "\nMy notes.\n")
    with pytest.raises(FileExistsError, match=r"README.md \(changed since the build\)"):
        write_dataset(rows, report, out, overwrite=True)
    assert (out / "README.md").read_text().endswith("My notes.\n")


def test_our_clean_build_is_replaced(tmp_path, source):
    out = tmp_path / "ds"
    assert cli_build(source, out).returncode == 0
    marker = (out / MARKER).read_text().splitlines()
    assert marker[0] == MARKER_HEAD and any(line.endswith("  README.md") for line in marker)
    proc = cli_build(source, out, "--overwrite")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "src"]
    rows, report = build_rows(source, source / "errata.yaml")
    # a marker with another text is not ours
    (out / MARKER).write_text("hello\n")
    with pytest.raises(FileExistsError, match=r"no \.oab-bench-build marker"):
        write_dataset(rows, report, out, overwrite=True)


def test_push_sends_only_our_unchanged_build_and_says_why_not(tmp_path, source, monkeypatch):
    import huggingface_hub
    import pyarrow as pa

    from oab_bench.dataset_builder.publish import push_dataset

    def push_dataset_(folder):
        return push_dataset(argparse.Namespace(dataset=folder, repo_id="org/x"))

    calls = []

    class FakeApi:
        def __getattr__(self, name):
            return lambda *a, **kw: calls.append(name)

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    foreign = tmp_path / "foreign"
    (foreign / "data").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1, 2]}), foreign / DATA_FILE)  # someone's dataset, our file names
    (foreign / "README.md").write_text("# notes\n")
    with pytest.raises(FileNotFoundError, match=r"not a dataset folder made by `oab-bench build`"):
        push_dataset_(foreign)
    rows, report = build_rows(source, source / "errata.yaml")
    out = write_dataset(rows, report, tmp_path / "ds")
    built = (out / DATA_FILE).read_bytes()
    pq.write_table(pq.read_table(out / DATA_FILE).slice(1), out / DATA_FILE)  # a row removed by hand
    with pytest.raises(ValueError, match=rf"{DATA_FILE}: changed since the build"):
        push_dataset_(out)
    (out / DATA_FILE).write_bytes(built)
    (out / "README.md").write_text("My own card, no metadata.\n")
    with pytest.raises(ValueError, match=r"README.md: .*front matter"):
        push_dataset_(out)
    assert calls == []  # nothing reached the Hub


def test_build_fills_an_existing_empty_folder(built_rows, tmp_path):
    rows, report = built_rows
    (tmp_path / "empty").mkdir()
    out = write_dataset(rows, report, tmp_path / "empty")
    assert (out / "data").is_dir() and (out / "README.md").exists()


def test_an_output_that_cannot_be_written_fails_before_any_call(
    stub, judge_key, tmp_path, upstream_v1, built_dataset, capsys
):
    """`--output` an existing folder: exit 2 naming the flag before the judge is called (not after
    paying for every judgment), and no temporary file left; the same for probe's and run's folders."""
    from oab_bench.judge.output import write_atomic

    server = stub()
    answers, _ = _answers_file(tmp_path, upstream_v1, 1)
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    argv = ["judge", "--dataset", str(built_dataset), "--answers", str(answers), "--no-progress"]
    argv += ["--judge-model", "openai/judge-test", "--api-base", server.url, "--cache", str(tmp_path / "c")]
    assert main([*argv, "--output", str(outdir)]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert f"--output {outdir}: is a folder" in err
    with pytest.raises(IsADirectoryError):  # should it fail anyway, it leaves nothing behind
        write_atomic(outdir, "x")
    assert not server.requests and not list(tmp_path.glob(".outdir.*"))

    a_file = tmp_path / "a_file"
    a_file.write_text("")
    probe = ["probe", "--dataset", str(built_dataset), "--questions", "39_direito_penal_questao_3"]
    probe += ["--judge-model", "openai/judge-test", "--api-base", server.url, "--no-progress"]
    assert main([*probe, "--cache", str(tmp_path / "c"), "--output", str(a_file)]) == 2
    assert f"--output {a_file}: is a file, not a folder" in capsys.readouterr().err  # as run says it
    run = ["run", "--model", "openai/cand", "--dataset", str(built_dataset), "--judge-model", "openai/j"]
    assert main([*run, "--output-dir", str(a_file)]) == 2
    assert f"--output-dir {a_file}: is a file, not a folder" in capsys.readouterr().err
    assert not server.requests and a_file.read_text() == ""


def test_run_refuses_a_cache_or_an_output_it_cannot_use_before_any_work(tmp_path, built_dataset, capsys):
    """`oab-bench run` opened its judge cache only in the task, after generating, and found a
    `judgments.jsonl` folder in its output only at the end: both now fail first, naming the flag."""
    run = ["run", "--model", "openai/cand", "--dataset", str(built_dataset), "--judge-model", "openai/j"]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "judgments.jsonl").write_text('{"question_id": "q", "score": 1}\n')
    before = (foreign / "judgments.jsonl").read_bytes()
    assert main([*run, "--output-dir", str(tmp_path / "o1"), "--judge-cache", str(foreign)]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert "--judge-cache (OAB_JUDGE_CACHE):" in err and "not an oab-bench judgment store" in err
    assert (foreign / "judgments.jsonl").read_bytes() == before and not (tmp_path / "o1").exists()

    a_file = tmp_path / "a_file"
    a_file.write_text("")
    assert main([*run, "--output-dir", str(tmp_path / "o2"), "--judge-cache", str(a_file)]) == 2
    assert "--judge-cache (OAB_JUDGE_CACHE): " in capsys.readouterr().err

    out = tmp_path / "o3"
    (out / "judgments.jsonl").mkdir(parents=True)
    assert main([*run, "--output-dir", str(out), "--judge-cache", str(tmp_path / "c")]) == 2
    assert "--output-dir" in capsys.readouterr().err and not (tmp_path / "c").exists()


def test_run_never_writes_in_a_folder_it_did_not_make(stub, tmp_path, built_dataset, capsys, monkeypatch):
    """`--output-dir ~/notes` deleted the judgments.jsonl found there and replaced its model_config.yaml
    before lighteval started: a run now writes only in a new or empty folder, or one a run marked."""
    from oab_bench.conventions import RUN_MARKER, SUMMARY_FILE
    from oab_bench.judge.generation import run as run_module

    server = stub()
    started = []
    monkeypatch.setattr(run_module, "evaluate", lambda *a: started.append(1) or ([], {}))
    run = ["run", "--model", "openai/cand", "--api-base", server.url, "--dataset", str(built_dataset)]
    run += ["--tasks", "oab_bench:39", "--judge-model", "openai/j", "--judge-api-base", server.url]
    run += ["--judge-cache", str(tmp_path / "jc"), "--answer-cache", str(tmp_path / "ac"), "--no-check-call"]
    notes = tmp_path / "notes"
    (notes / "drafts").mkdir(parents=True)
    (notes / "judgments.jsonl").write_text("someone else's\n")
    (notes / "model_config.yaml").write_text("mine: true\n")
    assert main([*run, "--output-dir", str(notes)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"oab-bench run: error: --output-dir {notes}: not a folder written by")
    assert "drafts/, judgments.jsonl, model_config.yaml" in line
    assert sorted(p.name for p in notes.iterdir()) == ["drafts", "judgments.jsonl", "model_config.yaml"]
    assert (notes / "judgments.jsonl").read_text() == "someone else's\n" and not started

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for _ in range(2):  # an empty folder, then the same folder again: ours now
        assert main([*run, "--output-dir", str(fresh)]) == 1
    assert len(started) == 2 and (fresh / RUN_MARKER).is_file()
    (notes / SUMMARY_FILE).write_text(json.dumps({"model": "m"}))  # a summary alone does not make it ours
    assert main([*run, "--output-dir", str(notes)]) == 2


@pytest.fixture
def notes(tmp_path) -> Path:
    """Someone's folder, holding the names our commands write."""
    folder = tmp_path / "notes"
    (folder / "answers").mkdir(parents=True)
    (folder / "answers" / "probe_reference.jsonl").write_text("my own lines\n")
    (folder / "judgments.jsonl").write_text("someone else's\n")
    (folder / "report.json").write_text('{"mine": true}\n')
    return folder


@pytest.fixture
def probe_dataset(tmp_path) -> Path:
    src = syn.write_source(tmp_path / "src", syn.exam(90) + syn.exam(91, "penal"))  # probes swap across exams
    rows, report = build_rows(src, src / "errata.yaml")
    return write_dataset(rows, report, tmp_path / "ds")


def test_probe_output_into_a_folder_it_did_not_write_is_refused_untouched(
    stub, probe_dataset, notes, tmp_path, capsys
):
    server = stub(policy="max")
    before = snapshot(notes)
    args = ["probe", "--dataset", str(probe_dataset), "--judge-model", "openai/j", "--api-base", server.url]
    args += ["--cache", str(tmp_path / "cache"), "--no-progress", "--resamples", "50"]
    assert main([*args, "--output", str(notes)]) == 2
    (line,) = [
        x for x in capsys.readouterr().err.splitlines() if x.startswith("oab-bench")
    ]  # not datasets' bar
    assert line == (
        f"oab-bench probe: error: --output {notes}: not a folder written by `oab-bench probe` (no "
        ".oab-bench-probe marker) and not empty (answers/probe_reference.jsonl, judgments.jsonl, report.json): "
        "refusing to write there; give a new or empty folder"
    )
    assert snapshot(notes) == before and server.count == 0  # untouched, nothing paid

    fresh = tmp_path / "fresh"
    assert main([*args, "--output", str(fresh)]) == 0
    assert (fresh / ".oab-bench-probe").is_file() and server.count > 0
    assert main([*args, "--output", str(fresh)]) == 0  # ours now: a rerun writes there again


@pytest.mark.slow
def test_judge_sweep_output_into_a_folder_it_did_not_write_is_refused_untouched(
    stub, probe_dataset, notes, tmp_path, capsys
):
    """judge-sweep wrote answers/probe_*.jsonl and sweep.json into any --output: now only its own."""
    from oab_bench.judge.dataset import load_rows

    server = stub(policy="max")
    ids = [r.question_id for r in load_rows(str(probe_dataset))]
    answers = [answers_file(tmp_path / f"{m}.jsonl", m, dict.fromkeys(ids, "Resposta.")) for m in ("a", "b")]
    args = ["judge-sweep", "--dataset", str(probe_dataset), "--answers", *map(str, answers)]
    args += [
        "--reference-judge",
        f"openai/ref,api_base={server.url}",
        "--candidate",
        f"openai/c,api_base={server.url}",
    ]
    args += ["--cache", str(tmp_path / "cache"), "--no-progress", "--resamples", "50"]
    before = snapshot(notes)
    capsys.readouterr()
    assert main([*args, "--output", str(notes)]) == 2
    err = capsys.readouterr().err
    assert (
        f"oab-bench judge-sweep: error: --output {notes}: not a folder written by `oab-bench judge-sweep`"
        in err
    )
    assert snapshot(notes) == before and server.count == 0  # untouched, nothing paid
    fresh = tmp_path / "fresh"
    assert main([*args, "--output", str(fresh)]) == 0 and (fresh / ".oab-bench-judge-sweep").is_file()
    assert main([*args, "--output", str(fresh)]) == 0  # ours now: a rerun writes there again


@pytest.mark.parametrize("writer", [RUN, PROBE, SWEEP, BUILD], ids=lambda w: w.command)
def test_every_writer_refuses_in_the_same_words(writer, notes):
    with pytest.raises(FileExistsError) as e:
        check_folder(notes, writer, "--out", "NOTES")
    assert str(e.value) == (
        f"--out NOTES: not a folder written by `{writer.command}` (no {writer.marker} marker) and not empty "
        "(answers/probe_reference.jsonl, judgments.jsonl, report.json): refusing to write there; "
        "give a new or empty folder"
    )
    (notes / "answers" / "probe_reference.jsonl").unlink()
    with pytest.raises(
        FileExistsError, match=r"not empty \(answers/, judgments.jsonl"
    ):  # an empty subfolder too
        check_folder(notes, writer, "--out", "NOTES")


def test_a_new_or_empty_folder_is_claimed_and_a_file_is_refused(tmp_path):
    writer = Writer("oab-bench x", ".oab-bench-x")
    for folder in (tmp_path / "new" / "deep", tmp_path / "empty"):
        if folder.name == "empty":
            folder.mkdir()
        check_folder(folder, writer, "--output")
        claim(folder, writer)
        assert listed(folder, writer) is not None and [p.name for p in folder.iterdir()] == [".oab-bench-x"]
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(FileExistsError, match=r"--output .*a-file: is a file, not a folder"):
        check_folder(tmp_path / "a-file", writer, "--output")


def test_a_marker_that_merely_looks_like_ours_does_not_count(tmp_path):
    writer = Writer("oab-bench x", ".oab-bench-x", head="written by x")
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "data.csv").write_text("mine")
    (folder / ".oab-bench-x").write_text("hello\n")  # another text
    with pytest.raises(FileExistsError):
        check_folder(folder, writer, "--output")
    (folder / ".oab-bench-x").unlink()
    (folder / ".oab-bench-x").mkdir()  # a folder of that name
    with pytest.raises(FileExistsError):
        check_folder(folder, writer, "--output")
    (folder / ".oab-bench-x").rmdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("written by x\n")
    (folder / ".oab-bench-x").symlink_to(outside)  # a link to a marker elsewhere
    with pytest.raises(FileExistsError):
        check_folder(folder, writer, "--output")
    assert listed(folder, writer) is None


def test_claim_never_writes_through_a_link(tmp_path):
    writer = Writer("oab-bench x", ".oab-bench-x")
    target = tmp_path / "precious.txt"
    target.write_text("years of work")
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / ".oab-bench-x").symlink_to(target)
    claim(folder, writer)
    assert target.read_text() == "years of work" and listed(folder, writer) is not None


def test_build_refuses_a_folder_it_did_not_write_even_without_overwrite(tmp_path, notes, capsys):
    src = syn.write_source(tmp_path / "src", syn.exam())
    before = snapshot(notes)
    args = ["build", "--source", str(src), "--output", str(notes), "--errata", str(src / "errata.yaml")]
    assert main(args) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "not a folder written by `oab-bench build` (no .oab-bench-build marker)" in line
    assert snapshot(notes) == before
    out = tmp_path / "ds"
    assert main([*args[:3], "--output", str(out), *args[5:]]) == 0
    assert main([*args[:3], "--output", str(out), *args[5:]]) == 2  # ours: only --overwrite replaces it
    assert "exists (pass --overwrite to replace it)" in capsys.readouterr().err


def test_the_tiny_model_is_not_built_into_someone_elses_folder(notes):
    from benchmarks.tiny_model import build

    before = snapshot(notes)
    with pytest.raises(FileExistsError, match=r"not a folder written by `python -m benchmarks\.tiny_model`"):
        build(notes)
    assert snapshot(notes) == before


def test_a_home_folder_given_by_mistake_is_named_without_walking_all_of_it(tmp_path, monkeypatch):
    import oab_bench.folders as folders

    monkeypatch.setattr(folders, "_WALKED", 20)
    home = tmp_path / "home"
    for i in range(30):
        (home / f"d{i:02d}").mkdir(parents=True)
        (home / f"d{i:02d}" / "f.txt").write_text("x")
    with pytest.raises(FileExistsError, match=r" and more: over 20 entries\): refusing"):
        check_folder(home, RUN, "--output-dir")
