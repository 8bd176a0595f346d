"""`--estimate` with a panel: the candidate's bill as always, the panel's apart, and both together.
`--format json` keeps the candidate's contract (models, total) and adds `panel` (the same keys, plus
`source`) and `total_with_panel`."""

from __future__ import annotations

import json

from oab_bench.judge.grading.bill import Estimate, added, print_estimate
from oab_bench.judge.panel.published import Panel


def print_with_panel(candidate: Estimate, panel_est: Estimate, panel: Panel, fmt: str, note: str = "") -> int:
    both = added([candidate, panel_est], candidate.judge_model).total
    if fmt == "json":
        doc = candidate.model_dump(mode="json") | {
            "panel": panel_est.model_dump(mode="json") | {"source": panel.label()},
            "total_with_panel": both.model_dump(mode="json"),
        }
        print(json.dumps(doc, indent=2))
        return 0
    print_estimate(candidate, "text", note)
    print(f"\npanel ({len(panel.models)} models, published answers: {panel.label()}), apart:")
    print_estimate(panel_est, "text", "The panel is judged with the candidate's judge and settings.")
    cost, batch = ("unknown" if x is None else f"${x:.4f}" for x in (both.cost_usd, both.cost_usd_batch))
    print(
        f"\ncandidate + panel: {both.calls} calls, {both.prompt_tokens} prompt tokens, "
        f"{both.completion_tokens} completion tokens, {cost} (batch {batch})"
    )
    return 0
