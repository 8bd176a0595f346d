"""`oab-bench judge --panel`: upstream's six published answer files judged beside a candidate by
the same judge, marked in every output, and paid for once."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from oab_bench.judge.answers import load_answers
from oab_bench.judge.grading.jury import make_judge
from oab_bench.judge.panel.judging import charge
from oab_bench.judge.settings import JudgeSettings
from tests.conftest import oab
from tests.helpers import clean_env

EXAM = "39_direito_penal"  # one exam: 5 questions, 35 judgments with the panel
PANEL_MODELS = {
    "Qwen2.5-72B-Instruct-deepinfra",
    "claude-3-5-sonnet-20240620",
    "gpt-4o-2024-08-06",
    "o3-2025-04-16",
    "sabia-3-2024-12-11",
    "sabia-3.1-2025-05-08",
}


def candidate_file(path: Path, source: Path, name: str, suffix: str = " (revisto)") -> Path:
    """A candidate made from a published file: the same questions, texts of its own, its own name."""
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        d["model_id"] = name
        d["choices"][0]["turns"] = [t + suffix for t in d["choices"][0]["turns"]]
        lines.append(json.dumps(d, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def newer_release(path: Path, source: Path, name: str) -> Path:
    """A published file rewritten in the newer release's shape: each turn {content, usage}."""
    lines = []
    for n, line in enumerate(source.read_text(encoding="utf-8").splitlines()):
        d = json.loads(line)
        d["model_id"] = name
        d["choices"][0]["turns"] = [
            {
                "content": t,
                "usage": {
                    "prompt_tokens": 1000,
                    "completion_tokens": 2000 + n,
                    "total_tokens": 3000 + n,
                    "completion_tokens_details": {"reasoning_tokens": 500},
                    "cost": 0.01,
                    "is_byok": False,
                },
            }
            for t in d["choices"][0]["turns"]
        ]
        lines.append(json.dumps(d, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def judge_args(dataset, answers, server, tmp_path, out="out.jsonl", *extra) -> list:
    args = ["judge", "--dataset", dataset, "--answers", *answers, "--judge-model", "openai/judge-panel"]
    args += [
        "--api-base",
        server.url,
        "--cache",
        tmp_path / "jc",
        "--output",
        tmp_path / out,
        "--no-progress",
    ]
    return [*args, "--questions", f"{EXAM}_*", *extra]


def env():
    return clean_env(OAB_JUDGE_API_KEY="sk-test")


def records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_the_newer_release_files_are_read_with_their_usage(tmp_path, upstream_v1):
    path = newer_release(tmp_path / "new.jsonl", upstream_v1 / "model_answer" / "o3-2025-04-16.jsonl", "new")
    old = {a.question_id: a for a in load_answers(upstream_v1 / "model_answer" / "o3-2025-04-16.jsonl")}
    got = load_answers(path)
    assert len(got) == 105 and all(a.turns == old[a.question_id].turns for a in got)
    two = next(a for a in got if len(a.turns) == 2)  # a questão's two turns: their usage added
    assert two.usage.cost == pytest.approx(0.02) and two.usage.reasoning_tokens == 1000
    assert all(a.usage is None for a in old.values())


def test_judge_with_a_panel_marks_it_ranks_it_and_pays_for_it_once(
    stub, built_dataset, tmp_path, upstream_v1
):
    server = stub(policy="overlap")
    folder = upstream_v1 / "model_answer"
    first = candidate_file(tmp_path / "cand.jsonl", folder / "o3-2025-04-16.jsonl", "candidate-a")
    proc = oab(*judge_args(built_dataset, [first], server, tmp_path, "a.jsonl", "--panel", folder), env=env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert server.count == 35  # 5 questions x (the candidate + 6 published models)
    got = records(tmp_path / "a.jsonl")
    source = str(folder.resolve())
    assert [r.get("panel") for r in got[:5]] == [None] * 5 and {r["model"] for r in got[:5]} == {
        "candidate-a"
    }
    assert {r["model"] for r in got[5:]} == PANEL_MODELS and {r["panel"] for r in got[5:]} == {source}
    # the panel's answers to the 100 other questions are counted, not judged
    assert "panel: 600 answers to 100 questions that are not among the 5 judged here" in proc.stderr

    board = oab("leaderboard", tmp_path / "a.jsonl", "--format", "json", "--resamples", "200")
    rows = json.loads(board.stdout)["rows"]
    assert len(rows) == 7 and sum(r["panel"] for r in rows) == 6
    assert all(r["panel_source"] == source for r in rows if r["panel"])
    assert next(r for r in rows if not r["panel"])["model"] == "candidate-a"
    markdown = oab("leaderboard", tmp_path / "a.jsonl", "--resamples", "200", "--by", "area").stdout
    assert markdown.count("(panel) |") == 12 and f"(panel) published answers ({source})" in markdown
    table = list(
        csv.DictReader(io.StringIO(oab("leaderboard", tmp_path / "a.jsonl", "--format", "csv").stdout))
    )
    assert sorted(r["panel"] for r in table) == ["False"] + ["True"] * 6

    # another candidate, the same judge: the panel is in the cache, only the candidate is judged
    second = candidate_file(tmp_path / "cand-b.jsonl", folder / "gpt-4o-2024-08-06.jsonl", "candidate-b")
    est = oab(
        *judge_args(built_dataset, [second], server, tmp_path, "b.jsonl", "--panel", folder, "--estimate"),
        "--format",
        "json",
        env=env(),
    )
    doc = json.loads(est.stdout)
    assert (
        doc["total"]["calls"] == 5
        and doc["panel"]["total"]["calls"] == 0
        and doc["panel"]["source"] == source
    )
    assert doc["total_with_panel"]["calls"] == 5 and server.count == 35  # --estimate calls nothing
    proc = oab(
        *judge_args(built_dataset, [second], server, tmp_path, "b.jsonl", "--panel", folder), env=env()
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert server.count == 40 and "35 judgments (30 from cache)" in proc.stderr


def test_estimate_prints_the_panel_apart_and_calls_nothing(stub, built_dataset, tmp_path, upstream_v1):
    server = stub()
    folder = upstream_v1 / "model_answer"
    cand = candidate_file(tmp_path / "cand.jsonl", folder / "o3-2025-04-16.jsonl", "cand")
    proc = oab(
        *judge_args(built_dataset, [cand], server, tmp_path, "o.jsonl", "--panel", folder, "--estimate")
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert server.count == 0 and not (tmp_path / "o.jsonl").exists()
    assert "panel (6 models, published answers:" in out and "candidate + panel: 35 calls" in out
    before, after = out.split("panel (6 models", 1)
    assert "cand " in before and "o3-2025-04-16" not in before and "o3-2025-04-16" in after


def in_process(args: list, capsys) -> tuple[int, str]:
    """`oab-bench ARGS` in this process (no start-up cost): exit code and stderr."""
    from oab_bench.scripts.cli import main

    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


def test_a_candidate_named_as_a_panel_model_is_an_error_naming_both(
    stub, built_dataset, tmp_path, upstream_v1, monkeypatch, capsys
):
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "sk-test")
    server = stub()
    folder = upstream_v1 / "model_answer"
    for name in ("o3-2025-04-16", "O3-2025-04-16"):  # the same name, or one only its case tells apart
        cand = candidate_file(tmp_path / "cand.jsonl", folder / "gpt-4o-2024-08-06.jsonl", name)
        code, err = in_process(
            judge_args(built_dataset, [cand], server, tmp_path, "o.jsonl", "--panel", folder), capsys
        )
        assert code == 2 and server.count == 0 and not (tmp_path / "o.jsonl").exists()
        assert f"the candidate '{name}' has the name of the panel's model 'o3-2025-04-16'" in err


def test_a_panel_of_newer_release_files_and_extra_questions(stub, built_dataset, tmp_path, upstream_v1):
    """A file in the newer shape is a panel too; its answers to questions the dataset lacks are
    counted, not judged; the report shows what generating each answer cost."""
    server = stub()
    folder = upstream_v1 / "model_answer"
    (tmp_path / "panel").mkdir()
    new = newer_release(
        tmp_path / "panel" / "Qwen3.5-35B-A3B.jsonl", folder / "sabia-3-2024-12-11.jsonl", "Qwen3.5"
    )
    extra = json.loads(new.read_text(encoding="utf-8").splitlines()[0])
    extra["question_id"] = "45_direito_penal_questao_1"  # an edition this dataset does not have
    new.write_text(new.read_text(encoding="utf-8") + json.dumps(extra) + "\n", encoding="utf-8")
    cand = candidate_file(tmp_path / "cand.jsonl", folder / "o3-2025-04-16.jsonl", "cand")
    proc = oab(*judge_args(built_dataset, [cand], server, tmp_path, "o.jsonl", "--panel", new), env=env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert server.count == 10 and "panel: 101 answers to 101 questions" in proc.stderr
    assert {r["model"] for r in records(tmp_path / "o.jsonl")} == {"cand", "Qwen3.5"}

    html = tmp_path / "report.html"
    rep = oab(
        "report", tmp_path / "o.jsonl", "--answers", new, cand, "--output", html, "--dataset", built_dataset
    )
    assert rep.returncode == 0, rep.stderr
    text = html.read_text(encoding="utf-8")
    generation = json.loads(text.split('id="data-generation">', 1)[1].split("</script>", 1)[0])
    assert len(generation) == 5 and all(k.startswith("Qwen3.5\t") for k in generation)
    assert "generating its answers cost $0.0900" in text  # a peça's one turn, four questões' two
    assert text.count('class="badge panel"') >= 2 and str(new.resolve()) in text


def test_the_same_panel_file_twice_or_in_a_folder_given_too_is_read_once(tmp_path, upstream_v1):
    from oab_bench.judge.panel.published import resolve_panel

    folder = upstream_v1 / "model_answer"
    panel = resolve_panel([str(folder), str(folder / "o3-2025-04-16.jsonl"), str(folder)])
    assert len(panel.answers) == 630 and len(panel.files) == 6


def test_a_panel_folder_with_no_answer_files_is_refused(tmp_path):
    from oab_bench.dataset_builder.errors import SourceError
    from oab_bench.judge.panel.published import resolve_panel

    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="no answer files in this folder"):
        resolve_panel([str(tmp_path / "empty")])
    with pytest.raises(SourceError, match="not found"):
        resolve_panel([str(tmp_path / "nowhere")])


def test_a_cost_cap_counts_what_was_spent_before_the_panel_for_one_judge_a_jury_and_repeats():
    priced = dict(price_input=1.0, price_output=1.0, max_cost_usd=1.0)
    for model, extra in (("openai/a", {}), ("openai/a,openai/b", {}), ("openai/a", {"repeats": 3})):
        judge = make_judge(JudgeSettings(judge_model=model, **priced, **extra))
        charge(judge, 0.25)
        first = (getattr(judge, "members", None) or getattr(judge, "runs", None) or [judge])[0]
        assert first.budget.spent == 0.25
    charge(make_judge(JudgeSettings(judge_model="openai/a")), 0.25)  # no cap: nothing to charge


def test_judge_batch_with_a_panel(stub, built_dataset, tmp_path, upstream_v1):
    server = stub()
    folder = upstream_v1 / "model_answer"
    cand = candidate_file(tmp_path / "cand.jsonl", folder / "o3-2025-04-16.jsonl", "cand")
    proc = oab(
        *judge_args(built_dataset, [cand], server, tmp_path, "o.jsonl", "--panel", folder, "--batch"),
        env=env(),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = records(tmp_path / "o.jsonl")
    assert len(got) == 35 and {r["status"] for r in got} == {"ok"} and server.batch_creations >= 1
    assert sum(1 for r in got if r.get("panel")) == 30


def test_run_refuses_a_candidate_named_as_a_panel_model_before_any_call(
    stub, built_dataset, tmp_path, upstream_v1, monkeypatch, capsys
):
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server = stub()
    source = upstream_v1 / "model_answer" / "o3-2025-04-16.jsonl"
    mine = candidate_file(tmp_path / "mine.jsonl", source, "openai/cand")
    args = ["run", "--model", "openai/cand", "--api-base", server.url, "--dataset", built_dataset]
    args += ["--judge-model", "openai/j", "--judge-api-base", server.url, "--output-dir", tmp_path / "run"]
    code, err = in_process([*args, "--panel", mine], capsys)
    assert code == 2 and server.count == 0 and not (tmp_path / "run").exists()
    assert "the candidate 'openai/cand' has the name of the panel's model 'openai/cand'" in err


def test_an_output_over_a_panel_file_is_refused(stub, built_dataset, tmp_path, upstream_v1, capsys):
    server = stub()
    panel = candidate_file(tmp_path / "p.jsonl", upstream_v1 / "model_answer" / "o3-2025-04-16.jsonl", "p")
    cand = candidate_file(tmp_path / "c.jsonl", upstream_v1 / "model_answer" / "o3-2025-04-16.jsonl", "c")
    before = panel.read_bytes()
    code, err = in_process(
        judge_args(built_dataset, [cand], server, tmp_path, "p.jsonl", "--panel", panel), capsys
    )
    assert code == 2 and "would overwrite the input" in err and panel.read_bytes() == before


def test_run_checks_the_judge_when_only_the_panel_is_left_to_judge(stub, judge_key, tmp_path):
    """`run`'s preflight counts the panel's judgments its judgment cache lacks, as the run will key
    them (run_checks.stored_state: the run's judge, panel/judging.unstored): a candidate fully
    cached with a panel not yet judged still needs the judge; a panel fully cached does not; a
    `vllm:` judge's are found under its served name."""
    from oab_bench.judge.answers import Answer
    from oab_bench.judge.generation.run_checks import run_judge
    from oab_bench.judge.grading.judgment_store import JudgmentStore
    from oab_bench.judge.grading.runner import run_judge_all
    from oab_bench.judge.panel.judging import unstored
    from tests.helpers import made_up_row, settings

    server = stub()
    row = made_up_row()
    pairs = [(row, Answer(model=m, question_id=row.question_id, turns=[f"{m} responde."])) for m in "pq"]
    chosen = settings(server)

    def lacking(judge_settings, cache=tmp_path / "jc"):
        return unstored(run_judge(judge_settings, JudgmentStore(cache, access="read")), pairs)

    assert lacking(chosen) == 2 and server.count == 0  # asking calls nothing
    assert not (tmp_path / "jc").exists()  # nor creates the cache
    run_judge_all(make_judge(chosen, JudgmentStore(tmp_path / "jc")), pairs[:1], progress=False)
    assert lacking(chosen) == 1  # one of the two still to judge
    run_judge_all(make_judge(chosen, JudgmentStore(tmp_path / "jc")), pairs, progress=False)
    assert lacking(chosen) == 0
    assert lacking(chosen, None) == 2  # no cache: everything is to judge

    served = chosen.model_copy(
        update={"judge_model": "openai/tiny-judge"}
    )  # what `vllm:tiny-judge` serves as
    run_judge_all(make_judge(served, JudgmentStore(tmp_path / "jc")), pairs, progress=False)
    assert lacking(chosen.model_copy(update={"judge_model": "vllm:tiny-judge"})) == 0


def _ranked(tmp_path, scores: dict[str, list[tuple[float, float]]]):
    """The leaderboard's table of made-up models: per model, (peça, questão) in exams 39 and 40."""
    from oab_bench.judge.leaderboard.inputs import load_records
    from oab_bench.judge.leaderboard.tables import build_tables
    from tests.helpers import exam_records, write_jsonl

    recs = []
    for m, exams in scores.items():
        for e, (peca, questao) in zip((39, 40), exams, strict=True):
            mark = {"panel": "published"} if m != "cand" else {}
            recs += [r | mark for r in exam_records(m, "j", f"{e}_direito_penal", peca, questao)]
    return build_tables(load_records(write_jsonl(tmp_path / "j.jsonl", recs)), resamples=100)[0]


def test_ties_are_ties_and_an_unsettled_order_is_said(tmp_path):
    """Seven models at 10.00 (the same intervals) share rank 1: no alphabetical place is a rank."""
    from oab_bench.judge.panel.judging import rank_line, ranking
    from oab_bench.judge.panel.published import Panel

    names = ["cand", *(f"p{i}" for i in range(6))]
    panel = Panel(answers=[], sources={n: "published" for n in names[1:]}, files=[])
    block = ranking(_ranked(tmp_path, dict.fromkeys(names, [(5.0, 1.25)] * 2)), "cand", panel, tmp_path, [])
    assert (block["rank"], block["of"], block["tied"], block["unsettled"]) == (1, 7, names[1:], [])
    line = rank_line(block, "cand")
    assert "cand ranks =1 of 7 beside the panel's 6 published models" in line
    assert "it ties with p0, p1, p2, p3, p4, p5 (the same exam score)" in line
    # apart, but within each other's intervals: the order between them is not settled
    scores = {"p0": [(5.0, 1.25)] * 2, "cand": [(4.0, 1.0), (2.0, 1.0)], "p1": [(3.0, 1.0), (2.0, 0.5)]}
    block = ranking(_ranked(tmp_path, scores | {"p2": [(0.0, 0.0)] * 2}), "cand", panel, tmp_path, [])
    assert (block["rank"], block["tied"], block["unsettled"]) == (2, [], ["p1"])
    assert [(r["model"], r["rank"]) for r in block["ranking"]] == [
        ("p0", 1),
        ("cand", 2),
        ("p1", 3),
        ("p2", 4),
    ]
    line = rank_line(block, "cand")
    assert "cand ranks 2 of 4" in line and "its order with p1 is not settled" in line and "ties" not in line


def test_a_panel_judged_again_says_what_came_from_the_cache(stub, judge_key, tmp_path, capsys):
    """A rerun said "judging the panel: 630 published answers" while it made no call."""
    from oab_bench.judge.answers import Answer
    from oab_bench.judge.panel.judging import judge_beside
    from oab_bench.judge.panel.published import Panel
    from tests.helpers import made_up_row, settings

    server, row = stub(), made_up_row()
    pairs = [(row, Answer(model=m, question_id=row.question_id, turns=[f"{m} responde."])) for m in "pq"]
    panel = Panel(answers=[a for _, a in pairs], sources={"p": "published", "q": "published"}, files=[])
    for todo in (2, 0):
        judge_beside(
            settings(server), tmp_path / "jc", panel, pairs, [{"question_id": row.question_id}], tmp_path
        )
        err = capsys.readouterr().err
        assert f"judging the panel: 2 published answers of 2 models (published): {todo} to judge now" in err
        assert f"{2 - todo} need no call" in err and server.count == 2
