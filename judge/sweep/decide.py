"""The sweep's rows and its decision: sorted by cost, the Pareto front, the recommended judge.

Validity, for the front: a judge whose probe verdict is not `discriminates` is below every judge
whose verdict is; among those that discriminate, the higher κ on pass/fail (its value) is the
more valid. A judge is on the front when no other judge is both cheaper (or as cheap) and at
least as valid, one of the two strictly. A judge whose calls failed, or whose cost is unknown,
is on no front.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from oab_bench.judge.validity.stats import Figure

KappaOn = Literal["lower", "value"]


class ProbeFigures(BaseModel):
    verdict: str
    reference_pct: float | None
    swapped_pct: float | None
    ordering: float | None


class AgreementFigures(BaseModel):
    exam_ccc: Figure
    kappa_pass: Figure
    flips: int
    flip_rate: float | None  # flips / exam results compared
    exam_mae: Figure
    ranking_tau: Figure


class JudgeRow(BaseModel):
    judge: str
    probe: ProbeFigures | None
    agreement: AgreementFigures | None  # None for the reference itself, and for a failed judge
    cost_usd_per_model: float | None
    cost_usd_per_model_batch: float | None
    calls: int
    seconds: float
    pareto: bool
    failed: str | None


class SweepReport(BaseModel):
    reference: str
    judges: list[JudgeRow]
    recommended: str | None
    rule: str


class Rule(BaseModel):
    min_kappa: float = 0.8
    kappa_on: KappaOn = "lower"
    max_flip_rate: float = 0.1

    def text(self) -> str:
        bound = "the lower end of its 95% interval" if self.kappa_on == "lower" else "its value"
        return (
            f"the cheapest candidate (cost_usd_per_model) whose probe verdict is discriminates, whose "
            f"kappa_pass with the reference ({bound}) is >= {self.min_kappa:g} and whose flip_rate is "
            f"<= {self.max_flip_rate:g}; a judge whose calls failed is never chosen"
        )

    def why_not(self, row: JudgeRow) -> str | None:
        """Why `row` does not qualify; None when it does."""
        if row.failed:
            return f"failed: {row.failed}"
        if row.probe is None or row.probe.verdict != "discriminates":
            return f"probe: {row.probe.verdict if row.probe else 'not run'}"
        a = row.agreement
        if a is None:
            return "no agreement with the reference (the reference failed?)"
        kappa = a.kappa_pass.ci_low if self.kappa_on == "lower" else a.kappa_pass.value
        name = "kappa_pass lower bound" if self.kappa_on == "lower" else "kappa_pass"
        if kappa is None:
            return f"{name} undefined (see the agreement notes)"
        if kappa < self.min_kappa - 1e-9:
            return f"{name} {kappa:.2f} < {self.min_kappa:g}"
        if a.flip_rate is None or a.flip_rate > self.max_flip_rate + 1e-9:
            rate = "undefined" if a.flip_rate is None else f"{a.flip_rate:.2f}"
            return f"flip_rate {rate} > {self.max_flip_rate:g}"
        return None


def _cost_key(row: JudgeRow) -> tuple[bool, float, str]:
    return row.cost_usd_per_model is None, row.cost_usd_per_model or 0.0, row.judge


def _validity(row: JudgeRow) -> float:
    if row.probe is None or row.probe.verdict != "discriminates":
        return -2.0  # below any kappa (kappa >= -1)
    a = row.agreement
    return a.kappa_pass.value if a is not None and a.kappa_pass.value is not None else -1.0


def pareto(rows: list[JudgeRow]) -> list[JudgeRow]:
    """The rows with `pareto` set (the module's docstring says when)."""
    fit = [r for r in rows if not r.failed and r.cost_usd_per_model is not None and r.agreement is not None]

    def beaten(r: JudgeRow) -> bool:
        c, v = r.cost_usd_per_model, _validity(r)
        return any(
            o is not r
            and o.cost_usd_per_model <= c + 1e-12
            and _validity(o) >= v - 1e-12
            and (o.cost_usd_per_model < c - 1e-12 or _validity(o) > v + 1e-12)
            for o in fit
        )

    front = {id(r) for r in fit if not beaten(r)}
    return [r.model_copy(update={"pareto": id(r) in front}) for r in rows]


def decide(reference: JudgeRow, candidates: list[JudgeRow], rule: Rule) -> tuple[SweepReport, dict[str, str]]:
    """The report (rows sorted by cost) and, per candidate, why it was not chosen."""
    rows = pareto(candidates)
    why = {r.judge: w for r in rows if (w := rule.why_not(r)) is not None}
    if reference.failed:
        why = {r.judge: "the reference judge failed: nothing to agree with" for r in rows}
    chosen = next((r for r in sorted(rows, key=_cost_key) if r.judge not in why), None)
    outcome = (
        f"recommended: {chosen.judge}"
        if chosen
        else "none recommended: " + "; ".join(f"{j}: {w}" for j, w in why.items())
        if why
        else "none recommended: no candidates"
    )
    report = SweepReport(
        reference=reference.judge,
        judges=sorted([reference, *rows], key=_cost_key),
        recommended=chosen.judge if chosen else None,
        rule=f"{rule.text()}. {outcome}",
    )
    return report, why
