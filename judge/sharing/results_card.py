"""The results dataset's card: YAML front matter (our marker, the configs), the leaderboard as
`oab-bench leaderboard` prints it for the same judgments, how the results were made, and the licence."""

from __future__ import annotations

import json
from collections import Counter
from importlib import metadata
from pathlib import Path

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.dataset import load_rows
from oab_bench.judge.leaderboard.tables import build_tables, render_markdown
from oab_bench.judge.results_layout import (
    ANSWERS_FILE,
    CARD_KEY,
    FORMAT,
    JUDGMENTS_DIR,
    KIND,
    judge_file,
)

UPSTREAM = "maritaca-ai/oab-bench"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def dataset_origins(names: set[str | None], given: str | None) -> dict[str, str]:
    """Each dataset that can be read here (--dataset, a local folder an input recorded) -> what it was
    built from, at which revision (its rows' provenance)."""
    out = {}
    for name in sorted(n for n in names if n and (n == given or Path(n).is_dir())):
        try:
            built = {(r.provenance.source, r.provenance.revision) for r in load_rows(name) if r.provenance}
        except (SourceError, OSError, ValueError) as e:  # the card says so; the export goes on
            out[name] = f"not readable here: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            continue
        said = sorted(f"built from {source} at revision {rev or 'unknown'}" for source, rev in built)
        out[name] = "; ".join(said) or "no provenance recorded"
    return out


def render_card(rows, answers, got, configs: dict[str, str], args, *, repo_id: str | None) -> str:
    """`rows`, `answers`, `got` (the inputs read): export.collect's; `args`: the command, `--dataset`,
    `--resamples`, `--seed`."""
    from huggingface_hub import DatasetCardData

    where = repo_id or "<this repo>"
    datasets = dataset_origins({args.dataset, *(r.dataset for r in rows)}, args.dataset)
    made_by = f"oab-bench {args.command}"
    tables, notes = build_tables(
        got.records, expected_ids=got.expected, truth=got.truth, resamples=args.resamples, seed=args.seed
    )

    def config(name: str, path: str) -> dict:
        files = [{"split": "train", "path": path.replace("00000-of-00001", "*")}]
        return {"config_name": name, "data_files": files}

    front = DatasetCardData(
        **{CARD_KEY: {"kind": KIND, "made_by": made_by, "format": FORMAT, "version": _version("oab-bench")}},
        license="apache-2.0",
        language=["pt"],
        pretty_name="OAB-Bench results",
        tags=["oab-bench", "legal", "brazilian-bar-exam", "llm-as-a-judge", "evaluation-results"],
        source_datasets=[UPSTREAM],
        configs=[{**config("default", f"{JUDGMENTS_DIR}/*/train-00000-of-00001.parquet"), "default": True}]
        + ([config("answers", ANSWERS_FILE)] if answers else [])
        + [config(c, judge_file(c)) for c in sorted(configs.values())],
    )
    judges = ["| config | judge | judgments | models | statuses | cost (USD) |", "|---|---|---|---|---|---|"]
    for judge, name in sorted(configs.items(), key=lambda x: x[1]):
        mine = [r for r in rows if r.judge == judge]
        statuses = ", ".join(f"{s} {n}" for s, n in sorted(Counter(r.status for r in mine).items()))
        cost = "unknown" if any(r.cost_usd is None for r in mine) else f"${sum(r.cost_usd for r in mine):.4f}"
        cell, models = judge.replace("|", "\\|"), len({r.model for r in mine})
        judges.append(f"| `{name}` | {cell} | {len(mine)} | {models} | {statuses} | {cost} |")
    made = [
        f"- oab-bench {_version('oab-bench')} (layout format {FORMAT}); lighteval {_version('lighteval')}"
    ]
    made.append("- Judge settings recorded with the judgments (what shaped the judge's replies):")
    for (judge, text), n in sorted(Counter((r.judge, r.settings or "not recorded") for r in rows).items()):
        shown = text if text == "not recorded" else json.dumps(json.loads(text), sort_keys=True)
        made.append(f"  - {judge}: `{shown}` ({n} judgments)")
    made.append("- Inputs exported:")
    inputs = Counter((r.source, r.source_kind, r.dataset or "") for r in rows)
    for (source, kind, dataset), n in sorted(inputs.items()):
        recorded = f", made with dataset `{dataset}` ({datasets.get(dataset, 'not read here')})"
        recorded = recorded if dataset else ""
        made.append(f"  - `{source}` ({kind}): {n} judgments{recorded}")
    checked = "the datasets the inputs recorded, if any"
    if args.dataset:
        checked = f"`{args.dataset}` ({datasets.get(args.dataset, 'not read here')})"
    listed = "no answers were given (`--answers`, or run and probe folders, carry them)"
    if answers:
        listed = "`answers`: each (model, question)'s answer once (joined on `model`, `question_id`)"
    loader = f'answers = load_dataset("{where}", "answers", split="train")\n' if answers else ""
    nl = "\n"
    return f"""---
{front.to_yaml()}
---

# OAB-Bench results

Judged answers to phase 2 of the Brazilian Bar Exam (OAB/FGV), graded item by item against the official
answer standard by LLM judges, as `oab-bench export` wrote them: {len(rows)} judgments by {len(configs)}
judge(s) of {len({r.model for r in rows})} model(s), and {len(answers)} answers. A row of a
judge's config is one judgment as `oab-bench leaderboard` read it from one input, each judgment once.

## Leaderboard

As `oab-bench leaderboard` prints it for these judgments (checked against {checked};
{args.resamples} bootstrap resamples of whole exams, seed {args.seed});
`oab-bench leaderboard hf:{where}` prints the same table.

{render_markdown(tables, notes + got.notes).rstrip(nl)}

## Configs

`default`: every judgment; {listed}; one config per judge:

{nl.join(judges)}

## How these results were made

{nl.join(made)}

## Fields

`judge` (model, prompt and mode: one leaderboard table, one config), `judge_model`, `prompt_version`,
`mode`, `settings` (JSON); `model`, `question_id`, `exam_id`, `area`, `edition`; `status`, `score`,
`max_score` (only `ok` carries a score: a failure is never a zero), `items` (`item_id, score, max_score,
analysis`); `cost_usd` (null: unknown), `usage`, `attempts`, `cached`; `judge_text`, `error`, `note`,
`parse_method`; `members`, `repeats` (a jury's gradings, each repeat's), `panel` (a published answer's
source); `turn_scores`, `turn_texts` (upstream's judgment files: each turn's score, -1 when none was
found, and text); `source`, `source_kind`, `source_file`, `source_line`, `dataset` (where it was read).

## Use

```python
from datasets import load_dataset
judgments = load_dataset("{where}", split="train")
{loader}one_judge = load_dataset("{where}", "{min(configs.values(), default="CONFIG")}", split="train")
```

With oab-bench: `oab-bench leaderboard hf:{where}`, `oab-bench agreement hf:{where} yours.jsonl`,
`oab-bench report hf:{where} --output report.html`, `oab-bench judge --answers hf:{where} ...`.

## Licence

No question text, official answer or rubric is here, only their ids: they come from
{UPSTREAM} (Apache-2.0). The answers are the evaluated models' outputs, the analyses the judges'. The
`license` field is the underlying data's; change it if your models' outputs come under other terms.
"""
