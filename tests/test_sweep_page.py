"""The sweep's page (judge/sweep/sweep_page.py): sweep.html beside sweep.json, and a sweep given to
`oab-bench report` as a page of the audit report, or alone. Judge names are text, never markup."""

from __future__ import annotations

import json
import re

import pytest

from oab_bench.judge.sweep.decide import Rule, decide
from oab_bench.judge.sweep.sweep_page import sweep_view, write_sweep_page
from oab_bench.scripts.cli import main
from tests.helpers import exam_records
from tests.sweep_cases import judge_row

XSS = "<script>alert(1)</script>"
PNG = "data:image/png;base64,"


@pytest.fixture
def made_up():
    """A reference and seven candidates: blind, failed, not sure enough, chosen (with a hostile
    name), dearer, flipping, unpriced."""
    ref = judge_row("openai/ref,effort=high", 2.34).model_copy(update={"agreement": None})
    rows = [
        judge_row("openai/blind", 0.01, verdict="does not discriminate", kappa=1.0, low=1.0),
        judge_row("openai/broken", 0.001, failed="80 of 80 gradings not made (api_error): 404"),
        judge_row("openai/wide", 0.5, kappa=0.95, low=0.7),
        judge_row(f"openai/x{XSS}", 1.0),
        judge_row("jury:openai/a|openai/b", 3.0),
        judge_row("openai/flippy $5", 0.2, flips=0.2),
        judge_row("openai/unpriced", None),
    ]
    return decide(ref, rows, Rule())


def section(html: str, anchor: str) -> str:
    return html.split(f'<section id="{anchor}"', 1)[1].split("</section>", 1)[0]


def test_the_page_names_every_judge_marks_the_decision_and_embeds_the_plot(made_up, tmp_path):
    report, why = made_up
    path = write_sweep_page(
        [sweep_view(report, why=why, scaled="scaled: 10 of 105")], tmp_path / "s.html", "t"
    )
    html = path.read_text(encoding="utf-8")
    page = section(html, "sweep")
    assert "<script" not in html and "script-src 'none'" in html  # the page runs nothing
    assert XSS not in html and "openai/x&lt;script&gt;alert(1)&lt;/script&gt;" in page
    rows = re.findall(r'<tr class="sweep-row([^"]*)" data-judge="([^"]*)">', page)
    names = [j.judge.replace("<", "&lt;").replace(">", "&gt;") for j in report.judges]
    assert [n for _, n in rows] == names  # every judge, sorted by cost as the report is
    marks = {n: set(c.split()) for c, n in rows}
    assert marks["openai/ref,effort=high"] == {"reference"} and marks["openai/broken"] == {"failed"}
    assert marks["openai/x&lt;script&gt;alert(1)&lt;/script&gt;"] == {"recommended"}
    assert page.count(PNG) == 1 and "scaled: 10 of 105" in page and "lower end of its 95% interval" in page
    assert "<b>openai/broken</b>: 80 of 80 gradings not made" in page.split("Failed judges", 1)[1]
    chosen = page.split("Not chosen", 1)[1]
    assert "openai/wide</b>: kappa_pass lower bound 0.70 &lt; 0.8" in chosen and "openai/broken" not in chosen


@pytest.mark.slow
def test_report_shows_a_sweep_as_a_page_or_alone(made_up, tmp_path, capsys):
    report, _ = made_up
    folder = tmp_path / "sweep"
    folder.mkdir()
    (folder / "sweep.json").write_text(report.model_dump_json(), encoding="utf-8")
    judged = tmp_path / "judgments.jsonl"
    judged.write_text(
        "".join(json.dumps(r) + "\n" for r in exam_records("m", "judge-a", "90_direito_civil", 4.0, 1.0)),
        encoding="utf-8",
    )
    assert main(["report", str(folder), "--output", str(tmp_path / "alone.html")]) == 0
    alone = (tmp_path / "alone.html").read_text(encoding="utf-8")
    assert "<script" not in alone and section(alone, "sweep-1").count(PNG) == 1

    out = tmp_path / "both.html"
    args = ["report", str(judged), str(folder / "sweep.json"), "--output", str(out), "--resamples", "50"]
    assert main(args) == 0
    html = out.read_text(encoding="utf-8")
    assert '<a href="#sweep-1">Judge sweep</a>' in html and 'data-model="m"' in html
    page = section(html, "sweep-1")
    assert "openai/x&lt;script&gt;alert(1)&lt;/script&gt;" in page and XSS not in html
    assert page.count(PNG) == 1 and html.count(PNG) == 2  # the leaderboard's picture and the sweep's


def test_a_sweep_json_that_is_not_one_names_its_file_and_field(made_up, tmp_path, capsys):
    report, _ = made_up
    bad = json.loads(report.model_dump_json())
    bad["judges"][0]["calls"] = "many"
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(path), "--output", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "judges.0.calls" in err and not (tmp_path / "x.html").exists()


@pytest.mark.slow
def test_the_sweep_page_of_a_report_in_headless_chromium(made_up, tmp_path):
    from tests.helpers import browse, chromium

    exe = chromium()
    report, _ = made_up
    (tmp_path / "sweep.json").write_text(report.model_dump_json(), encoding="utf-8")
    judged = tmp_path / "judgments.jsonl"
    judged.write_text(
        "".join(json.dumps(r) + "\n" for r in exam_records("m", "judge-a", "90_direito_civil", 4.0, 1.0)),
        encoding="utf-8",
    )
    out = tmp_path / "report.html"
    assert main(["report", str(judged), str(tmp_path / "sweep.json"), "--output", str(out)]) == 0
    dom = browse(exe, out.as_uri() + "#sweep-1", tmp_path, "--dump-dom", "--virtual-time-budget=2000").stdout
    assert '<section id="sweep-1" class="page sweep active">' in dom  # the page the link opens
    assert '<section id="leaderboard" class="page">' in dom
    page = section(dom, "sweep-1")
    assert "openai/x&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in dom
    assert len(re.findall(r'<tr class="sweep-row', page)) == len(report.judges)


def test_a_page_whose_code_cannot_even_be_imported_is_a_note_not_a_failed_sweep(
    monkeypatch, tmp_path, capsys
):
    """sweep.json is written before the page: a page that cannot be made (its imports included, such
    as matplotlib's) is one note, never a failed sweep."""
    from oab_bench.judge.sweep.sweep import write_page

    monkeypatch.setitem(__import__("sys").modules, "oab_bench.judge.sweep.sweep_page", None)
    write_page(None, {}, "", tmp_path)
    err = capsys.readouterr().err
    assert "note: no sweep.html (ModuleNotFoundError: " in err and "sweep_page" in err
    assert not (tmp_path / "sweep.html").exists()
