"""Leaderboard on made-up judgments where every figure can be checked by hand, and on
upstream's published sample (per-exam totals as upstream's own aggregation gives them)."""

from __future__ import annotations

import json
import math
from collections import defaultdict

import pytest

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.intervals import bootstrap_ci
from oab_bench.judge.leaderboard import tables as lb
from oab_bench.judge.leaderboard.inputs import load_records
from tests.conftest import oab
from tests.helpers import (
    J1,
    J2,
    clean_env,
    exam_records,
    judged,
    write_jsonl,
)


@pytest.fixture
def made_up(tmp_path):
    recs = []
    # A: 8.0, 6.0 (a pass: >= 6.00), 4.0 -> mean 6.0, passed 2
    recs += exam_records("model-a", J1, "90_direito_civil", 4.0, 1.0)
    recs += exam_records("model-a", J1, "90_direito_penal", 3.0, 0.75)
    recs += exam_records("model-a", J1, "91_direito_civil", 2.0, 0.5)
    # B: a failed judgment in 90 penal -> that exam is out; 7.0, 7.0 -> mean 7.0
    recs += exam_records("model-b", J1, "90_direito_civil", 3.0, 1.0)
    recs += exam_records("model-b", J1, "90_direito_penal", 3.0, 1.0, failed=(2,))
    recs += exam_records("model-b", J1, "91_direito_civil", 3.0, 1.0)
    # C: ties A's mean (6.0) but passes 3
    for exam in ("90_direito_civil", "90_direito_penal", "91_direito_civil"):
        recs += exam_records("model-c", J1, exam, 2.0, 1.0)
    # gpt-4o: one exam only, the others never answered
    recs += exam_records("gpt-4o", J1, "90_direito_civil", 5.0, 1.25)
    # a second judge grades model-a
    for exam in ("90_direito_civil", "90_direito_penal", "91_direito_civil"):
        recs += exam_records("model-a", J2, exam, 1.0, 0.5)
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def tables_of(path, **kw):
    return lb.build_tables(load_records(path), resamples=2000, **kw)


def test_figures_by_hand(made_up):
    tables, notes = tables_of(made_up)
    assert [t.judge for t in tables] == [f"{J2} [oab-pt-v1, structured]", f"{J1} [oab-pt-v1, structured]"]
    j1 = {r.model: r for r in tables[1].rows}
    a, b, c, g = j1["model-a"], j1["model-b"], j1["model-c"], j1["gpt-4o"]

    assert (a.exams, a.passed, a.mean_exam_score, a.coverage) == (3, 2, 6.0, 1.0)
    assert a.exam_totals == {"90_direito_civil": 8.0, "90_direito_penal": 6.0, "91_direito_civil": 4.0}
    assert a.per_area == {"civil": 6.0, "penal": 6.0} and a.best_area is None  # a tie: no best area
    assert a.per_edition == {"90": 7.0, "91": 4.0}
    assert a.ci_low <= 6.0 <= a.ci_high and a.ci_low >= 4.0 and a.ci_high <= 8.0

    assert (b.exams, b.passed, b.mean_exam_score) == (2, 2, 7.0)
    assert b.coverage == pytest.approx(14 / 15) and not b.complete
    assert "90_direito_penal" not in b.exam_totals  # a failed judgment is never a zero

    assert (c.exams, c.passed, c.mean_exam_score) == (3, 3, 6.0)
    assert (c.ci_low, c.ci_high) == (6.0, 6.0)

    assert (g.exams, g.passed, g.mean_exam_score, g.coverage) == (1, 1, 10.0, pytest.approx(5 / 15))
    assert (g.ci_low, g.ci_high) == (None, None)  # one exam: no interval
    assert g.same_family_as_judge and not a.same_family_as_judge

    # ranking: mean, then exams passed (C above A on the tie), then name
    assert [r.model for r in tables[1].rows] == ["gpt-4o", "model-b", "model-c", "model-a"]
    assert [(r.rank, r.tied) for r in tables[1].rows] == [(1, False), (2, False), (3, True), (3, True)]
    assert any("2 judges" in n for n in notes)
    assert any("model-b has coverage 93%" in n for n in notes)
    assert any("gpt-4o is graded by a judge of its own family (openai)" in n for n in notes)

    j2 = tables[0].rows
    assert [(r.model, r.mean_exam_score) for r in j2] == [("model-a", 3.0)]  # never mixed with J1


def test_expected_questions_from_the_dataset_lower_coverage(made_up):
    ids = {r.question_id for r in load_records(made_up)} | {"92_direito_civil_questao_1"}
    tables, notes = tables_of(made_up, expected_ids=ids)
    a = next(r for r in tables[1].rows if r.model == "model-a")
    assert a.coverage == pytest.approx(15 / 16) and a.exams == 3
    assert any("1 expected questions have no judgment" in n for n in notes)


def test_bootstrap_is_seeded():
    values = [8.0, 6.0, 4.0, 7.5, 5.5]
    assert bootstrap_ci(values, resamples=3000, seed=1) == bootstrap_ci(values, resamples=3000, seed=1)
    low, high = bootstrap_ci(values, resamples=3000, seed=1)
    assert low < sum(values) / 5 < high


def test_compare_by_hand(made_up):
    tables, _ = tables_of(made_up)
    (c,) = lb.compare(tables, "model-a", "model-c", resamples=2000)
    # diffs 8-6, 6-6, 4-6 -> mean 0; C passed 91 civil (6.0) which A failed (4.0)
    assert "= +0.00 exam points over 3 exams" in c and "model-a passed 0 that model-c failed" in c
    assert "model-c passed 1 that model-a failed" in c
    low, high = map(float, c.split("CI [")[1].split("]")[0].split(", "))
    assert low <= 0.0 <= high
    (d,) = lb.compare(tables, "model-a", "model-b", resamples=2000)
    assert "= -1.00 exam points over 2 exams" in d
    assert lb.compare(tables, "model-a", "nobody") == []


def test_renderings(made_up, tmp_path):
    tables, notes = tables_of(made_up)
    md = lb.render_markdown(tables, notes, by="area")
    assert "| Model | Average Score | Passing Rate | Best Area | 95% CI | Coverage |" in md
    assert "| model-b * | 7.00 | 100% (2/2) | n/a |" in md  # one area: none is the best
    assert "| gpt-4o * † | 10.00 | 100% (1/1) |" in md
    assert "| Model | Direito Civil | Direito Penal |" in md
    data = json.loads(lb.render_json(tables, notes))
    assert set(lb.JSON_KEYS) <= set(data["rows"][0]) and data["notes"] == notes
    header = lb.render_csv(tables).splitlines()[0].split(",")
    assert (
        ",".join(header[:9]) == "model,judge,exams,passed,mean_exam_score,ci_low,ci_high,coverage,best_area"
    )
    assert "area_civil" in header and "edition_91" in header


def test_a_mean_on_a_half_cent_rounds_up_everywhere_it_prints(tmp_path):
    # exam totals 9.07 and 9.08: the mean 9.075 is stored as 9.07499..., which binary rounding prints 9.07
    recs = exam_records("model-h", J1, "90_direito_civil", 4.07, 1.25)
    recs += exam_records("model-h", J1, "91_direito_civil", 4.08, 1.25)
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    tables, notes = tables_of(path)
    (row,) = tables[0].rows
    assert f"{row.mean_exam_score:.2f}" == "9.07"  # the trap this test is about
    md = lb.render_markdown(tables, notes, by="edition")
    assert "| model-h | 9.08 | 100% (2/2) | n/a |" in md
    assert "| model-h | 9.07 | 9.08 |" in md  # per edition: each total as it is
    assert json.loads(lb.render_json(tables, notes))["rows"][0]["mean_exam_score"] == row.mean_exam_score
    assert [lb.cents(x) for x in (0.625, -0.001, 2.675, None)] == ["0.63", "0.00", "2.68", "n/a"]
    assert lb.cents(-0.005, sign=True) == "-0.01" and lb.cents(0.0, sign=True) == "+0.00"


def test_cli_leaderboard_and_plot(made_up, tmp_path):
    png = tmp_path / "lb.png"
    out = tmp_path / "lb.json"
    proc = oab(
        "leaderboard", made_up, "--format", "json", "--output", out, "--plot", png, "--resamples", "500"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["rows"][0]["model"] == "model-a"  # J2's table first
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    cmp = oab("compare", "model-a", "model-c", made_up)
    assert cmp.returncode == 0 and "model-a - model-c = +0.00 exam points over 3 exams" in cmp.stdout


# --- upstream judgment files ------------------------------------------------------------------


def test_upstream_sample_matches_upstreams_own_aggregation(upstream_v1, tmp_path):
    """Upstream's show_result sums the turns of each question, then the questions of each exam."""
    path = upstream_v1 / "model_judgment" / "o3-2025-04-16_single.sample.jsonl"
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    upstream = defaultdict(float)
    for r in raw:
        exam = r["question_id"].rsplit("_peca", 1)[0].rsplit("_questao", 1)[0]
        upstream[(r["model"], exam)] += r["score"]

    tables, _ = lb.build_tables(load_records(path), resamples=500)
    (table,) = tables
    assert table.judge == "o3-2025-04-16 [single-oab-v1]"
    ours = {(row.model, exam): total for row in table.rows for exam, total in row.exam_totals.items()}
    assert set(ours) == set(upstream) and len(ours) == 4
    for key, total in upstream.items():
        assert ours[key] == pytest.approx(total), key
    assert all(row.coverage == 1.0 for row in table.rows)


def test_upstream_unparsed_score_and_missing_turn_are_failures(upstream_v1, tmp_path):
    path = upstream_v1 / "model_judgment" / "o3-2025-04-16_single.sample.jsonl"
    lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    records = [json.loads(line) for line in lines]
    # upstream records -1 when it finds no score; then sums it into the exam: we do not
    target = next(
        r
        for r in records
        if r["question_id"] == "39_direito_penal_questao_2"
        and r["turn"] == 1
        and r["model"] == "o3-2025-04-16"
    )
    target["score"] = -1
    dropped = next(
        r
        for r in records
        if r["question_id"] == "39_direito_penal_questao_4"
        and r["turn"] == 2
        and r["model"] == "sabia-3.1-2025-05-08"
    )
    records.remove(dropped)
    f = tmp_path / "upstream_single.jsonl"
    f.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    recs = {(r.model, r.question_id): r for r in load_records(f)}
    assert recs[("o3-2025-04-16", "39_direito_penal_questao_2")].status == "parse_error"
    assert recs[("sabia-3.1-2025-05-08", "39_direito_penal_questao_4")].status == "missing_turn"
    tables, _ = lb.build_tables(list(recs.values()), resamples=500)
    rows = {r.model: r for r in tables[0].rows}
    assert rows["o3-2025-04-16"].exams == 1 and "39_direito_penal" not in rows["o3-2025-04-16"].exam_totals
    assert rows["sabia-3.1-2025-05-08"].coverage == pytest.approx(9 / 10)


def test_unknown_format_names_the_file(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text('{"foo": 1}\n')
    with pytest.raises(SourceError, match="unknown format"):
        load_records(f)
    f.write_text('{"foo": 1\n')
    with pytest.raises(SourceError, match=r"x.jsonl:1: invalid JSON"):
        load_records(f)


def test_by_area_table_and_plot_name_and_order_areas_alike(tmp_path, monkeypatch):
    from oab_bench.judge.leaderboard import plot

    recs = []
    for exam in ("90_direito_tributario", "90_direito_penal", "90_direito_do_trabalho", "90_direito_civil"):
        recs += exam_records("model-a", J1, exam, 4.0, 1.0)
    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    tables, notes = lb.build_tables(load_records(path), resamples=200)
    md = lb.render_markdown(tables, notes, by="area")
    names = ["Direito Civil", "Direito Penal", "Direito do Trabalho", "Direito Tributário"]
    assert "| Model | " + " | ".join(names) + " |" in md
    figures = []
    monkeypatch.setattr(plot.plt, "close", figures.append)
    plot.plot_png_bytes(tables)
    heat = figures[0].axes[1]
    assert [t.get_text() for t in heat.get_xticklabels()] == names


@pytest.mark.parametrize(
    ("fmt", "field", "value"),
    [
        ("ours", "model", 123),
        ("ours", "judge_model", ["x"]),
        ("ours", "status", None),
        ("ours", "exam_id", 90),
        ("upstream", "model", ["m"]),
        ("upstream", "judge", "gpt-4"),
        ("upstream", "judge", [1, "single-v1"]),
        ("upstream", "question_id", 7),
    ],
)
def test_a_field_of_the_wrong_type_names_file_line_and_field(tmp_path, fmt, field, value):
    good = exam_records("m", J1, "90_direito_civil", 4.0, 1.0)[1]
    if fmt == "upstream":
        good = {"question_id": good["question_id"], "model": "m", "judge": ["j", "single-v1"]}
        good |= {"score": 0.5, "turn": 1, "judgment": "x"}
    f = tmp_path / "j.jsonl"
    f.write_text(json.dumps(good) + "\n" + json.dumps(good | {field: value}) + "\n")
    with pytest.raises(SourceError) as e:
        load_records(f)
    assert str(e.value).startswith(f"{f}:2: field '{field}':")


def test_notes_on_skipped_inputs_do_not_depend_on_their_order(made_up, tmp_path, capsys):
    from oab_bench.scripts.cli import main

    killed = [tmp_path / "killed-b", tmp_path / "killed-a"]  # run folders with no results
    for k in killed:
        k.mkdir()
    outputs = []
    for fmt in ("markdown", "json"):
        for order in (killed, killed[::-1]):
            args = ["leaderboard", str(made_up), *map(str, order), "--format", fmt, "--resamples", "50"]
            assert main(args) == 0
            outputs.append(capsys.readouterr().out)
    assert "killed-a" in outputs[0] and outputs[0] == outputs[1] and outputs[2] == outputs[3]


def test_a_plot_that_cannot_be_written_leaves_no_table_and_never_replaces_an_input(made_up, tmp_path):
    from oab_bench.scripts.cli import main

    out = tmp_path / "lb.md"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    assert main(["leaderboard", str(made_up), "--output", str(out), "--plot", str(blocker / "p.png")]) == 2
    assert not out.exists() and blocker.read_text() == "not a folder\n"
    before = made_up.read_bytes()
    assert main(["leaderboard", str(made_up), "--plot", str(made_up), "--resamples", "50"]) == 2
    assert made_up.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a-file", made_up.name])  # no temporaries


def test_a_model_name_cannot_break_the_markdown_table(tmp_path):
    recs = exam_records("evil | 9.99 | 100%\n| fake", J1, "90_direito_civil", 4.0, 1.0)
    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    tables, _ = tables_of(path)
    md = lb.render_markdown(tables, [], by="area")
    assert not any(line.startswith("| fake") for line in md.splitlines())  # no row of its own
    # one cell, its pipes escaped, in the main table and the by-area one
    assert md.count("| evil \\| 9.99 \\| 100% \\| fake | 8.00 |") == 2


@pytest.mark.parametrize(
    "change, field",
    [
        ({"score": math.nan}, "score"),
        ({"score": -0.5}, "score"),
        ({"score": 1.3}, "score"),
        ({"max_score": "x"}, "max_score"),
    ],
)
def test_leaderboard_rejects_impossible_scores(tmp_path, change, field):
    recs = exam_records("model-a", J1, "90_direito_civil", 4.0, 1.0)
    recs[2].update(change)  # a questão worth 1.25
    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))  # json writes NaN as NaN
    proc = oab("leaderboard", path)
    assert proc.returncode == 2, proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"oab-bench leaderboard: error: {path}:3: field '{field}':"), line


def test_leaderboard_rejects_items_that_are_not_the_rubrics(tmp_path, synthetic_dataset):
    ds, rows = synthetic_dataset
    recs = [judged(r) for r in rows.values()]
    recs[1]["items"][0]["item_id"] = "Z9"
    path = write_jsonl(tmp_path / "j.jsonl", recs)
    proc = oab("leaderboard", path, "--dataset", ds, env=clean_env())
    assert proc.returncode == 2
    assert f"{path}:2: field 'items': items" in proc.stderr and "do not match the rubric" in proc.stderr
    recs = [judged(r) for r in rows.values()]
    recs[1]["items"][0]["score"] = 0.01  # a score the rubric does not allow
    recs[1]["score"] = round(sum(i["score"] for i in recs[1]["items"]), 2)
    proc = oab("leaderboard", write_jsonl(path, recs), "--dataset", ds, env=clean_env())
    assert proc.returncode == 2 and "field 'items[0].score'" in proc.stderr
    proc = oab(
        "leaderboard", write_jsonl(path, [judged(r) for r in rows.values()]), "--dataset", ds, env=clean_env()
    )
    assert proc.returncode == 0, proc.stderr


def test_a_judgment_disagreeing_with_the_dataset_shows_in_coverage_and_a_note(tmp_path, synthetic_dataset):
    ds, rows = synthetic_dataset
    recs = [judged(r) for r in rows.values()]
    recs[1]["max_score"] = 2.0  # the dataset says 1.25
    proc = oab("leaderboard", write_jsonl(tmp_path / "j.jsonl", recs), "--dataset", ds, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    (row,) = data["rows"]
    assert row["exams"] == 0 and row["coverage"] == pytest.approx(4 / 5)
    assert any("disagree" in n and recs[1]["question_id"] in n for n in data["notes"])


def test_an_exam_whose_values_do_not_make_ten_is_noted(tmp_path):
    recs = exam_records("model-a", J1, "90_direito_civil", 4.0, 1.0, missing=(1,))  # no model judged it
    proc = oab("leaderboard", write_jsonl(tmp_path / "j.jsonl", recs), "--format", "json")
    data = json.loads(proc.stdout)
    assert data["rows"][0]["exams"] == 0
    assert any("worth 8.75, not 10.00" in n for n in data["notes"])


def test_leaderboard_skips_the_folder_of_a_killed_run(tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", exam_records("model-a", J1, "90_direito_civil", 4.0, 1.0))
    killed = tmp_path / "runs" / "killed"
    (killed / ".lighteval-cache-x").mkdir(parents=True)
    (killed / "model_config.yaml").write_text("model_parameters: {}\n")
    (killed / "judgments.jsonl").write_text('{"question_id": "90_dir')  # torn
    proc = oab("leaderboard", good, killed)
    assert proc.returncode == 0, proc.stderr
    assert "model-a" in proc.stdout and "skipped" in proc.stderr and str(killed) in proc.stderr


def test_a_mean_a_floats_width_outside_its_interval_still_plots():
    """Three exams of 0.10 average to 0.10000000000000002 while the interval is [0.1, 0.1]: the
    error bar's length is clipped at zero instead of failing the plot (and report.html)."""
    from oab_bench.judge.leaderboard.plot import plot_png_bytes

    row = lb.Row(
        model="m",
        judge=J1,
        exams=3,
        passed=0,
        mean_exam_score=sum([0.1, 0.1, 0.1]) / 3,
        ci_low=0.1,
        ci_high=0.1,
        coverage=1.0,
        per_area={"civil": 0.1},
        per_edition={"90": 0.1},
        best_area="civil",
        complete=True,
        same_family_as_judge=False,
        exam_totals={},
    )
    assert row.mean_exam_score > row.ci_high
    assert plot_png_bytes([lb.Table(judge=J1, rows=[row])]).startswith(b"\x89PNG")


@pytest.mark.parametrize("command", ["leaderboard", "report", "agreement"])
def test_a_file_named_eval_that_is_no_inspect_log_is_one_line_naming_it(tmp_path, command):
    """inspect logs are read twice (their headers for the dataset, then their samples): either way a
    bad one is one line naming the file, never an error without a file or a traceback."""
    bad = tmp_path / "bad.eval"
    bad.write_bytes(b"not a zip")
    extra = [bad] if command == "agreement" else []
    proc = oab(command, bad, *extra, *(["--output", tmp_path / "r.html"] if command == "report" else []))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "error" in x]
    assert f"{bad}: not a readable inspect log" in line
