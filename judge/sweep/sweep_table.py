"""The sweep's report as a table on stdout (JSON is the report itself)."""

from __future__ import annotations

from oab_bench.judge.sweep.decide import SweepReport
from oab_bench.judge.validity.stats import Figure


def _num(x: float | None, fmt: str = "{:.2f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def _fig(f: Figure) -> str:
    if f.value is None:
        return "n/a"
    if f.ci_low is None or f.ci_high is None:
        return f"{f.value:.2f}"
    return f"{f.value:.2f} [{f.ci_low:.2f}, {f.ci_high:.2f}]"


HEADER = (
    "judge",
    "$/model",
    "$/model batch",
    "probe",
    "ref %",
    "swap %",
    "order",
    "kappa_pass [95%]",
    "flips",
    "exam CCC [95%]",
    "exam MAE [95%]",
    "rank tau",
    "calls",
    "s",
    "front",
)


def cells(report: SweepReport) -> list[tuple[str, ...]]:
    """One row of HEADER's cells per judge, in the report's order (the text table's and the page's)."""
    lines = []
    for r in report.judges:
        p, a = r.probe, r.agreement
        name = r.judge + (" (reference)" if r.judge == report.reference else "")
        lines.append(
            (
                name,
                _num(r.cost_usd_per_model, "${:.4f}"),
                _num(r.cost_usd_per_model_batch, "${:.4f}"),
                "FAILED" if r.failed else ("ok" if p and p.verdict == "discriminates" else "NO"),
                _num(p.reference_pct if p else None, "{:.1f}"),
                _num(p.swapped_pct if p else None, "{:.1f}"),
                _num(p.ordering if p else None),
                _fig(a.kappa_pass) if a else "-",
                f"{a.flips} ({_num(a.flip_rate, '{:.0%}')})" if a else "-",
                _fig(a.exam_ccc) if a else "-",
                _fig(a.exam_mae) if a else "-",
                _fig(a.ranking_tau) if a else "-",
                str(r.calls),
                f"{r.seconds:.1f}",
                "*" if r.pareto else "",
            )
        )
    return lines


def render_text(report: SweepReport, why: dict[str, str], scaled: str) -> str:
    header, lines = HEADER, cells(report)
    width = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=True)]
    out = [
        "  ".join(str(x).ljust(w) for x, w in zip(line, width, strict=True)).rstrip()
        for line in [header, *lines]
    ]
    out += [
        "",
        f"cost per model: {scaled}",
        "probe: ok = verdict `discriminates`; front: * on the Pareto front (none cheaper and at least as valid)",
        "calls and seconds: this run's (0 calls: every grading came from the cache)",
    ]
    for r in report.judges:
        if r.failed:
            out.append(f"FAILED {r.judge}: {r.failed} (its calls failed: nothing is said about its validity)")
    for judge, reason in why.items():
        out.append(f"not chosen: {judge}: {reason}")
    out += ["", f"rule: {report.rule}", f"recommended: {report.recommended or 'none'}"]
    return "\n".join(out) + "\n"
