"""`oab-bench export`: judgment sources -> a Hub dataset folder (judge/results_layout.py) with its card.

The sources are read by the leaderboard's reader (judge/leaderboard/inputs.py), so what is exported is
what the leaderboard counts, checked the same way, copies included; each record then takes everything
its source says of it. Answers come from run folders, probe folders, `--answers` files and shared
datasets, once per (model, question). Every text goes through `redact`. The folder is written whole or
not at all, and replaces only a folder `oab-bench export` wrote, unchanged since: the one folder guard
(oab_bench/folders.py), called here and nowhere else in this package (EXPORT, check_output,
write_export, written).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from oab_bench.conventions import EXPORT_MARKER
from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.dataset_builder.source import read_objects
from oab_bench.folders import Writer, check_replaceable, write_listed, written_files
from oab_bench.judge.answers import Answer, details_judgments, load_answers, one_per_question
from oab_bench.judge.audit.collect import carried_answers
from oab_bench.judge.leaderboard.inputs import Inputs, Record, read_inputs
from oab_bench.judge.redact import redact, secret_values
from oab_bench.judge.results_layout import (
    ANSWERS_FILE,
    AnswerRow,
    JudgmentRow,
    answers_schema,
    config_names,
    judge_file,
    judgments_schema,
    record_fields,
)
from oab_bench.judge.results_source import open_shared, rows_at
from oab_bench.judge.sharing.results_card import dataset_origins, render_card

EXPORT = Writer(
    "oab-bench export",
    EXPORT_MARKER,
    head="written by `oab-bench export`; a later export may replace this folder",
    replacing="the export",
)


class Exported(BaseModel):
    judgments: list[JudgmentRow]
    answers: list[AnswerRow]
    inputs: Inputs  # as the leaderboard read them: the card's table
    notes: list[str] = []  # what the answers' sources said (a panel's answer file gone)


def _redacted(x, secrets: list[str] | None = None):
    """Every text of a row through `redact`: a key an error, an answer or a setting quoted never leaves."""
    secrets = secret_values() if secrets is None else secrets
    if isinstance(x, str):
        return redact(x, secrets=secrets)
    if isinstance(x, dict):
        return {k: _redacted(v, secrets) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_redacted(v, secrets) for v in x]
    return x


def _relative(file: str, given: str) -> str:
    """Where inside the input `given` the record was read ("" when the input is that file)."""
    if file == given:
        return ""
    try:
        return Path(file).relative_to(given).as_posix()
    except ValueError:
        return file


def _upstream_turns(path: Path) -> dict[int, tuple[str, dict[int, tuple[float, str]]]]:
    """First line of each (judge, model, question) of an upstream file -> (judge model, each turn's
    score and text), as leaderboard/upstream_turns.py reads them (a turn given twice: its first line)."""
    first: dict[tuple, int] = {}
    out: dict[int, tuple[str, dict[int, tuple[float, str]]]] = {}
    for lineno, r in read_objects(path):
        key = (r["judge"][0], r["model"], r["question_id"])
        at = first.setdefault(key, lineno)
        turns = out.setdefault(at, (key[0], {}))[1]
        turns.setdefault(int(r["turn"]), (float(r["score"]), str(r.get("judgment") or "")))
    return out


def _source_of(file: str) -> tuple[str, dict]:
    """(kind, line -> what the file says there) of a file records name as their source."""
    shared = rows_at(file)
    if shared is not None:
        return "shared", shared
    if file.endswith(".parquet"):
        return "details", details_judgments(Path(file))
    lines = dict(read_objects(Path(file)))
    if lines and {"turn", "judgment"} <= set(next(iter(lines.values()))):
        return "upstream", _upstream_turns(Path(file))
    return "judgments", lines


def _row(record: Record, given: str, recorded: str | None, source: Callable[[str], tuple[str, dict]]):
    kind, at = source(record.source)
    if kind == "shared":  # a shared dataset exported again: the row as it came, its origin kept
        return at[record.line]
    fields = {
        "judge": record.judge,
        "model": record.model,
        "question_id": record.question_id,
        "exam_id": record.exam_id,
        "area": record.area,
        "edition": record.edition,
        "source": given,
        "source_kind": kind,
        "source_file": _relative(record.source, given),
        "source_line": record.line,
        "dataset": recorded,
    }
    if kind == "upstream":
        judge_model, turns = at[record.line]
        n_turns = 1 if parse_question_id(record.question_id).kind == "peca" else 2
        fields |= {
            "judge_model": judge_model,
            "prompt_version": record.judge[len(judge_model) + 2 : -1] or None,  # "model [prompt]"
            "mode": None,
            "status": record.status,
            "score": record.score,
            "max_score": record.max_score,
            "turn_scores": [turns[t][0] if t in turns else None for t in range(1, n_turns + 1)],
            "turn_texts": [turns[t][1] if t in turns else "" for t in range(1, n_turns + 1)],
        }
    else:
        fields |= record_fields(at[record.line])
    return JudgmentRow.model_validate(_redacted(fields))


def _answer_row(a: Answer, given: str) -> AnswerRow:
    q = parse_question_id(a.question_id)
    return AnswerRow.model_validate(
        _redacted(
            {
                "model": a.model,
                "question_id": a.question_id,
                "exam_id": q.exam_id,
                "area": q.area,
                "edition": q.edition,
                "turns": a.turns,
                "usage": a.usage and a.usage.model_dump(),
                "source": given,
                "source_file": _relative(a.source, given),
                "source_line": a.line,
            }
        )
    )


def _answers(inputs: list[str], answer_files: list[str]) -> tuple[list[AnswerRow], list[str]]:
    """Each (model, question)'s answer once, and notes (a panel's answer file gone since its run);
    two different texts stop naming both places."""
    rows: list[AnswerRow] = []
    notes: list[str] = []
    for given in inputs:
        shared = open_shared(given)
        if shared is not None:
            rows += [r for _, _, r in shared.answers()]
        else:
            got, gone = carried_answers(Path(given))
            rows += [_answer_row(a, given) for a in got]
            notes += gone
    for given in answer_files:
        rows += [_answer_row(a, given) for a in load_answers(Path(given))]
    rows.sort(key=lambda r: (r.model, r.question_id, r.source, r.source_file, r.source_line))
    where = [
        Answer(
            model=r.model,
            question_id=r.question_id,
            turns=r.turns,
            source=f"{r.source}/{r.source_file}" if r.source_file else r.source,
            line=r.source_line,
        )
        for r in rows
    ]
    one_per_question(where)  # raises on two texts for one (model, question)
    kept: dict[tuple[str, str], AnswerRow] = {}
    for r in rows:
        kept.setdefault((r.model, r.question_id), r)
    return list(kept.values()), notes


def collect(sources: list[str], dataset: str | None = None, answer_files: list[str] = ()) -> Exported:
    """Everything the sources hold, as rows: what `oab-bench export` writes."""
    inputs = read_inputs(list(sources), dataset)
    memo: dict[str, tuple[str, dict]] = {}

    def source(file: str) -> tuple[str, dict]:
        if file not in memo:
            memo[file] = _source_of(file)
        return memo[file]

    judgments = [
        _row(r, given, recorded, source)
        for r, (given, recorded) in zip(inputs.records, inputs.origins, strict=True)
    ]
    contributed = {given for given, _ in inputs.origins}  # a folder skipped (no results) gives no answers
    answer_inputs = [s for s in sources if s in contributed or open_shared(s) is not None]
    answers, notes = _answers(answer_inputs, list(answer_files))
    return Exported(judgments=judgments, answers=answers, inputs=inputs, notes=sorted(notes))


def _order(r: JudgmentRow):
    """A total order: the same rows make the same file, whatever the order of the inputs."""
    return (r.model, r.question_id, r.source, r.source_file, r.source_line, r.model_dump_json())


def write_export(exported: Exported, output: Path, card: Callable[[dict[str, str]], str]) -> Path:
    """The folder: one parquet per judge (its config), the answers, the card made by `card(configs)`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    configs = config_names(sorted({r.judge for r in exported.judgments}))

    def fill(tmp: Path) -> None:
        for judge, config in sorted(configs.items(), key=lambda x: x[1]):
            rows = sorted((r for r in exported.judgments if r.judge == judge), key=_order)
            (tmp / judge_file(config)).parent.mkdir(parents=True)
            table = pa.Table.from_pylist([r.model_dump() for r in rows], schema=judgments_schema())
            pq.write_table(table, tmp / judge_file(config))
        if exported.answers:
            (tmp / ANSWERS_FILE).parent.mkdir(parents=True)
            table = pa.Table.from_pylist([r.model_dump() for r in exported.answers], schema=answers_schema())
            pq.write_table(table, tmp / ANSWERS_FILE)
        (tmp / "README.md").write_text(redact(card(configs)), encoding="utf-8")

    return write_listed(Path(output), EXPORT, fill, overwrite=True)


def export_to(args: argparse.Namespace, output: Path, *, repo_id: str | None = None) -> Path:
    """`export`'s and `push-results`' shared work: read `args.sources` (with `--dataset`, `--answers`),
    write the folder `output` with its card (naming `repo_id` when pushed), and say on stderr what was
    written and what the inputs' notes say."""
    command, dataset = args.command, args.dataset
    exported = collect(args.sources, dataset, args.answers or [])
    datasets = dataset_origins({dataset, *(r.dataset for r in exported.judgments)}, dataset)

    def card(configs: dict[str, str]) -> str:
        return render_card(
            exported,
            configs,
            made_by=f"oab-bench {command}",
            repo_id=repo_id,
            dataset=dataset,
            datasets=datasets,
            resamples=args.resamples,
            seed=args.seed,
        )

    folder = write_export(exported, output, card)
    judges = len({r.judge for r in exported.judgments})
    print(
        f"{len(exported.judgments)} judgments ({judges} judges), {len(exported.answers)} answers",
        file=sys.stderr,
    )
    for note in exported.inputs.notes + exported.notes:
        print(f"oab-bench {command}: note: {note}", file=sys.stderr)
    return folder


def check_output(output: Path) -> None:
    """Refused now, before anything is read: a non-empty `output` that `oab-bench export` did not
    write, or changed since."""
    if output.exists() and not (output.is_dir() and not any(output.iterdir())):
        check_replaceable(output.resolve(), EXPORT)


def written(folder: Path) -> list[str]:
    """What `oab-bench export` wrote in `folder` (its marker's list), the marker itself left out."""
    listed = written_files(folder, EXPORT)
    if not listed:
        raise FileNotFoundError(f"{folder}: no {EXPORT_MARKER} marker listing what the export wrote")
    return listed
