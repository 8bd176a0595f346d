"""The folder guard every writing command shares: only a new or empty folder, or one the same
command marked, is written into; anything else is refused, untouched, in the same words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tests.synthetic as syn
from dataset_builder.build import build_rows
from dataset_builder.publish import BUILD, write_dataset
from judge.folders import NotOurFolder, Writer, check_folder, claim, is_marked
from judge.validity.probe import PROBE
from scripts.cli import main
from scripts.run import RUN


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


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
def dataset(tmp_path) -> Path:
    src = syn.write_source(tmp_path / "src", syn.exam(90) + syn.exam(91, "penal"))  # probes swap across exams
    rows, report = build_rows(src, src / "errata.yaml")
    return write_dataset(rows, report, tmp_path / "ds")


def test_probe_output_into_a_folder_it_did_not_write_is_refused_untouched(
    stub, dataset, notes, tmp_path, capsys
):
    server = stub(policy="max")
    before = snapshot(notes)
    args = ["probe", "--dataset", str(dataset), "--judge-model", "openai/j", "--api-base", server.url]
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


def test_a_probe_folder_from_before_the_marker_is_still_ours(tmp_path):
    older = tmp_path / "runs" / "probe_j"
    older.mkdir(parents=True)
    (older / "report.json").write_text(json.dumps({"judge": "j", "probes": {}, "checks": [], "verdict": "x"}))
    check_folder(older, PROBE, "--output")
    (older / "report.json").write_text(json.dumps({"judge": "j"}))  # not a probe report's shape
    with pytest.raises(NotOurFolder):
        check_folder(older, PROBE, "--output")


@pytest.mark.parametrize("writer", [RUN, PROBE, BUILD], ids=lambda w: w.command)
def test_every_writer_refuses_in_the_same_words(writer, notes):
    with pytest.raises(NotOurFolder) as e:
        check_folder(notes, writer, "--out", "NOTES")
    assert str(e.value) == (
        f"--out NOTES: not a folder written by `{writer.command}` (no {writer.marker} marker) and not empty "
        "(answers/probe_reference.jsonl, judgments.jsonl, report.json): refusing to write there; "
        "give a new or empty folder"
    )
    (notes / "answers" / "probe_reference.jsonl").unlink()
    with pytest.raises(
        NotOurFolder, match=r"not empty \(answers/, judgments.jsonl"
    ):  # an empty subfolder too
        check_folder(notes, writer, "--out", "NOTES")


def test_a_new_or_empty_folder_is_claimed_and_a_file_is_refused(tmp_path):
    writer = Writer("oab-bench x", ".oab-bench-x")
    for folder in (tmp_path / "new" / "deep", tmp_path / "empty"):
        if folder.name == "empty":
            folder.mkdir()
        check_folder(folder, writer, "--output")
        claim(folder, writer)
        assert is_marked(folder, writer) and [p.name for p in folder.iterdir()] == [".oab-bench-x"]
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(NotOurFolder, match=r"--output .*a-file: is a file, not a folder"):
        check_folder(tmp_path / "a-file", writer, "--output")


def test_a_marker_that_merely_looks_like_ours_does_not_count(tmp_path):
    writer = Writer("oab-bench x", ".oab-bench-x", head="written by x")
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "data.csv").write_text("mine")
    (folder / ".oab-bench-x").write_text("hello\n")  # another text
    with pytest.raises(NotOurFolder):
        check_folder(folder, writer, "--output")
    (folder / ".oab-bench-x").unlink()
    (folder / ".oab-bench-x").mkdir()  # a folder of that name
    with pytest.raises(NotOurFolder):
        check_folder(folder, writer, "--output")
    (folder / ".oab-bench-x").rmdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("written by x\n")
    (folder / ".oab-bench-x").symlink_to(outside)  # a link to a marker elsewhere
    with pytest.raises(NotOurFolder):
        check_folder(folder, writer, "--output")
    assert not is_marked(folder, writer)


def test_claim_never_writes_through_a_link(tmp_path):
    writer = Writer("oab-bench x", ".oab-bench-x")
    target = tmp_path / "precious.txt"
    target.write_text("years of work")
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / ".oab-bench-x").symlink_to(target)
    claim(folder, writer)
    assert target.read_text() == "years of work" and is_marked(folder, writer)


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
    from scripts.tiny_model import build

    before = snapshot(notes)
    with pytest.raises(NotOurFolder, match=r"not a folder written by `python -m scripts\.tiny_model`"):
        build(notes)
    assert snapshot(notes) == before


def test_a_home_folder_given_by_mistake_is_named_without_walking_all_of_it(tmp_path, monkeypatch):
    import judge.folders as folders

    monkeypatch.setattr(folders, "_WALKED", 20)
    home = tmp_path / "home"
    for i in range(30):
        (home / f"d{i:02d}").mkdir(parents=True)
        (home / f"d{i:02d}" / "f.txt").write_text("x")
    with pytest.raises(NotOurFolder, match=r" and more: over 20 entries\): refusing"):
        check_folder(home, RUN, "--output-dir")
