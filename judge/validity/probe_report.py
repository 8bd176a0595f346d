"""From the judgments of the probes to a verdict: does the judge order answers of known worth?

Per probe: the mean score as % of the judged maximum over exams (points of items FGV annulled, which
every candidate gets without judging, left out), its 95% interval resampling exams, the share of
exams that pass (over exams judged ok throughout) and the statuses. A failed judgment is never a
zero: it shows in `statuses` and leaves its question out of the means. The thresholds are fixed
here (chosen, not calibrated on human grades) and printed with every check.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel

from oab_bench.conventions import PROBE_PREFIX
from oab_bench.dataset_builder.schema import EXAM_MAX, PASS_MARK, QuestionRow
from oab_bench.judge.intervals import DEFAULT_SEED, bootstrap_ci
from oab_bench.judge.intervals import LEADERBOARD_RESAMPLES as DEFAULT_RESAMPLES
from oab_bench.judge.records import Judgment
from oab_bench.judge.validity.probes import PROBE_KINDS

Verdict = Literal["discriminates", "does not discriminate", "incomplete"]

REFERENCE_MIN_PCT = 90.0  # the official answer earns (nearly) full marks
REFERENCE_MIN_PASS = 1.0  # ... and passes every exam
FAILING_MAX_PCT = 10.0  # swapped and injection earn (nearly) nothing
EMPTY_MAX_PCT = 0.0  # "Não sei responder." earns nothing
ORDERING_MIN = 0.75  # share of questions with reference > partial > swapped (ties fail)
LIFT_FLOOR_PCT = 1.0  # injection may exceed swapped by the half-width of swapped's interval, at least this
JUDGED_MIN = 0.95  # share of a probe's judgments that must be ok for its figures to mean anything
FAILING_KINDS = ("swapped", "empty")  # a verdict needs one answer that must fail, measured
ORDERING_KINDS = ("reference", "partial", "swapped")


class ProbeStats(BaseModel):
    mean_pct: float | None
    ci_low: float | None
    ci_high: float | None
    exam_pass_rate: float | None
    statuses: dict[str, int]
    exams: int  # exams with at least one question judged ok


class Check(BaseModel):
    name: str
    value: float | None
    threshold: float
    rule: Literal[">=", "<=", ">"]
    ok: bool
    measured: bool = True  # False: a probe it reads was not run, or too few of its judgments were ok


class ProbeReport(BaseModel):
    judge: str
    n_questions: int
    n_exams: int
    probes: dict[str, ProbeStats]
    ordering: float | None
    injection_lift: float | None  # mean over questions of injection - swapped, % points of the maximum
    injection_by_variant: dict[str, float | None]  # mean injection % per variant
    checks: list[Check]
    verdict: Verdict
    failed_members: dict[str, dict[str, int]] = {}  # a jury member that graded nothing: its statuses
    missing: list[str] = []  # the evidence a verdict of `discriminates` needs and did not get


def _judged_pct(j: Judgment, annulled: float) -> float | None:
    """% of the judged maximum: points FGV annulled (given to every candidate, never judged) left out."""
    worth = j.max_score - annulled
    return 100.0 * (j.score - annulled) / worth if worth > 1e-9 else None


def probe_stats(
    judgments: Sequence[Judgment], annulled: dict[str, float], *, resamples: int, seed: int
) -> ProbeStats:
    judged: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # exam -> judged points, their max
    marks: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # exam -> points, max (annulled in)
    complete: dict[str, bool] = defaultdict(lambda: True)
    for j in judgments:
        if j.status == "ok" and j.score is not None:
            a = annulled.get(j.question_id, 0.0)
            judged[j.exam_id][0] += j.score - a
            judged[j.exam_id][1] += j.max_score - a
            marks[j.exam_id][0] += j.score
            marks[j.exam_id][1] += j.max_score
        else:
            complete[j.exam_id] = False
    exam_pct = {e: 100.0 * got / worth for e, (got, worth) in sorted(judged.items()) if worth > 1e-9}
    values = list(exam_pct.values())
    low, high = bootstrap_ci(values, resamples=resamples, seed=seed)
    passing = [got * EXAM_MAX / worth >= PASS_MARK - 1e-9 for e, (got, worth) in marks.items() if complete[e]]
    return ProbeStats(
        mean_pct=float(np.mean(values)) if values else None,
        ci_low=low,
        ci_high=high,
        exam_pass_rate=float(np.mean(passing)) if passing else None,
        statuses=dict(sorted(Counter(j.status for j in judgments).items())),
        exams=len(exam_pct),
    )


def failed_members(judgments: list[Judgment]) -> dict[str, dict[str, int]]:
    """Each jury member that graded nothing, with the count of each of its failure statuses."""
    seen: dict[str, Counter] = defaultdict(Counter)
    for j in judgments:
        for m in j.members or []:  # one judge: none
            seen[m.judge_model][m.status] += 1
    return {name: dict(sorted(got.items())) for name, got in sorted(seen.items()) if not got["ok"]}


RULES = {">=": lambda v, t: v >= t - 1e-9, "<=": lambda v, t: v <= t + 1e-9, ">": lambda v, t: v > t + 1e-9}


def _check(name: str, value: float | None, threshold: float, rule: str, measured: bool = True) -> Check:
    ok = measured and value is not None and RULES[rule](value, threshold)
    return Check(name=name, value=value, threshold=threshold, rule=rule, ok=ok, measured=measured)


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def build_report(
    judge: str,
    rows: Sequence[QuestionRow],
    judgments: list[Judgment],
    variants: dict[str, str] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> ProbeReport:
    """`variants`: question id -> injection variant, for the per-variant breakdown. A jury one of
    whose members failed every grading was not probed as the jury it names: `incomplete`, whatever
    the figures, naming the member (`failed_members`)."""
    by_model: dict[str, list[Judgment]] = defaultdict(list)
    for j in judgments:
        by_model[j.model].append(j)
    by_kind = {k: by_model[PROBE_PREFIX + k] for k in PROBE_KINDS if PROBE_PREFIX + k in by_model}
    kinds = list(by_kind)
    annulled = {r.question_id: sum(i.max_score for i in r.rubric if i.annulled) for r in rows}
    probes = {k: probe_stats(by_kind[k], annulled, resamples=resamples, seed=seed) for k in kinds}
    pct: dict[str, dict[str, float]] = {k: {} for k in kinds}
    for k in kinds:
        for j in by_kind[k]:
            value = _judged_pct(j, annulled.get(j.question_id, 0.0)) if j.status == "ok" else None
            if value is not None:
                pct[k][j.question_id] = value

    ordering = None
    if set(ORDERING_KINDS) <= set(kinds):
        r, p, s = (pct[k] for k in ORDERING_KINDS)
        ordered = [
            q in r and q in p and q in s and r[q] > p[q] > s[q] for q in (row.question_id for row in rows)
        ]
        ordering = float(np.mean(ordered)) if ordered else None
    lift, by_variant = None, {}
    if {"injection", "swapped"} <= set(kinds):
        both = sorted(pct["injection"].keys() & pct["swapped"].keys())
        lift = float(np.mean([pct["injection"][q] - pct["swapped"][q] for q in both])) if both else None
    if "injection" in kinds and variants:
        groups: dict[str, list[float]] = defaultdict(list)
        for q, v in pct["injection"].items():
            groups[variants.get(q, "")].append(v)
        by_variant = {
            v: float(np.mean(groups[v])) if groups[v] else None for v in sorted(set(variants.values()))
        }

    n_ok = {k: len(pct[k]) for k in kinds}
    n_all = {k: len(by_kind[k]) for k in kinds}
    measured = {k for k in kinds if n_ok[k] / n_all[k] >= JUDGED_MIN - 1e-9}
    mean = {k: probes[k].mean_pct if k in probes else None for k in PROBE_KINDS}
    swapped = probes.get("swapped")
    half = (
        None
        if swapped is None or None in (swapped.ci_high, swapped.mean_pct)
        else swapped.ci_high - swapped.mean_pct
    )
    wanted = [  # name, value, threshold, rule, the probes it reads (a check is there when they all are)
        ("reference_mean_pct", mean["reference"], REFERENCE_MIN_PCT, ">=", ("reference",)),
        (
            "reference_exam_pass_rate",
            getattr(probes.get("reference"), "exam_pass_rate", None),
            REFERENCE_MIN_PASS,
            ">=",
            ("reference",),
        ),
        (
            "reference_minus_partial_pct",
            _diff(mean["reference"], mean["partial"]),
            0.0,
            ">",
            ("reference", "partial"),
        ),
        (
            "partial_minus_swapped_pct",
            _diff(mean["partial"], mean["swapped"]),
            0.0,
            ">",
            ("partial", "swapped"),
        ),
        ("swapped_mean_pct", mean["swapped"], FAILING_MAX_PCT, "<=", ("swapped",)),
        ("empty_mean_pct", mean["empty"], EMPTY_MAX_PCT, "<=", ("empty",)),
        ("injection_mean_pct", mean["injection"], FAILING_MAX_PCT, "<=", ("injection",)),
        ("ordering", ordering, ORDERING_MIN, ">=", ORDERING_KINDS),
        ("injection_lift", lift, max(LIFT_FLOOR_PCT, half or 0.0), "<=", ("injection", "swapped")),
    ]
    total = sum(n_all.values())
    checks = [_check("judged_ok", sum(n_ok.values()) / total if total else None, JUDGED_MIN, ">=")]
    checks += [
        _check(*spec, measured=set(needs) <= measured) for *spec, needs in wanted if set(needs) <= set(kinds)
    ]
    missing = _missing(kinds, measured, n_ok, n_all)
    failed = [c for c in checks if c.measured and not c.ok and c.name != "judged_ok"]
    # a measured failure is a finding whatever is missing; a pass needs all the evidence
    verdict: Verdict = "does not discriminate" if failed else "incomplete" if missing else "discriminates"
    members = failed_members(judgments)
    return ProbeReport(
        judge=judge,
        n_questions=len(rows),
        n_exams=len({r.exam_id for r in rows}),
        probes=probes,
        ordering=ordering,
        injection_lift=lift,
        injection_by_variant=by_variant,
        checks=checks,
        verdict="incomplete" if members else verdict,
        failed_members=members,
        missing=missing,
    )


def _missing(kinds: list[str], measured: set[str], n_ok: dict[str, int], n_all: dict[str, int]) -> list[str]:
    """What `discriminates` needs and this run did not measure: the reference, an answer that
    must fail (swapped or empty) and the ordering, each from enough `ok` judgments."""

    def why(kind: str) -> str:
        if kind not in kinds:
            return f"{kind} not probed"
        return f"{kind}: {n_ok[kind]} of {n_all[kind]} judgments ok ({JUDGED_MIN:.0%} needed)"

    missing = []
    if "reference" not in measured:
        missing.append(f"the reference probe ({why('reference')})")
    if not measured & set(FAILING_KINDS):
        missing.append(f"a failing probe, swapped or empty ({'; '.join(why(k) for k in FAILING_KINDS)})")
    if not set(ORDERING_KINDS) <= measured:
        lacking = "; ".join(why(k) for k in ORDERING_KINDS if k not in measured)
        missing.append(f"the ordering, which needs reference, partial and swapped ({lacking})")
    return missing


def _num(x: float | None, fmt: str = "{:.1f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def render_text(report: ProbeReport) -> str:
    lines = [
        f"judge: {report.judge}",
        f"questions: {report.n_questions} ({report.n_exams} exams)",
        "",
        f"{'probe':<10} {'mean %':>7}  {'95% interval':<15} {'exams passed':>12}  statuses",
    ]
    for kind, s in report.probes.items():
        interval = f"[{_num(s.ci_low)}, {_num(s.ci_high)}]"
        passed = _num(None if s.exam_pass_rate is None else 100 * s.exam_pass_rate, "{:.0f}%")
        statuses = ", ".join(f"{k} {v}" for k, v in s.statuses.items())
        lines.append(f"{kind:<10} {_num(s.mean_pct):>7}  {interval:<15} {passed:>12}  {statuses}")
    lines.append("")
    lines.append(f"ordering (reference > partial > swapped, ties fail): {_num(report.ordering, '{:.2f}')}")
    lines.append(f"injection_lift (injection - swapped, % points): {_num(report.injection_lift, '{:+.1f}')}")
    if report.injection_by_variant:
        parts = ", ".join(f"{v} {_num(x)}%" for v, x in report.injection_by_variant.items())
        lines.append(f"injection by variant: {parts}")
    lines += ["", "checks:"]
    for c in report.checks:
        value = _num(c.value, "{:.2f}")
        mark = "ok  " if c.ok else "FAIL" if c.measured else "n/a "
        lines.append(f"  {mark} {c.name}: {value} (must be {c.rule} {c.threshold:g})")
    lines += ["", f"verdict: {report.verdict}"]
    for name, got in report.failed_members.items():  # why the verdict is incomplete (probe_members.py)
        statuses = ", ".join(f"{status} {n}" for status, n in got.items())
        lines.append(
            f"jury member {name} failed every probe grading ({statuses}): the jury was not probed as "
            "named; fix the member (or leave it out) and probe again"
        )
    lines += [f"  missing: {m}" for m in report.missing]
    return "\n".join(lines) + "\n"


def render_json(report: ProbeReport) -> str:
    return report.model_dump_json(indent=2) + "\n"
