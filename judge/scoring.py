"""Code, not the judge, adds the scores; FGV gives every candidate the full value of an annulled item."""

from __future__ import annotations

from oab_bench.dataset_builder.schema import QuestionRow, money
from oab_bench.judge.records import ItemScore

ANNULLED = "Item anulado pela banca: pontuação atribuída a todos."


def annulled_items(row: QuestionRow) -> list[ItemScore]:
    return [
        ItemScore(item_id=r.item_id, score=r.max_score, max_score=r.max_score, analysis=ANNULLED)
        for r in row.rubric
        if r.annulled
    ]


def annulled_part(row: QuestionRow, part: str) -> bool:
    """Every rubric row of item `part` ("", "A", "B") annulled: the item counts in full, unasked."""
    rows = row.rubric_for(part)
    return bool(rows) and all(r.annulled for r in rows)


def question_score(items: list[ItemScore]) -> float:
    return money(sum(i.score for i in items))
