"""The probes' judgments -> figures, checks, verdict: means are % of the judged maximum over exams, intervals
resample exams, a failed judgment is never a zero. The thresholds are chosen here, not calibrated."""

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
from oab_bench.judge.judge_label import judge_label
from oab_bench.judge.records import Judgment
from oab_bench.judge.validity.probes import PROBE_KINDS

Verdict = Literal["discriminates", "does not discriminate", "incomplete"]

JUDGED_MIN = 0.95  # share of a probe's judgments that must be ok for its figures to mean anything
FAILING_KINDS = ("swapped", "empty")  # a verdict needs one answer that must fail, measured
ORDERING_KINDS = ("reference", "partial", "swapped")
CHECKS = [  # name, rule, threshold, the probes it reads (the check is made when all were probed)
    ("reference_mean_pct", ">=", 90.0, ("reference",)),  # the official answer earns (nearly) full marks
    ("reference_exam_pass_rate", ">=", 1.0, ("reference",)),  # ... and passes every exam
    ("reference_minus_partial_pct", ">", 0.0, ("reference", "partial")),
    ("partial_minus_swapped_pct", ">", 0.0, ("partial", "swapped")),
    ("swapped_mean_pct", "<=", 10.0, ("swapped",)),  # swapped and injection earn (nearly) nothing
    ("empty_mean_pct", "<=", 0.0, ("empty",)),  # "Não sei responder." earns nothing
    ("injection_mean_pct", "<=", 10.0, ("injection",)),
    ("ordering", ">=", 0.75, ORDERING_KINDS),  # share of questions with reference > partial > swapped
    # injection may exceed swapped by the half-width of swapped's interval, and at least by this
    ("injection_lift", "<=", 1.0, ("injection", "swapped")),
]
RULES = {">=": lambda v, t: v >= t - 1e-9, "<=": lambda v, t: v <= t + 1e-9, ">": lambda v, t: v > t + 1e-9}


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


def _mean(values) -> float | None:
    return float(np.mean(values)) if len(values) else None


def probe_stats(
    judgments: Sequence[Judgment], annulled: dict[str, float], *, resamples: int, seed: int
) -> ProbeStats:
    sums: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(4))  # judged points, their max; with annulled
    complete: dict[str, bool] = defaultdict(lambda: True)
    for j in judgments:
        if j.status == "ok" and j.score is not None:
            a = annulled.get(j.question_id, 0.0)
            sums[j.exam_id] += (j.score - a, j.max_score - a, j.score, j.max_score)
        else:
            complete[j.exam_id] = False
    pct = [100.0 * s[0] / s[1] for _, s in sorted(sums.items()) if s[1] > 1e-9]
    low, high = bootstrap_ci(pct, resamples=resamples, seed=seed)
    passing = [s[2] * EXAM_MAX / s[3] >= PASS_MARK - 1e-9 for e, s in sums.items() if complete[e]]
    statuses = dict(sorted(Counter(j.status for j in judgments).items()))
    figures = {"mean_pct": _mean(pct), "ci_low": low, "ci_high": high, "exam_pass_rate": _mean(passing)}
    return ProbeStats(**figures, statuses=statuses, exams=len(pct))


def _check(name: str, rule: str, threshold: float, value: float | None, measured: bool = True) -> Check:
    ok = measured and value is not None and RULES[rule](value, threshold)
    return Check(name=name, value=value, threshold=threshold, rule=rule, ok=ok, measured=measured)


def failed_members(judgments: list[Judgment]) -> dict[str, dict[str, int]]:
    """Each jury member that graded nothing, with the count of each of its failure statuses."""
    seen: dict[str, Counter] = defaultdict(Counter)
    for j in judgments:
        for m in j.members or []:  # one judge: none
            seen[m.judge_model][m.status] += 1
    return {name: dict(sorted(got.items())) for name, got in sorted(seen.items()) if not got["ok"]}


def build_report(
    judge: str,
    rows: Sequence[QuestionRow],
    judgments: list[Judgment],
    variants: dict[str, str] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> ProbeReport:
    """`variants`: question id -> injection variant. A jury with a member that failed every grading is
    `incomplete` whatever the figures."""
    annulled = {r.question_id: sum(i.max_score for i in r.rubric if i.annulled) for r in rows}
    by_kind = {k: js for k in PROBE_KINDS if (js := [j for j in judgments if j.model == PROBE_PREFIX + k])}
    probes = {k: probe_stats(js, annulled, resamples=resamples, seed=seed) for k, js in by_kind.items()}
    pct: dict[str, dict[str, float]] = {k: {} for k in by_kind}  # % of the judged maximum, per question
    for k, js in by_kind.items():
        for j in js:
            worth = j.max_score - annulled.get(j.question_id, 0.0)
            if j.status == "ok" and worth > 1e-9:
                pct[k][j.question_id] = 100.0 * (j.score - annulled.get(j.question_id, 0.0)) / worth
    mean = {k: s.mean_pct for k, s in probes.items()}
    values = {f"{k}_mean_pct": m for k, m in mean.items()}  # each check's value, by its name
    values["reference_exam_pass_rate"] = probes["reference"].exam_pass_rate if "reference" in probes else None
    for a, b in (("reference", "partial"), ("partial", "swapped")):
        if mean.get(a) is not None and mean.get(b) is not None:
            values[f"{a}_minus_{b}_pct"] = mean[a] - mean[b]
    if set(ORDERING_KINDS) <= set(pct):
        r, p, s = (pct[k] for k in ORDERING_KINDS)
        ids = [row.question_id for row in rows]
        values["ordering"] = _mean([q in r and q in p and q in s and r[q] > p[q] > s[q] for q in ids])
    if {"injection", "swapped"} <= set(pct):
        both = sorted(pct["injection"].keys() & pct["swapped"].keys())
        values["injection_lift"] = _mean([pct["injection"][q] - pct["swapped"][q] for q in both])
    by_variant = {}
    if "injection" in pct and variants:
        for v in sorted(set(variants.values())):
            by_variant[v] = _mean([x for q, x in pct["injection"].items() if variants.get(q, "") == v])

    n_ok = {k: len(pct[k]) for k in by_kind}
    measured = {k for k in by_kind if n_ok[k] / len(by_kind[k]) >= JUDGED_MIN - 1e-9}
    total = sum(map(len, by_kind.values()))
    checks = [_check("judged_ok", ">=", JUDGED_MIN, sum(n_ok.values()) / total if total else None)]
    for name, rule, threshold, needs in CHECKS:
        if set(needs) <= set(by_kind):
            swapped = probes.get("swapped")  # injection_lift's floor rises to swapped's interval half-width
            if name == "injection_lift" and swapped.ci_high is not None:
                threshold = max(threshold, swapped.ci_high - swapped.mean_pct)
            checks.append(_check(name, rule, threshold, values.get(name), set(needs) <= measured))
    missing = _missing(by_kind, measured, n_ok)
    failed = [c for c in checks if c.measured and not c.ok and c.name != "judged_ok"]
    # a measured failure is a finding whatever is missing; a pass needs all the evidence
    verdict = "does not discriminate" if failed else "incomplete" if missing else "discriminates"
    members = failed_members(judgments)
    return ProbeReport(
        judge=judge,
        n_questions=len(rows),
        n_exams=len({r.exam_id for r in rows}),
        probes=probes,
        ordering=values.get("ordering"),
        injection_lift=values.get("injection_lift"),
        injection_by_variant=by_variant,
        checks=checks,
        verdict="incomplete" if members else verdict,
        failed_members=members,
        missing=missing,
    )


def probe_report(judge, rows, probes, judgments, *, resamples: int, seed: int) -> ProbeReport:
    """The probe's figures and verdict for `judge` (a judge, or a jury under its own name)."""
    name = getattr(judge, "name", judge.settings.judge_model)  # a jury's own name, as in its records
    settings = next((j.settings for j in judgments if j.settings is not None), None)
    label = judge_label(name, f"{judge.prompt_version}, {judge.mode}", settings)  # as the leaderboard says
    variants = {p.question_id: p.variant for p in probes if p.kind == "injection"}
    return build_report(label, rows, judgments, variants, resamples=resamples, seed=seed)


def _missing(by_kind: dict[str, list], measured: set[str], n_ok: dict[str, int]) -> list[str]:
    """What `discriminates` needs and this run did not measure (each from enough `ok` judgments)."""

    def why(kind: str) -> str:
        if kind not in by_kind:
            return f"{kind} not probed"
        return f"{kind}: {n_ok[kind]} of {len(by_kind[kind])} judgments ok ({JUDGED_MIN:.0%} needed)"

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
    lines += [
        "",
        f"ordering (reference > partial > swapped, ties fail): {_num(report.ordering, '{:.2f}')}",
        f"injection_lift (injection - swapped, % points): {_num(report.injection_lift, '{:+.1f}')}",
    ]
    if report.injection_by_variant:
        parts = ", ".join(f"{v} {_num(x)}%" for v, x in report.injection_by_variant.items())
        lines.append(f"injection by variant: {parts}")
    lines += ["", "checks:"]
    for c in report.checks:
        mark = "ok  " if c.ok else "FAIL" if c.measured else "n/a "
        lines.append(f"  {mark} {c.name}: {_num(c.value, '{:.2f}')} (must be {c.rule} {c.threshold:g})")
    lines += ["", f"verdict: {report.verdict}"]
    for name, got in report.failed_members.items():  # why the verdict is incomplete
        statuses = ", ".join(f"{status} {n}" for status, n in got.items())
        lines.append(
            f"jury member {name} failed every probe grading ({statuses}): the jury was not probed as "
            "named; fix the member (or leave it out) and probe again"
        )
    lines += [f"  missing: {m}" for m in report.missing]
    return "\n".join(lines) + "\n"


def render_json(report: ProbeReport) -> str:
    return report.model_dump_json(indent=2) + "\n"
