"""Benchmark: the HTML audit report for 12 models x 210 made-up questions (answers, rubrics and
analyses of realistic length), its size, and how long Chromium takes to open it.

Prints the file size, the time to write it, and Chromium's times (navigation start to the load
event, for the leaderboard and for a question's page), median of a few runs. Target: under 2 s.

    python -m benchmarks.bench_report [--models 12] [--runs 3] [--keep report.html]
"""

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

EDITIONS = range(39, 45)  # 6 editions x 7 areas x 5 questions = 210
WORDS = [
    "direito",
    "processo",
    "recurso",
    "sentença",
    "réu",
    "autor",
    "prazo",
    "artigo",
    "código",
    "tribunal",
    "competência",
    "nulidade",
]
# read the browser's own clock at the load event; then drop the data blobs, so that --dump-dom
# (how the time is read back) does not spend its time printing 18 MB of JSON
TIMING = (
    "<script>addEventListener('load', () => setTimeout(() => {"
    "document.title = 'LOAD=' + performance.getEntriesByType('navigation')[0].loadEventStart.toFixed(0)"
    " + ' NOW=' + performance.now().toFixed(0);"
    "for (const s of document.querySelectorAll('script[type=\"application/json\"]')) s.remove();}, 0));</script>"
)


def text(rng: random.Random, chars: int) -> str:
    out, n = [], 0
    while n < chars:
        w = rng.choice(WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)


def question(qid: str, edition: int, area: str, n: int, rng: random.Random) -> QuestionRow:
    peca = n == 0
    if peca:
        parts = [("", 5.0)]
        rubric = [
            {
                "item_id": f"P{i}",
                "part": "",
                "section": "",
                "label": f"{i}.",
                "max_score": 0.5,
                "allowed_scores": [0.0, 0.25, 0.5],
                "description": text(rng, 250),
            }
            for i in range(1, 11)
        ]
    else:
        parts = [("A", 0.65), ("B", 0.6)]
        rubric = [
            {
                "item_id": "A1",
                "part": "A",
                "section": "",
                "label": "",
                "max_score": 0.35,
                "allowed_scores": [0.0, 0.1, 0.25, 0.35],
                "description": text(rng, 200),
            },
            {
                "item_id": "A2",
                "part": "A",
                "section": "",
                "label": "",
                "max_score": 0.3,
                "allowed_scores": [0.0, 0.15, 0.3],
                "description": text(rng, 200),
            },
            {
                "item_id": "B1",
                "part": "B",
                "section": "",
                "label": "",
                "max_score": 0.6,
                "allowed_scores": [0.0, 0.3, 0.6],
                "description": text(rng, 200),
            },
        ]
    statement = text(rng, 3000 if peca else 1500)
    reference = [text(rng, 4000 if peca else 1200) for _ in parts]
    return QuestionRow.model_validate(
        {
            "question_id": qid,
            "edition": edition,
            "area": area,
            "exam_id": f"{edition}_direito_{area}",
            "kind": "peca" if peca else "questao",
            "number": n,
            "system_prompt": "",
            "statement": statement,
            "items": [{"label": label, "prompt": text(rng, 200), "max_score": m} for label, m in parts],
            "max_score": 5.0 if peca else 1.25,
            "reference": reference,
            "rubric": rubric,
            "upstream": {"statement": statement, "turns": [], "values": [], "reference_turns": reference},
        }
    )


def made_up(tmp: Path, n_models: int, seed: int = 0) -> tuple[dict[str, QuestionRow], Path, list[Path]]:
    """Question rows, one judgments file, one answer file per model (FastChat: one model a file)."""
    rng = random.Random(seed)
    rows = {}
    for edition in EDITIONS:
        for area in AREAS:
            for n in range(5):
                qid = f"{edition}_direito_{area}_" + (
                    "peca_praticoprofissional" if n == 0 else f"questao_{n}"
                )
                rows[qid] = question(qid, edition, area, n, rng)
    judgments, answers = tmp / "judgments.jsonl", [tmp / f"answers-{m:02d}.jsonl" for m in range(n_models)]
    with judgments.open("w") as jf:
        for m in range(n_models):
            model, skill = f"vendor/model-{m:02d}", 0.4 + 0.5 * m / max(n_models - 1, 1)
            af = answers[m].open("w")
            for qid, row in rows.items():
                answer = text(rng, 9000 if row.kind == "peca" else 2500)
                af.write(
                    json.dumps(
                        {"question_id": qid, "model_id": model, "choices": [{"index": 0, "turns": [answer]}]},
                        ensure_ascii=False,
                    )
                    + "\n"
                )
                items = [
                    {
                        "item_id": r.item_id,
                        "max_score": r.max_score,
                        "analysis": text(rng, 450),
                        "score": r.allowed_scores[
                            min(
                                len(r.allowed_scores) - 1,
                                int(rng.random() * skill * len(r.allowed_scores) * 1.3),
                            )
                        ],
                    }
                    for r in row.rubric
                ]
                failed = rng.random() < 0.005
                score = round(sum(i["score"] for i in items), 2)
                jf.write(
                    json.dumps(
                        {
                            "question_id": qid,
                            "exam_id": row.exam_id,
                            "model": model,
                            "judge_model": "openai/judge",
                            "prompt_version": "oab-pt-v1",
                            "mode": "structured",
                            "status": "api_error" if failed else "ok",
                            "score": None if failed else score,
                            "max_score": row.max_score,
                            "items": [] if failed else items,
                            "judge_text": "" if failed else json.dumps({"items": items}, ensure_ascii=False),
                            "error": "HTTP 500 from the judge server" if failed else None,
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
            af.close()
    return rows, judgments, answers


def chromium_times(exe: str, url: str, runs: int, tmp: Path) -> tuple[float, float]:
    """(median ms from navigation start to the load event, median wall s of the whole headless run)."""
    loads, walls = [], []
    for i in range(runs):
        cmd = [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-dev-shm-usage",
            f"--user-data-dir={tmp / f'profile{i}'}",
            "--dump-dom",
            url,
        ]
        start = time.perf_counter()
        dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
        walls.append(time.perf_counter() - start)
        m = re.search(r"<title>LOAD=(\d+) NOW=(\d+)</title>", dom)
        if not m:
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
        written = time.perf_counter() - start
        path = tmp / "report.html"
        path.write_text(html.replace("</body>", TIMING + "</body>"), encoding="utf-8")
        size = path.stat().st_size
        print(
            f"{args.models} models x {len(rows)} questions: {size / 1e6:.1f} MB, written in {written:.1f} s"
        )
        if args.keep:
            shutil.copy(path, args.keep)
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            raise SystemExit("chromium not installed (apt-get install chromium)")
        blank = tmp / "blank.html"
        blank.write_text("<!doctype html><title>x</title>" + TIMING)
        _, base_wall = chromium_times(exe, blank.as_uri(), args.runs, tmp)
        for name, fragment in (("leaderboard", ""), ("a question's page", "#j1234")):
            load, wall = chromium_times(exe, path.as_uri() + fragment, args.runs, tmp)
            print(
                f"chromium, {name}: load event at {load / 1000:.2f} s after navigation start; "
                f"headless run {wall:.2f} s (a blank page: {base_wall:.2f} s)"
            )


if __name__ == "__main__":
    main()
