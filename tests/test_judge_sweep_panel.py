"""`judge-sweep --panel`: the answers every judge grades for the agreement default to the panel's
published ones (judge/panel/, as `judge --panel` reads them); `--answers` instead, or both.
No network: a made-up panel folder, and upstream's files placed in the panel cache."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from oab_bench.judge.panel import upstream
from oab_bench.judge.panel.published import resolve_panel
from oab_bench.scripts.cli import main
from tests.sweep_cases import made_up_answers, spec, sweep


@pytest.fixture
def panel(built_rows, tmp_path):
    """A made-up panel folder: three models' answers (the official answer, half of it, nothing)."""
    return tmp_path / "panel", made_up_answers(built_rows[0], tmp_path / "panel")


def calls(*servers) -> int:
    return sum(s.count for s in servers)


@pytest.mark.slow
def test_the_panel_is_the_material_estimate_and_rerun_call_nothing(
    stub, built_dataset, panel, tmp_path, capsys
):
    folder, _ = panel
    content, full = stub(policy="overlap"), stub(policy="max")
    ref, cands = spec("ref", content), [spec("content", content), spec("max", full)]
    extra = ["--panel", str(folder)]

    rc, out, err = sweep(capsys, built_dataset, [], tmp_path, ref, *cands, extra=[*extra, "--estimate"])
    assert rc == 0, err
    assert calls(content, full) == 0 and not (tmp_path / "out").exists()
    assert [j["calls"] for j in json.loads(out)["judges"]] == [80, 80, 80]  # 50 probes + 3 models x 10
    assert f"answers to agree on: --panel {folder}: {folder.resolve()}" in err

    rc, out, err = sweep(capsys, built_dataset, [], tmp_path, ref, *cands, extra=extra)
    assert rc == 0, err
    report = json.loads(out)
    assert report["recommended"] == cands[0] and calls(content, full) == 240
    assert [j["calls"] for j in report["judges"]] == [80, 80, 80]
    judged = [
        json.loads(x) for x in next((tmp_path / "out").glob("01_*/judgments.jsonl")).read_text().splitlines()
    ]
    assert {r["model"] for r in judged} == {"m-good", "m-half", "m-bad"} and len(judged) == 30

    rc, out, _ = sweep(capsys, built_dataset, [], tmp_path, ref, *cands, extra=extra)
    assert rc == 0 and calls(content, full) == 240 and json.loads(out)["recommended"] == cands[0]


@pytest.mark.slow
def test_answers_and_panel_together_are_graded_together(stub, built_dataset, panel, tmp_path, capsys):
    folder, files = panel
    bad = files[2].rename(tmp_path / "mine.jsonl")  # the panel keeps two models; --answers gives the third
    content = stub(policy="overlap")
    ref, cand = spec("ref", content), spec("content", content)
    rc, out, err = sweep(capsys, built_dataset, [bad], tmp_path, ref, cand, extra=["--panel", str(folder)])
    assert rc == 0, err
    assert content.count == 160 and json.loads(out)["recommended"] == cand  # 2 x (50 probes + 3 x 10)
    assert "answers to agree on: --answers (1 file); --panel" in err
    # the panel's judgments marked with their answers' source, as `judge --panel` marks them
    sources = resolve_panel([str(folder)]).sources
    for judgments in (tmp_path / "out").glob("*/judgments.jsonl"):
        marks = {(r["model"], r.get("panel")) for r in map(json.loads, judgments.read_text().splitlines())}
        assert marks == {("m-good", sources["m-good"]), ("m-half", sources["m-half"]), ("m-bad", None)}
    capsys.readouterr()
    assert main(["leaderboard", str(judgments), "--resamples", "50"]) == 0
    assert "(panel)" in capsys.readouterr().out

    # a model of --answers named as one of the panel's: refused naming both, before any call
    clash = tmp_path / "clash"
    shutil.copy(files[0], tmp_path / "good-again.jsonl")
    rc, _, err = sweep(
        capsys,
        built_dataset,
        [tmp_path / "good-again.jsonl"],
        clash,
        ref,
        cand,
        extra=["--panel", str(folder)],
    )
    assert rc == 2 and "the --answers model 'm-good' has the name of the panel's model 'm-good'" in err
    assert content.count == 160 and not (clash / "out").exists()


def sweep_neither(capsys, dataset, tmp_path, server, extra):
    """A sweep of two judges on one server given neither --answers nor --panel."""
    return sweep(capsys, dataset, [], tmp_path, spec("ref", server), spec("content", server), extra=extra)


@pytest.mark.parametrize("estimate", [False, True])
def test_neither_flag_offline_without_the_panel_fails_at_once(
    stub, built_dataset, tmp_path, capsys, monkeypatch, estimate
):
    monkeypatch.setenv(upstream.CACHE_ENV, str(tmp_path / "empty-panel-cache"))
    monkeypatch.delenv(upstream.URL_ENV, raising=False)
    content = stub(policy="overlap")
    start = time.monotonic()
    rc, out, err = sweep_neither(capsys, built_dataset, tmp_path, content, ["--estimate"] if estimate else [])
    assert rc == 2 and out == "" and time.monotonic() - start < 30
    assert "neither --answers nor --panel was given" in err and "--panel upstream" in err
    assert "HF_HUB_OFFLINE is set (offline)" in err and "or pass --answers FILE" in err
    assert content.count == 0 and not (tmp_path / "out").exists()


def test_neither_flag_reads_upstreams_published_answers_from_the_cache(
    stub, built_dataset, upstream_v1, tmp_path, capsys, monkeypatch
):
    cache = tmp_path / "panel-cache"
    shutil.copytree(
        upstream_v1 / "model_answer",
        cache,
        ignore=lambda _, names: [n for n in names if n not in upstream.FILES],
    )
    monkeypatch.setenv(upstream.CACHE_ENV, str(cache))
    content = stub(policy="overlap")
    rc, out, err = sweep_neither(capsys, built_dataset, tmp_path, content, ["--estimate"])
    assert rc == 0, err
    assert [j["calls"] for j in json.loads(out)["judges"]] == [110, 110]  # 50 probes + 6 models x 10
    assert f"--panel upstream: {upstream.LABEL}" in err and content.count == 0
    assert not (tmp_path / "out").exists()
