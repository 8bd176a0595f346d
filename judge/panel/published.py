"""`--panel upstream | PATH | hf:...`: the option, the panel's answers and which of them a command judges."""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.dataset_builder.source import HF_PREFIX
from oab_bench.judge.answers import Answer, answer_files_in, load_answers

UPSTREAM = "upstream"
BESIDE = (
    "judge published answers beside the candidate, with the same judge and settings, and rank it among them"
)


def add_panel_argument(parser: argparse.ArgumentParser, what: str = BESIDE) -> None:
    parser.add_argument(
        "--panel",
        nargs="+",
        metavar="upstream|PATH|hf:...",
        help=f"{what}: 'upstream' (upstream's six answer files at a pinned commit, downloaded once "
        "into the cache and verified by SHA-256), answer files or folders (FastChat JSONL, "
        "lighteval details), or shared results (hf:OWNER/NAME[@REV], hf:/abs/folder: their answers)",
    )


class Panel(BaseModel):
    """Published answers to judge beside a candidate; `sources`: model -> where its answers came from."""

    answers: list[Answer]
    sources: dict[str, str]
    files: list[str]  # every answer file (or lighteval folder) read, absolute

    @property
    def models(self) -> list[str]:
        return sorted(self.sources)

    def label(self) -> str:
        return ", ".join(sorted(set(self.sources.values())))


def resolve_panel(specs: list[str]) -> Panel:
    """Every answer of the panel (`upstream`, `hf:...` or a path); bad input stops here, naming it."""
    from oab_bench.judge.panel.upstream import LABEL, upstream_files

    answers, sources, read = [], defaultdict(set), []
    for spec in dict.fromkeys(specs):  # the same argument twice is one
        if spec == UPSTREAM:
            files, label = upstream_files(), LABEL
        elif spec.startswith(HF_PREFIX):
            files, label = [spec], spec
        else:
            path = Path(spec).expanduser().resolve()
            files, label = answer_files_in(path), str(path)
        for file in (f for f in files if str(f) not in read):  # a file given again, or in a folder given
            read.append(str(file))
            got = load_answers(file)
            if not got:
                raise SourceError("no answers in it (empty file?)", file=str(file))
            answers += got
            for a in got:
                sources[a.model].add(label)
    return Panel(answers=answers, sources={m: ", ".join(sorted(s)) for m, s in sources.items()}, files=read)


def panel_pairs(panel: Panel, rows: list[QuestionRow], candidates: set[str], what: str = "the candidate"):
    """(the panel's (row, answer) pairs to judge, notes on what is not judged); a name clash is an error."""
    from oab_bench.judge.grading.judge_answers import pair_answers  # (imports litellm: seconds)

    by_name = {m.casefold(): m for m in panel.models}
    for name in sorted(candidates):
        if (twin := by_name.get(name.casefold())) is not None:
            raise ValueError(
                f"{what} {name!r} has the name of the panel's model {twin!r} ({panel.sources[twin]}): "
                f"rename {what} or leave that model's answers out of --panel"
            )
    pairs, missing, _ = pair_answers(rows, panel.answers)
    ids = {r.question_id for r in rows}
    outside = [a for a in panel.answers if a.question_id not in ids]
    notes = [
        f"panel: {len(outside)} answers to {len({a.question_id for a in outside})} questions that are not "
        f"among the {len(ids)} judged here (not in the dataset, or not selected): not judged",
        f"panel: {len(missing)} of the questions judged here have no published answer from "
        f"{', '.join(sorted({m for _, m in missing}))}: those models' figures use the exams they answered",
    ]
    notes = [note for note, n in zip(notes, (outside, missing), strict=True) if n]
    return pairs, notes


def print_notes(notes: Iterable[str], command: str) -> None:
    for note in notes:
        print(f"oab-bench {command}: {note}", file=sys.stderr)


def prepare(specs: list[str], rows: list[QuestionRow], names: set[str], command: str) -> tuple[Panel, list]:
    """`run --panel`, `judge --panel`: the panel read and checked against the candidates, before any call."""
    panel = resolve_panel(specs)
    pairs, notes = panel_pairs(panel, rows, names)
    print_notes(notes, command)
    return panel, pairs
