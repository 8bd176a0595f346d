"""The HTML audit report, opened in a real browser (headless Chromium): the published sample and
published answers, plus an exam judged through the local test server, one judgment failing and
one answer trying to run a script."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.answers import Answer, load_fastchat_answers
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.runner import run_judge_all
from tests.conftest import oab
from tests.helpers import browse, chromium, settings

EXAM = "39_direito_penal"
XSS = "<script>alert(1)</script>"
MARKER = '<img src=x onerror="document.body.dataset.xss=1">'  # would show that anything ran
# where the screenshots go: a temporary folder unless set (to look at them; they show exam text,
# so never inside the checkout's tracked files)
SCREENSHOTS_ENV = "OAB_REPORT_SCREENSHOTS"


def judged_exam(server, rows, answers: list[Answer]) -> list[dict]:
    judge = Judge(settings(server, judge_model="openai/judge-report", max_attempts=1), None)
    by_id = {r.question_id: r for r in rows}
    pairs = [(by_id[a.question_id], a) for a in answers]
    return [j.record() for j in run_judge_all(judge, pairs, progress=False)]


@pytest.fixture(scope="module")
def report(tmp_path_factory, built_rows, built_dataset, upstream_v1):
    from tests.openai_stub import StubServer

    tmp = tmp_path_factory.mktemp("report")
    rows, _ = built_rows
    exam_ids = sorted((r.question_id for r in rows if r.exam_id == EXAM), key=lambda q: ("peca" not in q, q))
    published = [
        a
        for f in ("o3-2025-04-16.jsonl", "sabia-3.1-2025-05-08.jsonl")
        for a in load_fastchat_answers(upstream_v1 / "model_answer" / f)
        if a.question_id in exam_ids
    ]
    made_up = {
        exam_ids[0]: "Peça escrita pelo candidato.",
        exam_ids[1]: f"Resposta {XSS} com {MARKER} no meio.",
        exam_ids[2]: "FALHA-INJETADA: o juiz não responde a esta.",
        **{q: "Resposta curta." for q in exam_ids[3:]},
    }
    xss_file = tmp / "model-xss.jsonl"
    xss_file.write_text(
        "".join(
            json.dumps({"question_id": q, "model_id": "model-xss", "choices": [{"index": 0, "turns": [t]}]})
            + "\n"
            for q, t in made_up.items()
        ),
        encoding="utf-8",
    )
    answers = published + load_fastchat_answers(xss_file)
    with (
        pytest.MonkeyPatch.context() as env,
        StubServer(policy="alternate", faults=[{"kind": "400", "match": "FALHA-INJETADA"}]) as server,
    ):
        env.setenv("OAB_JUDGE_API_KEY", "sk-report-test")  # this module's fixture only
        judgments = judged_exam(server, rows, answers)
    jfile = tmp / "judgments.jsonl"
    jfile.write_text("".join(json.dumps(j, ensure_ascii=False) + "\n" for j in judgments), encoding="utf-8")
    html = tmp / "report.html"
    cmd = ["report", str(jfile)]
    cmd += [str(upstream_v1 / "model_judgment" / "o3-2025-04-16_single.sample.jsonl")]
    cmd += [str(upstream_v1 / "model_answer" / "o3-2025-04-16.jsonl"), "--answers"]
    cmd += [str(upstream_v1 / "model_answer" / "sabia-3.1-2025-05-08.jsonl"), str(xss_file)]
    cmd += ["--dataset", str(built_dataset), "--output", str(html), "--resamples", "200"]
    proc = oab(*cmd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return html, judgments


def blob(html: str, name: str):
    m = re.search(rf'<script type="application/json" id="data-{name}">(.*?)</script>', html, re.DOTALL)
    return json.loads(m.group(1))


def test_report_file_is_self_contained_and_escaped(report):
    html_path, judgments = report
    html = html_path.read_text(encoding="utf-8")
    assert XSS not in html and "onerror=" not in html.replace("\\u003c", "<").split("<script")[0]
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # no network at view time
    assert "data:image/png;base64," in html
    statuses = {(j["model"], j["status"]) for j in judgments}
    assert ("model-xss", "api_error") in statuses and ("o3-2025-04-16", "ok") in statuses
    data = blob(html, "judgments")
    failed = next(j for j in data if j["status"] == "api_error")
    assert failed["score"] is None and "400" in (failed["error"] or "")  # a failure, never a zero


@pytest.mark.slow
def test_report_in_headless_chromium(report, tmp_path):
    exe = chromium()
    html_path, _ = report
    html = html_path.read_text(encoding="utf-8")
    data = blob(html, "judgments")
    jid = next(
        i
        for i, j in enumerate(data)
        if j["model"] == "model-xss" and j["status"] == "ok" and j["question_id"].endswith("questao_1")
    )
    url = html_path.as_uri()
    shots = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    for name, fragment in (("leaderboard", ""), ("question", f"#j{jid}")):
        shot = shots / f"{name}.png"
        shot.unlink(missing_ok=True)
        browse(exe, url + fragment, tmp_path, f"--screenshot={shot}", "--window-size=1280,1800")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000

    dom = browse(exe, url + f"#j{jid}", tmp_path, "--dump-dom", "--virtual-time-budget=2000").stdout
    # the leaderboard: one row per (judge, model), the models by name
    rows = re.findall(r'<tr class="lb-row" data-model="([^"]+)"', dom)
    two_judges = ["o3-2025-04-16", "sabia-3.1-2025-05-08"]  # upstream's sample and our test judge
    assert sorted(rows) == sorted([*two_judges, *two_judges, "model-xss"])
    # the drill-down, built by the page's script: this question's rubric items with their scores
    page = dom.split('<section id="judgment" class="page active">', 1)[1].split("</section>", 1)[0]
    items = re.findall(r'<tr class="item" data-item="([^"]+)">(.*?)</tr>', page, re.DOTALL)
    rubric = data[jid]["items"]
    assert [i for i, _ in items] == [i["item_id"] for i in rubric] and rubric
    for (_, cells), item in zip(items, rubric, strict=True):
        assert f"{item['score']:.2f} / {item['max_score']:.2f}" in cells
        assert '<span class="given">' in cells  # the score given, marked among the allowed ones
    # the untrusted answer is text: escaped in the DOM, no element made from it, nothing ran
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in dom and 'src="x"' not in dom and "data-xss" not in dom
    # the failed judgment: listed with its status and error, never a zero
    failures = dom.split('<section id="failures"', 1)[1].split("</section>", 1)[0]
    assert "api_error" in failures and "injected 400" in failures
    # two judges graded o3 and sabiá on the same exam: their largest disagreements are listed
    assert re.search(r'<section id="disagreements"[^>]*>.*?<a class="chip" href="#j\d+">', dom, re.DOTALL)


# --- made-up judgments: a jury, probes, two judges, a hostile model name ---------------------


@pytest.fixture(scope="module")
def made_up_report(tmp_path_factory):
    from oab_bench.judge.audit.write import report_html
    from tests.helpers import exam_records

    tmp = tmp_path_factory.mktemp("made_up")
    recs = exam_records("<b>bold</b>-model", "judge-a", "90_direito_civil", 4.0, 1.0, failed=(2,))
    recs += exam_records("<b>bold</b>-model", "judge-b", "90_direito_civil", 2.0, 0.25)
    recs += exam_records("probe:reference", "judge-a", "90_direito_civil", 5.0, 1.25)
    recs += exam_records("probe:empty", "judge-a", "90_direito_civil", 0.0, 0.0)
    for r in recs:
        r["error"] = "injected: the judge server answered 500" if r["status"] != "ok" else None
        if r["status"] == "ok":
            r["items"] = [
                {"item_id": "X1", "score": r["score"], "max_score": r["max_score"], "analysis": "ok"}
            ]
    recs[0]["members"] = [
        {"judge_model": "member-one", "status": "ok", "score": 4.0, "items": {"X1": 4.0}},  # as MemberScore
        {"judge_model": "member-two", "status": "api_error", "score": None, "error": "member failed"},
    ]
    path = tmp / "judgments.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    html = tmp / "report.html"
    html.write_text(report_html([path], [], {}, resamples=200), encoding="utf-8")
    return html


def test_made_up_report_sections(made_up_report):
    html = made_up_report.read_text(encoding="utf-8")
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;-model" in html  # names are text too
    lb = html.split('<section id="leaderboard"', 1)[1].split("</section>", 1)[0]
    assert "probe:" not in lb  # probes are not candidates
    probes = html.split('<section id="probes"', 1)[1].split("</section>", 1)[0]
    assert "reference" in probes and "100%" in probes and "empty" in probes and "0%" in probes
    disagreements = html.split('<section id="disagreements"', 1)[1].split("</section>", 1)[0]
    assert "90_direito_civil_peca_praticoprofissional" in disagreements and "2.00/5.00" in disagreements
    failures = html.split('<section id="failures"', 1)[1].split("</section>", 1)[0]
    assert "api_error" in failures and "the judge server answered 500" in failures
    data = blob(html, "judgments")
    assert [m["judge_model"] for m in data[0]["members"]] == ["member-one", "member-two"]


def test_made_up_report_jury_in_chromium(made_up_report, tmp_path):
    exe = chromium()
    dom = browse(exe, made_up_report.as_uri() + "#j0", tmp_path, "--dump-dom").stdout
    page = dom.split('<section id="judgment" class="page active">', 1)[1].split("</section>", 1)[0]
    assert "Jury members" in page and "member-one" in page and "member failed" in page
    member = page.split("member-one", 1)[1].split("member-two", 1)[0]
    assert re.search(r'<tr class="item" data-item="X1">.*?4\.00', member, re.DOTALL)  # its item scores
    assert "answer not available" in page and "Question text not available" in page


def test_bad_input_names_file_and_line_and_writes_nothing(made_up_report, tmp_path):
    bad = tmp_path / "answers.jsonl"
    bad.write_text('{"question_id": "90_direito_civil_questao_1", "model_id": "m", "choices": []}\n')
    out = tmp_path / "report.html"
    judgments = made_up_report.parent / "judgments.jsonl"
    proc = oab("report", judgments, "--answers", bad, "--output", out)
    assert proc.returncode == 2 and f"oab-bench report: error: {bad}:1" in proc.stderr
    assert not out.exists()


# --- the same inputs in another order: the same file ---------------------------------------------


def _answers_file(path: Path, model: str, texts: dict[str, str]) -> Path:
    lines = [
        json.dumps({"question_id": q, "model_id": model, "choices": [{"index": 0, "turns": [t]}]}) + "\n"
        for q, t in texts.items()
    ]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_the_report_is_the_same_file_whatever_the_order_and_shows_the_judgment_that_counts(tmp_path):
    from oab_bench.judge.audit.write import report_html
    from tests.helpers import exam_records

    exam = "90_direito_civil"
    failed = exam_records("model-r", "judge-a", exam, 4.0, 1.0, failed=(1,))
    for r in failed:
        r["error"] = "injected: judge timed out" if r["status"] != "ok" else None
    redone = exam_records("model-r", "judge-a", exam, 4.0, 1.0)  # the same questions judged again: all ok
    for r in redone:
        r["items"] = [{"item_id": "X1", "score": r["score"], "max_score": r["max_score"], "analysis": "fine"}]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in failed), encoding="utf-8")
    b.write_text("".join(json.dumps(r) + "\n" for r in redone), encoding="utf-8")
    both = tmp_path / "both.jsonl"  # one file: the failure, then the judgment made again
    both.write_text(a.read_text() + b.read_text(), encoding="utf-8")
    texts = {r["question_id"]: f"resposta {n}" for n, r in enumerate(redone)}
    ans = [_answers_file(tmp_path / f"ans-{n}.jsonl", "model-r", texts) for n in range(2)]  # copies

    one = report_html([a, b, ans[0]], [ans[1]], {}, resamples=50)
    two = report_html([ans[1], b, a], [ans[0]], {}, resamples=50)
    assert one == two
    failures = one.split('<section id="failures"', 1)[1].split("</section>", 1)[0]
    assert "api_error" not in failures  # the leaderboard counts the ok judgment: so does every page
    qid = f"{exam}_questao_1"
    for html in (one, report_html([both], [], {}, resamples=50)):
        chosen = [j for j in blob(html, "judgments") if j["question_id"] == qid and j["status"] == "ok"]
        assert chosen and all(j["items"][0]["analysis"] == "fine" and j["error"] is None for j in chosen)
        model = html.split('<section id="m0"', 1)[1].split("</section>", 1)[0]
        jid = int(re.search(r'href="#j(\d+)">questao_1: ', model).group(1))
        assert blob(html, "judgments")[jid]["status"] == "ok"

    other = _answers_file(tmp_path / "other.jsonl", "model-r", dict(texts, **{qid: "outra resposta"}))
    for order in ([ans[0], other], [other, ans[0]]):
        with pytest.raises(SourceError) as e:
            report_html([b], order, {}, resamples=50)
        assert str(e.value).startswith(f"{ans[0]}:2: model-r answers {qid} differently")


def test_a_model_page_says_what_judging_it_cost_in_all(tmp_path):
    from oab_bench.judge.audit.write import report_html
    from tests.helpers import exam_records

    priced = exam_records("model-c", "judge-a", "90_direito_civil", 4.0, 1.0)
    for n, r in enumerate(priced):
        r["cost_usd"], r["cached"] = 0.01, n > 2  # cached or not, a judgment cost what it cost when paid
    unpriced = exam_records("model-d", "judge-a", "90_direito_civil", 4.0, 1.0)
    unpriced[0]["cost_usd"] = 0.02
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in priced + unpriced), encoding="utf-8")
    html = report_html([path], [], {}, resamples=50)
    assert "judging them cost in all: $0.0500 " in html
    assert "judging them cost in all: $0.0200 for 1 of its judgments with a recorded cost" in html


@pytest.mark.parametrize(
    ("summary", "says"),
    [
        ("[1]", "a JSON object, not list"),
        ('{"model": "m", "cost_usd_total": "12"}', "field 'cost_usd_total': '12' is not a cost in USD"),
        ('{"model": "m", "cost_usd_total": true}', "field 'cost_usd_total': True is not a cost in USD"),
    ],
)
def test_a_run_summary_not_ours_to_read_is_one_line_naming_it(tmp_path, summary, says):
    from oab_bench.dataset_builder.errors import SourceError
    from oab_bench.judge.audit.collect import paid_in_all

    (tmp_path / "oab_bench_summary.json").write_text(summary, encoding="utf-8")
    with pytest.raises(SourceError) as e:
        paid_in_all(tmp_path, [])
    assert str(e.value).startswith(str(tmp_path / "oab_bench_summary.json")) and says in str(e.value)
    (tmp_path / "oab_bench_summary.json").write_text('{"model": "m"}', encoding="utf-8")
    assert paid_in_all(tmp_path, []) == {}  # no total said: the judgments' own costs are used
