"""Every input of a report: judged records with their audit trail (read as the leaderboard reads
them), and the candidates' answers: run and probe folders carry theirs, FastChat answer files may be
given among the inputs or apart."""

from __future__ import annotations

import json
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
    notes: list[str]


def carried_answers(path: Path) -> tuple[list[Answer], list[str]]:
    """The answers a folder carries beside its judgments, and a note for each panel answer file gone
    since: a run folder's (lighteval details, and the panel's files its summary names), a probe
    folder's (answers/*.jsonl); none for a file."""
    path = Path(path)
    if is_probe_folder(path):
        return [a for f in sorted((path / PROBE_ANSWERS_DIR).glob("*.jsonl")) for a in load_answers(f)], []
    if not (path.is_dir() or path.suffix == ".parquet"):
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


def read_inputs(inputs: list[Path], answer_files: list[Path] = (), dataset: dict | None = None) -> Inputs:
    """Everything the report shows. A folder with nothing judged is skipped with a note, as the
    leaderboard does; any other bad input stops the report naming its file and line."""
    records: list[Record] = []
    answers: list[Answer] = [a for path in answer_files for a in load_answers(Path(path))]
    notes: list[str] = []
    for path in map(Path, inputs):
        shared = open_shared(path) is not None
        if not shared and not path.exists():
            raise SourceError("not found", file=str(path))
        if not shared and path.is_file() and path.suffix != ".parquet":
            first = next(iter(read_objects(path)), (0, {}))[1]
            if set(first) >= ANSWER_KEYS:
                answers += load_answers(path)
                continue
        try:
            records += load_records(path, dataset)
        except NoResults as e:
            notes.append(f"skipped {e}")
            continue
        got, gone = (load_answers(path), []) if shared else carried_answers(path)
        answers += got
        notes += gone
    if not records:
        raise ValueError("no judged results in any input")
    chosen = sorted(one_per_question(answers).items())
    return Inputs(
        records=records,
        answers={key: a.text for key, a in chosen},
        generation={key: a.usage.model_dump() for key, a in chosen if a.usage is not None},
        notes=sorted(notes),  # whatever the order of the inputs
    )
