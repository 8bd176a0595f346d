"""Benchmark: the audit report for 12 models x 210 made-up questions of realistic length: its size, the
time to write it, and Chromium's time to open it (leaderboard, a question's page; median). Target: 2 s.
`python -m benchmarks.bench_report [--models 12] [--runs 3] [--keep report.html]`"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from oab_bench.dataset_builder.ids import AREAS
from oab_bench.dataset_builder.schema import QuestionRow

WORDS = ["direito", "processo", "recurso", "sentença", "réu", "prazo", "artigo", "tribunal", "nulidade"]
# the browser's clock at the load event; the data blobs then dropped (--dump-dom need not print 18 MB)
TIMING = (
    "<script>addEventListener('load', () => setTimeout(() => {"
    "document.title = 'LOAD=' + performance.getEntriesByType('navigation')[0].loadEventStart.toFixed(0)"
    " + ' NOW=' + performance.now().toFixed(0);"
    "for (const s of document.querySelectorAll('script[type=\"application/json\"]')) s.remove();}, 0));</script>"
)
CHROMIUM = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage"]


def text(rng: random.Random, chars: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(chars // 8))


def question(edition: int, area: str, n: int, rng: random.Random) -> QuestionRow:
    """The peça (n 0: ten rubric rows of 0.50) or questão n (items A 0.65, B 0.60; rows A1, A2, B1)."""
    peca = n == 0
    parts = [("", 5.0)] if peca else [("A", 0.65), ("B", 0.6)]
    rows = [("", f"P{i}", 0.5) for i in range(1, 11)] if peca else [("A", "A1", 0.35), ("A", "A2", 0.3)]
    rows += [] if peca else [("B", "B1", 0.6)]
    reference = [text(rng, 4000 if peca else 1200) for _ in parts]
    statement = text(rng, 3000 if peca else 1500)
    rubric = [
        {"item_id": i, "part": part, "section": "", "label": "", "max_score": m}
        | {"allowed_scores": [0.0, m / 2, m], "description": text(rng, 250 if peca else 200)}
        for part, i, m in rows
    ]
    exam = f"{edition}_direito_{area}"
    return QuestionRow.model_validate(
        {"question_id": f"{exam}_{'peca_praticoprofissional' if peca else f'questao_{n}'}", "exam_id": exam}
        | {"edition": edition, "area": area, "kind": "peca" if peca else "questao", "number": n}
        | {"system_prompt": "", "statement": statement, "max_score": 5.0 if peca else 1.25, "rubric": rubric}
        | {"items": [{"label": label, "prompt": text(rng, 200), "max_score": m} for label, m in parts]}
        | {"reference": reference}
        | {"upstream": {"statement": statement, "turns": [], "values": [], "reference_turns": reference}}
    )


def made_up(tmp: Path, n_models: int, seed: int = 0) -> tuple[dict[str, QuestionRow], Path, list[Path]]:
    """Question rows (6 editions x 7 areas x 5), one judgments file, one answer file per model."""
    rng = random.Random(seed)
    made = (question(e, a, n, rng) for e in range(39, 45) for a in AREAS for n in range(5))
    rows = {r.question_id: r for r in made}
    judgments, answers = tmp / "judgments.jsonl", [tmp / f"answers-{m:02d}.jsonl" for m in range(n_models)]
    lines = []
    for m in range(n_models):
        model, skill = f"vendor/model-{m:02d}", 0.4 + 0.5 * m / max(n_models - 1, 1)
        answer_lines = []
        for qid, row in rows.items():
            choices = [{"index": 0, "turns": [text(rng, 9000 if row.kind == "peca" else 2500)]}]
            answer_lines.append({"question_id": qid, "model_id": model, "choices": choices})
            items = [
                {"item_id": r.item_id, "max_score": r.max_score, "analysis": text(rng, 450)}
                | {"score": r.allowed_scores[min(2, int(rng.random() * skill * 3.9))]}
                for r in row.rubric
            ]
            ok = rng.random() >= 0.005  # now and then a failed judgment
            score = round(sum(i["score"] for i in items), 2) if ok else None
            lines.append(
                dict(question_id=qid, exam_id=row.exam_id, model=model, judge_model="openai/judge")
                | dict(prompt_version="oab-pt-v1", mode="structured", max_score=row.max_score)
                | dict(status="ok" if ok else "api_error", score=score)
                | dict(items=items if ok else [], judge_text=json.dumps({"items": items}) if ok else "")
                | dict(error=None if ok else "HTTP 500 from the judge server")
            )
        answers[m].write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in answer_lines))
    judgments.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
    return rows, judgments, answers


def chromium_times(exe: str, url: str, runs: int, tmp: Path) -> tuple[float, float]:
    """(median ms from navigation start to the load event, median wall s of the whole headless run)."""
    loads, walls = [], []
    for i in range(runs):
        profile = f"--user-data-dir={tmp / f'profile{i}'}"
        flags = [*CHROMIUM, "--disable-background-networking", profile, "--dump-dom"]
        start = time.perf_counter()
        dom = subprocess.run([exe, *flags, url], capture_output=True, text=True, timeout=120).stdout
        walls.append(time.perf_counter() - start)
        if not (m := re.search(r"<title>LOAD=(\d+) NOW=(\d+)</title>", dom)):
            raise SystemExit(f"no timing in the page's DOM ({url})")
        loads.append(float(m.group(1)))
    return statistics.median(loads), statistics.median(walls)


def main() -> None:
    from oab_bench.judge.audit.write import report_html

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=12)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", help="also copy the report here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rows, judgments, answers = made_up(tmp, args.models)
        start = time.perf_counter()
        html = report_html([judgments], answers, rows, expected_ids=set(rows), resamples=2000)
        written, path = time.perf_counter() - start, tmp / "report.html"
        path.write_text(html.replace("</body>", TIMING + "</body>"), encoding="utf-8")
        size = path.stat().st_size / 1e6
        print(f"{args.models} models x {len(rows)} questions: {size:.1f} MB, written in {written:.1f} s")
        if args.keep:
            shutil.copy(path, args.keep)
        if not (exe := shutil.which("chromium") or shutil.which("chromium-browser")):
            raise SystemExit("chromium not installed (apt-get install chromium)")
        (tmp / "blank.html").write_text("<!doctype html><title>x</title>" + TIMING)
        _, base_wall = chromium_times(exe, (tmp / "blank.html").as_uri(), args.runs, tmp)
        for name, fragment in (("leaderboard", ""), ("a question's page", "#j1234")):
            load, wall = chromium_times(exe, path.as_uri() + fragment, args.runs, tmp)
            print(
                f"chromium, {name}: load event at {load / 1000:.2f} s after navigation start; "
                f"headless run {wall:.2f} s (a blank page: {base_wall:.2f} s)"
            )


if __name__ == "__main__":
    main()
