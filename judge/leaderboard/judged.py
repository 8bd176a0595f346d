"""The one record type every reader makes (`Record`: one judged question), and what a question id
alone says about its question (`Facts`): the exam, area, edition and value a record is checked
against when no dataset is given.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.dataset_builder.schema import PECA_MAX, QUESTAO_MAX, QuestionRow


class Record(BaseModel):
    """One judged (judge, model, question)."""

    judge: str  # judge model and prompt: rankings never mix two of them
    model: str
    question_id: str
    exam_id: str
    area: str
    edition: int
    status: str
    score: float | None
    max_score: float
    source: str
    line: int = 0  # in `source`; 0 when it has no lines
    repeat_scores: list[float | None] | None = None  # --repeats K: each repeat's score (None: failed)
    panel: str | None = None  # a panel's published answer (`--panel`): where the answers came from
    items: dict[str, float] | None = None  # item id -> score, where an ok judgment has item scores


class Facts(BaseModel):
    """What a question is worth and where it belongs: the dataset's word, else the inputs' majority."""

    question_id: str
    exam_id: str
    area: str
    edition: int
    max_score: float


def facts_of_rows(rows: Iterable[QuestionRow]) -> dict[str, Facts]:
    return {
        r.question_id: Facts(
            question_id=r.question_id,
            exam_id=r.exam_id,
            area=r.area,
            edition=r.edition,
            max_score=r.max_score,
        )
        for r in rows
    }


def facts_of_id(question_id: str) -> Facts:
    """What the id alone says (a peça is worth 5.00, a questão 1.25): the tie-breaker without a dataset."""
    exam, area, edition, max_score = id_facts(question_id)
    return Facts(question_id=question_id, exam_id=exam, area=area, edition=edition, max_score=max_score)


def id_facts(question_id: str) -> tuple[str, str, int, float]:
    q = parse_question_id(question_id)
    return q.exam_id, q.area, q.edition, PECA_MAX if q.kind == "peca" else QUESTAO_MAX


def record_of(question_id: str, max_score: float | None = None, **fields) -> Record:
    """A record whose exam, area and edition come from its question id."""
    exam, area, edition, default_max = id_facts(question_id)
    return Record(
        question_id=question_id,
        exam_id=fields.pop("exam_id", exam),
        area=area,
        edition=edition,
        max_score=default_max if max_score is None else max_score,
        **fields,
    )


def unjudged(question_id: str, judge: str, model: str = "") -> Record:
    """A question expected but judged by nobody: it counts against coverage."""
    return record_of(question_id, judge=judge, model=model, status="missing", score=None, source="")
