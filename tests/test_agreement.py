"""`oab-bench agreement` on made-up judgments whose figures are known exactly, on a human CSV,
and end to end: upstream's o3 judgments against our structured judge run through the stub."""

from __future__ import annotations

import json

import pytest

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.validity.agreement import compare_all, render_json, render_text
from oab_bench.judge.validity.sources import load_human, load_source
from oab_bench.judge.validity.stats import columns, figure
from tests.conftest import oab
from tests.helpers import AGREEMENT_EXAMS as EXAMS
from tests.helpers import PECAS, QUESTAO, exam, source_a
from tests.helpers import write_jsonl as write


def report_of(*paths, resamples=300):
    sources = [load_source(chr(65 + i), p) for i, p in enumerate(paths)]
    return compare_all(sources, resamples=resamples, seed=1)


def test_identical_sources(tmp_path):
    a = source_a(tmp_path)
    r = report_of(a, a)
    assert (r["n_pairs"], r["n_exams"], r["left_out"]) == (60, 6, 0)
    assert r["item"]["exact"]["value"] == 1.0 and r["item"]["mae"]["value"] == 0.0
    assert r["item"]["qwk"]["value"] == pytest.approx(1.0)
    assert r["question"]["mae"] == {"value": 0.0, "ci_low": 0.0, "ci_high": 0.0}
    assert r["question"]["kendall"]["value"] == pytest.approx(1.0)
    e = r["exam"]
    assert e["mae"]["value"] == 0.0 and e["bias"]["value"] == 0.0
    assert e["ccc"]["value"] == pytest.approx(1.0) and e["pearson"]["value"] == pytest.approx(1.0)
    assert e["kappa_pass"]["value"] == pytest.approx(1.0)
    assert e["flips"] == 0 and e["confusion"]["pass_fail"] == e["confusion"]["fail_pass"] == 0
    assert r["ranking_tau"]["value"] is None  # two models: no ranking to speak of
    assert any(
        n.startswith("ranking_tau: null: 2 model(s) with complete exams: a ranking of fewer than 3")
        for n in r["notes"]
    )
    m1 = next(m for m in r["models"] if m["model"] == "m1")
    assert m1["mean_a"] == m1["mean_b"] == pytest.approx(36 / 6) and m1["passed_a"] == m1["passed_b"] == 3
    # the contract's keys
    assert set(r) >= {"n_pairs", "n_exams", "left_out", "item", "question", "exam", "models", "ranking_tau"}
    assert set(r["item"]) >= {"exact", "mae", "qwk"}
    assert set(r["question"]) >= {"mae", "bias", "pearson", "spearman", "kendall", "ccc"}
    assert set(r["exam"]) >= {"mae", "bias", "pearson", "spearman", "ccc", "kappa_pass", "confusion", "flips"}
    assert set(r["models"][0]) >= {"model", "mean_a", "mean_b", "passed_a", "passed_b"}
    assert "pairwise" not in r and "alpha" not in r


def test_constant_shift(tmp_path):
    """B gives every questão 0.25 more: +1.00 per exam, exactly; perfectly correlated, not concordant."""
    a = source_a(tmp_path)
    recs = [json.loads(line) for line in a.read_text().splitlines()]
    for rec in recs:
        if "questao" in rec["question_id"]:
            rec["score"] += 0.25
            for item in rec["items"]:
                item["score"] += 0.125
    b = write(tmp_path / "b.jsonl", recs)
    r = report_of(a, b)
    e = r["exam"]
    assert e["bias"]["value"] == pytest.approx(1.0) and e["mae"]["value"] == pytest.approx(1.0)
    assert e["bias"]["ci_low"] == pytest.approx(1.0) and e["bias"]["ci_high"] == pytest.approx(1.0)
    assert e["pearson"]["value"] == pytest.approx(1.0) and e["spearman"]["value"] == pytest.approx(1.0)
    assert e["ccc"]["value"] < 0.95
    assert r["question"]["bias"]["value"] == pytest.approx(100 * 0.25 / 1.25 * 48 / 60)


def test_two_swapped_verdicts(tmp_path):
    """m1: exam 0 goes from 9 to 5 (pass -> fail), exam 3 from 4 to 7 (fail -> pass)."""
    a = source_a(tmp_path)
    recs = [json.loads(line) for line in a.read_text().splitlines()]
    for rec in recs:
        if rec["model"] != "m1" or "peca" not in rec["question_id"]:
            continue
        new = {EXAMS[0]: 1.0, EXAMS[3]: 3.0}.get(rec["exam_id"])
        if new is not None:
            rec["score"] = new
            rec["items"] = [{"item_id": "P1", "score": min(new, 2.5), "max_score": 5.0}]
            rec["items"].append({"item_id": "P2", "score": max(0.0, new - 2.5), "max_score": 5.0})
    b = write(tmp_path / "b.jsonl", recs)
    r = report_of(a, b)
    e = r["exam"]
    assert e["flips"] == 2
    assert {(f["model"], f["exam_id"]) for f in e["flipped"]} == {("m1", EXAMS[0]), ("m1", EXAMS[3])}
    # A verdicts, m1: P P F F P F; m2 (peça - 1): 8 6 4 3 7 3 -> P P F F P F
    assert e["confusion"] == {"pass_pass": 5, "pass_fail": 1, "fail_pass": 1, "fail_fail": 5}
    assert e["kappa_pass"]["value"] == pytest.approx((10 / 12 - 0.5) / 0.5)  # po 10/12, pe 1/2
    assert r["disagreements"][0]["question_id"] == f"{EXAMS[0]}_peca_praticoprofissional"
    text = render_text(r)
    assert "flips: 2" in text and f"m1 {EXAMS[0]}: A 9.00, B 5.00" in text
    assert "A pass                   5        1" in text


def test_missing_questions_are_left_out(tmp_path):
    a = source_a(tmp_path)
    recs = [json.loads(line) for line in a.read_text().splitlines()]
    gone = {(f"{EXAMS[1]}_questao_2", "m1"), (f"{EXAMS[2]}_questao_4", "m2"), (f"{EXAMS[2]}_questao_1", "m2")}
    kept = [x for x in recs if (x["question_id"], x["model"]) not in gone]
    failed = next(x for x in kept if x["question_id"] == f"{EXAMS[4]}_questao_3" and x["model"] == "m1")
    failed.update(status="api_error", score=None, items=[])
    b = write(tmp_path / "b.jsonl", kept)
    r = report_of(a, b)
    assert r["left_out"] == 4 and r["n_pairs"] == 56
    assert r["left_out_reasons"] == {"only in A": 3, "B: api_error": 1}
    assert r["exam"]["n"] == 12 - 3  # three (model, exam)s not complete on both sides
    assert any("4 (model, question)s left out" in n for n in r["notes"])


def test_one_exam_only_has_no_intervals(tmp_path):
    recs = exam("m1", EXAMS[0], 4.0, 1.0) + exam("m2", EXAMS[0], 2.0, 0.5)
    a = write(tmp_path / "a.jsonl", recs)
    r = report_of(a, a)
    assert r["n_exams"] == 1
    assert r["question"]["mae"] == {"value": 0.0, "ci_low": None, "ci_high": None}
    assert r["exam"]["mae"]["value"] == 0.0 and r["exam"]["mae"]["ci_low"] is None
    assert any("one exam only: no interval" in n for n in r["notes"])
    assert r["exam"]["pearson"]["value"] == pytest.approx(1.0)  # two models: two exam results


def test_ranking_tau_needs_three_models(tmp_path):
    recs = []
    for e, p, q in zip(EXAMS, PECAS, QUESTAO, strict=True):
        for n, model in enumerate(("m1", "m2", "m3")):
            recs += exam(model, e, max(0.0, p - n), q)
    a = write(tmp_path / "three.jsonl", recs)
    r = report_of(a, a)
    assert r["ranking_tau"]["value"] == pytest.approx(1.0)
    assert not any(n.startswith("ranking_tau") for n in r["notes"])


def test_constant_input_is_null_with_a_reason(tmp_path):
    recs = [x for e in EXAMS for x in exam("m1", e, 4.0, 1.0)]
    a = write(tmp_path / "a.jsonl", recs)
    r = report_of(a, a)
    assert r["exam"]["pearson"] == {"value": None, "ci_low": None, "ci_high": None}
    assert any("exam.pearson: null: side A and B is constant" in n for n in r["notes"])
    assert r["ranking_tau"]["value"] is None  # one model: no ranking
    render_text(r)  # never a crash


@pytest.mark.slow
def test_three_sources_pairwise_and_alpha(tmp_path):
    a = source_a(tmp_path)
    r = report_of(a, a, a)
    assert [p["a"] + p["b"] for p in r["pairwise"]] == ["AB", "AC", "BC"]
    assert all(p["ccc"]["value"] == pytest.approx(1.0) for p in r["pairwise"])
    assert r["alpha"]["value"] == pytest.approx(1.0)
    assert "Krippendorff's alpha" in render_text(r)


# --- human grading CSV ------------------------------------------------------------------------


def test_human_csv_graders_and_baseline(tmp_path):
    a = source_a(tmp_path)
    lines = ["exam_id,question_id,item_id,score,grader,model"]
    for e, p, q in zip(EXAMS, PECAS, QUESTAO, strict=True):
        for grader, delta in (("ana", 0.0), ("bia", 0.5)):
            lines.append(f"{e},{e}_peca_praticoprofissional,,{min(5.0, p + delta)},{grader},m1")
            lines += [f"{e},{e}_questao_{n},A1,{q / 2},{grader},m1" for n in range(1, 5)]
            lines += [f"{e},{e}_questao_{n},B1,{q / 2},{grader},m1" for n in range(1, 5)]
    human = tmp_path / "human.csv"
    human.write_text("\n".join(lines) + "\n")
    src = load_source("B", human)
    assert src.judge == "human, 2 graders" and set(src.graders) == {"ana", "bia"}
    r = compare_all([load_source("A", a), src], resamples=200)
    assert r["n_pairs"] == 30 and r["left_out_reasons"] == {"only in A": 30}  # m2 not human-graded
    (base,) = r["human_baseline"]
    # bia gives the peça 0.5 more except where ana gave 5.0 already (exam 0)
    assert base["exam"]["bias"]["value"] == pytest.approx(0.5 * 5 / 6)
    assert base["item"]["exact"]["value"] == 1.0  # their item grades (questões) agree
    assert "Human baseline: human ana vs human bia" in render_text(r)


def test_human_csv_without_model_pairs_with_the_only_model(tmp_path):
    recs = [x for e in EXAMS[:2] for x in exam("m1", e, 4.0, 1.0)]
    a = write(tmp_path / "a.jsonl", recs)
    human = tmp_path / "h.csv"
    human.write_text(
        "exam_id,question_id,item_id,score,grader\n"
        + "".join(f"{x['exam_id']},{x['question_id']},,{x['score']},ana\n" for x in recs)
    )
    r = report_of(a, human)
    assert r["n_pairs"] == 10 and r["left_out"] == 0 and r["exam"]["mae"]["value"] == 0.0


def test_a_judgment_pairs_once_even_with_a_named_and_an_unnamed_grade(tmp_path):
    """A CSV grading m1's answer to a question and, on another line, that question with no model:
    the one judgment of it pairs with the named grade only, never with both (counted twice)."""
    recs = exam("m1", EXAMS[0], 4.0, 1.0)
    a = write(tmp_path / "a.jsonl", recs)
    q = recs[1]["question_id"]
    human = tmp_path / "h.csv"
    human.write_text(
        "exam_id,question_id,item_id,score,grader,model\n"
        f"{EXAMS[0]},{q},,1.0,ana,m1\n"
        f"{EXAMS[0]},{q},,0.5,ana,\n"
    )
    r = report_of(human, a)
    assert r["n_pairs"] == 1 and r["question"]["mae"]["value"] == 0.0
    assert (
        r["left_out_reasons"][
            "a grade names no model and the other side's grade of its question pairs by model"
        ]
        == 1
    )


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("90_direito_civil,90_direito_civil_questao_1,A1,abc,ana", r"h.csv:2: field 'score'"),
        ("90_direito_penal,90_direito_civil_questao_1,A1,0.5,ana", r"h.csv:2: field 'exam_id'"),
        ("90_direito_civil,90_direito_civil_questao_9,A1,0.5,ana", r"h.csv:2: field 'question_id'"),
        ("90_direito_civil,90_direito_civil_questao_1,,2.0,ana", r"h.csv:2: field 'score'.*above"),
        ("90_direito_civil,90_direito_civil_questao_1,A1,0.5,", r"h.csv:2: field 'grader'"),
    ],
)
def test_human_csv_errors_name_line_and_field(tmp_path, row, message):
    human = tmp_path / "h.csv"
    human.write_text("exam_id,question_id,item_id,score,grader\n" + row + "\n")
    with pytest.raises(SourceError, match=message):
        load_source("A", human)


def test_cli_bad_input_exits_2(tmp_path):
    bad = tmp_path / "h.csv"
    bad.write_text("exam_id,question_id,score\n")
    proc = oab("agreement", bad, bad, timeout=120)
    assert (
        proc.returncode == 2
        and "oab-bench agreement: error:" in proc.stderr
        and "missing columns" in proc.stderr
    )


# --- end to end on the published data ---------------------------------------------------------


@pytest.mark.slow
def test_upstream_o3_against_our_judge_through_the_stub(
    stub, judge_key, tmp_path, upstream_v1, built_dataset
):
    """Upstream's legacy o3 scores (the published sample) vs our structured judge on the same answers."""
    upstream = upstream_v1 / "model_judgment" / "o3-2025-04-16_single.sample.jsonl"
    server = stub(policy="alternate")
    ours = tmp_path / "ours.jsonl"
    answers = [upstream_v1 / "model_answer" / f"{m}.jsonl" for m in ("o3-2025-04-16", "sabia-3.1-2025-05-08")]
    judged = oab(
        "judge",
        "--dataset",
        built_dataset,
        "--answers",
        *answers,
        "--questions",
        "39_direito_penal*",
        "39_direito_administrativo*",
        "--judge-model",
        "openai/judge-test",
        "--api-base",
        server.url,
        "--cache",
        tmp_path / "cache",
        "--output",
        ours,
        "--no-progress",
        timeout=300,
    )
    assert judged.returncode == 0, judged.stderr
    out = tmp_path / "agreement.json"
    proc = oab(
        "agreement", upstream, ours, "--dataset", built_dataset, "--format", "json", "--output", out,
        "--resamples", "300", timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())
    assert r["sources"][0]["judge"] == "o3-2025-04-16 [single-oab-v1]"
    assert r["sources"][1]["judge"].startswith("openai/judge-test [")
    assert (r["n_pairs"], r["n_exams"], r["exam"]["n"], r["left_out"]) == (20, 2, 4, 0)
    assert r["item"]["n"] == 0  # upstream files have no item scores
    assert {m["model"] for m in r["models"]} == {"o3-2025-04-16", "sabia-3.1-2025-05-08"}
    o3 = next(m for m in r["models"] if m["model"] == "o3-2025-04-16")
    assert o3["mean_a"] == pytest.approx(9.07, abs=0.01)  # upstream's own totals for these two exams
    for fig in (r["question"]["mae"], r["exam"]["mae"], r["exam"]["bias"]):
        assert fig["value"] is not None and fig["ci_low"] <= fig["value"] <= fig["ci_high"]
    text = oab("agreement", upstream, ours, "--dataset", built_dataset, "--resamples", "300", timeout=300)
    assert text.returncode == 0, text.stderr
    assert "Largest disagreements" in text.stdout and "39_direito_" in text.stdout
    assert "Pass/fail (>= 6.00)" in text.stdout


def test_the_documented_csv_example_reads(tmp_path):
    from tests.conftest import REPO

    text = (REPO / "docs" / "judge-validity.md").read_text(encoding="utf-8")
    section = text[text.index("## Human grades") :]
    start = section.index("```csv\n") + 7
    csv_text = section[start : section.index("```", start)]
    (tmp_path / "human.csv").write_text(csv_text)
    src = load_source("H", tmp_path / "human.csv")
    assert {k[1] for k in src.graded} == {
        "39_direito_penal_questao_1",
        "39_direito_penal_peca_praticoprofissional",
    }
    assert src.graded[("o3-2025-04-16", "39_direito_penal_questao_1")].items == {"A1": 0.65}


def test_human_csv_items_are_checked_against_the_dataset(tmp_path, built_rows):
    rows, _ = built_rows
    dataset = {r.question_id: r for r in rows}
    row = dataset["39_direito_penal_questao_1"]
    item = next(r for r in row.rubric if not r.annulled)
    human = tmp_path / "h.csv"
    head = "exam_id,question_id,item_id,score,grader\n"
    human.write_text(head + f"39_direito_penal,{row.question_id},Z9,0.1,ana\n")
    with pytest.raises(SourceError, match=r"h.csv:2: field 'item_id'.*has no item 'Z9'"):
        load_source("H", human, dataset)
    human.write_text(head + f"39_direito_penal,{row.question_id},{item.item_id},{item.max_score + 1},ana\n")
    with pytest.raises(SourceError, match=r"h.csv:2: field 'item_id'.*above the item's"):
        load_source("H", human, dataset)
    human.write_text(head + f"39_direito_penal,{row.question_id},{item.item_id},{item.max_score},ana\n")
    graded = load_source("H", human, dataset).graded[(None, row.question_id)]
    assert graded.items[item.item_id] == item.max_score and graded.max_score == row.max_score


@pytest.mark.slow
def test_a_question_twice_in_one_source_is_chosen_whatever_the_line_order(tmp_path):
    """As in the leaderboard: copies are one, an ok judgment is used over a failure (with a note),
    two different scores stop naming both lines; never the last line read."""
    a = source_a(tmp_path)
    recs = [json.loads(line) for line in a.read_text().splitlines()]
    failed = {**recs[0], "status": "api_error", "score": None, "items": []}
    first = report_of(a, write(tmp_path / "b1.jsonl", [failed, *recs, recs[1]]))
    second = report_of(a, write(tmp_path / "b2.jsonl", [recs[1], *reversed(recs), failed]))
    assert render_text(first).replace("b1.jsonl", "b2.jsonl") == render_text(second)
    assert first["left_out"] == 0 and first["item"]["exact"]["value"] == 1.0
    assert any(n.startswith("B: 1 (judge, model, question) have different outcomes") for n in first["notes"])
    clash = {
        **recs[0],
        "score": 4.0,
        "items": [{**recs[0]["items"][0]}, {**recs[0]["items"][1], "score": 1.5}],
    }
    with pytest.raises(SourceError, match=r"b3.jsonl:1: .* scores 4.0 here and 5.0 in .*b3.jsonl:2"):
        report_of(a, write(tmp_path / "b3.jsonl", [clash, *recs]))


def test_a_probe_folder_is_a_source_as_in_the_leaderboard(tmp_path):
    """`oab-bench probe`'s folder (judgments.jsonl + report.json), with its item scores."""
    a = source_a(tmp_path)
    folder = tmp_path / "probe_judge"
    folder.mkdir()
    (folder / "judgments.jsonl").write_text(a.read_text())
    (folder / "report.json").write_text("{}\n")
    r = report_of(a, folder)
    assert r["n_pairs"] == 60 and r["item"]["n"] == 120 and r["item"]["exact"]["value"] == 1.0


def test_human_item_grades_adding_up_above_the_question_stop(tmp_path):
    """Each item grade within the question's value, their sum above it (no --dataset to know the items)."""
    human = tmp_path / "h.csv"
    human.write_text(
        "exam_id,question_id,item_id,score,grader\n"
        "90_direito_civil,90_direito_civil_questao_1,A1,1.0,ana\n"
        "90_direito_civil,90_direito_civil_questao_2,A1,1.0,ana\n"
        "90_direito_civil,90_direito_civil_questao_1,B1,0.5,ana\n"
    )
    with pytest.raises(SourceError, match=r"h.csv:4: field 'score': ana's item grades .* add up to 1.5"):
        load_source("A", human)


@pytest.mark.parametrize(
    "argv",
    [
        ["agreement", "a.jsonl", "b.jsonl", "--resamples", "0"],
        ["agreement", "--repeats", "run", "--seed", "-1"],
        ["leaderboard", "a.jsonl", "--resamples", "-5"],
        ["compare", "m1", "m2", "a.jsonl", "--resamples", "x"],
        ["probe", "--dataset", "d", "--resamples", "0"],
    ],
)
def test_resamples_and_seed_are_checked_before_anything_runs(argv, capsys):
    """`--resamples 0` was a numpy traceback (agreement) or a scipy message (leaderboard), and in
    `probe` only after the judgments were paid for."""
    from oab_bench.scripts.cli import build_parser

    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2 and "is not a whole number >= " in capsys.readouterr().err


def test_graders_mean_does_not_depend_on_the_order_of_the_csv_rows(tmp_path):
    """Three graders' item grades 0.1, 0.2, 0.3 summed in row order were 0.6000000000000001 one
    way and 0.6 the other: the report's bytes changed with the order of the lines."""
    a = write(tmp_path / "a.jsonl", exam("m1", EXAMS[0], 4.0, 1.0))
    q = f"{EXAMS[0]},{EXAMS[0]}_questao_1,A1"
    rows = [f"{q},0.1,ana\n", f"{q},0.2,bia\n", f"{q},0.3,caio\n"]
    head = "exam_id,question_id,item_id,score,grader\n"
    texts = []
    for name, lines in (("h1.csv", rows), ("h2.csv", rows[::-1])):
        (tmp_path / name).write_text(head + "".join(lines))
        texts.append(render_json(report_of(tmp_path / name, a)).replace(name, "h.csv"))
    assert texts[0] == texts[1]


@pytest.mark.parametrize("named", ["", "m1"])
def test_two_human_csvs_naming_no_model_compare(tmp_path, named):
    """Two CSVs without a model column (or with it empty on some lines): text and JSON reports,
    where the pairs' model is null (a traceback before: None sliced, None sorted against a str)."""
    recs = [x for e in EXAMS[:2] for x in exam("m1", e, 4.0, 1.0)]
    for name, shift in (("h1.csv", 0.0), ("h2.csv", 0.25)):
        lines = [
            f"{x['exam_id']},{x['question_id']},,{x['score'] + (shift if 'questao' in x['question_id'] else 0)},"
            f"ana,{named if n % 2 else ''}\n"
            for n, x in enumerate(recs)
        ]
        (tmp_path / name).write_text("exam_id,question_id,item_id,score,grader,model\n" + "".join(lines))
    r = report_of(tmp_path / "h1.csv", tmp_path / "h2.csv")
    assert r["n_pairs"] == 10 and r["disagreements"][0]["model"] in (None, named)
    assert "(no model named)" in render_text(r) and json.loads(render_json(r))["n_pairs"] == 10


def test_graders_mean_is_not_rounded_to_cents(tmp_path):
    csv = tmp_path / "h.csv"
    qid = "39_direito_penal_questao_1"
    csv.write_text(
        "exam_id,question_id,item_id,score,grader\n"
        f"39_direito_penal,{qid},,0.6,ana\n39_direito_penal,{qid},,0.65,bia\n"
    )
    [graded] = load_human("H", csv, {}).graded.values()
    assert graded.score == pytest.approx(0.625)


def test_one_value_or_a_constant_side_gives_null_not_zero():
    notes: list[str] = []
    one = columns([{"exam": "e1", "a": 9.0, "b": 4.0}], "exam", "a", "b")
    assert figure("exam.ccc", one, notes)["value"] is None
    assert figure("exam.kappa_pass", one, notes)["value"] is None
    assert figure("exam.mae", one, notes)["value"] == 5.0  # one pair is enough for an error
    flat = columns([{"exam": f"e{i}", "a": 5.0, "b": float(i)} for i in range(4)], "exam", "a", "b")
    assert figure("question.ccc", flat, notes)["value"] is None
    assert figure("question.pearson", flat, notes)["value"] is None
    assert any("too few" in n for n in notes) and any("constant" in n for n in notes)


def test_kappa_is_sklearns_on_any_columns():
    """Our numpy kappa (the bootstrap's hot loop) is sklearn's cohen_kappa_score, 0/0 included."""
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    from oab_bench.judge.intervals import quiet
    from oab_bench.judge.validity.stats import _kappa

    rng = np.random.default_rng(7)
    for trial in range(200):
        k, n = int(rng.integers(1, 7)), int(rng.integers(1, 40))
        cols = {"a": rng.integers(0, k, n), "b": rng.integers(0, k, n), "labels": list(range(k))}
        if trial % 5 == 0:
            cols["b"] = cols["a"].copy()  # perfect agreement, and constant sides when k == 1
        for weights in (None, "quadratic"):
            ours = quiet(lambda c, w=weights: _kappa(c["a"], c["b"], labels=c["labels"], weights=w), cols)
            theirs = quiet(
                lambda c, w=weights: cohen_kappa_score(c["a"], c["b"], labels=c["labels"], weights=w), cols
            )
            assert ours == pytest.approx(theirs, abs=1e-12, nan_ok=True), (cols, weights)
    passed = rng.random(30) > 0.5, rng.random(30) > 0.4
    assert _kappa(*passed, labels=[False, True]) == pytest.approx(
        cohen_kappa_score(*passed, labels=[False, True])
    )
