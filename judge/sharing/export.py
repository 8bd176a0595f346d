"""`oab-bench export`: judgment sources, read as the leaderboard reads them, -> a Hub dataset folder with its
card, written whole; each judgment and answer once, every text through `redact`."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from pydantic import BaseModel

from oab_bench.conventions import EXPORT_MARKER
from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.dataset_builder.source import read_objects
from oab_bench.folders import Writer, write_listed
from oab_bench.judge import results_layout as layout
from oab_bench.judge.answers import Answer, details_judgments, load_answers, one_copy_each
from oab_bench.judge.audit.collect import carried_answers
from oab_bench.judge.inspect_log import log_samples
from oab_bench.judge.leaderboard.inputs import Record, read_inputs
from oab_bench.judge.redact import redact, secret_values
from oab_bench.judge.results_layout import AnswerRow, JudgmentRow, open_shared, rows_at
from oab_bench.judge.sharing.results_card import render_card

EXPORT = Writer(
    "oab-bench export", EXPORT_MARKER, "written by `oab-bench export`; a later export may replace this folder"
)


def _redacted(x, secrets: list[str]):
    """Every text of a row through `redact`: a key an error, an answer or a setting quoted never leaves."""
    if isinstance(x, dict):
        return {k: _redacted(v, secrets) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_redacted(v, secrets) for v in x]
    return redact(x, secrets=secrets) if isinstance(x, str) else x


def _relative(file: str, given: str) -> str:
    """Where inside the input `given` the record was read ("" when the input is that file)."""
    if file == given:
        return ""
    return Path(file).relative_to(given).as_posix() if Path(file).is_relative_to(given) else file


def _source_of(file: str) -> tuple[str, dict]:
    """(kind, line -> what the file says); upstream's: first line -> (judge model, turn -> score, text)."""
    shared = rows_at(file)
    if shared is not None:
        return "shared", shared
    if file.endswith(".parquet"):
        return "details", details_judgments(Path(file))
    if file.endswith(".eval"):
        return "judgments", {s.line: s.judgment for s in log_samples(Path(file))}
    lines = dict(read_objects(Path(file)))
    if not lines or not {"turn", "judgment"} <= set(next(iter(lines.values()))):
        return "judgments", lines
    first: dict[tuple, int] = {}
    turns: dict[int, tuple[str, dict[int, tuple[float, str]]]] = {}
    for n, r in lines.items():
        key = (r["judge"][0], r["model"], r["question_id"])
        got = turns.setdefault(first.setdefault(key, n), (key[0], {}))[1]
        got.setdefault(int(r["turn"]), (float(r["score"]), str(r.get("judgment") or "")))
    return "upstream", turns


def _row(record: Record, given: str, recorded: str | None, source: tuple[str, dict], secrets: list[str]):
    kind, at = source
    if kind == "shared":  # a shared dataset exported again: the row as it came, its origin kept
        return at[record.line]
    fields = record.model_dump(include={"judge", "model", "question_id", "exam_id", "area", "edition"})
    fields |= {"source": given, "source_kind": kind, "source_file": _relative(record.source, given)}
    fields |= {"source_line": record.line, "dataset": recorded}
    if kind != "upstream":
        return JudgmentRow.model_validate(_redacted(fields | layout.record_fields(at[record.line]), secrets))
    judge_model, turns = at[record.line]
    n_turns = range(1, 2 if parse_question_id(record.question_id).kind == "peca" else 3)
    fields |= record.model_dump(include={"status", "score", "max_score"}) | {
        "judge_model": judge_model,
        "prompt_version": record.judge[len(judge_model) + 2 : -1] or None,  # "model [prompt]"
        "mode": None,
        "turn_scores": [turns[t][0] if t in turns else None for t in n_turns],
        "turn_texts": [turns[t][1] if t in turns else "" for t in n_turns],
    }
    return JudgmentRow.model_validate(_redacted(fields, secrets))


def _answers(inputs: list[str], answer_files: list[str], secrets: list[str]) -> tuple[list, list[str]]:
    """Each (model, question)'s answer once (two different texts stop), and notes (an answer file gone)."""
    rows, notes = [], []

    def row(a: Answer, given: str) -> AnswerRow:
        q = parse_question_id(a.question_id)
        fields = {"model": a.model, "question_id": a.question_id, "exam_id": q.exam_id, "area": q.area}
        fields |= {"edition": q.edition, "turns": a.turns, "usage": a.usage and a.usage.model_dump()}
        fields |= {"source": given, "source_file": _relative(a.source, given), "source_line": a.line}
        return AnswerRow.model_validate(_redacted(fields, secrets))

    for given in inputs:
        shared = open_shared(given)
        got, gone = ([], []) if shared else carried_answers(Path(given))
        rows += [r for _, _, r in shared.answers()] if shared else [row(a, given) for a in got]
        notes += gone
    rows += [row(a, given) for given in answer_files for a in load_answers(Path(given))]
    where = [f"{r.source}/{r.source_file}" if r.source_file else r.source for r in rows]
    keyed = [
        ((r.model, r.question_id), r.turns, w, r.source_line, r) for r, w in zip(rows, where, strict=True)
    ]
    return list(one_copy_each(keyed, "answers").values()), notes


def _order(r: JudgmentRow):
    """A total order: the same rows make the same file, whatever the order of the inputs."""
    return (r.model, r.question_id, r.source, r.source_file, r.source_line, r.model_dump_json())


def collect(sources: list[str], dataset: str | None = None, answer_files: list[str] = ()) -> tuple:
    """(judgment rows, answer rows, the inputs as the leaderboard read them, notes): what `export` writes."""
    inputs, secrets = read_inputs(list(sources), dataset), secret_values()
    source = functools.cache(_source_of)
    rows = [
        _row(r, given, recorded, source(r.source), secrets)
        for r, (given, recorded) in zip(inputs.records, inputs.origins, strict=True)
    ]
    first: dict[tuple, int] = {}  # the copy that made the judgment (not served by a cache), if any
    for i in sorted(range(len(rows)), key=lambda i: (bool(rows[i].cached), _order(rows[i]))):
        first.setdefault(rows[i].copy_key(), i)
    keep = sorted(first.values())
    copies = len(rows) - len(keep)
    said = "(the same judge, model, question, scores and reply: a run made twice into one folder)"
    notes = [f"{copies} judgments are copies of another {said}: each exported once"] if copies else []
    inputs.records, inputs.origins = [inputs.records[i] for i in keep], [inputs.origins[i] for i in keep]
    contributed = {given for given, _ in inputs.origins}  # a folder skipped (no results) gives no answers
    answer_inputs = [s for s in sources if s in contributed or open_shared(s) is not None]
    answers, gone = _answers(answer_inputs, list(answer_files), secrets)
    return [rows[i] for i in keep], answers, inputs, notes + sorted(gone)


def export_to(args: argparse.Namespace, output: Path, *, repo_id: str | None = None) -> Path:
    """`export`'s and `push-results`' work: `args.sources` -> the folder `output`, a summary on stderr."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    judgments, answers, inputs, notes = collect(args.sources, args.dataset, args.answers or [])
    configs = layout.config_names(sorted({r.judge for r in judgments}))
    card = render_card(judgments, answers, inputs, configs, args, repo_id=repo_id)

    def write(path: Path, rows: list[BaseModel], model: type[BaseModel]) -> None:
        path.parent.mkdir(parents=True)
        table = pa.Table.from_pylist([r.model_dump() for r in rows], schema=layout.arrow_schema(model))
        pq.write_table(table, path)

    def fill(tmp: Path) -> None:
        for judge, config in configs.items():
            mine = sorted((r for r in judgments if r.judge == judge), key=_order)
            write(tmp / layout.judge_file(config), mine, JudgmentRow)
        if answers:
            write(tmp / layout.ANSWERS_FILE, answers, AnswerRow)
        (tmp / "README.md").write_text(redact(card), encoding="utf-8")

    folder = write_listed(Path(output), EXPORT, fill, overwrite=True)
    judges = f"{len(configs)} judge{'' if len(configs) == 1 else 's'}"
    print(f"{len(judgments)} judgments ({judges}), {len(answers)} answers", file=sys.stderr)
    for note in inputs.notes + notes:
        print(f"oab-bench {args.command}: note: {note}", file=sys.stderr)
    return folder
