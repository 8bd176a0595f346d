"""The panel's share of a judging command: which of its answers are judged, how their judgments
are marked, and where the candidate stands among them.

The panel goes through the normal path (judge/grading/runner.py): the same judge, cache, dedup, budget
and batch as the candidate's answers. Only questions being judged for the candidate are judged
for the panel; the rest of its answers are counted in one line, never judged.
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


def panel_pairs(
    panel: Panel, rows: list[QuestionRow], candidates: set[str], what: str = "the candidate"
) -> tuple[Pairs, list[str]]:
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
        models = sorted({m for _, m in missing})
        notes.append(
            f"panel: {len(missing)} of the questions judged here have no published answer from "
            f"{', '.join(models)}: those models' figures use the exams they answered"
        )
    return pairs, notes


def print_notes(notes: Iterable[str], command: str) -> None:
    for note in notes:
        print(f"oab-bench {command}: {note}", file=sys.stderr)


def panel_records(judgments: Iterable[Judgment], panel: Panel) -> list[dict]:
    """Judgment records marked as the panel's: `panel` holds the answers' source."""
    return [j.record() | {"panel": panel.sources[j.model]} for j in judgments]


def marked_records(judgments: Iterable[Judgment], sources: Mapping[str, str]) -> list[dict]:
    """Judgment records, those of a panel's model (`sources`: model -> its answers' source) marked
    as `panel_records` marks them; the others as they are."""
    return [j.record() | ({"panel": sources[j.model]} if j.model in sources else {}) for j in judgments]


def dump_records(records: Iterable[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def charge(judge, spent: float) -> None:
    """`--max-cost-usd` caps the whole command: what was spent before the panel (the candidate's
    judging, in lighteval's process) counts against it. A jury's members and a judge's repeats
    share their first's budget."""
    first = (getattr(judge, "members", None) or getattr(judge, "runs", None) or [judge])[0]
    if first.budget is not None:
        first.budget.spent += spent


def spent_on(records: Iterable[dict]) -> float:
    """What judgment records cost this time (cached ones were paid before)."""
    return sum(r.get("cost_usd") or 0.0 for r in records if not r.get("cached"))


def unstored(judge, pairs: Pairs) -> int:
    """The judgments of `pairs` the judge's cache lacks: each jury member's and each repeat's count
    apart (each has a key of its own), as the candidate's do."""
    graders = getattr(judge, "runs", None) or getattr(judge, "members", None) or [judge]
    return sum(g.to_call(row, answer)[2] is not None for g in graders for row, answer in pairs)


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
            dump=lambda judgments: dump_records(panel_records(judgments, panel)),
        )

    return beside
