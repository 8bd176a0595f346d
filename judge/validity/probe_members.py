"""A jury whose member failed every probe grading has not been probed as the jury it names.

Its figures rest on the other members alone (or, with two members, on no judgment at all),
so the verdict is `incomplete`, naming the member and how its gradings failed, whatever the
figures say. A member with at least one grading is there; its failures show in the statuses.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from oab_bench.judge.records import Judgment
from oab_bench.judge.validity.probe_report import ProbeReport


def failed_members(judgments: list[Judgment]) -> dict[str, dict[str, int]]:
    """Each jury member that graded nothing, with the count of each of its failure statuses."""
    seen: dict[str, Counter] = defaultdict(Counter)
    for j in judgments:
        for m in j.members or []:  # one judge: none
            seen[m.judge_model][m.status] += 1
    return {name: dict(sorted(got.items())) for name, got in sorted(seen.items()) if not got["ok"]}


def with_members(report: ProbeReport, judgments: list[Judgment]) -> ProbeReport:
    """The report, `incomplete` when a jury member failed every grading (module docstring)."""
    failed = failed_members(judgments)
    if not failed:
        return report
    return report.model_copy(update={"verdict": "incomplete", "failed_members": failed})
