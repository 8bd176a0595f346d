"""The dataset card (README.md with YAML metadata): the built folder's, and the pushed one's (configs)."""

from __future__ import annotations

from collections import Counter

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


def render_card(rows: list[QuestionRow], report: BuildReport) -> str:
    """The built folder's card, without `configs:` (docs/dataset.md: a local folder declaring them is cached
    by its name alone)."""
    from huggingface_hub import DatasetCardData

    meta = DatasetCardData(
        license="apache-2.0",
        language=["pt"],
        language_bcp47=["pt-BR"],
        pretty_name="OAB-Bench",
        task_categories=["text-generation"],
        tags=["legal", "brazilian-bar-exam", "oab", "llm-as-a-judge", "rubric"],
        size_categories=["n<1K" if len(rows) < 1000 else "1K<n<10K"],
        source_datasets=["maritaca-ai/oab-bench"],
    )
    per_area = Counter(r.area for r in rows if r.kind == "peca")
    areas = ", ".join(f"{AREAS[a]} ({per_area[a]} exams)" for a in sorted(per_area))
    corrections = "\n".join(f"- {c}" for c in report.corrections) or "- none"
    origins = sorted({(r.provenance.source, r.provenance.revision) for r in rows})
    origin = "; ".join(f"`{s}` at revision `{rev}`" for s, rev in origins)
    editions = ", ".join(map(str, sorted({r.edition for r in rows})))
    return f"""---
{meta.to_yaml()}
---

# OAB-Bench

Phase 2 of the Brazilian Bar Exam (Exame de Ordem, OAB/FGV) as a benchmark for legal writing in
Portuguese: per exam one *peça prático-profissional* (5.00 points) and four *questões discursivas* of
two items each (1.25 points per question), 10.00 points in all; a candidate passes at 6.00 or more.
This build holds {len(rows)} questions ({report.exams} exams) from editions {editions}: {areas}.

Each row carries the official answer standard (*padrão de respostas*): `reference` (the commented
answer per item) and `rubric` (the score table, one entry per scored row, with its `allowed_scores`).
For every item the rubric's maxima add up to the item's `max_score`; where the source is wrong, an
errata entry corrects it (listed below, and in each row's `errata`). Annulled items (`annulled: true`)
are not graded: as FGV does, every candidate gets their full value.

## Fields

`question_id` (`{{edition}}_direito_{{area}}_peca_*` or `..._questao_{{1-4}}`), `edition`, `area`,
`exam_id` (`{{edition}}_direito_{{area}}`), `kind` and `number` (`peca` 0, `questao` 1-4),
`system_prompt` (the exam's rules), `statement` (the case; headings and `(Valor: ...)` removed, legal
text unchanged), `items` (`label, prompt, max_score`: `""` for the peça, `A`/`B`), `max_score`,
`reference`, `rubric` (`item_id, part, section, label, description, max_score, allowed_scores,
annulled`), `errata`, `upstream` (upstream's raw texts and values, for its judge prompts),
`provenance` (`source, revision`: the Hub commit sha, or a hash of the local source's content).

## Use

```python
from datasets import load_dataset
ds = load_dataset("<this repo>", split="test")
```

Evaluate a model with lighteval and the project's task (`oab_bench_task.py`), or with `oab-bench run`.

## Corrections applied in this build

{corrections}

## Source and license

Built by `oab-bench build` from the upstream OAB-Bench release (maritaca-ai/oab-bench, Apache-2.0), from
{origin} (also in each row's `provenance`). Licensed under Apache-2.0.

## Citation

```bibtex
{CITATION}
```
"""


def pushed_card(card: str, editions: list[int], repo_id: str) -> str:
    """The built card with `configs:` (the full set, one per edition) and the repository named."""
    from huggingface_hub import DatasetCard

    def config(name: str, path: str) -> dict:
        return {"config_name": name, "data_files": [{"split": "test", "path": path}]}

    pushed = DatasetCard(card)
    per_edition = [config(f"edition_{e}", f"editions/{e}/test-*") for e in editions]
    pushed.data["configs"] = [{**config("default", "data/test-*"), "default": True}, *per_edition]
    names = ", ".join(f"`edition_{e}`" for e in editions)
    pushed.text = pushed.text.replace('"<this repo>"', f'"{repo_id}"').replace(
        "## Use\n",
        f"## Use\n\nConfigs: `default` (every question) and one per edition ({names}), e.g. "
        f'`load_dataset("{repo_id}", "edition_{editions[-1]}", split="test")`.\n',
        1,
    )
    return str(pushed)
