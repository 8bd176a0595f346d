"""What the candidate is asked: the exam's answer sheet (no lighteval import: `run` looks its answers
up before lighteval starts)."""

from __future__ import annotations

from oab_bench.dataset_builder.schema import QuestionRow, points_pt


def candidate_prompt(row: QuestionRow) -> str:
    """The answer sheet: statement, then each item with its value; all answers in one reply."""
    if row.kind == "peca":
        return f"{row.statement}\n\n(Valor: {points_pt(row.max_score)})\n\nRedija a peça completa em uma única resposta."
    items = "\n\n".join(f"{i.label}) {i.prompt} (Valor: {points_pt(i.max_score)})" for i in row.items)
    labels = ", ".join(i.label for i in row.items)
    return (
        f"{row.statement}\n\n{items}\n\n"
        f"Responda a todos os itens ({labels}) em uma única resposta, identificando cada resposta pela letra do item."
    )


def candidate_messages(row: QuestionRow) -> list[dict]:
    """What the candidate receives (lighteval_compat adds the system message)."""
    return [
        {"role": "system", "content": row.system_prompt},
        {"role": "user", "content": candidate_prompt(row)},
    ]
