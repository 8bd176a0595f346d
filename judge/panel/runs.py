"""`oab-bench run --panel`: the panel is judged in the run's own process once lighteval has judged
the candidate, with the run's judge settings and judgment cache, and the candidate is ranked
among it.

The panel is judged on the questions the candidate was judged on (all of `--tasks`, or fewer
with `--max-samples`), after the candidate, so a `--judge-max-cost-usd` cap reaches the
candidate first and counts what its judging spent.
"""

from __future__ import annotations

import sys
from pathlib import Path

from oab_bench.conventions import PANEL_JUDGMENTS_FILE
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.jury import make_judge
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.judge.output import write_atomic
from oab_bench.judge.panel.judging import (
    Pairs,
    charge,
    dump_records,
    panel_pairs,
    panel_records,
    print_notes,
    spent_on,
)
from oab_bench.judge.panel.published import Panel, resolve_panel
from oab_bench.judge.settings import JudgeSettings
from oab_bench.keyed_store import Access


def prepare(specs: list[str], rows: list[QuestionRow], names: set[str]) -> tuple[Panel, Pairs]:
    """Before any call: the panel fetched and read, its names checked against the candidate's."""
    panel = resolve_panel(specs)
    pairs, notes = panel_pairs(panel, rows, names)
    print_notes(notes, "run")
    return panel, pairs


def judge_beside(
    settings: JudgeSettings,
    cache: Path | None,
    panel: Panel,
    pairs: Pairs,
    candidate: list[dict],
    out: Path,
    access: Access = "write",
) -> list[dict]:
    """Judge the panel's answers to the questions the candidate's `candidate` records judged;
    write them, marked, to PANEL_JUDGMENTS_FILE in `out`. Raises BatchPending as `judge` does.
    `access`: "read" when the run goes on with a read-only judgment cache (--cache-read-only)."""
    asked = {r["question_id"] for r in candidate}
    pairs = [(row, a) for row, a in pairs if row.question_id in asked]
    judge = make_judge(settings, JudgmentStore(cache, access=access))
    charge(judge, spent_on(candidate))
    print(
        f"oab-bench run: judging the panel: {len(pairs)} published answers of {len(panel.models)} models "
        f"({panel.label()})",
        file=sys.stderr,
    )
    records = panel_records(run_judge_all(judge, pairs), panel)
    write_atomic(out / PANEL_JUDGMENTS_FILE, dump_records(records))
    return records


def ranking(tables, candidate: str, panel: Panel, out: Path, records: list[dict]) -> dict:
    """The run summary's `panel` block: where the candidate stands among the panel, per the
    leaderboard's table (one judge: the run's)."""
    table = next((t for t in tables if any(r.model == candidate for r in t.rows)), None)
    rows = table.rows if table else []
    rank = next((i for i, r in enumerate(rows, start=1) if r.model == candidate), None)
    return {
        "source": panel.label(),
        "files": panel.files,
        "models": panel.models,
        "judgments": str(out / PANEL_JUDGMENTS_FILE),
        "failed_judgments": failed(records),
        "judge": table.judge if table else None,
        "rank": rank,
        "of": len(rows),
        "ranking": [
            {
                "model": r.model,
                "panel": r.panel is not None,
                "mean_exam_score": r.mean_exam_score,
                "ci_low": r.ci_low,
                "ci_high": r.ci_high,
                "passed": r.passed,
                "exams": r.exams,
                "coverage": r.coverage,
            }
            for r in rows
        ],
    }


def failed(records: list[dict]) -> list[str]:
    return [
        f"{r['model']} {r['question_id']} ({r['status']}: {r.get('error') or ''})"
        for r in records
        if r["status"] != "ok"
    ]


def rank_line(block: dict, candidate: str) -> str:
    if block["rank"] is None:
        return f"oab-bench run: {candidate} has no row in the leaderboard: not ranked among the panel"
    return (
        f"oab-bench run: {candidate} ranks {block['rank']} of {block['of']} beside the panel's "
        f"{len(block['models'])} published models ({block['source']}), judge {block['judge']}"
    )
