"""The panel judged beside a candidate: its judgments marked, the cost cap shared, its bill, its rank."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from oab_bench.conventions import PANEL_JUDGMENTS_FILE
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.bill import Estimate, added, print_estimate
from oab_bench.judge.grading.judge_answers import Beside
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.jury import make_judge
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.judge.output import write_atomic
from oab_bench.judge.panel.published import Panel, prepare
from oab_bench.judge.records import Judgment
from oab_bench.judge.settings import JudgeSettings


def marked_records(judgments: Iterable[Judgment], sources: Mapping[str, str]) -> list[dict]:
    """Judgment records, a panel model's (`sources`: model -> its answers' source) marked `panel`."""
    return [j.record() | ({"panel": sources[j.model]} if j.model in sources else {}) for j in judgments]


def dump_records(records: Iterable[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def graders(judge) -> list:
    """Who grades and keeps a judgment of its own: each repeat, each jury member, or the judge."""
    return getattr(judge, "runs", None) or getattr(judge, "members", None) or [judge]


def charge(judge, spent: float) -> None:
    """What the candidate's judging spent counts against the panel's --max-cost-usd."""
    first = graders(judge)[0]
    if first.budget is not None:
        first.budget.spent += spent


def unstored(judge, pairs: list[tuple[QuestionRow, Answer]]) -> int:
    """The gradings of `pairs` the judge's cache lacks (each member's and repeat's apart)."""
    return sum(g.to_call(row, answer)[2] is not None for g in graders(judge) for row, answer in pairs)


def print_with_panel(candidate: Estimate, panel_est: Estimate, panel: Panel, fmt: str, note: str = "") -> int:
    both = added([candidate, panel_est], candidate.judge_model).total
    if fmt == "json":
        doc = candidate.model_dump(mode="json") | {
            "panel": panel_est.model_dump(mode="json") | {"source": panel.label()},
            "total_with_panel": both.model_dump(mode="json"),
        }
        print(json.dumps(doc, indent=2))
        return 0
    print_estimate(candidate, "text", note)
    print(f"\npanel ({len(panel.models)} models, published answers: {panel.label()}), apart:")
    print_estimate(panel_est, "text", "The panel is judged with the candidate's judge and settings.")
    cost, batch = ("unknown" if x is None else f"${x:.4f}" for x in (both.cost_usd, both.cost_usd_batch))
    print(
        f"\ncandidate + panel: {both.calls} calls, {both.prompt_tokens} prompt tokens, "
        f"{both.completion_tokens} completion tokens, {cost} (batch {batch})"
    )
    return 0


def judge_command_share(specs: list[str]) -> Callable[[list[QuestionRow], list[Answer]], Beside]:
    """`oab-bench judge --panel`: what `run_judge_command` judges beside the candidates' answers."""

    def beside(rows: list[QuestionRow], answers: list[Answer]) -> Beside:
        panel, pairs = prepare(specs, rows, {a.model for a in answers}, "judge")
        return Beside(
            pairs=pairs,
            print_estimate=lambda candidates, extra, fmt: print_with_panel(candidates, extra, panel, fmt),
            dump=lambda judgments: dump_records(marked_records(judgments, panel.sources)),
        )

    return beside


def judge_beside(
    settings: JudgeSettings,
    cache: Path | None,
    panel: Panel,
    pairs: list,
    candidate: list[dict],
    out: Path,
    access="write",
) -> list[dict]:
    """The panel's answers to the candidate's questions judged and written, marked, to `out`."""
    asked = {r["question_id"] for r in candidate}
    pairs = [(row, a) for row, a in pairs if row.question_id in asked]
    judge = make_judge(settings, JudgmentStore(cache, access=access))
    charge(judge, sum(r.get("cost_usd") or 0.0 for r in candidate if not r.get("cached")))
    todo = sum(any(g.to_call(row, a)[2] is not None for g in graders(judge)) for row, a in pairs)
    what = f"{len(pairs)} published answers of {len(panel.models)} models ({panel.label()})"
    calls = f"{todo} to judge now, {len(pairs) - todo} need no call (in the judgment cache, or empty)"
    print(f"oab-bench run: judging the panel: {what}: {calls}", file=sys.stderr)
    records = marked_records(run_judge_all(judge, pairs), panel.sources)
    write_atomic(out / PANEL_JUDGMENTS_FILE, dump_records(records))
    return records


def ranking(tables, candidate: str, panel: Panel, out: Path, records: list[dict]) -> dict:
    """The run summary's `panel` block: the candidate's shared rank, its ties, whose intervals overlap its."""
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
    tied, unsettled = ", ".join(block["tied"]), ", ".join(block["unsettled"])
    line += f"; it ties with {tied} (the same exam score)" * bool(tied)
    open_order = f"; its order with {unsettled} is not settled (their 95% intervals overlap)"
    return line + open_order * bool(unsettled)
