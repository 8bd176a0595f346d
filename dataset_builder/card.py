"""The dataset card (README.md with YAML metadata) for the Hub folder."""

from __future__ import annotations

from collections import Counter

import yaml

from oab_bench.dataset_builder.build import BuildReport
from oab_bench.dataset_builder.ids import AREAS
from oab_bench.dataset_builder.schema import QuestionRow

CITATION = """\
@inproceedings{pires2025automatic,
  title     = {Automatic Legal Writing Evaluation of {LLMs}},
  author    = {Pires, Ramon and Malaquias Junior, Roseval and Nogueira, Rodrigo},
  booktitle = {Proceedings of the International Conference on Artificial Intelligence and Law (ICAIL)},
  year      = {2025},
  eprint    = {2504.21202},
  archivePrefix = {arXiv},
  url       = {https://arxiv.org/abs/2504.21202}
}"""


def _size_category(n: int) -> str:
    return "n<1K" if n < 1000 else "1K<n<10K"


def card_metadata(rows: list[QuestionRow]) -> dict:
    return {
        "license": "apache-2.0",
        "language": ["pt"],
        "language_bcp47": ["pt-BR"],
        "pretty_name": "OAB-Bench",
        "task_categories": ["text-generation"],
        "tags": ["legal", "brazilian-bar-exam", "oab", "llm-as-a-judge", "rubric"],
        "size_categories": [_size_category(len(rows))],
        "source_datasets": ["maritaca-ai/oab-bench"],
        # No `configs:` block: `data/test-*.parquet` is found by name (the Hub's convention too).
        # With one, `datasets` 5.2 caches a local folder by its name alone, and a rebuilt folder,
        # or another one of the same name, loads the old rows without a word.
    }


def render_card(rows: list[QuestionRow], report: BuildReport) -> str:
    editions = sorted({r.edition for r in rows})
    per_area = Counter(r.area for r in rows if r.kind == "peca")
    areas = ", ".join(f"{AREAS[a]} ({per_area[a]} exams)" for a in sorted(per_area))
    corrections = "\n".join(f"- {c}" for c in report.sorted_corrections()) or "- none"
    origins = sorted(
        {(r.provenance.source, r.provenance.revision or "unknown") for r in rows if r.provenance}
    )
    origin = "; ".join(f"`{s}` at revision `{rev}`" for s, rev in origins) or "not recorded"
    front = yaml.safe_dump(card_metadata(rows), sort_keys=False, allow_unicode=True)
    return f"""---
{front}---

# OAB-Bench

Phase 2 of the Brazilian Bar Exam (Exame de Ordem, OAB/FGV) as a benchmark for legal
writing in Portuguese: per exam one *peça prático-profissional* (5.00 points) and four
*questões discursivas* of two items each (1.25 points per question), 10.00 points in all;
a candidate passes an exam at 6.00 or more.

This build holds {len(rows)} questions ({report.exams} exams) from editions
{", ".join(map(str, editions))}: {areas}.

Each row carries the official answer standard (*padrão de respostas*) in machine-readable
form: `reference` (the commented answer per item) and `rubric` (the score-distribution
table, one entry per scored row, with its `allowed_scores`). For every item the rubric's
maxima add up to the item's `max_score`; where the source is wrong, an errata entry
corrects it (listed below, and in each row's `errata`).

## Fields

| field | meaning |
| --- | --- |
| `question_id` | `{{edition}}_direito_{{area}}_peca_*` or `..._questao_{{1-4}}` |
| `edition`, `area`, `exam_id` | exam = `{{edition}}_direito_{{area}}` |
| `kind`, `number` | `peca` (number 0) or `questao` (1-4) |
| `system_prompt` | the candidate's instructions (the exam's rules) |
| `statement` | the case; headings and `(Valor: ...)` removed, legal text unchanged |
| `items` | `{{label, prompt, max_score}}`: `""` for the peça, `A`/`B` for a questão |
| `max_score` | 5.0 for the peça, 1.25 for a questão |
| `reference` | the commented answer, one text per item |
| `rubric` | `{{item_id, part, section, label, description, max_score, allowed_scores, annulled}}` |
| `errata` | corrections applied to this question |
| `upstream` | upstream's raw statement, turns, values and reference turns, for parity with upstream's judge prompts |
| `provenance` | `{{source, revision}}`: what the row was built from (Hub commit sha, or a hash of the local source's content) |

Annulled items (`annulled: true`) are not graded: as FGV does, every candidate gets
their full value.

## Use

```python
from datasets import load_dataset
ds = load_dataset("<this repo>", split="test")
```

Evaluate a model with lighteval and the project's community task
(`oab_bench_task.py`), or with `oab-bench run`; see the project README.

## Corrections applied in this build

{corrections}

## Source and license

Built from the upstream OAB-Bench release (maritaca-ai/oab-bench, Apache-2.0) by the
OAB-Bench project's `oab-bench build`. Licensed under Apache-2.0.

Source of this build: {origin} (also in each row's `provenance`).

## Citation

```bibtex
{CITATION}
```
"""
