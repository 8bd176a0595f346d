"""`oab-bench export` / `push-results` and `hf:` results datasets read back by every reader.

The round trip runs on a real run against the stub server: `oab-bench run` (judge A, one judgment
failed by an injected 400), `oab-bench judge` of the same answers by judge B, and an `oab-bench probe`
folder (judge A); exported, then read back by the leaderboard, agreement, report, judge --answers and
`datasets.load_dataset`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from judge.sharing.layout import ANSWERS_FILE, MARKER, judge_file
from judge.sharing.source import front_matter
from scripts.cli import main
from tests.conftest import SECRET, oab

TASK = "oab_bench:penal"  # 3 whole exams, 15 questions
PROBED = "39_direito_penal"
JUDGE_A, JUDGE_B = "openai/judge-share-a", "openai/judge-share-b"
LABEL_A = f"{JUDGE_A} [oab-pt-v1, structured]"
LABEL_B = f"{JUDGE_B} [oab-pt-v1, structured]"
CONFIG_A, CONFIG_B = "openai-judge-share-a-oab-pt-v1-structured", "openai-judge-share-b-oab-pt-v1-structured"


def cli(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory, built_rows, built_dataset):
    """(folder of everything, the three sources, the export, the victim question, the stub judge A)."""
    from tests.openai_stub import StubServer

    tmp = tmp_path_factory.mktemp("sharing")
    rows, _ = built_rows
    victim = next(r for r in rows if r.area == "penal" and r.edition == 40 and r.number == 2)
    env = {
        **os.environ,
        "OPENAI_API_KEY": SECRET,
        "OAB_JUDGE_API_KEY": SECRET,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    with (
        StubServer(policy="alternate", served=("cand-share",)) as candidate,
        StubServer(policy="alternate", faults=[{"kind": "400", "match": victim.statement[:40]}]) as judge_a,
        StubServer(policy="max") as judge_b,
        pytest.MonkeyPatch.context() as mp,
    ):
        run = tmp / "run"
        proc = oab(
            "run", "--model", "openai/cand-share", "--api-base", candidate.url, "--dataset", built_dataset,
            "--tasks", TASK, "--judge-model", JUDGE_A, "--judge-api-base", judge_a.url,
            "--judge-cache", tmp / "cache", "--answer-cache", tmp / "answers", "--output-dir", run,
            env=env, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 1, proc.stderr[-3000:]  # the failed judgment fails the run
        assert f"1 failed judgments: {victim.question_id} (api_error" in proc.stderr
        mp.setenv("OAB_JUDGE_API_KEY", SECRET)
        judged_b = tmp / "judge_b.jsonl"
        rc = main(
            ["judge", "--dataset", str(built_dataset), "--answers", str(run), "--judge-model", JUDGE_B]
            + ["--api-base", judge_b.url, "--cache", str(tmp / "cache"), "--output", str(judged_b)]
            + ["--no-progress", "--questions", "*_direito_penal"]
        )
        assert rc == 0
        probe = tmp / "probe"
        rc = main(
            ["probe", "--dataset", str(built_dataset), "--questions", PROBED, "--judge-model", JUDGE_A]
            + ["--api-base", judge_a.url, "--cache", str(tmp / "cache"), "--output", str(probe)]
            + ["--no-progress", "--resamples", "200"]
        )
        assert rc == 0
        sources = [str(run), str(judged_b), str(probe)]
        exported = tmp / "exported"
        mp.setenv("OPENAI_API_KEY", SECRET)
        # the run's answers given again: still one per (model, question)
        rc = main(["export", *sources, "--output", str(exported), "--answers", str(run), "--resamples", "300"])
        assert rc == 0
        yield tmp, sources, exported, victim, judge_a


def rows_of(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def test_the_export_holds_every_judgment_and_each_answer_once(shared_run):
    tmp, sources, exported, victim, _ = shared_run
    a = rows_of(exported / judge_file(CONFIG_A))
    b = rows_of(exported / judge_file(CONFIG_B))
    assert len(a) == 15 + 25 and len(b) == 15  # the run and the probe (5 probes x 5 questions); judge B
    assert {r["judge"] for r in a} == {LABEL_A} and {r["judge"] for r in b} == {LABEL_B}
    failed = [r for r in a if r["status"] != "ok"]
    assert [(r["question_id"], r["status"], r["score"]) for r in failed] == [
        (victim.question_id, "api_error", None)
    ]  # a failure, never a zero
    assert "injected 400" in failed[0]["error"]
    answers = rows_of(exported / ANSWERS_FILE)
    keys = [(r["model"], r["question_id"]) for r in answers]
    assert len(keys) == len(set(keys)) == 15 + 25  # the candidate's 15 (given twice), the 25 probes
    assert {m for m, _ in keys} == {"openai/cand-share"} | {f"probe:{k}" for k in PROBE_KINDS}
    # what each record says beyond its score: items with analyses, settings, cost, where it came from
    ok = next(r for r in a if r["status"] == "ok" and r["source_kind"] == "details")
    assert ok["items"] and all(i["analysis"] for i in ok["items"])
    assert json.loads(ok["settings"])["temperature"] == 0.0
    assert ok["source"] == sources[0] and ok["source_file"].startswith("details/")
    judged_b = {r["question_id"]: r for r in rows_of(exported / judge_file(CONFIG_B))}
    for line in map(json.loads, Path(sources[1]).read_text().splitlines()):  # judge B's file, field by field
        row = judged_b[line["question_id"]]
        assert [
            {k: i[k] for k in ("item_id", "score", "max_score", "analysis")} for i in row["items"]
        ] == line["items"]
        assert (row["status"], row["score"], row["cost_usd"], row["usage"]) == (
            line["status"],
            line["score"],
            line["cost_usd"],
            line["usage"],
        )
        assert json.loads(row["settings"]) == line["settings"]
    for path in exported.rglob("*"):
        assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path


PROBE_KINDS = ("reference", "partial", "swapped", "empty", "injection")


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_leaderboard_reads_it_back_to_the_same_bytes(shared_run, built_dataset, capsys, fmt):
    _, sources, exported, _, _ = shared_run
    for extra in ([], ["--dataset", str(built_dataset)]):
        args = ["--format", fmt, "--resamples", "300", *extra]
        rc, original, _ = cli(capsys, "leaderboard", *sources, *args)
        assert rc == 0
        rc, again, _ = cli(capsys, "leaderboard", f"hf:{exported}", *args)
        assert rc == 0 and again == original
        rc, bare, _ = cli(capsys, "leaderboard", exported, *args)  # the folder itself, without hf:
        assert rc == 0 and bare == original


def test_exported_again_from_the_hub_folder_the_same_files(shared_run, capsys):
    """Nothing is lost: what reads back exports to the same bytes, whatever the order of the inputs."""
    tmp, sources, exported, _, _ = shared_run
    again = tmp / "again"
    assert cli(capsys, "export", f"hf:{exported}", "--output", again, "--resamples", "300")[0] == 0
    reordered = tmp / "reordered"
    args = [*reversed(sources), "--answers", sources[0], "--output", reordered, "--resamples", "300"]
    assert cli(capsys, "export", *args)[0] == 0
    files = sorted(p.relative_to(exported) for p in exported.rglob("*") if p.is_file())
    for other in (again, reordered):
        assert sorted(p.relative_to(other) for p in other.rglob("*") if p.is_file()) == files
        for f in files:
            assert (other / f).read_bytes() == (exported / f).read_bytes(), (other, f)


def test_each_config_loads_with_datasets_and_the_card_lists_them(shared_run):
    import datasets

    _, _, exported, _, _ = shared_run
    meta = front_matter((exported / "README.md").read_text(encoding="utf-8"))
    assert meta["oab_bench"]["kind"] == "results" and meta["oab_bench"]["made_by"] == "oab-bench export"
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert set(configs) == {"default", "answers", CONFIG_A, CONFIG_B}
    assert meta["license"] == "apache-2.0"
    sizes = {"default": 55, "answers": 40, CONFIG_A: 40, CONFIG_B: 15}
    for name, n in sizes.items():
        with tempfile.TemporaryDirectory() as cache:  # a local folder with configs is cached by its name
            ds = datasets.load_dataset(str(exported), name, split="train", cache_dir=cache)
        assert len(ds) == n, name
    text = (exported / "README.md").read_text(encoding="utf-8")
    assert yaml.safe_load(text.split("---\n")[1]) == meta  # plain YAML between the fences
    assert f"### Judge: {LABEL_A}" in text and "maritaca-ai/oab-bench (Apache-2.0)" in text
    assert '"temperature": 0.0' in text  # the judge settings, as recorded


def test_agreement_and_report_read_it(shared_run, capsys, tmp_path):
    _, sources, exported, victim, _ = shared_run
    rc, out, err = cli(capsys, "agreement", f"hf:{exported}", "--format", "json", "--resamples", "100")
    assert rc == 0, err
    report = json.loads(out)
    assert [s["judge"] for s in report["sources"]] == [LABEL_A, LABEL_B]  # its two judges, compared
    assert report["n_pairs"] == 14 and report["item"]["n"] > 14  # the failed one is left out
    rc, out, err = cli(
        capsys, "agreement", sources[1], f"hf:{exported}#{CONFIG_B}", "--format", "json", "--resamples", "100"
    )
    assert rc == 0, err
    assert json.loads(out)["item"]["exact"]["value"] == 1.0  # judge B against itself, item by item

    html = tmp_path / "report.html"
    rc, _, err = cli(capsys, "report", f"hf:{exported}", "--output", html, "--resamples", "100")
    assert rc == 0, err
    page = html.read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="data-judgments">(.*?)</script>', page, re.DOTALL).group(1))
    failed = [j for j in data if j["status"] != "ok"]
    assert len(failed) == 1 and failed[0]["q"] == victim.question_id and "injected 400" in failed[0]["error"]
    answers = json.loads(re.search(r'id="data-answers">(.*?)</script>', page, re.DOTALL).group(1))
    assert len(answers) == 40


def test_judge_reads_its_answers_back(shared_run, built_dataset, capsys, tmp_path, monkeypatch):
    """The same answers: a judge that graded the run's answers finds every one in its cache."""
    tmp, _, exported, _, judge_a = shared_run
    monkeypatch.setenv("OAB_JUDGE_API_KEY", SECRET)
    cache = tmp_path / "cache"
    shutil.copytree(tmp / "cache", cache)
    before = judge_a.count
    out = tmp_path / "again.jsonl"
    args = ["judge", "--dataset", built_dataset, "--answers", f"hf:{exported}", "--judge-model", JUDGE_A]
    args += ["--api-base", judge_a.url, "--cache", cache, "--output", out, "--no-progress"]
    args += ["--questions", f"{PROBED}*"]
    rc, _, err = cli(capsys, *args)
    assert rc == 0, err
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(got) == 6 * 5 and {j["status"] for j in got} == {"ok"}  # the candidate and 5 probes
    assert judge_a.count == before  # every judgment from the cache: the answers are the same texts
