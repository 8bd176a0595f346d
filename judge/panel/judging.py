"""The panel's share of a judging command: which of its answers are judged, how their judgments
are marked, and the cost cap they share with the candidate.

The panel goes through the normal path (judge/grading/runner.py): the same judge, cache, dedup,
budget and batch as the candidate's answers. Only questions judged for the candidate are judged
for the panel; its other answers are counted in one line, never judged.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping

from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.judge_answers import Beside, pair_answers
from oab_bench.judge.panel.published import Panel, check_names, resolve_panel
from oab_bench.judge.records import Judgment

Pairs = list[tuple[QuestionRow, Answer]]


def panel_pairs(panel: Panel, rows: list[QuestionRow], candidates: set[str], what: str = "the candidate"):
    """(every (row, answer) of the panel to judge, lines saying what is not judged). A candidate
    named as a panel model is an error naming both."""
    check_names(candidates, panel, what)
    pairs, missing, _ = pair_answers(rows, panel.answers)
    ids = {r.question_id for r in rows}
    outside = [a for a in panel.answers if a.question_id not in ids]
    notes = []
    if outside:
        notes.append(
            f"panel: {len(outside)} answers to {len({a.question_id for a in outside})} questions that are not "
            f"among the {len(ids)} judged here (not in the dataset, or not selected): not judged"
        )
    if missing:
        notes.append(
            f"panel: {len(missing)} of the questions judged here have no published answer from "
            f"{', '.join(sorted({m for _, m in missing}))}: those models' figures use the exams they answered"
        )
    return pairs, notes


def print_notes(notes: Iterable[str], command: str) -> None:
    for note in notes:
        print(f"oab-bench {command}: {note}", file=sys.stderr)


def marked_records(judgments: Iterable[Judgment], sources: Mapping[str, str]) -> list[dict]:
    """Judgment records, a panel model's (`sources`: model -> its answers' source) marked `panel`."""
    return [j.record() | ({"panel": sources[j.model]} if j.model in sources else {}) for j in judgments]


def dump_records(records: Iterable[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def graders(judge) -> list:
    """Who grades and keeps a judgment of its own: each repeat, each jury member, or the judge."""
    return getattr(judge, "runs", None) or getattr(judge, "members", None) or [judge]


def charge(judge, spent: float) -> None:
    """`--max-cost-usd` caps the whole command: what was spent before the panel (the candidate's
    judging, in lighteval's process) counts against it; a jury or repeats share their first's budget."""
    first = graders(judge)[0]
    if first.budget is not None:
        first.budget.spent += spent


def unstored(judge, pairs: Pairs) -> int:
    """The gradings of `pairs` the judge's cache lacks (each member's and repeat's apart)."""
    return sum(g.to_call(row, answer)[2] is not None for g in graders(judge) for row, answer in pairs)


def judge_command_share(specs: list[str]) -> Callable[[list[QuestionRow], list[Answer]], Beside]:
    """`oab-bench judge --panel`: what `run_judge_command` judges beside the candidates' answers
    (read once their rows and answers are known, before any call)."""

    def beside(rows: list[QuestionRow], answers: list[Answer]) -> Beside:
        from oab_bench.judge.panel.estimate import print_with_panel

        panel = resolve_panel(specs)
        pairs, notes = panel_pairs(panel, rows, {a.model for a in answers})
        print_notes(notes, "judge")
        return Beside(
            pairs=pairs,
            print_estimate=lambda candidates, extra, fmt: print_with_panel(candidates, extra, panel, fmt),
            dump=lambda judgments: dump_records(marked_records(judgments, panel.sources)),
        )

    return beside
