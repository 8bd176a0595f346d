"""Issue 15 (items 4-6): never touch a folder we did not write; results that do not depend on
the order of the inputs; answers too long for the judge are never sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_builder.build import build_rows
from dataset_builder.publish import DATA_FILE, MARKER, MARKER_HEAD, write_dataset
from tests import synthetic as syn
from tests.conftest import oab


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


# --- 4. build --overwrite: only our own, untouched build ---------------------------------------------


@pytest.fixture
def source(tmp_path):
    return syn.write_source(tmp_path / "src", syn.exam())


def build(src, out, *extra):
    return oab("build", "--source", src, "--output", out, "--errata", Path(src) / "errata.yaml", *extra)


def test_a_folder_that_looks_like_a_hub_dataset_is_refused_and_untouched(tmp_path, source):
    hub = tmp_path / "clone"
    (hub / "data").mkdir(parents=True)
    (hub / DATA_FILE).write_bytes(b"PAR1 someone else's parquet")
    (hub / "README.md").write_text("---\nlicense: mit\n---\nA clone of someone's dataset.\n")
    for name in ("HEAD", "config", "index", "objects/ab/cdef"):
        (hub / ".git" / name).parent.mkdir(parents=True, exist_ok=True)
        (hub / ".git" / name).write_text(name)
    before = snapshot(hub)
    proc = build(source, hub, "--overwrite")
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
    proc = build(source, out, "--overwrite")
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
    assert build(source, out).returncode == 0
    marker = (out / MARKER).read_text().splitlines()
    assert marker[0] == MARKER_HEAD and any(line.endswith("  README.md") for line in marker)
    proc = build(source, out, "--overwrite")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "src"]
    # a build from before markers listed files (head line only) is still ours
    (out / MARKER).write_text(MARKER_HEAD + "\n")
    rows, report = build_rows(source, source / "errata.yaml")
    assert write_dataset(rows, report, out, overwrite=True) == out.resolve()
    # a marker with another text is not ours
    (out / MARKER).write_text("hello\n")
    with pytest.raises(FileExistsError, match=r"no \.oab-bench-build marker"):
        write_dataset(rows, report, out, overwrite=True)
