"""Made-up questions and score tables in upstream's format, for unit tests.

The texts are invented; only the shapes (and the traps) follow the real files.
"""

from __future__ import annotations

import json
from pathlib import Path

SYSTEM = "Você é um candidato fictício em uma prova de teste."


def table(
    rows: list[tuple[str, str]], *, heading: str | None = "DISTRIBUIÇÃO DOS PONTOS", pad: int = 40
) -> str:
    """A padded markdown score table, as upstream writes them."""
    lines = [f"| {'ITEM'.ljust(pad)} | {'PONTUAÇÃO'.ljust(14)} |", f"|:{'-' * (pad + 1)}|:{'-' * 15}|"]
    lines += [f"| {item.ljust(pad)} | {cell.ljust(14)} |" for item, cell in rows]
    head = f"{heading}\n\n" if heading else ""
    return head + "\n".join(lines) + "\n"


PECA_TABLE = [
    ("Endereçamento", "nan"),
    ("1. Juízo da Vara Única da Comarca Fictícia (0,10).", "0,00/0,10"),
    ("Fundamentação", "nan"),
    (
        "2. Tese inventada sobre o contrato (0,80), conforme o Art. 1º da Lei Imaginária (0,10).",
        "0,00/0,80/0,90",
    ),
    ("3. Outra tese inventada (1,50) OU tese alternativa (1,50).", "0,00/1,50"),
    ("4. Terceira tese (1,00), com base no Art. 2º (0,20).", "0,0/1,00/1,20"),
    ("Pedidos", "nan"),
    ("5. Procedência do pedido (0,60).", "0,00/0,60"),
    ("6. Condenação em honorários (0,60).", "0,00/0,60"),
    ("Fechamento", "nan"),
    ("7. Local, data, advogado e OAB (0,10).", "0,00/0,10"),
]


def peca(edition: int, area: str, *, suffix: str = "peca_praticoprofissional", rows=None, statement=None):
    qid = f"{edition}_direito_{area}_{suffix}"
    q = {
        "question_id": qid,
        "category": f"{edition}_direito_{area}",
        "statement": statement
        if statement is not None
        else "PEÇA PRÁTICO-PROFISSIONAL\n\nCaio contratou Tício para um serviço imaginário. Redija a peça cabível. (Valor: 5,00)\nObs.: nota fictícia.",
        "turns": [""],
        "values": [5.0],
        "system": SYSTEM,
    }
    ref = "O examinando deve redigir uma petição fictícia.\n\n" + table(rows or PECA_TABLE)
    return q, guideline(qid, [ref])


def questao(
    edition: int,
    area: str,
    number: int,
    *,
    values=(0.65, 0.6),
    rows_a=None,
    rows_b=None,
    turns=None,
    statement=None,
    heading_b: str | None = None,
):
    qid = f"{edition}_direito_{area}_questao_{number}"
    a, b = values
    rows_a = rows_a or [
        (
            f"A. Resposta inventada (0,{int(a * 100) - 10:02d}), Art. 3º (0,10).",
            f"0,00/0,{int(a * 100) - 10:02d}/{a:.2f}".replace(".", ","),
        )
    ]
    rows_b = rows_b or [
        (
            f"B. Outra resposta (0,{int(b * 100) - 10:02d}), Art. 4º (0,10).",
            f"0,00/0,{int(b * 100) - 10:02d}/{b:.2f}".replace(".", ","),
        )
    ]
    q = {
        "question_id": qid,
        "category": f"{edition}_direito_{area}",
        "statement": statement
        if statement is not None
        else "QUESTÃO\n\nMévio celebrou um contrato fictício. Responda aos itens.",
        "turns": turns or ["Mévio tem direito? Justifique.", "Qual o prazo? Justifique."],
        "values": list(values),
        "system": SYSTEM,
    }
    refs = [
        "Sim, por razões inventadas.\n\n" + table(rows_a),
        "O prazo imaginário é de dez dias.\n\n" + table(rows_b, heading=heading_b),
    ]
    return q, guideline(qid, refs)


def guideline(qid: str, turns: list[str]) -> dict:
    return {
        "question_id": qid,
        "answer_id": f"ref-{qid}",
        "model_id": "guidelines",
        "choices": [{"index": 0, "turns": turns}],
        "tstamp": 0.0,
    }


def exam(edition: int = 90, area: str = "civil", **peca_kw) -> list[tuple[dict, dict]]:
    """A complete made-up exam: peça + 4 questões, 10.00 points."""
    out = [peca(edition, area, **peca_kw)]
    out += [questao(edition, area, n, values=(0.65, 0.6) if n % 2 else (0.6, 0.65)) for n in range(1, 5)]
    return out


def write_source(folder: Path, pairs: list[tuple[dict, dict]], *, errata: list | None = None) -> Path:
    """Write question.jsonl and reference_answer/guidelines.jsonl (and errata.yaml if given)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference_answer").mkdir(exist_ok=True)
    with (folder / "question.jsonl").open("w", encoding="utf-8") as f:
        for q, _ in pairs:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    with (folder / "reference_answer" / "guidelines.jsonl").open("w", encoding="utf-8") as f:
        for _, g in pairs:
            f.write(json.dumps(g, ensure_ascii=False) + "\n")
    import yaml

    (folder / "errata.yaml").write_text(yaml.safe_dump(errata or []), encoding="utf-8")
    return folder


def replace(pairs: list[tuple[dict, dict]], new: tuple[dict, dict]) -> list[tuple[dict, dict]]:
    return [new if q["question_id"] == new[0]["question_id"] else (q, g) for q, g in pairs]


HUB_CARD = """---
configs:
- config_name: questions
  data_files:
  - split: train
    path: questions/train-*
- config_name: guidelines
  data_files:
  - split: train
    path: guidelines/train-*
---
# made-up copy of upstream's Hub layout
"""


def write_hub_layout(folder: Path, questions: list[dict], guidelines: list[dict]) -> Path:
    """Upstream's Hub layout on disk: README.md with `configs:`, questions/ and guidelines/ parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for config, objects in (("questions", questions), ("guidelines", guidelines)):
        (folder / config).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(objects), folder / config / "train-00000-of-00001.parquet")
    (folder / "README.md").write_text(HUB_CARD, encoding="utf-8")
    return folder


def hub_layout_from_files(source: Path, folder: Path) -> Path:
    """The Hub layout made from a folder of upstream's JSONL files."""

    def objects(path: Path) -> list[dict]:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    return write_hub_layout(
        folder,
        objects(source / "question.jsonl"),
        objects(source / "reference_answer" / "guidelines.jsonl"),
    )
