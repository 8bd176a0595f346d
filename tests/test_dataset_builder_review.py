"""Review fixes of the builder: order-independent output, strict input types, no-op errata, old
markers, and error locations. Made-up questions only (tests/synthetic.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.errors import BuildError, SourceError
from oab_bench.dataset_builder.publish import DATA_FILE, MARKER, MARKER_HEAD, is_our_build, write_dataset
from tests import synthetic as syn

SWAP = {
    "question_id": "91_direito_penal_questao_1",
    "problem": "values swapped",
    "evidence": "tables say A 0.65, B 0.60",
    "correction": {"values": [0.65, 0.6]},
}
ANNUL = {
    "question_id": "90_direito_civil_questao_3",
    "problem": "item B annulled",
    "evidence": "FGV annulled it",
    "correction": {"annulled": ["B1"]},
}


def two_exams() -> list[tuple[dict, dict]]:
    """Two made-up exams, one needing a values errata and the other an annulment."""
    swapped = syn.questao(91, "penal", 1, values=(0.6, 0.65))
    swapped[1]["choices"][0]["turns"] = [
        "A.\n\n" + syn.table([("A. Tese (0,55), Art. (0,10).", "0,00/0,55/0,65")]),
        "B.\n\n" + syn.table([("B. Tese (0,50), Art. (0,10).", "0,00/0,50/0,60")]),
    ]
    annulled = syn.questao(90, "civil", 3, rows_b=[("B. (Anulada)", "0,00/0,50/0,60")])
    return syn.replace(syn.exam(90, "civil"), annulled) + syn.replace(syn.exam(91, "penal"), swapped)


def _write_lines(path, objects, *, newline: str, **dumps) -> None:
    path.write_bytes("".join(json.dumps(o, **dumps) + newline for o in objects).encode("utf-8"))


# --- 1. the same input in another order builds the same bytes ------------------------------------


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


# --- 2 and 5. wrong types, empty texts, NaN, lone surrogates: file:line and field -----------------


def _bad_question(tmp_path, n: int, **changes) -> str:
    """Build one exam whose line `n + 1` of question.jsonl has `changes`; the SourceError's text."""
    pairs = syn.exam()
    src = syn.write_source(tmp_path / "src", pairs)
    pairs[n][0].update(changes)
    # ASCII-escaped JSON: a lone surrogate can only be written as an escape
    (src / "question.jsonl").write_text("".join(json.dumps(q) + "\n" for q, _ in pairs))
    with pytest.raises(SourceError) as info:
        build_rows(src, src / "errata.yaml")
    return str(info.value)


@pytest.mark.parametrize(
    ("n", "changes", "where"),
    [
        (2, {"values": ["0.6", 0.65]}, "field 'values.0': Input should be a valid number"),
        (0, {"values": [True]}, "field 'values.0': Input should be a valid number"),
        (2, {"values": [float("nan"), float("nan")]}, "field 'values.0': Input should be a finite number"),
        (2, {"values": [0.6, float("inf")]}, "field 'values.1': Input should be a finite number"),
        (2, {"statement": ""}, "field 'statement': Value error, empty text"),
        (2, {"statement": " \n"}, "field 'statement': Value error, empty text"),
        (2, {"system": ""}, "field 'system': Value error, empty text"),
        (2, {"turns": ["", "Qual o prazo?"]}, "field 'turns.0': a questão's item prompt is empty"),
        (2, {"turns": ["Mévio tem direito?", " "]}, "field 'turns.1': a questão's item prompt is empty"),
        (2, {"statement": "Caso \ud800 inventado."}, "field 'statement': Value error, lone surrogate"),
        (3, {"turns": ["Item \udfff?", "Outro?"]}, "field 'turns.0': Value error, lone surrogate"),
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
        SourceError, match=r"^reference_answer/guidelines\.jsonl:2: field 'choices\.0\.turns\.0': "
    ):
        build_rows(src, src / "errata.yaml")


# --- 3. errata entries that change nothing are refused ----------------------------------------------


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


# --- 4. an older marker (no hashes) cannot vouch for the files ------------------------------------


def test_an_old_marker_does_not_let_overwrite_replace_an_edited_card(tmp_path):
    src = syn.write_source(tmp_path / "src", syn.exam())
    rows, report = build_rows(src, src / "errata.yaml")
    out = write_dataset(rows, report, tmp_path / "ds")
    (out / MARKER).write_text(MARKER_HEAD + "\n")  # a marker from before markers listed files
    assert not is_our_build(out)  # nothing proves the files are ours
    (out / "README.md").write_text("# my own notes on this dataset\n")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(FileExistsError) as info:
        write_dataset(rows, report, out, overwrite=True)
    assert "lists no file hashes" in str(info.value) and f"rm -r {out}" in str(info.value)
    assert "README.md (not verifiable" in str(info.value)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "src"]  # no temporary folder left
    # the same files as this build writes are verified by their bytes: replaced, with a full marker now
    write_dataset(rows, report, tmp_path / "fresh")
    (out / "README.md").write_bytes((tmp_path / "fresh" / "README.md").read_bytes())
    assert write_dataset(rows, report, out, overwrite=True) == out
    assert is_our_build(out)


# --- 5. errors say where, as the user can find it ------------------------------------------------


def test_in_a_clone_of_upstreams_repository_errors_name_the_path_from_the_folder_given(tmp_path):
    pairs = syn.exam()
    data = syn.write_source(tmp_path / "clone" / "data" / "oab_bench", pairs)
    lines = (data / "question.jsonl").read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace('"statement"', '"statement_x"')
    (data / "question.jsonl").write_text("".join(lines))
    with pytest.raises(SourceError) as info:
        build_rows(tmp_path / "clone", data / "errata.yaml")
    assert str(info.value) == "data/oab_bench/question.jsonl:3: field 'statement': Field required"
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


def test_a_rebuilt_folder_is_swapped_in_whole(tmp_path, monkeypatch):
    """The old folder was renamed aside and then the new one in: a kill between the two renames
    left no output folder at all. On Linux the two are now exchanged in one step; elsewhere (or
    on a file system without it) the two renames remain, the old folder restored on failure."""
    from oab_bench.dataset_builder import publish

    def folder(name: str, text: str) -> Path:
        (tmp_path / name).mkdir()
        (tmp_path / name / "README.md").write_text(text)
        return tmp_path / name

    output, new = folder("out", "old"), folder(".out.new", "new")
    publish._swap_in(new, output)
    assert (output / "README.md").read_text() == "new" and not new.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    if sys.platform.startswith("linux"):
        assert publish._exchange(folder("a", "a"), folder("b", "b"))
        assert (tmp_path / "a" / "README.md").read_text() == "b"

    monkeypatch.setattr(publish, "_exchange", lambda a, b: False)  # the fallback: two renames
    publish._swap_in(folder(".out.newer", "newer"), output)
    assert (output / "README.md").read_text() == "newer"
    assert {p.name for p in tmp_path.iterdir()} - {"a", "b"} == {"out"}
