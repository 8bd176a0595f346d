"""The sweep's rows and decision (sweep.json's contract), the Pareto front, its text table."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from oab_bench.judge.validity.stats import Figure


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
    pareto: bool = False
    failed: str | None


class SweepReport(BaseModel):
    reference: str
    judges: list[JudgeRow]
    recommended: str | None
    rule: str


class Rule(BaseModel):
    min_kappa: float = 0.8
    kappa_on: Literal["lower", "value"] = "lower"
    max_flip_rate: float = 0.1

    def text(self) -> str:
        bound = "the lower end of its 95% interval" if self.kappa_on == "lower" else "its value"
        return (
            f"the cheapest candidate (cost_usd_per_model) whose probe verdict is discriminates, whose "
            f"kappa_pass with the reference ({bound}) is >= {self.min_kappa:g} and whose flip_rate is "
            f"<= {self.max_flip_rate:g}; a judge whose calls failed is never chosen"
        )

    def why_not(self, row: JudgeRow) -> str | None:
        a, name = row.agreement, "kappa_pass lower bound" if self.kappa_on == "lower" else "kappa_pass"
        kappa = a and (a.kappa_pass.ci_low if self.kappa_on == "lower" else a.kappa_pass.value)
        if row.failed:
            return f"failed: {row.failed}"
        if row.probe is None or row.probe.verdict != "discriminates":
            return f"probe: {row.probe.verdict if row.probe else 'not run'}"
        if a is None:
            return "no agreement with the reference (the reference failed?)"
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


def decide(reference: JudgeRow, candidates: list[JudgeRow], rule: Rule) -> tuple[SweepReport, dict[str, str]]:
    """The report (rows sorted by cost, the front marked) and, per candidate, why it was not chosen."""
    fit = [r for r in candidates if not r.failed and r.cost_usd_per_model is not None and r.agreement]

    def beaten(r: JudgeRow) -> bool:
        c, v = r.cost_usd_per_model, _validity(r)
        return any(
            o.cost_usd_per_model <= c + 1e-12
            and _validity(o) >= v - 1e-12
            and (o.cost_usd_per_model < c - 1e-12 or _validity(o) > v + 1e-12)
            for o in fit
        )

    rows = [r.model_copy(update={"pareto": any(r is f for f in fit) and not beaten(r)}) for r in candidates]
    why = {r.judge: w for r in rows if (w := rule.why_not(r)) is not None}
    if reference.failed:
        why = {r.judge: "the reference judge failed: nothing to agree with" for r in rows}
    chosen = next((r.judge for r in sorted(rows, key=_cost_key) if r.judge not in why), None)
    reasons = "; ".join(f"{j}: {w}" for j, w in why.items()) or "no candidates"
    outcome = f"recommended: {chosen}" if chosen else f"none recommended: {reasons}"
    judges = sorted([reference, *rows], key=_cost_key)
    rule_text = f"{rule.text()}. {outcome}"
    return SweepReport(reference=reference.judge, judges=judges, recommended=chosen, rule=rule_text), why


def text_table(header: tuple, lines: list[tuple]) -> list[str]:
    width = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=True)]
    return [
        "  ".join(str(x).ljust(w) for x, w in zip(row, width, strict=True)).rstrip()
        for row in [header, *lines]
    ]


COLUMNS = "judge|$/model|$/model batch|probe|ref %|swap %|order|kappa_pass [95%]|flips|exam CCC [95%]"
HEADER = tuple(f"{COLUMNS}|exam MAE [95%]|rank tau|calls|s|front".split("|"))


def _num(x: float | None, fmt: str = "{:.2f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def _fig(f: Figure | None) -> str:
    if f is None:
        return "-"
    if f.value is None or f.ci_low is None or f.ci_high is None:
        return _num(f.value)
    return f"{f.value:.2f} [{f.ci_low:.2f}, {f.ci_high:.2f}]"


def cells(report: SweepReport) -> list[tuple[str, ...]]:
    """One row of HEADER's cells per judge, in the report's order (the text table's and the page's)."""
    out = []
    for r in report.judges:
        p, a = r.probe, r.agreement
        name = r.judge + " (reference)" * (r.judge == report.reference)
        costs = [_num(r.cost_usd_per_model, "${:.4f}"), _num(r.cost_usd_per_model_batch, "${:.4f}")]
        verdict = "FAILED" if r.failed else "ok" if p and p.verdict == "discriminates" else "NO"
        pcts = [_num(p and getattr(p, k), "{:.1f}") for k in ("reference_pct", "swapped_pct")]
        probe = [*pcts, _num(p and p.ordering)]
        flips = f"{a.flips} ({_num(a.flip_rate, '{:.0%}')})" if a else "-"
        figures = [_fig(a and getattr(a, k)) for k in ("exam_ccc", "exam_mae", "ranking_tau")]
        ran = [str(r.calls), f"{r.seconds:.1f}", "*" * r.pareto]
        out.append((name, *costs, verdict, *probe, _fig(a and a.kappa_pass), flips, *figures, *ran))
    return out


def render_text(report: SweepReport, why: dict[str, str], scaled: str, counted: str) -> str:
    """The table, then what its columns mean, the failed judges, why each other was not chosen."""
    out = [*text_table(HEADER, cells(report)), "", f"cost per model: {scaled}"]
    out += [
        "probe: ok = verdict `discriminates`; front: * on the Pareto front (none cheaper and at least as valid)",
        f"calls and seconds: this run's; {counted}",
    ]
    said = "(its calls failed: nothing is said about its validity)"
    out += [f"FAILED {r.judge}: {r.failed} {said}" for r in report.judges if r.failed]
    out += [f"not chosen: {judge}: {reason}" for judge, reason in why.items()]
    out += ["", f"rule: {report.rule}", f"recommended: {report.recommended or 'none'}"]
    return "\n".join(out) + "\n"
