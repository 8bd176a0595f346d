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

from oab_bench.hub_guard import card_data as front_matter
from oab_bench.judge.results_layout import ANSWERS_FILE, judge_file
from oab_bench.scripts.cli import main
from tests.conftest import SECRET, oab
from tests.fake_hub import FakeHub

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
        args = ["judge", "--dataset", built_dataset, "--answers", run, "--judge-model", JUDGE_B]
        args += ["--api-base", judge_b.url, "--cache", tmp / "cache", "--output", judged_b]
        rc = main([*map(str, args), "--no-progress", "--questions", "*_direito_penal"])
        assert rc == 0
        probe = tmp / "probe"
        args = ["probe", "--dataset", built_dataset, "--questions", PROBED, "--judge-model", JUDGE_A]
        args += ["--api-base", judge_a.url, "--cache", tmp / "cache", "--output", probe]
        rc = main([*map(str, args), "--no-progress", "--resamples", "200"])
        assert rc == 0
        sources = [str(run), str(judged_b), str(probe)]
        exported = tmp / "exported"
        mp.setenv("OPENAI_API_KEY", SECRET)
        # the run's answers given again: still one per (model, question)
        rc = main(
            ["export", *sources, "--output", str(exported), "--answers", str(run), "--resamples", "300"]
        )
        assert rc == 0
        yield tmp, sources, exported, victim, judge_a


def rows_of(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


@pytest.mark.e2e  # the run in shared_run
def test_the_export_holds_every_judgment_and_each_answer_once(shared_run):
    _, sources, exported, victim, _ = shared_run
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


@pytest.mark.e2e  # the run in shared_run
def test_a_run_made_twice_into_one_folder_is_exported_once(shared_run, capsys):
    """Two details sets of the same judgments in one run folder: each judgment once, saying so."""
    tmp, sources, _, _, _ = shared_run
    twice = tmp / "run-twice"
    shutil.copytree(sources[0], twice)
    (first,) = {p.parent for p in (twice / "details").rglob("details_*.parquet")}
    shutil.copytree(first, first.with_name(first.name + "-again"))
    rc, _, err = cli(capsys, "export", twice, "--output", tmp / "twice-exported", "--resamples", "100")
    assert rc == 0, err
    assert "15 judgments (1 judge), 15 answers" in err
    assert "note: 15 judgments are copies of another" in err
    assert len(rows_of(tmp / "twice-exported" / judge_file(CONFIG_A))) == 15


@pytest.mark.e2e  # the run in shared_run
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


@pytest.mark.e2e  # the run in shared_run
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


@pytest.mark.e2e  # the run in shared_run
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


@pytest.mark.e2e  # the run in shared_run
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
    assert (
        len(failed) == 1
        and failed[0]["question_id"] == victim.question_id
        and "injected 400" in failed[0]["error"]
    )
    answers = json.loads(re.search(r'id="data-answers">(.*?)</script>', page, re.DOTALL).group(1))
    assert len(answers) == 40


@pytest.mark.e2e  # the run in shared_run
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


# --- made-up judgments: the neighbours (no run needed) ---------------------------------------------

EXAM = "90_direito_civil"


def made_up_judgments(
    path: Path, *, error: str = "injected: the judge server answered 500", panel: str | None = None
) -> Path:
    """Two judges grade one made-up exam of two models; model-b's questão 2 failed under judge-x.
    `panel`: model-b's answers are published ones judged beside model-a (`--panel`), from there."""
    lines = []
    for judge, model, peca, questao in (
        ("openai/judge-x", "model-a", 4.0, 1.0),
        ("openai/judge-x", "model-b", 3.0, 0.5),
        ("openai/judge-y", "model-a", 2.0, 1.25),
    ):
        for n in range(5):
            qid = f"{EXAM}_peca_praticoprofissional" if n == 0 else f"{EXAM}_questao_{n}"
            failed = model == "model-b" and n == 2
            score = None if failed else (peca if n == 0 else questao)
            lines.append(
                {
                    "question_id": qid,
                    "exam_id": EXAM,
                    "model": model,
                    "judge_model": judge,
                    "prompt_version": "oab-pt-v1",
                    "mode": "structured",
                    "status": "api_error" if failed else "ok",
                    "score": score,
                    "max_score": 5.0 if n == 0 else 1.25,
                    "items": []
                    if failed
                    else [{"item_id": "X1", "score": score, "max_score": 5.0, "analysis": "ok"}],
                    "usage": {
                        "prompt_tokens": 100,
                        "cached_tokens": 0,
                        "completion_tokens": 20,
                        "reasoning_tokens": 0,
                    },
                    "cost_usd": 0.0125,
                    "judge_text": "{}",
                    "error": error if failed else None,
                    "settings": {"max_tokens": 16000, "temperature": 0.0, "reasoning_effort": None},
                }
            )
            if panel and model == "model-b":
                lines[-1]["panel"] = panel
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    return path


def answers_file(path: Path, model: str, text: str) -> Path:
    line = {"question_id": f"{EXAM}_questao_1", "model_id": model, "choices": [{"index": 0, "turns": [text]}]}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return path


def test_upstream_judgments_round_trip(upstream_v1, tmp_path, capsys):
    """Upstream's turns are kept with their texts and summed again on the way back."""
    sample = upstream_v1 / "model_judgment" / "o3-2025-04-16_single.sample.jsonl"
    ours = made_up_judgments(tmp_path / "j.jsonl")
    out = tmp_path / "exported"
    assert cli(capsys, "export", sample, ours, "--output", out, "--resamples", "200")[0] == 0
    for fmt in ("markdown", "json"):
        _, original, _ = cli(capsys, "leaderboard", sample, ours, "--format", fmt, "--resamples", "200")
        rc, again, err = cli(capsys, "leaderboard", f"hf:{out}", "--format", fmt, "--resamples", "200")
        assert rc == 0 and again == original, err
    (config,) = [p.name for p in (out / "judgments").iterdir() if p.name.startswith("o3")]
    rows = rows_of(out / judge_file(config))
    assert {r["source_kind"] for r in rows} == {"upstream"} and len(rows) == 20
    two_turns = next(r for r in rows if "questao" in r["question_id"])
    assert len(two_turns["turn_scores"]) == 2 and all(two_turns["turn_texts"])
    html = tmp_path / "report.html"
    assert cli(capsys, "report", f"hf:{out}", "--output", html, "--resamples", "100")[0] == 0
    assert two_turns["turn_texts"][0][:60] in html.read_text(encoding="utf-8").replace("\\n", "\n")


def test_a_panel_mark_and_what_an_answer_cost_survive_the_round_trip(tmp_path, capsys):
    """`--panel`'s mark on a judgment and a newer answer file's generation usage are kept."""
    from oab_bench.judge.answers import load_answers
    from oab_bench.judge.audit.collect import read_inputs

    source = made_up_judgments(tmp_path / "j.jsonl", panel="/published/model_answer")
    usage = {
        "prompt_tokens": 900,
        "completion_tokens": 1200,
        "completion_tokens_details": {"reasoning_tokens": 300},
    }
    turn = {"content": "a published answer", "usage": {**usage, "cost": 0.0125}}
    line = {
        "question_id": f"{EXAM}_questao_1",
        "model_id": "model-b",
        "choices": [{"index": 0, "turns": [turn]}],
    }
    answers = tmp_path / "published.jsonl"
    answers.write_text(json.dumps(line) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert cli(capsys, "export", source, "--answers", answers, "--output", out, "--resamples", "100")[0] == 0
    boards = {}
    for fmt in ("markdown", "json"):
        _, original, _ = cli(capsys, "leaderboard", source, "--format", fmt, "--resamples", "100")
        rc, boards[fmt], err = cli(capsys, "leaderboard", f"hf:{out}", "--format", fmt, "--resamples", "100")
        assert rc == 0 and boards[fmt] == original, err
    assert "(panel) published answers (/published/model_answer)" in boards["markdown"]
    rows = rows_of(out / judge_file("openai-judge-x-oab-pt-v1-structured"))
    assert {(r["model"], r["panel"]) for r in rows} == {
        ("model-a", None),
        ("model-b", "/published/model_answer"),
    }
    (back,) = load_answers(f"hf:{out}")
    assert back.usage.cost == 0.0125 and back.usage.reasoning_tokens == 300
    shown = read_inputs([Path(f"hf:{out}")]).generation  # what report.html shows beside the answer
    assert shown[("model-b", f"{EXAM}_questao_1")]["cost"] == 0.0125


def test_judge_takes_a_shared_datasets_answers_as_its_panel(
    stub, built_dataset, upstream_v1, tmp_path, capsys, monkeypatch
):
    """`--panel hf:...`: the answers an export holds, judged beside the candidate, marked with the spec."""
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "sk-test")
    folder = upstream_v1 / "model_answer"
    out = tmp_path / "shared"
    args = ["export", made_up_judgments(tmp_path / "j.jsonl"), "--answers", folder / "o3-2025-04-16.jsonl"]
    assert cli(capsys, *args, "--output", out, "--resamples", "100")[0] == 0
    candidate = tmp_path / "cand.jsonl"
    lines = [
        json.loads(x) for x in (folder / "gpt-4o-2024-08-06.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    candidate.write_text(
        "".join(json.dumps({**d, "model_id": "cand"}) + "\n" for d in lines), encoding="utf-8"
    )
    server = stub(policy="max")
    judged = tmp_path / "judged.jsonl"
    args = ["judge", "--dataset", built_dataset, "--answers", candidate, "--judge-model", "openai/judge-p"]
    args += ["--api-base", server.url, "--cache", tmp_path / "jc", "--output", judged, "--no-progress"]
    rc, _, err = cli(capsys, *args, "--questions", "39_direito_penal_*", "--panel", f"hf:{out}")
    assert rc == 0, err
    got = [json.loads(x) for x in judged.read_text(encoding="utf-8").splitlines()]
    assert server.count == 10 and len(got) == 10  # 5 questions x (the candidate + the shared model)
    assert {(r["model"], r.get("panel")) for r in got} == {("cand", None), ("o3-2025-04-16", f"hf:{out}")}


def test_export_writes_only_a_folder_it_wrote(tmp_path, capsys):
    source = made_up_judgments(tmp_path / "j.jsonl")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    rc, _, err = cli(capsys, "export", source, "--output", foreign)
    assert rc == 2 and "not a folder written by `oab-bench export`" in err and "notes.txt" in err
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]  # untouched

    out = tmp_path / "out"
    out.mkdir()  # empty: filled
    assert cli(capsys, "export", source, "--output", out, "--resamples", "100")[0] == 0
    assert cli(capsys, "export", source, "--output", out, "--resamples", "100")[0] == 0  # ours: replaced
    rc, _, err = cli(capsys, "export", f"hf:{out}", "--output", out)
    assert rc == 2 and "would overwrite the input" in err  # the dataset it reads
    rc, _, err = cli(capsys, "export", source, "--output", source)
    assert rc == 2 and "would overwrite the input" in err
    (out / "README.md").write_text("edited by hand\n")
    rc, _, err = cli(capsys, "export", source, "--output", out)
    assert rc == 2 and "README.md (changed since the export)" in err


def test_secrets_never_leave(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    source = made_up_judgments(tmp_path / "j.jsonl", error=f"401: Incorrect API key provided: {SECRET}")
    answers = answers_file(tmp_path / "a.jsonl", "model-a", f"my key is {SECRET}; Bearer abc.def.ghi")
    out = tmp_path / "out"
    assert cli(capsys, "export", source, "--answers", answers, "--output", out, "--resamples", "100")[0] == 0
    for path in out.rglob("*"):
        assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path
    (row,) = [r for r in rows_of(out / judge_file("openai-judge-x-oab-pt-v1-structured")) if r["error"]]
    assert row["error"] == "401: Incorrect API key provided: ***"
    assert rows_of(out / ANSWERS_FILE)[0]["turns"] == ["my key is ***; Bearer ***"]


def test_a_judgment_recorded_twice_is_exported_once(tmp_path, capsys):
    """The same judgments again, as a rerun served by the judgment cache records them (cached, no cost)."""
    source = made_up_judgments(tmp_path / "j.jsonl")
    lines = [json.loads(x) | {"cached": True, "cost_usd": 0.0} for x in source.read_text().splitlines()]
    again = tmp_path / "again.jsonl"
    again.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    out = tmp_path / "out"
    rc, _, err = cli(capsys, "export", again, source, "--output", out, "--resamples", "100")
    assert rc == 0 and "15 judgments (2 judges), 0 answers" in err and "note: 15 judgments are copies" in err
    rows = rows_of(out / judge_file("openai-judge-x-oab-pt-v1-structured"))
    assert len(rows) == 10 and {(r["source"], r["cached"]) for r in rows} == {(str(source), None)}


def test_items_recorded_without_an_analysis_read_back(tmp_path, capsys):
    """Item scores a record gives no `analysis` (written by hand, say) read back as they were."""
    from tests.helpers import source_a

    source, out = source_a(tmp_path), tmp_path / "out"
    rc, _, err = cli(capsys, "export", source, "--output", out, "--resamples", "50")
    assert rc == 0, err
    rc, text, err = cli(capsys, "agreement", source, f"hf:{out}", "--format", "json", "--resamples", "50")
    assert rc == 0, err
    assert json.loads(text)["item"]["exact"]["value"] == 1.0 and json.loads(text)["left_out"] == 0


def test_two_answers_to_one_question_stop_the_export(tmp_path, capsys):
    source = made_up_judgments(tmp_path / "j.jsonl")
    a = answers_file(tmp_path / "a.jsonl", "model-a", "one answer")
    b = answers_file(tmp_path / "b.jsonl", "model-a", "another answer")
    out = tmp_path / "out"
    rc, _, err = cli(capsys, "export", source, "--answers", a, b, "--output", out)
    assert rc == 2 and f"{a}:1" in err and f"{b}:1" in err and not out.exists()


def test_a_folder_that_merely_looks_like_ours_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli(capsys, "export", made_up_judgments(tmp_path / "j.jsonl"), "--output", out)[0] == 0
    card = (out / "README.md").read_text(encoding="utf-8")
    for kind, why in (
        ("kind: results", "not an oab-bench results dataset"),  # the marker removed
        ("kind: questions", "not an oab-bench results dataset"),  # ours, of another kind
        ("format: 99", "layout format 99"),  # a newer layout
    ):
        text = (
            card.replace("kind: results", kind)
            if kind != "kind: results"
            else card.replace("oab_bench:", "x:")
        )
        if kind.startswith("format"):
            text = card.replace("format: 1", kind)
        (out / "README.md").write_text(text, encoding="utf-8")
        rc, _, err = cli(capsys, "leaderboard", f"hf:{out}")
        assert rc == 2 and why in err, (kind, err)
    (out / "README.md").write_text(card, encoding="utf-8")
    rc, _, err = cli(capsys, "leaderboard", f"hf:{out}#no-such-judge")
    assert (
        rc == 2 and "no judge config 'no-such-judge'" in err and "openai-judge-x-oab-pt-v1-structured" in err
    )
    rc, _, err = cli(capsys, "leaderboard", f"hf:{tmp_path / 'missing'}")
    assert rc == 2 and "folder not found" in err
    rc, _, err = cli(capsys, "leaderboard", "hf:not-a-repo-id")
    assert rc == 2 and "expected hf:OWNER/NAME" in err


@pytest.mark.parametrize(
    ("column", "value", "field", "why"),
    [
        ("score", 9.0, "score", "outside 0..5.0"),  # above the peça's value: the leaderboard's own check
        ("status", None, "status", "None is not a string"),  # the layout's types
        ("judge", "openai/someone-else", "judge", "its judge_model, prompt_version, mode and settings make"),
        ("settings", "{not json", "settings", "Expecting property name"),
    ],
)
def test_a_bad_row_names_file_row_and_field(tmp_path, capsys, column, value, field, why):
    import pyarrow as pa

    out = tmp_path / "out"
    assert cli(capsys, "export", made_up_judgments(tmp_path / "j.jsonl"), "--output", out)[0] == 0
    path = out / judge_file("openai-judge-x-oab-pt-v1-structured")
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0][column] = value  # row 1: model-a's peça
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    rc, _, err = cli(capsys, "leaderboard", f"hf:{out}")
    label = f"hf:{out}:judgments/openai-judge-x-oab-pt-v1-structured/train-00000-of-00001.parquet"
    assert rc == 2 and f"{label}:1: field '{field}'" in err and why in err, err


def test_a_hub_repo_is_read_through_the_hub_cache(tmp_path, capsys, monkeypatch):
    import huggingface_hub

    from oab_bench.judge import results_layout as source

    out = tmp_path / "out"
    assert cli(capsys, "export", made_up_judgments(tmp_path / "j.jsonl"), "--output", out)[0] == 0
    source._download.cache_clear()
    asked = []

    def snapshot_download(repo_id, *, repo_type, revision, allow_patterns):
        asked.append((repo_id, repo_type, revision))
        return str(out)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    _, original, _ = cli(capsys, "leaderboard", f"hf:{out}", "--format", "json")
    rc, got, err = cli(capsys, "leaderboard", "hf:someone/results@v1", "--format", "json")
    assert rc == 0 and got == original, err
    assert asked == [("someone/results", "dataset", "v1")]  # once: the Hub cache serves the rest
    source._download.cache_clear()
    monkeypatch.undo()
    rc, _, err = cli(capsys, "leaderboard", "hf:nobody-h28/nothing-here")  # offline, not cached
    assert rc == 2 and "hf:nobody-h28/nothing-here: cannot read the Hub dataset" in err


def test_a_probe_folder_reads_in_the_report_with_its_answers(tmp_path, capsys):
    """The report reads what the leaderboard reads: a probe folder too, with the answers it carries."""
    probe = tmp_path / "probe"
    (probe / "answers").mkdir(parents=True)
    made_up_judgments(probe / "judgments.jsonl")
    (probe / "report.json").write_text("{}")
    answers_file(probe / "answers" / "probe_reference.jsonl", "model-a", "Resposta de referência.")
    html = tmp_path / "report.html"
    rc, _, err = cli(capsys, "report", probe, "--output", html, "--resamples", "100")
    assert rc == 0, err
    assert "Resposta de referência." in html.read_text(encoding="utf-8")


# --- push-results against a stand-in for the Hub ---------------------------------------------------


@pytest.fixture
def hub(monkeypatch):
    """A stand-in Hub (tests/fake_hub.py) behind HfApi, and a token huggingface_hub finds (or none)."""
    import huggingface_hub

    def install(token: str | None = "hf_test_token") -> FakeHub:
        fake = FakeHub()
        monkeypatch.setattr(huggingface_hub, "HfApi", lambda *a, **k: fake)
        monkeypatch.setattr(huggingface_hub, "get_token", lambda: token)
        return fake

    return install


def push(capsys, tmp_path, repo_id="me/oab-results", *extra):
    source = made_up_judgments(tmp_path / "j.jsonl")
    return cli(capsys, "push-results", source, "--repo-id", repo_id, "--resamples", "100", *extra)


def test_push_results_uploads_exactly_what_the_export_wrote(hub, tmp_path, capsys):
    fake = hub()
    rc, out, err = push(capsys, tmp_path, "me/oab-results", "--private")
    assert rc == 0, err
    assert "pushed results to me/oab-results: https://hub.invalid/datasets/me/oab-results/commit/" in out
    assert fake.writes == ["create_repo", "create_commit"]
    configs = ["openai-judge-x-oab-pt-v1-structured", "openai-judge-y-oab-pt-v1-structured"]
    files = fake.files("me/oab-results")
    assert sorted(files) == [".gitattributes", "README.md", *(judge_file(c) for c in configs)]  # no marker
    card = front_matter(files["README.md"].decode())
    assert card["oab_bench"] == {**card["oab_bench"], "kind": "results", "made_by": "oab-bench push-results"}
    assert card["oab_bench"]["format"] == 1  # the layout's format survives the Hub guard's marker
    assert 'load_dataset("me/oab-results"' in files["README.md"].decode()

    # a judge no longer exported goes; pushed again, the repo is ours (its card says so): one commit
    fake.seed("me/oab-results", {**files, judge_file("openai-gone-oab-pt-v1-structured"): b"old"})
    fake.calls.clear()
    rc, _, err = push(capsys, tmp_path, "me/oab-results")
    assert rc == 0, err
    assert fake.writes == ["create_commit"]
    assert judge_file("openai-gone-oab-pt-v1-structured") not in fake.files("me/oab-results")


@pytest.mark.parametrize(
    ("files", "why"),
    [
        (
            {"README.md": "---\nlicense: mit\n---\n# someone's data\n"},
            "its README.md carries no oab-bench marker",
        ),
        ({"data.csv": "a,b\n"}, "it has no README.md, so no oab-bench marker"),
        (
            {"README.md": "---\noab_bench: {made_by: oab-bench push, kind: dataset}\n---\n"},
            "its card says `oab-bench push` made it (kind: dataset)",
        ),
    ],
)
def test_push_results_refuses_a_repo_that_is_not_its_own(hub, tmp_path, capsys, files, why):
    fake = hub()
    fake.seed("me/oab-results", files)
    rc, _, err = push(capsys, tmp_path)
    assert rc == 2 and why in err and "refusing to write to it" in err, err
    assert fake.writes == []  # refused before any write


def test_push_results_dry_run_prints_the_plan_and_writes_nothing(hub, tmp_path, capsys):
    fake = hub()
    rc, out, err = push(capsys, tmp_path, "me/oab-results", "--dry-run")
    assert rc == 0, err
    assert "me/oab-results does not exist: would create it (public)" in out
    assert f"  upload  {judge_file('openai-judge-x-oab-pt-v1-structured')} (" in out
    assert "  upload  README.md (" in out and "dry run: nothing was written" in out
    assert "pushed" not in out and fake.writes == [] and "me/oab-results" not in fake.repos
    fake.seed("me/oab-results", {"README.md": "---\nlicense: mit\n---\n", "judgments/x.parquet": "theirs"})
    rc, out, err = push(capsys, tmp_path, "me/oab-results", "--dry-run")
    assert rc == 2 and "refused, not written" in out and "  delete  judgments/x.parquet" in out
    assert "refusing to write to it" in err and fake.writes == []
    rc, _, err = push(capsys, tmp_path, "me/oab-results", "--replace-foreign", "me/oab-results")
    assert rc == 0 and "--replace-foreign me/oab-results: writing to me/oab-results although" in err
    assert fake.writes == ["create_commit"] and "judgments/x.parquet" not in fake.files("me/oab-results")


def test_push_results_without_a_token_or_with_a_bad_repo_id(hub, tmp_path, capsys):
    fake = hub(token=None)
    rc, _, err = push(capsys, tmp_path)
    assert rc == 2 and "no Hugging Face token: set HF_TOKEN or run `hf auth login`" in err
    fake = hub()
    for bad in ("datasets/me/x", "me", "me/x/y", "https://huggingface.co/me/x"):
        rc, _, err = push(capsys, tmp_path, bad)
        assert rc == 2 and f"--repo-id {bad!r}: expected OWNER/NAME" in err
    assert fake.calls == []


@pytest.mark.parametrize("token", ["", "  \n"])
def test_push_results_with_an_empty_token_variable_says_none_was_found(tmp_path, token):
    """An empty HF_TOKEN and no login: huggingface_hub's own lookup, in a child process, says none."""
    source = made_up_judgments(tmp_path / "j.jsonl")
    env = {**os.environ, "HF_TOKEN": token, "HF_HOME": str(tmp_path / "hf-home")}
    env.pop("HUGGING_FACE_HUB_TOKEN", None)
    proc = oab("push-results", source, "--repo-id", "me/oab-results", env=env, timeout=120)
    assert proc.returncode == 2 and "no Hugging Face token" in proc.stderr, proc.stderr
