"""The 210-question release (editions 42-44): one made-up row per format difference in
../shared/notes/data-format.md, each built end to end (files and Hub layout) or rejected."""

from __future__ import annotations

import pytest

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.errors import BuildError, SourceError
from tests import synthetic as syn

ED, AREA = 43, "do_trabalho"
EXAM = f"{ED}_direito_{AREA}"
PECA_ID = f"{EXAM}_peca_profissional"


def base_exam() -> list[tuple[dict, dict]]:
    """A 42-44 style exam: `peca_profissional` suffix, plain statements."""
    return syn.exam(ED, AREA, suffix="peca_profissional", statement="Caio foi dispensado. Redija a peça.")


def build(tmp_path, pairs, errata=None, *, hub=False):
    src = syn.write_source(tmp_path / "src", pairs, errata=errata)
    source = f"hf:{syn.hub_layout_from_files(src, tmp_path / 'hub')}" if hub else src
    return build_rows(source, src / "errata.yaml")


def with_question(n: int, **kw):
    values = (0.65, 0.6) if n % 2 else (0.6, 0.65)
    return syn.replace(base_exam(), syn.questao(ED, AREA, n, values=kw.pop("values", values), **kw))


def with_peca(statement: str):
    return syn.replace(base_exam(), syn.peca(ED, AREA, suffix="peca_profissional", statement=statement))


LABOUR = (
    "Mévio trabalhou como vigia fictício.\n"
    "Parágrafo extra das peças trabalhistas: a peça deve observar o rito inventado."
)

# (case, pairs, question id, what the built row must say)
CASES = [
    ("peca_profissional suffix", base_exam(), PECA_ID, {"kind": "peca", "number": 0}),
    (
        "peça heading, one newline, (Valor: 5,00)",
        with_peca("PEÇA PRÁTICO-PROFISSIONAL\nCaio foi dispensado. Redija a peça. (Valor: 5,00)"),
        PECA_ID,
        {"statement": "Caio foi dispensado. Redija a peça."},
    ),
    (
        "(Valor: 5.00) with a dot",
        with_peca("Caio foi dispensado. Redija a peça. (Valor: 5.00)"),
        PECA_ID,
        {"statement": "Caio foi dispensado. Redija a peça."},
    ),
    (
        "peça without any prefix",
        with_peca("Caio foi dispensado. Redija a peça."),
        PECA_ID,
        {"statement": "Caio foi dispensado. Redija a peça."},
    ),
    (
        "labour-law peça: the extra paragraph is kept",
        with_peca(f"PEÇA PRÁTICO-PROFISSIONAL\n{LABOUR} (Valor: 5,00)"),
        PECA_ID,
        {"statement": LABOUR},
    ),
    (
        "QUESTÃO N heading, one newline",
        with_question(2, statement="QUESTÃO 2\nTício recorreu de modo fictício."),
        f"{EXAM}_questao_2",
        {"statement": "Tício recorreu de modo fictício."},
    ),
    (
        "questão without any prefix",
        with_question(3, statement="Tício recorreu de modo fictício."),
        f"{EXAM}_questao_3",
        {"statement": "Tício recorreu de modo fictício."},
    ),
    (
        "A) / B) labels and (Valor: 0,65) suffixes that agree",
        with_question(1, turns=["A) Cabe recurso? (Valor: 0,65)", "B) Qual o prazo? (Valor: 0,60)"]),
        f"{EXAM}_questao_1",
        {"prompts": ["Cabe recurso?", "Qual o prazo?"], "max_scores": [0.65, 0.6]},
    ),
    (
        "Obs .: note attached to turn B moves to the statement",
        with_question(
            4,
            statement="Tício recorreu.",
            turns=["A) Item A? (Valor: 0,60)", "B) Item B? (Valor: 0,65)\nObs .: nota inventada."],
        ),
        f"{EXAM}_questao_4",
        {"statement": "Tício recorreu.\nObs .: nota inventada.", "prompts": ["Item A?", "Item B?"]},
    ),
    (
        "Obs .: note in the statement stays there",
        with_question(4, statement="Tício recorreu.\nObs .: nota inventada."),
        f"{EXAM}_questao_4",
        {"statement": "Tício recorreu.\nObs .: nota inventada."},
    ),
    (
        "hyphenation artefacts are text: kept exactly",
        with_question(1, statement="As partes dirigiram- se ao juízo e manifesta- ram recurso."),
        f"{EXAM}_questao_1",
        {"statement": "As partes dirigiram- se ao juízo e manifesta- ram recurso."},
    ),
]


@pytest.mark.parametrize("hub", [False, True], ids=["files", "hub-layout"])
@pytest.mark.parametrize(("case", "pairs", "qid", "expect"), CASES, ids=[c[0] for c in CASES])
def test_each_difference_builds(tmp_path, case, pairs, qid, expect, hub):
    rows, report = build(tmp_path, pairs, hub=hub)
    assert report.questions == 5 and report.exams == 1
    row = next(r for r in rows if r.question_id == qid)
    if "kind" in expect:
        assert (row.kind, row.number) == (expect["kind"], expect["number"])
    if "statement" in expect:
        assert row.statement == expect["statement"]
    if "prompts" in expect:
        assert [i.prompt for i in row.items] == expect["prompts"]
    if "max_scores" in expect:
        assert [i.max_score for i in row.items] == expect["max_scores"]
    source = next(q for q, _ in pairs if q["question_id"] == qid)
    assert row.upstream.statement == source["statement"] and row.upstream.turns == source["turns"]


DISAGREE_A = with_question(1, turns=["A) Cabe recurso? (Valor: 0,60)", "B) Qual o prazo? (Valor: 0,60)"])
DISAGREE_PECA = with_peca("Caio foi dispensado. Redija a peça. (Valor: 4,00)")


@pytest.mark.parametrize(
    ("pairs", "line", "message"),
    [
        (
            DISAGREE_A,
            2,
            f"question.jsonl:2: field 'turns.0': {EXAM}_questao_1: item says (Valor: 0,60) but values[0] is 0.65",
        ),
        (
            DISAGREE_PECA,
            1,
            f"question.jsonl:1: field 'statement': {PECA_ID}: statement says (Valor: 4,00) but values say [5.0]",
        ),
    ],
    ids=["questao item", "peça"],
)
def test_a_valor_that_disagrees_is_an_error_naming_the_row(tmp_path, pairs, line, message):
    with pytest.raises(SourceError) as info:
        build(tmp_path, pairs)
    assert str(info.value).startswith(message) and "correction.wrong_valor" in str(info.value)
    assert info.value.line == line


def wrong_valor(qid: str, fields: list[str]) -> dict:
    return {
        "question_id": qid,
        "problem": "the written (Valor: ...) is wrong",
        "evidence": "the score table and the exam total agree with values",
        "correction": {"wrong_valor": fields},
    }


def test_errata_settles_a_wrong_valor(tmp_path):
    rows, report = build(tmp_path / "a", DISAGREE_A, [wrong_valor(f"{EXAM}_questao_1", ["turns.0"])])
    row = next(r for r in rows if r.question_id == f"{EXAM}_questao_1")
    assert [i.max_score for i in row.items] == [0.65, 0.6] and row.items[0].prompt == "Cabe recurso?"
    assert row.errata == ["the written (Valor: ...) is wrong"]
    assert report.corrections == [
        f"{EXAM}_questao_1: kept values over the written (Valor: ...) of turns.0: the written (Valor: ...) is wrong"
    ]
    rows, _ = build(tmp_path / "b", DISAGREE_PECA, [wrong_valor(PECA_ID, ["statement"])])
    assert rows[0].statement == "Caio foi dispensado. Redija a peça."


def test_errata_that_no_longer_matches_is_stale(tmp_path):
    with pytest.raises(
        BuildError, match=r"errata says the \(Valor: ...\) of \['turns.1'\] is wrong, but it agrees"
    ):
        build(tmp_path, DISAGREE_A, [wrong_valor(f"{EXAM}_questao_1", ["turns.0", "turns.1"])])
