"""`oab-bench run --panel`: the panel judged in the run's own process once lighteval has judged the
candidate (on the same questions: `--max-samples` cuts the panel too), with the run's judge settings
and judgment cache, so a `--judge-max-cost-usd` cap reaches the candidate first; then the candidate's
place among the panel's published models.
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
from oab_bench.judge.panel import judging
from oab_bench.judge.panel.judging import Pairs
from oab_bench.judge.panel.published import Panel, resolve_panel
from oab_bench.judge.settings import JudgeSettings


def prepare(specs: list[str], rows: list[QuestionRow], names: set[str]) -> tuple[Panel, Pairs]:
    """Before any call: the panel fetched and read, its names checked against the candidate's."""
    panel = resolve_panel(specs)
    pairs, notes = judging.panel_pairs(panel, rows, names)
    judging.print_notes(notes, "run")
    return panel, pairs


def judge_beside(
    settings: JudgeSettings,
    cache: Path | None,
    panel: Panel,
    pairs: Pairs,
    candidate: list[dict],
    out: Path,
    access="write",
) -> list[dict]:
    """Judge the panel's answers to the questions the `candidate` records judged;
    write them, marked, to PANEL_JUDGMENTS_FILE in `out`. Raises BatchPending as `judge` does.
    `access`: "read" when the run goes on with a read-only judgment cache (--cache-read-only)."""
    asked = {r["question_id"] for r in candidate}
    pairs = [(row, a) for row, a in pairs if row.question_id in asked]
    judge = make_judge(settings, JudgmentStore(cache, access=access))
    judging.charge(judge, sum(r.get("cost_usd") or 0.0 for r in candidate if not r.get("cached")))
    todo = sum(any(g.to_call(row, a)[2] is not None for g in judging.graders(judge)) for row, a in pairs)
    print(
        f"oab-bench run: judging the panel: {len(pairs)} published answers of {len(panel.models)} models "
        f"({panel.label()}): {todo} to judge now, {len(pairs) - todo} need no call (in the judgment cache, "
        "or empty)",
        file=sys.stderr,
    )
    records = judging.marked_records(run_judge_all(judge, pairs), panel.sources)
    write_atomic(out / PANEL_JUDGMENTS_FILE, judging.dump_records(records))
    return records


def ranking(tables, candidate: str, panel: Panel, out: Path, records: list[dict]) -> dict:
    """The run summary's `panel` block: the candidate's place among the panel in the leaderboard's
    table (the run's judge): its shared rank, who ties with it, and whose 95% interval overlaps its."""
    table = next((t for t in tables if any(r.model == candidate for r in t.rows)), None)
    rows = table.rows if table else []
    me = next((r for r in rows if r.model == candidate), None)

    def overlaps(r) -> bool:  # no interval (one exam): the order is not settled either
        return None in (me.ci_low, r.ci_low) or (me.ci_low <= r.ci_high and r.ci_low <= me.ci_high)

    others = [r for r in rows if me and r is not me and r.mean_exam_score is not None]
    keys = ("model", "mean_exam_score", "ci_low", "ci_high", "passed", "exams", "coverage")
    return {
        "source": panel.label(),
        "files": panel.files,
        "models": panel.models,
        "judgments": str(out / PANEL_JUDGMENTS_FILE),
        "failed_judgments": [
            f"{r['model']} {r['question_id']} ({r['status']}: {r.get('error') or ''})"
            for r in records
            if r["status"] != "ok"
        ],
        "judge": table.judge if table else None,
        "rank": me and me.rank,
        "of": len(rows),
        "tied": [r.model for r in others if r.rank == me.rank],
        "unsettled": [r.model for r in others if r.rank != me.rank and overlaps(r)],
        "ranking": [
            r.model_dump(include=set(keys)) | {"panel": r.panel is not None, "rank": r.rank} for r in rows
        ],
    }


def rank_line(block: dict, candidate: str) -> str:
    if block["rank"] is None:
        return f"oab-bench run: {candidate} has no row in the leaderboard: not ranked among the panel"
    line = (
        f"oab-bench run: {candidate} ranks {'=' * bool(block['tied'])}{block['rank']} of {block['of']} beside "
        f"the panel's {len(block['models'])} published models ({block['source']}), judge {block['judge']}"
    )
    if block["tied"]:
        line += f"; it ties with {', '.join(block['tied'])} (the same exam score)"
    if block["unsettled"]:
        line += (
            f"; its order with {', '.join(block['unsettled'])} is not settled (their 95% intervals overlap)"
        )
    return line
