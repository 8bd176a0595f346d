"""The builder on made-up questions: every table trap, the 42-44 format, every bad input."""

from __future__ import annotations

import json
import time

import pyarrow.parquet as pq
import pytest
import yaml

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.errors import BuildError, SourceError
from oab_bench.dataset_builder.publish import DATA_FILE, is_our_build, write_dataset
from oab_bench.dataset_builder.text import parse_reference, parse_scores
from tests import synthetic as syn
from tests.conftest import oab
from tests.helpers import (
    ANNUL,
    SWAP,
    _bad_question,
    _write_lines,
    two_exams,
)


def build(tmp_path, pairs, errata=None):
    src = syn.write_source(tmp_path / "src", pairs, errata=errata)
    return build_rows(src, src / "errata.yaml")


def row_of(rows, suffix):
    return next(r for r in rows if r.question_id.endswith(suffix))


def test_clean_exam_builds(tmp_path):
    rows, report = build(tmp_path, syn.exam())
    assert [r.number for r in rows] == [0, 1, 2, 3, 4]
    assert report.exams == 1 and report.corrections == []
    peca = rows[0]
    assert peca.kind == "peca" and peca.max_score == 5.0 and peca.items[0].label == ""
    assert [r.item_id for r in peca.rubric] == [f"P{i}" for i in range(1, 8)]
    assert peca.rubric[0].section == "Endereçamento" and peca.rubric[1].section == "Fundamentação"
    assert peca.rubric[1].label == "2." and peca.rubric[1].description.startswith("Tese inventada")
    assert peca.statement.startswith("Caio contratou") and "(Valor" not in peca.statement
    assert peca.reference == ["O examinando deve redigir uma petição fictícia."]
    q2 = rows[2]
    assert [i.max_score for i in q2.items] == [0.6, 0.65]
    assert [(r.item_id, r.part) for r in q2.rubric] == [("A1", "A"), ("B1", "B")]
    assert q2.statement.startswith("Mévio")


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("0,00/0,55/0,65", [0.0, 0.55, 0.65]),
        ("0,0/0,10", [0.0, 0.1]),
        ("0,00/0,25/0,30/0,35 0,40/0,55/0,65", [0.0, 0.25, 0.3, 0.35, 0.4, 0.55, 0.65]),
        ("0,00/0,10/ 0,20/0,30", [0.0, 0.1, 0.2, 0.3]),
        ("0,00/0,10/  0,20", [0.0, 0.1, 0.2]),
        ("0,00/0,30/0,40/0,50 /0,60", [0.0, 0.3, 0.4, 0.5, 0.6]),
        ("0.00/0,55/0,65", [0.0, 0.55, 0.65]),
    ],
)
def test_score_cell_variants(cell, expected):
    assert parse_scores(cell) == expected


@pytest.mark.parametrize("cell", ["0,00/x/0,65", "0,00-0,65", "zero"])
def test_unreadable_score_cell(cell):
    with pytest.raises(ValueError, match="unreadable score cell"):
        parse_scores(cell)


def test_table_traps_labels_sections_padding(tmp_path):
    rows_ = [
        ("Endereçamento:", "nan"),
        ("1. Juízo fictício (0,10).", "0,0/0,10"),
        ("Qualificação", "nan"),
        ("Parte autora sem rótulo (0,10).", "0,00/0,10"),  # no label
        ("2. Parte ré (0,10).", "0,00/0,10"),
        ("2. Rótulo repetido (0,80), Art. 5º (0,10).", "0,00/0,80/0,90"),  # repeated label
        ("a) Alínea (1,00).", "0,00/1,00"),
        ("5.1 Subitem sem ponto final (0,50) OU alternativa (0,50).", "0,00/0,50"),  # OU: only one counts
        ("II. Romano (1,00).", "0,00/1,00"),
        ("Pedidos", "nan"),
        ("3. Pedido (1,30).", "0,00/ 0,65/1,30"),
    ]
    pairs = syn.replace(syn.exam(), syn.peca(90, "civil", rows=rows_))
    rows, _ = build(tmp_path, pairs)
    peca = rows[0]
    assert [r.label for r in peca.rubric] == ["1.", "", "2.", "2.", "a)", "5.1", "II.", "3."]
    assert [r.item_id for r in peca.rubric] == [f"P{i}" for i in range(1, 9)]
    assert [r.section for r in peca.rubric] == ["Endereçamento:"] + ["Qualificação"] * 6 + ["Pedidos"]
    assert peca.rubric[5].max_score == 0.5 and " OU " in peca.rubric[5].description
    assert sum(r.max_score for r in peca.rubric) == pytest.approx(5.0)


def test_missing_heading_and_label_variants_in_questao(tmp_path):
    q = syn.questao(
        90,
        "civil",
        1,
        rows_a=[("A) Resposta com parêntese (0,55), Art. 1º (0,10).", "0,00/0,55/0,65")],
        rows_b=[("B1. Primeira parte (0,30).", "0,00/0,30"), ("B2. Segunda parte (0,30).", "0,00/0,30")],
        heading_b=None,
    )
    rows, _ = build(tmp_path, syn.replace(syn.exam(), q))
    r = row_of(rows, "questao_1")
    assert [(x.item_id, x.part, x.label) for x in r.rubric] == [
        ("A1", "A", "A)"),
        ("B1", "B", "B1."),
        ("B2", "B", "B2."),
    ]
    assert r.reference[1] == "O prazo imaginário é de dez dias."


def test_item_total_mismatch_is_an_error_naming_question_item_and_totals(tmp_path):
    q = syn.questao(90, "civil", 1, rows_b=[("B. Resposta (0,50), Art. (0,10).", "0,00/0,50/0,70")])
    with pytest.raises(
        BuildError,
        match=r"90_direito_civil_questao_1, item B: score table totals 0.70 but the item is worth 0.60",
    ):
        build(tmp_path, syn.replace(syn.exam(), q))


def test_swapped_values_need_errata_and_errata_fixes_them(tmp_path):
    q = syn.questao(90, "civil", 1, values=(0.6, 0.65))
    q[1]["choices"][0]["turns"] = [
        "A.\n\n" + syn.table([("A. Tese (0,55), Art. (0,10).", "0,00/0,55/0,65")]),
        "B.\n\n" + syn.table([("B. Tese (0,50), Art. (0,10).", "0,00/0,50/0,60")]),
    ]
    pairs = syn.replace(syn.exam(), q)
    with pytest.raises(BuildError, match=r"item A: score table totals 0.65 but the item is worth 0.60"):
        build(tmp_path / "a", pairs)
    errata = [
        {
            "question_id": "90_direito_civil_questao_1",
            "problem": "values swapped",
            "evidence": "tables say A 0.65, B 0.60",
            "correction": {"values": [0.65, 0.6]},
        }
    ]
    rows, report = build(tmp_path / "b", pairs, errata)
    r = row_of(rows, "questao_1")
    assert [i.max_score for i in r.items] == [0.65, 0.6]
    assert r.upstream.values == [0.6, 0.65]  # the raw upstream values stay available
    assert r.errata == ["values swapped"]
    assert report.corrections == [
        "90_direito_civil_questao_1: values [0.6, 0.65] -> [0.65, 0.6]: values swapped"
    ]


MERGED = [
    ("Endereçamento", "nan"),
    ("1. Juízo (0,10).", "0,00/0,10"),
    ("Partes", "nan"),
    ("2. Autor (0,10).", "0,00/0,10/0,20/0,30"),  # merged cell: range of items 2-4
    ("3. Réu (0,10).", "nan"),
    ("4. Terceiro (0,10).", "nan"),
    ("Fundamentação", "nan"),
    ("5. Tese (2,00), Art. (0,10).", "0,00/2,00/2,10"),
    ("6. Tese (2,00), Art. (0,10).", "0,00/2,00/2,10"),
    ("7. Fechamento (0,40).", "0,00/0,40"),
]


def test_merged_cells_are_refused_then_split_by_errata(tmp_path):
    pairs = syn.replace(syn.exam(), syn.peca(90, "civil", rows=MERGED))
    with pytest.raises(BuildError, match="P3: item row has no score cell"):
        build(tmp_path / "a", pairs)
    fix = {
        "question_id": "90_direito_civil_peca_praticoprofissional",
        "problem": "merged cell",
        "evidence": "items 2-4 share one cell",
        "correction": {
            "scores": [
                {"item_id": "P2", "was": "0,00/0,10/0,20/0,30", "now": [0, 0.1]},
                {"item_id": "P3", "was": "nan", "now": [0, 0.1]},
                {"item_id": "P4", "was": "nan", "now": [0, 0.1]},
            ]
        },
    }
    rows, report = build(tmp_path / "b", pairs, [fix])
    peca = rows[0]
    assert [r.max_score for r in peca.rubric[:4]] == [0.1, 0.1, 0.1, 0.1]
    assert peca.rubric[2].section == "Partes"  # a merged-cell item is not a section
    assert len(report.corrections) == 1


def test_stale_errata_is_an_error(tmp_path):
    stale = {
        "question_id": "90_direito_civil_peca_praticoprofissional",
        "problem": "x",
        "evidence": "y",
        "correction": {"scores": [{"item_id": "P1", "was": "0,00/0,99", "now": [0, 0.1]}]},
    }
    with pytest.raises(BuildError, match="errata expects P1 to read '0,00/0,99'"):
        build(tmp_path / "a", syn.exam(), [stale])
    unknown = {**stale, "question_id": "90_direito_penal_questao_1"}
    with pytest.raises(BuildError, match=r"not in question\.jsonl"):
        build(tmp_path / "b", syn.exam(), [unknown])
    same = {**stale, "correction": {"values": [5.0]}}
    with pytest.raises(BuildError, match="already has"):
        build(tmp_path / "c", syn.exam(), [same])


def test_annulled_item_must_be_recorded_and_is_marked(tmp_path):
    q = syn.questao(90, "civil", 3, rows_b=[("B. (Anulada)", "0,00/0,50/0,60")])
    pairs = syn.replace(syn.exam(), q)
    with pytest.raises(BuildError, match=r"marks items \['B1'\] as annulled"):
        build(tmp_path / "a", pairs)
    entry = {
        "question_id": "90_direito_civil_questao_3",
        "problem": "annulled",
        "evidence": "(Anulada)",
        "correction": {"annulled": ["B1"]},
    }
    rows, report = build(tmp_path / "b", pairs, [entry])
    b1 = row_of(rows, "questao_3").rubric[1]
    assert b1.annulled and b1.max_score == 0.6
    assert "annulled B1" in report.corrections[0]


def test_cell_without_zero_is_an_error(tmp_path):
    rows_ = [(t, "0,15/0,25/0,35" if t.startswith("1.") else c) for t, c in syn.PECA_TABLE]
    with pytest.raises(BuildError, match="does not start at 0"):
        build(tmp_path, syn.replace(syn.exam(), syn.peca(90, "civil", rows=rows_)))


# --- editions 42-44: the newer question format -------------------------------------------------


def test_newer_format_differences(tmp_path):
    peca = syn.peca(
        92,
        "do_trabalho",
        suffix="peca_profissional",
        statement="PEÇA PRÁTICO-PROFISSIONAL\nCaio foi dispensado de modo imaginário.\nParágrafo extra da área trabalhista.\nRedija a peça. (Valor: 5.00)",
    )
    q1 = syn.questao(
        92,
        "do_trabalho",
        1,
        statement="QUESTÃO 1\nTício dirigiram- se ao juízo fictício.",
        turns=[
            "A) Tício tem razão? Justifique. (Valor: 0,65)",
            "B) Qual o recurso? Justifique. (Valor: 0,60)",
        ],
    )
    q2 = syn.questao(
        92,
        "do_trabalho",
        2,
        values=(0.6, 0.65),
        statement="Sem prefixo algum.",
        turns=[
            "A) Item A? (Valor: 0,60)",
            "B) Item B? (Valor: 0,65)\nObs .: o(a) examinando(a) deve fundamentar, nota inventada.",
        ],
    )
    pairs = [peca, q1, q2] + [
        syn.questao(92, "do_trabalho", n, values=(0.65, 0.6) if n % 2 else (0.6, 0.65)) for n in (3, 4)
    ]
    rows, report = build(tmp_path, pairs)
    p = rows[0]
    assert p.question_id.endswith("peca_profissional") and p.kind == "peca"
    assert (
        p.statement
        == "Caio foi dispensado de modo imaginário.\nParágrafo extra da área trabalhista.\nRedija a peça."
    )
    r1 = row_of(rows, "questao_1")
    assert r1.statement == "Tício dirigiram- se ao juízo fictício."  # hyphenation artefacts are text: kept
    assert [i.prompt for i in r1.items] == ["Tício tem razão? Justifique.", "Qual o recurso? Justifique."]
    assert r1.upstream.turns[0].startswith("A) ")
    r2 = row_of(rows, "questao_2")
    assert r2.statement == "Sem prefixo algum.\nObs .: o(a) examinando(a) deve fundamentar, nota inventada."
    assert r2.items[1].prompt == "Item B?"
    assert any("moved its 'Obs.:' note" in n for n in report.normalisations)


@pytest.mark.parametrize(
    ("turns", "statement", "match"),
    [
        (
            ["A) x (Valor: 0,60)", "B) y (Valor: 0,60)"],
            None,
            r"turns.0': 92_direito_civil_questao_1: item says \(Valor: 0,60\) but values\[0\] is 0.65",
        ),
        (
            ["B) x", "A) y"],
            None,
            r"turns.0': 92_direito_civil_questao_1: item starts with 'B\)' but is turn 1",
        ),
        (None, "QUESTÃO 3\nTexto.", "heading says QUESTÃO 3 but the id says questao_1"),
        (["x (Valor: 0,65) resto", "y"], None, r"text after '\(Valor: ...\)'"),
    ],
)
def test_newer_format_disagreements_are_errors(tmp_path, turns, statement, match):
    q = syn.questao(92, "civil", 1, turns=turns, statement=statement)
    with pytest.raises(SourceError, match=match) as info:
        build(tmp_path, syn.replace(syn.exam(92, "civil"), q))
    assert info.value.file == "question.jsonl" and info.value.line == 2


def test_peca_value_disagreement(tmp_path):
    pairs = syn.replace(syn.exam(), syn.peca(90, "civil", statement="Redija. (Valor: 4,00)"))
    with pytest.raises(
        SourceError,
        match=r"question.jsonl:1: field 'statement': 90_direito_civil_peca_praticoprofissional: statement says \(Valor: 4,00\)",
    ):
        build(tmp_path, pairs)


# --- bad input: one clear line naming file, line and field -----------------------------------------


def _write_raw(tmp_path, questions: list[str], guidelines: list[str]):
    src = tmp_path / "src"
    (src / "reference_answer").mkdir(parents=True)
    (src / "question.jsonl").write_text("\n".join(questions) + "\n", encoding="utf-8")
    (src / "reference_answer" / "guidelines.jsonl").write_text("\n".join(guidelines) + "\n", encoding="utf-8")
    (src / "errata.yaml").write_text("[]\n")
    return src


def _lines(pairs):
    return [json.dumps(q, ensure_ascii=False) for q, _ in pairs], [
        json.dumps(g, ensure_ascii=False) for _, g in pairs
    ]


def _bad(tmp_path, mutate):
    qs, gs = _lines(syn.exam())
    mutate(qs, gs)
    src = _write_raw(tmp_path, qs, gs)
    with pytest.raises(SourceError) as info:
        build_rows(src, src / "errata.yaml")
    return str(info.value)


def test_malformed_json(tmp_path):
    def mutate(qs, gs):
        qs[2] = qs[2][:-5]

    assert _bad(tmp_path, mutate).startswith("question.jsonl:3: invalid JSON")


def test_missing_field_and_wrong_type(tmp_path):
    def drop(qs, gs):
        qs[1] = json.dumps({k: v for k, v in json.loads(qs[1]).items() if k != "values"})

    assert _bad(tmp_path / "a", drop) == "question.jsonl:2: field 'values': missing"

    def wrong(qs, gs):
        d = json.loads(qs[1])
        d["values"] = ["muito", 0.6]
        qs[1] = json.dumps(d)

    assert _bad(tmp_path / "b", wrong).startswith("question.jsonl:2: field 'values[0]':")


def test_question_without_reference(tmp_path):
    def mutate(qs, gs):
        del gs[3]

    assert _bad(tmp_path, mutate) == (
        "question.jsonl:4: field 'question_id': no reference answer for '90_direito_civil_questao_3' "
        "in reference_answer/guidelines.jsonl"
    )


def test_reference_for_unknown_question(tmp_path):
    def mutate(qs, gs):
        d = json.loads(gs[0])
        d["question_id"] = "90_direito_civil_questao_9"
        gs.append(json.dumps(d))

    assert "reference_answer/guidelines.jsonl:6: field 'question_id': reference for unknown question" in _bad(
        tmp_path, mutate
    )


def test_turn_counts_disagree(tmp_path):
    def fewer_ref_turns(qs, gs):
        d = json.loads(gs[1])
        d["choices"][0]["turns"] = d["choices"][0]["turns"][:1]
        gs[1] = json.dumps(d)

    assert _bad(tmp_path / "a", fewer_ref_turns) == (
        "question.jsonl:2: field 'turns': reference has 1 turn(s) but the question has 2"
    )

    def values_vs_turns(qs, gs):
        d = json.loads(qs[1])
        d["values"] = [1.25]
        qs[1] = json.dumps(d)

    assert _bad(tmp_path / "b", values_vs_turns) == "question.jsonl:2: field 'values': 1 values for 2 turns"


def test_duplicate_id(tmp_path):
    def mutate(qs, gs):
        qs.append(qs[1])

    assert _bad(tmp_path, mutate) == (
        "question.jsonl:6: field 'question_id': duplicate question id '90_direito_civil_questao_1' (first at line 2)"
    )


def test_id_that_does_not_parse(tmp_path):
    def mutate(qs, gs):
        d = json.loads(qs[1])
        d["question_id"] = "90_direito_maritimo_questao_1"
        qs[1] = json.dumps(d)

    msg = _bad(tmp_path, mutate)
    assert msg.startswith(
        "question.jsonl:2: field 'question_id': question id '90_direito_maritimo_questao_1' does not parse"
    )


def test_category_disagrees_with_id(tmp_path):
    def mutate(qs, gs):
        d = json.loads(qs[1])
        d["category"] = "91_direito_civil"
        qs[1] = json.dumps(d)

    assert "field 'category'" in _bad(tmp_path, mutate)


@pytest.mark.parametrize(
    ("reference", "match"),
    [
        ("Só texto, sem tabela.", "no score table"),
        ("x\n\n| ITEM | NOTA |\n|:--|:--|\n| A. y (0,65) | 0,00/0,65 |\n", "header"),
        ("x\n\n| ITEM | PONTUAÇÃO |\n| A. y (0,65) | 0,00/0,65 |\n", "separator"),
        ("x\n\n| ITEM | PONTUAÇÃO |\n|:--|:--|\n| A. y | 0,00 | 0,65 |\n", "row 1 has 3 cells"),
        ("x\n\n| ITEM | PONTUAÇÃO |\n|:--|:--|\n| A. y (0,65) | 0,00/abc |\n", "unreadable score cell"),
        ("x\n\n| ITEM | PONTUAÇÃO |\n|:--|:--|\ntexto no meio\n| A. y (0,65) | 0,00/0,65 |\n", "interrupted"),
    ],
)
def test_unreadable_table(tmp_path, reference, match):
    def mutate(qs, gs):
        d = json.loads(gs[1])
        d["choices"][0]["turns"][0] = reference
        gs[1] = json.dumps(d)

    msg = _bad(tmp_path, mutate)
    assert (
        msg.startswith("reference_answer/guidelines.jsonl:2: field 'choices[0].turns[0]':") and match in msg
    )


def test_incomplete_exam_is_an_error(tmp_path):
    with pytest.raises(BuildError, match=r"exam 90_direito_civil is incomplete: has \[0, 1, 2, 3\]"):
        build(tmp_path, syn.exam()[:4])


def test_parse_reference_keeps_commented_answer_exact():
    text = "Linha um.\nLinha dois com (parênteses).\n\nDistribuição dos Pontos\n\n" + syn.table(
        [("A. x (0,65)", "0,00/0,65")], heading=None
    )
    answer, rows = parse_reference(text)
    assert answer == "Linha um.\nLinha dois com (parênteses)."
    assert rows[0].scores == [0.0, 0.65]


def test_errata_file_errors(tmp_path):
    from oab_bench.dataset_builder.errata import load_errata

    p = tmp_path / "e.yaml"
    p.write_text(yaml.safe_dump([{"question_id": "x", "problem": "p", "correction": {}}]))
    with pytest.raises(SourceError, match=r"field '\[0\].evidence': missing"):
        load_errata(p)


def test_a_rebuilt_dataset_folder_never_loads_stale_rows(tmp_path):
    """`datasets` caches a local folder whose card declares `configs` by its name alone."""
    from oab_bench.judge.dataset import load_rows

    loaded = []
    for n, edition in enumerate((90, 91)):
        src = syn.write_source(tmp_path / f"src{n}", syn.exam(edition=edition))
        rows, report = build_rows(src, src / "errata.yaml")
        for where in (tmp_path / f"a{n}" / "same-name", tmp_path / "a0" / "same-name"):
            write_dataset(rows, report, where, overwrite=True)
            time.sleep(0.05)
            loaded.append((edition, {r.edition for r in load_rows(str(where))}))
    assert all({edition} == got for edition, got in loaded), loaded


def test_bad_sources_are_one_line_naming_file_and_line(tmp_path):
    src = syn.write_source(tmp_path / "src", syn.exam())
    questions = src / "question.jsonl"
    lines = questions.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"a", b"\xe9", 1)  # latin-1, not UTF-8
    questions.write_bytes(b"\n".join(lines))
    cases = {"non-UTF-8": (src, "question.jsonl:2: not UTF-8")}
    empty = syn.write_source(tmp_path / "empty", syn.exam())
    (empty / "question.jsonl").write_text("")
    cases["empty"] = (empty, "question.jsonl:1: no questions")
    folder = syn.write_source(tmp_path / "folder", syn.exam())
    (folder / "question.jsonl").unlink()
    (folder / "question.jsonl").mkdir()
    cases["folder"] = (folder, "question.jsonl: is a folder")
    cases["source is a file"] = (questions, "is a file: expected the upstream data folder")
    for name, (source, expected) in cases.items():
        out = tmp_path / f"out-{name}"
        proc = oab("build", "--source", source, "--output", out, "--errata", src / "errata.yaml")
        assert proc.returncode == 2, name
        (line,) = proc.stderr.strip().splitlines()
        assert expected in line, (name, line)
        assert not out.exists()


def test_a_hub_folder_with_an_empty_config_is_a_clear_error(tmp_path):
    pairs = syn.exam()
    folder = syn.write_hub_layout(tmp_path / "raw", [q for q, _ in pairs], [g for _, g in pairs])
    path = folder / "questions" / "train-00000-of-00001.parquet"
    pq.write_table(pq.read_table(path).slice(0, 0), path)
    with pytest.raises(SourceError, match="cannot read config 'questions'"):
        build_rows(f"hf:{folder}")


def test_reordered_crlf_source_builds_byte_identical_output(tmp_path):
    pairs = two_exams()
    a = syn.write_source(tmp_path / "a" / "src", pairs, errata=[SWAP, ANNUL])
    b = syn.write_source(tmp_path / "b" / "src", pairs[::-1], errata=[ANNUL, SWAP])
    # b: lines reversed, CRLF endings, other JSON spacing and escaping
    _write_lines(
        b / "question.jsonl", [q for q, _ in pairs[::-1]], newline="\r\n", indent=None, separators=(",", ":")
    )
    _write_lines(b / "reference_answer" / "guidelines.jsonl", [g for _, g in pairs[::-1]], newline="\r\n")
    built = []
    for src in (a, b):
        rows, report = build_rows(src, src / "errata.yaml")
        out = write_dataset(rows, report, src.parent / "out")
        built.append(((out / DATA_FILE).read_bytes(), (out / "README.md").read_bytes(), report.lines()))
    assert built[0] == built[1]
    lines = built[0][2]
    assert [line.split(":")[0] for line in lines if line.startswith("errata applied")] == [
        "errata applied",
        "errata applied",
    ]
    assert [line.split()[2] for line in lines if line.startswith("errata applied")] == [
        "90_direito_civil_questao_3:",
        "91_direito_penal_questao_1:",
    ]
    card = built[0][1].decode()
    assert card.index("- 90_direito_civil_questao_3:") < card.index("- 91_direito_penal_questao_1:")


def test_revision_changes_with_the_content(tmp_path):
    pairs = two_exams()
    a = syn.write_source(tmp_path / "a", pairs, errata=[SWAP, ANNUL])
    q, g = pairs[1]
    changed = syn.replace(pairs, ({**q, "statement": q["statement"] + " Outra frase."}, g))
    b = syn.write_source(tmp_path / "b", changed, errata=[SWAP, ANNUL])
    rev_a = build_rows(a, a / "errata.yaml")[0][0].provenance.revision
    rev_b = build_rows(b, b / "errata.yaml")[0][0].provenance.revision
    assert rev_a.startswith("sha256:") and rev_a != rev_b


@pytest.mark.parametrize(
    ("n", "changes", "where"),
    [
        (2, {"values": ["0.6", 0.65]}, "field 'values[0]': '0.6' is not a number"),
        (0, {"values": [True]}, "field 'values[0]': True is not a number"),
        (
            2,
            {"values": [float("nan"), float("nan")]},
            "field 'values[0]': nan: Input should be a finite number",
        ),
        (2, {"values": [0.6, float("inf")]}, "field 'values[1]': inf: Input should be a finite number"),
        (2, {"statement": ""}, "field 'statement': '': Value error, empty text"),
        (2, {"statement": " \n"}, "field 'statement': ' \\n': Value error, empty text"),
        (2, {"system": ""}, "field 'system': '': Value error, empty text"),
        (2, {"turns": ["", "Qual o prazo?"]}, "field 'turns.0': a questão's item prompt is empty"),
        (2, {"turns": ["Mévio tem direito?", " "]}, "field 'turns.1': a questão's item prompt is empty"),
        (
            2,
            {"statement": "Caso \ud800 inventado."},
            "field 'statement': 'Caso \\ud800 inventado.': Value error, lone surrogate",
        ),
        (
            3,
            {"turns": ["Item \udfff?", "Outro?"]},
            "field 'turns[0]': 'Item \\udfff?': Value error, lone surrogate",
        ),
    ],
)
def test_bad_question_fields_name_file_line_and_field(tmp_path, n, changes, where):
    assert _bad_question(tmp_path, n, **changes).startswith(f"question.jsonl:{n + 1}: {where}")


def test_int_values_and_the_pecas_empty_turn_still_build(tmp_path):
    pairs = syn.exam()
    pairs[0][0]["values"] = [5]  # an int where a float is expected is fine
    assert pairs[0][0]["turns"] == [""]  # upstream's peça: one empty turn
    src = syn.write_source(tmp_path / "src", pairs)
    rows, _ = build_rows(src, src / "errata.yaml")
    assert rows[0].items[0].max_score == 5.0


def test_lone_surrogate_in_a_reference_names_guidelines_line_and_field(tmp_path):
    pairs = syn.exam()
    src = syn.write_source(tmp_path / "src", pairs)
    pairs[1][1]["choices"][0]["turns"][0] = "Resposta \ud800 inventada."
    (src / "reference_answer" / "guidelines.jsonl").write_text(
        "".join(json.dumps(g) + "\n" for _, g in pairs)
    )
    with pytest.raises(
        SourceError, match=r"^reference_answer/guidelines\.jsonl:2: field 'choices\[0\]\.turns\[0\]': "
    ):
        build_rows(src, src / "errata.yaml")


def test_an_empty_correction_is_refused_naming_the_errata_file_and_entry(tmp_path):
    empty = {**ANNUL, "correction": {}}
    src = syn.write_source(tmp_path / "src", two_exams(), errata=[SWAP, empty])
    with pytest.raises(SourceError) as info:
        build_rows(src, src / "errata.yaml")
    assert str(info.value).startswith(f"{src / 'errata.yaml'}: field '[1].correction': the entry for ")
    assert "90_direito_civil_questao_3 corrects nothing" in str(info.value)


def test_a_scores_fix_that_the_source_already_has_is_refused(tmp_path):
    same = {
        "question_id": "90_direito_civil_peca_praticoprofissional",
        "problem": "p",
        "evidence": "e",
        "correction": {"scores": [{"item_id": "P1", "was": "0,00/0,10", "now": [0.0, 0.1]}]},
    }
    src = syn.write_source(tmp_path / "src", syn.exam(), errata=[same])
    with pytest.raises(
        BuildError, match=r"errata\.yaml sets the scores of P1 to \[0\.0, 0\.1\], which the source"
    ):
        build_rows(src, src / "errata.yaml")


def test_a_values_entry_does_not_silence_the_questions_merged_cell_warnings(tmp_path):
    q = syn.questao(90, "civil", 1, values=(0.6, 0.65))
    q[1]["choices"][0]["turns"] = [
        "A.\n\n" + syn.table([("A. Tese (0,50), Art. (0,10).", "0,00/0,55/0,65")]),  # parts 0.60 < 0.65
        "B.\n\n" + syn.table([("B. Tese (0,50), Art. (0,10).", "0,00/0,50/0,60")]),
    ]
    swap = {**SWAP, "question_id": "90_direito_civil_questao_1"}
    src = syn.write_source(tmp_path / "src", syn.replace(syn.exam(), q), errata=[swap])
    _, report = build_rows(src, src / "errata.yaml")
    assert report.warnings == [
        "90_direito_civil_questao_1 A1: max 0.65 exceeds its parenthesised parts (0.60)"
    ]


def test_in_a_clone_of_upstreams_repository_errors_name_the_path_from_the_folder_given(tmp_path):
    pairs = syn.exam()
    data = syn.write_source(tmp_path / "clone" / "data" / "oab_bench", pairs)
    lines = (data / "question.jsonl").read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace('"statement"', '"statement_x"')
    (data / "question.jsonl").write_text("".join(lines))
    with pytest.raises(SourceError) as info:
        build_rows(tmp_path / "clone", data / "errata.yaml")
    assert str(info.value) == "data/oab_bench/question.jsonl:3: field 'statement': missing"
    (data / "question.jsonl").write_text("".join(json.dumps(q) + "\n" for q, _ in pairs))
    pairs[4][1]["choices"][0]["turns"] = ["sem tabela", "sem tabela"]
    (data / "reference_answer" / "guidelines.jsonl").write_text(
        "".join(json.dumps(g) + "\n" for _, g in pairs)
    )
    with pytest.raises(
        SourceError, match=r"^data/oab_bench/reference_answer/guidelines\.jsonl:5: field 'choices"
    ):
        build_rows(tmp_path / "clone", data / "errata.yaml")


def test_our_built_folder_as_source_is_named_as_such(tmp_path):
    src = syn.write_source(tmp_path / "src", syn.exam())
    rows, report = build_rows(src, src / "errata.yaml")
    out = write_dataset(rows, report, tmp_path / "ds")
    with pytest.raises(
        SourceError, match="looks like a dataset folder built by `oab-bench build`, not upstream's"
    ):
        build_rows(out, src / "errata.yaml")


def test_a_rebuild_that_fails_leaves_the_folder_as_it_was(tmp_path, monkeypatch):
    """The new folder is filled beside the old one and renamed in only once whole."""
    import oab_bench.dataset_builder.publish as publish

    src = syn.write_source(tmp_path / "src", syn.exam())
    rows, report = build_rows(src, src / "errata.yaml")
    out = write_dataset(rows, report, tmp_path / "ds")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    monkeypatch.setattr(publish, "render_card", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        write_dataset(rows, report, out, overwrite=True)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    monkeypatch.undo()
    assert write_dataset(rows, report, out, overwrite=True) == out and is_our_build(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "src"]  # nothing left beside it
