"""One judge of a sweep through the normal judge path: the probes and the real answers graded
(cache first), its judgments written, its calls, time, cost, and whether its calls failed."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from oab_bench.conventions import JUDGMENTS_FILE, PROBE_JUDGMENTS_FILE
from oab_bench.judge.grading.runner import dump_jsonl, run_judge_all
from oab_bench.judge.output import write_atomic
from oab_bench.judge.panel.judging import dump_records, marked_records
from oab_bench.judge.records import Judgment
from oab_bench.judge.redact import redact
from oab_bench.judge.sweep.cost import fresh_calls, leaves
from oab_bench.judge.validity.probe_report import JUDGED_MIN

CALL_FAILURES = {"api_error", "budget"}  # the calls did not happen: nothing about the judge's grading


@dataclass
class Measured:
    spec: str  # as the user wrote it (redacted)
    judge: object
    folder: Path
    probes: list[Judgment] = field(default_factory=list)
    answers: list[Judgment] = field(default_factory=list)
    gradings: list = field(default_factory=list)  # (judge that called, judgment), members apart
    calls: int = 0
    seconds: float = 0.0
    failed: str | None = None

    @property
    def answers_file(self) -> Path:
        return self.folder / JUDGMENTS_FILE


def failure(gradings) -> str | None:
    """Why the judge's figures would say nothing about it: too many gradings whose calls failed
    (a rejected key, an unknown model, a server down, the sweep's cost cap)."""
    if not gradings:
        return None
    bad = [j for _, j in gradings if j.status in CALL_FAILURES]
    if len(bad) <= (1 - JUDGED_MIN) * len(gradings):
        return None
    first = bad[0]
    return redact(
        f"{len(bad)} of {len(gradings)} gradings not made ({first.status}): {first.error or ''}"
    ).strip()


def measure(
    spec: str,
    judge,
    folder: Path,
    probe_pairs,
    probe_missing,
    answer_pairs,
    answer_missing,
    *,
    progress: bool,
    panel: Mapping[str, str],
) -> Measured:
    """Grade the probes and the answers in one run (one pool of concurrent calls); write both, a
    panel's judgments marked as `judge --panel` marks them (`panel`: model -> its answers' source)."""
    start = time.monotonic()
    done = run_judge_all(judge, [*probe_pairs, *answer_pairs], progress=progress)
    seconds = time.monotonic() - start
    probes = done[: len(probe_pairs)] + [judge.unanswered(r, m, "no probe answer") for r, m in probe_missing]
    answers = done[len(probe_pairs) :] + [
        judge.unanswered(r, m, "the answer files have no answer to this question") for r, m in answer_missing
    ]
    write_atomic(folder / PROBE_JUDGMENTS_FILE, dump_jsonl(probes))
    write_atomic(folder / JUDGMENTS_FILE, dump_records(marked_records(answers, panel)))
    gradings = leaves(judge, done)
    return Measured(
        spec, judge, folder, probes, answers, gradings, fresh_calls(gradings), seconds, failure(gradings)
    )


def measure_all(
    judges, folders, probes, answers, *, progress: bool, panel: Mapping[str, str]
) -> tuple[list[Measured], list[str]]:
    """Every judge in turn (`probes`, `answers`: their pairs and missing pairs). A judge whose batches
    are still running when its `batch_wait` runs out is left for a rerun to reattach (nothing is
    submitted twice); the others are judged meanwhile, so the rerun finds them in the cache."""
    from oab_bench.judge.grading.batch.submit import BatchPending

    measured, pending = [], []
    for (spec, judge), folder in zip(judges, folders, strict=True):
        say(f"{spec}: {len(probes[0])} probe and {len(answers[0])} answer judgments")
        try:
            m = measure(spec, judge, folder, *probes, *answers, progress=progress, panel=panel)
        except BatchPending as e:
            pending.append(f"{spec}: {e}")
            continue
        say(f"{spec}: {m.calls} calls, {m.seconds:.1f} s" + (f"; FAILED: {m.failed}" if m.failed else ""))
        measured.append(m)
    return measured, pending


def say(line: str) -> None:
    print(f"oab-bench judge-sweep: {line}", file=sys.stderr)
