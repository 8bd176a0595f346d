"""The upstream release in ../shared builds: 105 questions, 21 exams of 10.00, errata explained."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict

import pytest
import yaml

from oab_bench.dataset_builder.errata import DEFAULT_ERRATA, load_errata
from oab_bench.dataset_builder.schema import QuestionRow, money
from tests import synthetic as syn
from tests.conftest import REPO, oab


def test_all_105_questions_build_into_21_exams_of_10(built_rows):
    rows, report = built_rows
    assert len(rows) == 105 and report.questions == 105 and report.exams == 21
    exams = defaultdict(list)
    for r in rows:
        exams[r.exam_id].append(r)
    assert len(exams) == 21
    for exam, members in exams.items():
        assert sorted(m.number for m in members) == [0, 1, 2, 3, 4], exam
        assert money(sum(m.max_score for m in members)) == 10.0, exam


def test_every_items_rubric_adds_up_to_its_max(built_rows):
    rows, _ = built_rows
    for r in rows:
        assert money(sum(i.max_score for i in r.items)) == r.max_score
        for item in r.items:
            rubric = r.rubric_for(item.label)
            assert rubric, (r.question_id, item.label)
            assert money(sum(x.max_score for x in rubric)) == item.max_score, (r.question_id, item.label)
            for x in rubric:
                assert x.allowed_scores[0] == 0.0 and x.allowed_scores[-1] == x.max_score


def test_errata_lists_every_correction_with_its_reason(built_rows):
    rows, report = built_rows
    errata = load_errata(DEFAULT_ERRATA)
    assert set(errata) == {
        "39_direito_penal_questao_1",
        "40_direito_administrativo_peca_praticoprofissional",
        "41_direito_administrativo_peca_praticoprofissional",
        "41_direito_civil_peca_praticoprofissional",
        "41_direito_do_trabalho_questao_3",
    }
    for entry in errata.values():
        assert len(entry.problem) > 20 and len(entry.evidence) > 40
    assert len(report.corrections) == len(errata)
    corrected = {r.question_id for r in rows if r.errata}
    assert corrected == set(errata)
    by_id = {r.question_id: r for r in rows}
    assert [i.max_score for i in by_id["39_direito_penal_questao_1"].items] == [0.65, 0.6]
    assert [x.item_id for x in by_id["41_direito_do_trabalho_questao_3"].rubric if x.annulled] == ["B1"]
    assert report.warnings == []


def test_the_build_without_errata_fails_naming_each_problem(upstream_v1, tmp_path):
    empty = tmp_path / "none.yaml"
    empty.write_text("[]\n")
    proc = oab("build", "--source", upstream_v1, "--output", tmp_path / "out", "--errata", empty)
    assert proc.returncode == 2
    err = proc.stderr
    assert "39_direito_penal_questao_1, item A: score table totals 0.65 but the item is worth 0.60" in err
    assert "40_direito_administrativo_peca_praticoprofissional, the peça: score table totals 6.20" in err
    assert "41_direito_administrativo_peca_praticoprofissional P3: item row has no score cell" in err
    assert (
        "41_direito_civil_peca_praticoprofissional P4: score cell '0,15/0,25/0,35' does not start at 0" in err
    )
    assert "41_direito_do_trabalho_questao_3: the source marks items ['B1'] as annulled" in err
    assert not (tmp_path / "out").exists()
    assert list(tmp_path.iterdir()) == [empty]  # no temporary folder left behind


def test_load_dataset_round_trips_the_rows(built_rows, built_dataset):
    import datasets

    rows, _ = built_rows
    ds = datasets.load_dataset(str(built_dataset))
    assert list(ds) == ["test"]
    back = [QuestionRow.model_validate(x) for x in ds["test"]]
    assert back == rows


def test_card_yaml_parses_and_names_what_the_hub_needs(built_dataset):
    text = (built_dataset / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["license"] == "apache-2.0"
    assert meta["language"] == ["pt"] and meta["language_bcp47"] == ["pt-BR"]
    assert meta["task_categories"] == ["text-generation"]
    assert meta["pretty_name"] == "OAB-Bench" and meta["size_categories"] == ["n<1K"]
    assert "configs" not in meta  # see publish.py: it would make `datasets` cache the folder by name
    assert "2504.21202" in text and "@inproceedings" in text
    assert "41_direito_do_trabalho_questao_3" in text  # corrections are listed on the card


@pytest.mark.slow
def test_cli_build_writes_and_refuses_to_clobber(upstream_v1, tmp_path):
    out = tmp_path / "ds"
    cmd = [
        sys.executable,
        "-m",
        "oab_bench.scripts.cli",
        "build",
        "--source",
        str(upstream_v1),
        "--output",
        str(out),
    ]
    first = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "105 questions, 21 exams of 10.00 points" in first.stdout
    assert first.stdout.count("errata applied:") == 5
    second = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert second.returncode == 2 and "exists" in second.stderr
    third = subprocess.run([*cmd, "--overwrite"], cwd=REPO, capture_output=True, text=True)
    assert third.returncode == 0


def test_cli_bad_input_is_one_line_nonzero_and_writes_nothing(tmp_path):
    pairs = syn.exam()
    src = syn.write_source(tmp_path / "src", pairs)
    text = (src / "question.jsonl").read_text().splitlines()
    text[1] = text[1][:40]
    (src / "question.jsonl").write_text("\n".join(text) + "\n")
    out = tmp_path / "ds"
    proc = oab("build", "--source", src, "--output", out, "--errata", src / "errata.yaml")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("oab-bench build: error: question.jsonl:2: invalid JSON (")
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_failed_write_leaves_previous_output_intact(built_rows, tmp_path, monkeypatch):
    from oab_bench.dataset_builder import publish

    rows, report = built_rows
    out = publish.write_dataset(rows, report, tmp_path / "ds")
    before = (out / "README.md").read_text()

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(publish, "render_card", boom)
    with pytest.raises(RuntimeError):
        publish.write_dataset(rows, report, out, overwrite=True)
    assert (out / "README.md").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_push_uploads_the_pushed_layout_and_it_loads_back(
    built_rows, built_dataset, tmp_path, monkeypatch, capsys
):
    """Offline: a fake HfApi keeps what push sends; `load_dataset` reads it back, per config."""
    import datasets
    import huggingface_hub

    from oab_bench.scripts.cli import main
    from tests.fake_hub import FakeHub

    fake = FakeHub()
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda *a, **k: fake)
    push = ["push", "--dataset", str(built_dataset), "--repo-id", "org/oab-bench", "--private"]
    assert main([*push, "--revision", "v1"]) == 0
    assert "org/oab-bench: https://hub.invalid/datasets/org/oab-bench/commit/" in capsys.readouterr().out
    assert fake.writes == ["create_repo", "create_branch", "create_commit"]
    create = next(kw for name, _, kw in fake.calls if name == "create_repo")
    assert create == {"repo_type": "dataset", "private": True, "exist_ok": False}
    commit = next(kw for name, _, kw in fake.calls if name == "create_commit")
    assert commit["revision"] == "v1"
    hub = tmp_path / "hub"
    for path, data in fake.files("org/oab-bench", "v1").items():
        (hub / path).parent.mkdir(parents=True, exist_ok=True)
        (hub / path).write_bytes(data)

    card = (hub / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(card.split("---\n")[1])
    names = [c["config_name"] for c in meta["configs"]]
    assert names == ["default", "edition_39", "edition_40", "edition_41"]
    assert meta["license"] == "apache-2.0" and "@inproceedings" in card  # license, how to cite
    assert "41_direito_do_trabalho_questao_3" in card  # the errata
    rows, _ = built_rows
    assert f"`files:oab_bench_v1` at revision `{rows[0].provenance.revision}`" in card  # the source revision
    assert 'load_dataset("org/oab-bench", "edition_41", split="test")' in card

    # the pushed layout, loaded as the Hub serves it (a fresh cache: see publish.py on configs)
    full = datasets.load_dataset(str(hub), split="test", cache_dir=str(tmp_path / "c1"))
    assert [QuestionRow.model_validate(x) for x in full] == rows
    e40 = datasets.load_dataset(str(hub), "edition_40", split="test", cache_dir=str(tmp_path / "c2"))
    assert [QuestionRow.model_validate(x) for x in e40] == [r for r in rows if r.edition == 40]
    assert main(["push", "--dataset", "/nonexistent", "--repo-id", "org/x"]) == 2


def test_dataset_folder_is_world_readable(built_dataset):
    import os

    mask = os.umask(0)
    os.umask(mask)
    assert built_dataset.stat().st_mode & 0o777 == 0o777 & ~mask
    assert built_dataset.stat().st_mode & 0o005 or mask & 0o005  # readable by others under a usual umask
