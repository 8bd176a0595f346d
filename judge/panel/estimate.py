"""`--estimate` with a panel: the candidate's bill as always, the panel's apart, and both together.

`--format json` keeps the candidate's contract (models, total) and adds `panel` (the same keys,
plus `source`) and `total_with_panel`."""

from __future__ import annotations

import json
import sys

from oab_bench.judge.grading.estimate.core import Estimate, added, print_estimate
from oab_bench.judge.panel.published import Panel


def print_with_panel(candidate: Estimate, panel_est: Estimate, panel: Panel, fmt: str, note: str = "") -> int:
    both = added([candidate, panel_est], candidate.judge_model).total
    if fmt == "json":
        doc = candidate.model_dump(mode="json") | {
            "panel": panel_est.model_dump(mode="json") | {"source": panel.label()},
            "total_with_panel": both.model_dump(mode="json"),
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return 0
    print_estimate(candidate, "text", note)
    print(f"\npanel ({len(panel.models)} models, published answers: {panel.label()}), apart:")
    print_estimate(panel_est, "text", "The panel is judged with the candidate's judge and settings.")

    def usd(x: float | None) -> str:
        return "unknown" if x is None else f"${x:.4f}"

    print(
        f"\ncandidate + panel: {both.calls} calls, {both.prompt_tokens} prompt tokens, "
        f"{both.completion_tokens} completion tokens, {usd(both.cost_usd)} (batch {usd(both.cost_usd_batch)})"
    )
    return 0
