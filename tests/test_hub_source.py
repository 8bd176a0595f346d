"""`oab-bench build --source hf:...`: upstream's Hub layout, read through `datasets`, offline from a folder."""

from __future__ import annotations

import json

import pytest

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.source import parse_hub_spec
from tests import synthetic as syn
from tests.conftest import oab


def no_errata(tmp_path):
    path = tmp_path / "errata.yaml"
    path.write_text("[]\n")
    return path


def without_provenance(rows):
    return [r.model_dump(mode="json", exclude={"provenance"}) for r in rows]


def test_hub_layout_builds_the_same_rows_as_the_jsonl_files(upstream_v1, built_rows, tmp_path):
    folder = syn.hub_layout_from_files(upstream_v1, tmp_path / "oab-bench")
    rows, report = build_rows(f"hf:{folder}")
    file_rows, file_report = built_rows
    assert without_provenance(rows) == without_provenance(file_rows)
    assert report.corrections == file_report.corrections and report.questions == 105
    assert {r.provenance.source for r in rows} == {"hf:oab-bench"}
    assert rows[0].provenance.revision.startswith("sha256:")
    assert file_rows[0].provenance.source == "files:oab_bench_v1"
    assert [r.content_hash() for r in rows] == [r.content_hash() for r in file_rows]  # judge cache keys


def test_a_changed_folder_is_read_again_not_from_a_stale_cache(tmp_path):
    pairs = syn.exam()
    folder = syn.write_hub_layout(tmp_path / "raw", [q for q, _ in pairs], [g for _, g in pairs])
    rows, _ = build_rows(f"hf:{folder}", no_errata(tmp_path))
    pairs[1][0]["statement"] = "QUESTÃO\n\nEnunciado trocado."
    syn.write_hub_layout(folder, [q for q, _ in pairs], [g for _, g in pairs])
    again, _ = build_rows(f"hf:{folder}", no_errata(tmp_path))
    assert again[1].statement == "Enunciado trocado." != rows[1].statement
    assert again[1].provenance.revision != rows[1].provenance.revision


def test_bad_row_names_the_config_row_and_field(tmp_path):
    pairs = syn.exam()
    questions = [q for q, _ in pairs]
    questions[2] = {**questions[2], "values": [0.6]}
    folder = syn.write_hub_layout(tmp_path / "raw", questions, [g for _, g in pairs])
    with pytest.raises(SourceError) as info:
        build_rows(f"hf:{folder}", no_errata(tmp_path))
    assert str(info.value) == "hf:raw:questions:3: field 'values': 1 values for 2 turns"


def test_folder_without_the_layout_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "README.md").write_text("# no configs\n")
    with pytest.raises(SourceError, match=r"no 'questions' config in README\.md"):
        build_rows(f"hf:{tmp_path / 'empty'}")
    with pytest.raises(SourceError, match="folder not found"):
        build_rows(f"hf:{tmp_path / 'missing'}")


@pytest.mark.parametrize(
    ("spec", "repo", "revision"),
    [
        ("hf:maritaca-ai/oab-bench", "maritaca-ai/oab-bench", None),
        ("hf:maritaca-ai/oab-bench@refs/pr/1", "maritaca-ai/oab-bench", "refs/pr/1"),
        ("hf:org/name@0123abcd", "org/name", "0123abcd"),
    ],
)
def test_hub_specs(spec, repo, revision):
    parsed = parse_hub_spec(spec)
    assert (parsed.repo, parsed.revision, parsed.folder) == (repo, revision, None)


def test_bad_hub_spec():
    with pytest.raises(SourceError, match=r"expected hf:OWNER/NAME\[@REVISION\]"):
        parse_hub_spec("hf:just-a-name")


def test_cli_build_from_hub_folder_records_the_revision(upstream_v1, tmp_path):
    folder = syn.hub_layout_from_files(upstream_v1, tmp_path / "oab-bench")
    out = tmp_path / "ds"
    proc = oab("build", "--source", f"hf:{folder}", "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert "105 questions, 21 exams of 10.00 points" in proc.stdout
    card = (out / "README.md").read_text(encoding="utf-8")
    import pandas as pd

    revision = json.loads(pd.read_parquet(out / "data").iloc[0].to_json())["provenance"]["revision"]
    assert f"`hf:oab-bench` at revision `{revision}`" in card


def test_a_clone_of_upstreams_repository_works_as_source(tmp_path):
    from oab_bench.dataset_builder.resolve import raw_source

    clone = tmp_path / "oab-bench-clone"
    syn.write_source(clone / "data" / "oab_bench", syn.exam())
    errata = no_errata(tmp_path)
    rows, _ = build_rows(clone, errata)
    direct, _ = build_rows(clone / "data" / "oab_bench", errata)
    assert rows == direct and len(rows) == 5
    assert raw_source(str(clone)) == str(clone)
    syn.write_source(clone / "data" / "oab_bench_v2", syn.exam())
    with pytest.raises(
        SourceError, match=r"several upstream data folders \(data/oab_bench, data/oab_bench_v2\)"
    ):
        build_rows(clone, errata)


def test_no_progress_bars_from_a_local_hub_folder(tmp_path, capfd):
    pairs = syn.exam()
    folder = syn.write_hub_layout(tmp_path / "raw", [q for q, _ in pairs], [g for _, g in pairs])
    build_rows(f"hf:{folder}", no_errata(tmp_path))
    assert "Generating" not in capfd.readouterr().err
