"""The results dataset's card: YAML front matter (our marker, the configs), the leaderboard as
`oab-bench leaderboard` prints it for the same sources, how the results were made, and the licence."""

from __future__ import annotations

import json
from collections import Counter
from importlib import metadata
from pathlib import Path

import yaml

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.dataset import load_rows
from oab_bench.judge.leaderboard.tables import build_tables, render_markdown
from oab_bench.judge.results_layout import (
    ANSWERS_FILE,
    CARD_KEY,
    FORMAT,
    JUDGMENTS_DIR,
    KIND,
    SPLIT,
    JudgmentRow,
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
    for name in sorted(n for n in names if n):
        if name != given and not Path(name).is_dir():
            continue
        try:
            rows = load_rows(name)
        except (SourceError, OSError, ValueError) as e:  # the card says so; the export goes on
            out[name] = f"not readable here: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            continue
        origins = {
            f"built from {r.provenance.source} at revision {r.provenance.revision or 'unknown'}"
            for r in rows
            if r.provenance
        }
        out[name] = "; ".join(sorted(origins)) or "no provenance recorded"
    return out


def card_configs(configs: dict[str, str], answers: bool) -> list[dict]:
    """`default` (every judgment), `answers`, and one config per judge."""

    def one(name: str, path: str) -> dict:
        return {"config_name": name, "data_files": [{"split": SPLIT, "path": path}]}

    out = [{**one("default", f"{JUDGMENTS_DIR}/*/train-*.parquet"), "default": True}]
    if answers:
        out.append(one("answers", ANSWERS_FILE.replace("00000-of-00001", "*")))
    out += [one(c, judge_file(c).replace("00000-of-00001", "*")) for c in sorted(configs.values())]
    return out


def card_front(configs: dict[str, str], answers: bool, made_by: str) -> dict:
    return {
        CARD_KEY: {"kind": KIND, "made_by": made_by, "format": FORMAT, "version": _version("oab-bench")},
        "license": "apache-2.0",
        "language": ["pt"],
        "pretty_name": "OAB-Bench results",
        "tags": ["oab-bench", "legal", "brazilian-bar-exam", "llm-as-a-judge", "evaluation-results"],
        "source_datasets": [UPSTREAM],
        "configs": card_configs(configs, answers),
    }


def _cost(rows: list[JudgmentRow]) -> str:
    costs = [r.cost_usd for r in rows]
    return "unknown" if any(c is None for c in costs) else f"${sum(costs):.4f}"


def _judges(rows: list[JudgmentRow], configs: dict[str, str]) -> list[str]:
    out = [
        "| config | judge | judgments | models | statuses | cost (USD) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for judge, config in sorted(configs.items(), key=lambda x: x[1]):
        mine = [r for r in rows if r.judge == judge]
        statuses = ", ".join(f"{s} {n}" for s, n in sorted(Counter(r.status for r in mine).items()))
        cell = judge.replace("|", "\\|")
        out.append(
            f"| `{config}` | {cell} | {len(mine)} | {len({r.model for r in mine})} | {statuses} | {_cost(mine)} |"
        )
    return out


def _settings(rows: list[JudgmentRow]) -> list[str]:
    """Each judge's recorded settings, as many distinct ones as its records name."""
    out = []
    for judge in sorted({r.judge for r in rows}):
        seen = Counter(r.settings or "not recorded" for r in rows if r.judge == judge)
        for text, n in sorted(seen.items()):
            shown = text if text == "not recorded" else json.dumps(json.loads(text), sort_keys=True)
            out.append(f"- {judge}: `{shown}` ({n} judgments)")
    return out


def _inputs(rows: list[JudgmentRow], datasets: dict[str, str]) -> list[str]:
    out = []
    counts = Counter((r.source, r.source_kind, r.dataset or "") for r in rows)
    for (source, kind, dataset), n in sorted(counts.items()):
        made = (
            f", made with dataset `{dataset}` ({datasets.get(dataset, 'not read here')})" if dataset else ""
        )
        out.append(f"- `{source}` ({kind}): {n} judgments{made}")
    return out


def render_card(
    exported,
    configs: dict[str, str],
    *,
    made_by: str,
    repo_id: str | None = None,
    dataset: str | None = None,
    datasets: dict[str, str] | None = None,
    resamples: int,
    seed: int,
) -> str:
    """`datasets`: each dataset named (by --dataset or an input) -> what it was built from, at which revision."""
    datasets = datasets or {}
    rows, got = exported.judgments, exported.inputs
    tables, notes = build_tables(
        got.records, expected_ids=got.expected, truth=got.truth, resamples=resamples, seed=seed
    )
    board = render_markdown(tables, notes + got.notes).rstrip("\n")
    where = repo_id or "<this repo>"
    front = yaml.safe_dump(
        card_front(configs, bool(exported.answers), made_by), sort_keys=False, allow_unicode=True
    )
    checked = (
        f"`{dataset}` ({datasets.get(dataset, 'not read here')})"
        if dataset
        else "the datasets the inputs recorded, if any"
    )
    first = sorted(configs.values())[0] if configs else "CONFIG"
    answers_line = (
        "`answers` each (model, question)'s answer once (joined to the judgments on `model`, `question_id`); "
        if exported.answers
        else "no answers were given (`--answers`, or run and probe folders, carry them); "
    )
    answers_use = (
        f'answers = load_dataset("{where}", "answers", split="{SPLIT}")\n' if exported.answers else ""
    )
    return f"""---
{front}---

# OAB-Bench results

Judged answers to phase 2 of the Brazilian Bar Exam (OAB/FGV), graded item by item against the
official answer standard by an LLM judge, as exported by `oab-bench export`: {len(rows)} judgments by
{len(configs)} judge(s) of {len({r.model for r in rows})} model(s), and {len(exported.answers)} answers.
One row of a judge's config is one judgment as `oab-bench leaderboard` read it from one input.

## Leaderboard

As `oab-bench leaderboard` prints it for these judgments (checked against {checked};
{resamples} bootstrap resamples of whole exams, seed {seed}); read back with
`oab-bench leaderboard hf:{where}` it prints the same table.

{board}

## Configs

`default` holds every judgment; {answers_line}one config per judge:

{chr(10).join(_judges(rows, configs))}

## How these results were made

- oab-bench {_version("oab-bench")} (layout format {FORMAT}); lighteval {_version("lighteval")} where a run made them.
- Judge settings recorded with the judgments (what shaped the judge's replies):
{chr(10).join("  " + line for line in _settings(rows))}
- Inputs exported:
{chr(10).join("  " + line for line in _inputs(rows, datasets))}

## Fields

| field | meaning |
| --- | --- |
| `judge` | judge model and prompt (`model [prompt version, mode]`): one leaderboard table, one config |
| `model`, `question_id`, `exam_id`, `area`, `edition` | what was answered |
| `status`, `score`, `max_score` | only `ok` carries a score; a failure is never a zero |
| `items` | `{{item_id, score, max_score, analysis}}` per rubric item |
| `judge_model`, `prompt_version`, `mode`, `settings` | the judge, its prompt, and its settings (JSON) |
| `cost_usd`, `usage`, `attempts`, `cached` | what the judgment cost (null: unknown), its tokens and calls |
| `judge_text`, `error`, `note`, `parse_method` | the judge's reply, why it failed, what was done to the answer |
| `members`, `repeats` | a jury's members' gradings; each repeat's grading (`--repeats`) |
| `panel` | a published answer judged beside a candidate (`--panel`): where the answers came from |
| `turn_scores`, `turn_texts` | upstream's judgment files: each turn's score (-1: none found) and text |
| `source`, `source_kind`, `source_file`, `source_line`, `dataset` | where it was read, and the dataset that input recorded |

## Use

```python
from datasets import load_dataset
judgments = load_dataset("{where}", split="{SPLIT}")
{answers_use}one_judge = load_dataset("{where}", "{first}", split="{SPLIT}")
```

With oab-bench: `oab-bench leaderboard hf:{where}`, `oab-bench agreement hf:{where} yours.jsonl`,
`oab-bench report hf:{where} --output report.html`, `oab-bench judge --answers hf:{where} ...`.

## Licence

No question text, official answer or rubric is in this dataset: only their ids. They come from
{UPSTREAM} (Apache-2.0), the upstream OAB-Bench release, as built by `oab-bench build`. The answers
are the evaluated models' outputs and the analyses the judges' outputs. The `license` field above
is the underlying data's (Apache-2.0); change it if your models' outputs come under other terms.
"""
