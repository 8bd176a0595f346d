"""Every input of a report: judged records with their audit trail, and the candidates' answers."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel

from oab_bench.conventions import PANEL_JUDGMENTS_FILE, PROBE_ANSWERS_DIR, SUMMARY_FILE
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.source import HF_PREFIX, read_objects
from oab_bench.judge.answers import Answer, answer_files_in, load_answers, one_per_question
from oab_bench.judge.leaderboard.inputs import NoResults, Record, is_probe_folder, load_records
from oab_bench.judge.results_layout import open_shared

ANSWER_KEYS = {"question_id", "model_id", "choices"}


class Inputs(BaseModel):
    records: list[Record]
    answers: dict[tuple[str, str], str]  # (model, question) -> answer text
    generation: dict[tuple[str, str], dict] = {}  # what generating it cost, where its file says
    paid: dict[tuple[str, str], dict[str, float | None]] = {}  # (judge, model): run folder -> cost in all
    notes: list[str]


def carried_answers(path: Path) -> tuple[list[Answer], list[str]]:
    """The answers a run or probe folder carries beside its judgments, and a note per panel file gone."""
    if is_probe_folder(path):
        return [a for f in sorted((path / PROBE_ANSWERS_DIR).glob("*.jsonl")) for a in load_answers(f)], []
    if not (path.is_dir() or path.suffix in (".parquet", ".eval")):
        return [], []
    answers, gone = load_answers(path), []
    if path.is_dir() and (path / PANEL_JUDGMENTS_FILE).is_file():
        try:
            files = json.loads((path / SUMMARY_FILE).read_text(encoding="utf-8"))["panel"]["files"]
        except (OSError, ValueError, KeyError, TypeError):
            files = []
        for f in map(Path, files if isinstance(files, list) else []):
            if f.exists() or str(f).startswith(HF_PREFIX):  # hf:: read back, or an error
                answers += [a for file in answer_files_in(f) for a in load_answers(file)]
            else:
                gone.append(f"{path}: the panel's answers {f} are gone: their texts are not shown")
    return answers, gone


def paid_in_all(path: Path, records: list[Record]) -> dict[tuple[str, str], float | None]:
    """A run folder's `cost_usd_total` (resumes included) by (judge, model), if said; a bad one: an error."""
    file = Path(path) / SUMMARY_FILE
    try:
        summary = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(summary, dict):
        raise SourceError(f"a JSON object, not {type(summary).__name__}", file=str(file))
    if "cost_usd_total" not in summary:
        return {}
    total = summary["cost_usd_total"]
    if isinstance(total, bool) or not (total is None or isinstance(total, int | float)):
        raise SourceError(f"{total!r} is not a cost in USD (or null)", file=str(file), field="cost_usd_total")
    mine = {(r.judge, r.model) for r in records if r.model == summary.get("model") and not r.panel}
    return dict.fromkeys(mine, total)


def read_inputs(inputs: list[Path], answer_files: list[Path] = (), dataset: dict | None = None) -> Inputs:
    """Everything the report shows; a folder with nothing judged is a note, any other bad input an error."""
    records: list[Record] = []
    answers: list[Answer] = [a for path in answer_files for a in load_answers(Path(path))]
    notes: list[str] = []
    paid: dict[tuple[str, str], dict[str, float | None]] = defaultdict(dict)
    for path in map(Path, inputs):
        if path.is_file() and path.suffix not in (".parquet", ".eval"):  # answers given among the inputs
            first = next(iter(read_objects(path)), (0, {}))[1]
            if set(first) >= ANSWER_KEYS:
                answers += load_answers(path)
                continue
        try:
            got = load_records(path, dataset)
        except NoResults as e:
            notes.append(f"skipped {e}")
            continue
        records += got
        for key, cost in paid_in_all(path, got).items():
            paid[key][os.path.realpath(path)] = cost  # a folder given twice counts once
        got, gone = (load_answers(path), []) if open_shared(path) else carried_answers(path)
        answers += got
        notes += gone
    if not records:
        raise ValueError("no judged results in any input")
    chosen = sorted(one_per_question(answers).items())
    return Inputs(
        records=records,
        answers={key: a.text for key, a in chosen},
        generation={key: a.usage.model_dump() for key, a in chosen if a.usage is not None},
        paid=paid,
        notes=sorted(notes),  # whatever the order of the inputs
    )
