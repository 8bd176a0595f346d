"""Made-up questions for the probe's tests, a probe judgment of a given share, and `oab-bench probe`
run in-process against the stub judge (shared by the probe, estimate and dataset tests)."""

from __future__ import annotations

from oab_bench.dataset_builder.schema import Item, QuestionRow, RubricItem, UpstreamText
from oab_bench.judge.records import Judgment
from oab_bench.scripts.cli import main

WORDS = [f"termo{chr(97 + i)}" for i in range(19)]  # made-up words


def _sentence(seed: int, n: int = 8) -> str:
    words = [WORDS[(seed * 7 + i * 3) % len(WORDS)] for i in range(n)]
    return f"{words[0].capitalize()} {' '.join(words[1:])} conforme o Art. {seed}º da Lei nº 1.{seed:03d}/20."


def _text(seed: int, n: int) -> str:
    return " ".join(_sentence(seed * 10 + i) for i in range(n))


def _rubric(part: str, n: int, value: float) -> list[RubricItem]:
    return [
        RubricItem(
            item_id=f"{part or 'P'}{i + 1}",
            part=part,
            section="",
            label=f"{i + 1}.",
            description=f"Tese inventada {i + 1} ({value:.2f}).",
            max_score=value,
            allowed_scores=[0.0, value],
        )
        for i in range(n)
    ]


def made_up(edition: int, area: str, number: int, *, table: bool = False) -> QuestionRow:
    """A made-up question: the peça (number 0) or a questão with items A and B."""
    seed = edition * 100 + len(area) * 10 + number
    suffix = (
        " \n\nDISTRIBUIÇÃO DOS PONTOS\n\n| ITEM | PONTUAÇÃO |\n|:--|:--|\n| 1. Tese (0,10) | 0,00/0,10 |"
        * table
    )
    if number == 0:
        items = [Item(label="", prompt="", max_score=5.0)]
        reference = [_text(seed, 7) + suffix]
        rubric, kind, qid = _rubric("", 10, 0.5), "peca", f"{edition}_direito_{area}_peca_praticoprofissional"
    else:
        items = [Item(label="A", prompt="A?", max_score=0.65), Item(label="B", prompt="B?", max_score=0.6)]
        reference = ["Sim. " + _text(seed, 1) + suffix, _text(seed + 5, 3)]
        rubric = _rubric("A", 1, 0.65) + _rubric("B", 2, 0.3)
        kind, qid = "questao", f"{edition}_direito_{area}_questao_{number}"
    return QuestionRow(
        question_id=qid,
        edition=edition,
        area=area,
        exam_id=f"{edition}_direito_{area}",
        kind=kind,
        number=number,
        system_prompt="Sistema fictício.",
        statement="Caso inventado.",
        items=items,
        max_score=5.0 if number == 0 else 1.25,
        reference=reference,
        rubric=rubric,
        upstream=UpstreamText(statement="x", turns=["x"], values=[1.0], reference_turns=["x"]),
    )


ROWS = [made_up(e, a, n, table=(n == 2)) for e in (90, 91) for a in ("civil", "penal") for n in range(5)]


def probe_judgment(row: QuestionRow, kind: str, share: float | None) -> Judgment:
    status = "ok" if share is not None else "api_error"
    return Judgment(
        question_id=row.question_id,
        exam_id=row.exam_id,
        model=f"probe:{kind}",
        judge_model="j",
        prompt_version="v",
        mode="structured",
        status=status,
        score=None if share is None else round(share * row.max_score, 2),
        max_score=row.max_score,
    )


EXAMS = ["39_direito_penal", "40_direito_civil"]  # two whole exams: 10 questions, 50 judgments


def probe(capsys, dataset, server, tmp_path, *extra):
    args = ["probe", "--dataset", str(dataset), "--questions", *EXAMS, "--judge-model", "openai/judge-probe"]
    args += ["--api-base", server.url, "--cache", str(tmp_path / "cache"), "--output", str(tmp_path / "out")]
    args += ["--no-progress", "--resamples", "500", *map(str, extra)]
    capsys.readouterr()
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err
