"""Read every input of a report: judged records (for the tables) with their audit trail
(items, analyses, errors, jury members), and candidate answers.

An input is told by its keys, as the leaderboard does: our judgment files, upstream judgment
files, lighteval output folders (judgments and answers both), FastChat answer files.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, Field

from oab_bench.conventions import JUDGMENTS_FILE, PANEL_JUDGMENTS_FILE, PROBE_ANSWERS_DIR, SUMMARY_FILE
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.source import HF_PREFIX, read_objects
from oab_bench.judge.answers import (
    Answer,
    answer_files_in,
    details_judgments,
    load_answers,
    one_per_question,
    one_run,
)
from oab_bench.judge.leaderboard.inputs import NoResults, is_probe_folder, load_records
from oab_bench.judge.leaderboard.judged import Record
from oab_bench.judge.results_layout import judgment_record
from oab_bench.judge.results_source import open_shared

ANSWER_KEYS = {"question_id", "model_id", "choices"}


class Trail(BaseModel):
    """What a judgment says beyond its score: item scores and analyses, free text, error, members."""

    items: list[dict] = Field(default_factory=list)
    texts: list[str] = Field(default_factory=list)  # judge's free text (one per upstream turn)
    error: str | None = None
    members: list[dict] = Field(default_factory=list)


class Inputs(BaseModel):
    records: list[Record]
    trails: dict[tuple[str, int], Trail]  # (source, line) of a record -> its trail
    answers: dict[tuple[str, str], str]  # (model, question) -> answer text
    generation: dict[tuple[str, str], dict] = Field(default_factory=dict)  # what generating it cost, if known
    notes: list[str]


def trail_key(r: Record) -> tuple[str, int]:
    """Where the record was read: a judgment made again in the same file has its own trail."""
    return (r.source, r.line)


def _members(v: dict) -> list[dict]:
    """A jury's members, whatever the field is called: rendered only when it is a list of objects."""
    for key in ("members", "member_judgments", "jury"):
        m = v.get(key)
        if isinstance(m, dict) and all(isinstance(x, dict) for x in m.values()):  # keyed by member
            m = [{"judge_model": name, **x} for name, x in m.items()]
        if isinstance(m, list) and m and all(isinstance(x, dict) for x in m):
            return m
    return []


def _structured_reply(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _ours(v: dict) -> Trail:
    """A structured judge's text is its JSON reply, already shown item by item: not kept twice."""
    items = [i for i in v.get("items") or [] if isinstance(i, dict)]
    text = v.get("judge_text") or ""
    if items and _structured_reply(text):
        text = ""
    return Trail(
        items=items,
        texts=[text] if text else [],
        error=v.get("error"),
        members=_members(v),
    )


def _trails_jsonl(path: Path) -> dict:
    """Keyed as the records are (leaderboard/inputs.py, upstream_turns.py): ours by line; upstream's turns of a question
    by the first line of that question, each turn's first text (a copy of a turn is one)."""
    out: dict = {}
    upstream: dict = defaultdict(dict)
    first: dict = {}
    for lineno, r in read_objects(path):
        if "turn" in r and "judgment" in r:  # upstream: one line per turn
            key = (r["judge"][0], r["model"], r["question_id"])
            first.setdefault(key, lineno)
            upstream[key].setdefault(int(r["turn"]), str(r.get("judgment") or ""))
        elif "judge_model" in r:
            out[(str(path), lineno)] = _ours(r)
    for key, turns in upstream.items():
        out[(str(path), first[key])] = Trail(texts=[turns[t] for t in sorted(turns)])
    return out


def _trails_lighteval(path: Path) -> dict:
    return {  # keyed by rows as leaderboard/inputs.py counts them
        (str(file), n): _ours(v) for file in one_run(path) for n, v in details_judgments(file).items() if v
    }


def _trails_shared(shared) -> dict:
    """Keyed as leaderboard/inputs.py reads a shared dataset: by file label and row."""
    out = {}
    for label, n, row in shared.judgments():
        key = (str(Path(label)), n)
        out[key] = (
            Trail(texts=row.turn_texts or [])
            if row.source_kind == "upstream"
            else _ours(judgment_record(row))
        )
    return out


def carried_answers(path: Path) -> tuple[list[Answer], list[str]]:
    """The answers a folder carries beside its judgments, and a note for each panel answer file that
    is gone: a run folder's (lighteval details, and with `run --panel` the panel's answer files its
    summary names), a probe folder's (its answers/*.jsonl); none for a file."""
    path = Path(path)
    if is_probe_folder(path):
        return [a for f in sorted((path / PROBE_ANSWERS_DIR).glob("*.jsonl")) for a in load_answers(f)], []
    if not _is_run_folder(path):
        return [], []
    answers, gone = load_answers(path), []
    if path.is_dir() and (path / PANEL_JUDGMENTS_FILE).is_file():
        files, gone = _panel_answer_files(path)
        answers += [a for file in files for f in answer_files_in(file) for a in load_answers(f)]
    return answers, gone


def _first_keys(path: Path) -> set[str]:
    for _, r in read_objects(path):
        return set(r)
    return set()


def _is_run_folder(path: Path) -> bool:
    return path.is_dir() or path.suffix == ".parquet"


def _panel_answer_files(folder: Path) -> tuple[list[Path], list[str]]:
    """The panel answer files a run folder's summary names (`run --panel`: for their texts), and a
    note for each that is gone since."""
    try:
        summary = json.loads((folder / SUMMARY_FILE).read_text(encoding="utf-8"))
        files = summary["panel"]["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return [], []
    if not isinstance(files, list):
        return [], []
    named = [Path(f) for f in files if isinstance(f, str)]
    here = [f for f in named if f.exists() or str(f).startswith(HF_PREFIX)]  # hf:: read back, or an error
    gone = [
        f"{folder}: the panel's answers {f} are gone: their texts are not shown"
        for f in named
        if f not in here
    ]
    return here, gone


def read_inputs(inputs: list[Path], answer_files: list[Path] = (), dataset: dict | None = None) -> Inputs:
    """Everything the report shows. A folder with nothing judged is skipped with a note, as the
    leaderboard does; any other bad input stops the report naming its file and line."""
    records: list[Record] = []
    trails: dict = {}
    answers: list[Answer] = []
    notes: list[str] = []
    for path in map(Path, inputs):
        shared = open_shared(path)
        if shared is not None:  # a shared results dataset: judgments with their trails, and answers
            records += load_records(path, dataset)
            trails.update(_trails_shared(shared))
            answers += load_answers(path)
            continue
        if not path.exists():
            raise SourceError("not found", file=str(path))
        if not _is_run_folder(path) and _first_keys(path) >= ANSWER_KEYS:
            answers += load_answers(path)
            continue
        try:
            records += load_records(path, dataset)
        except NoResults as e:
            notes.append(f"skipped {e}")
            continue
        if is_probe_folder(path):
            trails.update(_trails_jsonl(path / JUDGMENTS_FILE))
        elif _is_run_folder(path):
            trails.update(_trails_lighteval(path))
            if path.is_dir() and (path / PANEL_JUDGMENTS_FILE).is_file():  # `run --panel`: judged beside it
                trails.update(_trails_jsonl(path / PANEL_JUDGMENTS_FILE))
        else:
            trails.update(_trails_jsonl(path))
        got, gone = carried_answers(path)
        answers += got
        notes += gone
    for path in map(Path, answer_files):
        answers += load_answers(path)
    if not records:
        raise ValueError("no judged results in any input")
    chosen = sorted(one_per_question(answers).items())
    return Inputs(
        records=records,
        trails=trails,
        answers={key: a.text for key, a in chosen},
        generation={key: a.usage.model_dump() for key, a in chosen if a.usage is not None},
        notes=sorted(notes),  # whatever the order of the inputs
    )
