"""Question ids: `{edition}_direito_{area}_{peca_praticoprofissional|peca_profissional|questao_N}`."""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

AREAS: dict[str, str] = {
    "administrativo": "Direito Administrativo",
    "civil": "Direito Civil",
    "constitucional": "Direito Constitucional",
    "empresarial": "Direito Empresarial",
    "penal": "Direito Penal",
    "do_trabalho": "Direito do Trabalho",
    "tributario": "Direito Tributário",
}
EDITIONS = range(39, 45)  # editions in the data: the tasks oab_bench:39 ... oab_bench:44

_ID_RE = re.compile(
    r"^(?P<edition>\d{2,3})_direito_(?P<area>" + "|".join(AREAS) + r")_"
    r"(?:(?P<peca>peca_praticoprofissional|peca_profissional)|questao_(?P<number>[1-4]))$"
)


class QuestionId(NamedTuple):
    edition: int
    area: str
    kind: Literal["peca", "questao"]
    number: int  # 0 for the peça, 1-4 for the questões

    @property
    def exam_id(self) -> str:
        return f"{self.edition}_direito_{self.area}"


def parse_question_id(question_id: str) -> QuestionId:
    """Raise ValueError naming the id when it does not follow upstream's scheme."""
    m = _ID_RE.match(question_id)
    if not m:
        scheme = "'{edition}_direito_{area}_peca_praticoprofissional|peca_profissional|questao_{1-4}'"
        raise ValueError(f"question id {question_id!r} does not parse as {scheme}")
    return QuestionId(int(m["edition"]), m["area"], "peca" if m["peca"] else "questao", int(m["number"] or 0))
