"""Candidate answers, one text per question, from FastChat answer files, lighteval details, inspect logs or
a shared results dataset; bad input is one line naming file, line (or details row) and field."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import AliasPath, BaseModel, ConfigDict, Field, ValidationError

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.source import plain, read_objects, shape_error, validate_objects
from oab_bench.judge import inspect_log
from oab_bench.judge.records import GenerationUsage, NonEmpty
from oab_bench.judge.results_layout import open_shared


class AnswerTurn(BaseModel):  # a turn of the newer release's answer files (the older's is a text)
    model_config = ConfigDict(extra="ignore")

    content: str
    usage: GenerationUsage | None = None


class SourceAnswer(BaseModel):  # a line of a FastChat answer file (`model_answer/*.jsonl`)
    model_config = ConfigDict(extra="ignore")

    question_id: str
    model_id: str
    given: list[str | AnswerTurn] = Field(min_length=1, validation_alias=AliasPath("choices", 0, "turns"))

    @property
    def turns(self) -> list[str]:
        return [getattr(t, "content", t) for t in self.given]

    @property
    def usage(self) -> GenerationUsage | None:
        """The turns' costs added: a figure one turn lacks is unknown; None when no turn says."""
        usages = [getattr(t, "usage", None) or GenerationUsage() for t in self.given]
        figures = {k: [getattr(u, k) for u in usages] for k in GenerationUsage.model_fields}
        if all(v is None for values in figures.values() for v in values):
            return None
        return GenerationUsage(**{k: None if None in v else sum(v) for k, v in figures.items()})


class Answer(BaseModel):
    model: str
    question_id: str
    turns: list[str]  # one text, or one per item (upstream's two-turn conversations)
    source: str = ""
    line: int = 0  # in `source`: a JSONL line or a details row (1-based); 0 when unknown
    usage: GenerationUsage | None = None  # what generating it cost, when its file says (newer release)

    @property
    def text(self) -> str:
        """The whole answer; separate turns are joined under `# A:` / `# B:`, as upstream's newer protocol does."""
        if len(self.turns) == 1:
            return self.turns[0]
        return "\n\n".join(f"# {chr(65 + i)}:\n{t}" for i, t in enumerate(self.turns))


def strip_reasoning(text: str) -> str:
    """Drop `<think>...</think>` blocks; a closing tag alone (the opening one was in the prompt, as some
    chat templates do) drops what precedes it; an unclosed block (a truncated reasoning) what follows."""
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL | re.IGNORECASE)
    text = re.split(r"</think>", text, flags=re.IGNORECASE)[-1]
    return re.split(r"<think>", text, flags=re.IGNORECASE)[0].strip()


def load_fastchat_answers(path: Path) -> list[Answer]:
    """An upstream `model_answer/<model>.jsonl` file; the model is `model_id`, else the file name."""
    out: dict[str, Answer] = {}
    for n, a in validate_objects(read_objects(path), SourceAnswer, label=str(path)):
        if a.question_id in out:
            raise SourceError(
                f"second answer to {a.question_id!r}", file=str(path), line=n, field="question_id"
            )
        at = {"model": a.model_id or path.stem, "source": str(path), "line": n, "usage": a.usage}
        out[a.question_id] = Answer(question_id=a.question_id, turns=a.turns, **at)
    return list(out.values())


def load_answers(path: Path) -> list[Answer]:
    """A shared results dataset, an inspect log, lighteval details (parquet or folder) or FastChat JSONL."""
    shared = open_shared(path)
    if shared is not None:
        fields = {"model", "question_id", "turns", "usage"}
        return [
            Answer(**r.model_dump(include=fields), source=label, line=n) for label, n, r in shared.answers()
        ]
    path = Path(path)
    if inspect_log.is_log(path):
        return [
            Answer(model=s.model, question_id=s.question_id, turns=[s.answer], source=s.file, line=s.line)
            for s in inspect_log.log_samples(path)
        ]
    if path.is_dir() or path.suffix == ".parquet":
        return load_lighteval_answers(path)
    return load_fastchat_answers(path)


def read_answer_files(paths: list[str]) -> list[Answer]:
    """Every answer of the files (or folders) `paths` in order; one with no answer is an error naming it."""
    answers = []
    for path in paths:
        if not (got := load_answers(Path(path))):
            raise ValueError(f"{path}: no answers in it (empty file?)")
        answers += got
    return answers


def answer_files_in(path: Path) -> list[Path]:
    """What `path` holds that `load_answers` reads: itself, or a folder's FastChat answer files."""
    if open_shared(path) is not None:
        return [path]
    if not path.exists():
        raise SourceError("not found", file=str(path))
    if not path.is_dir() or any(path.rglob("details_*.parquet")) or inspect_log.is_log(path):
        return [path]
    files = sorted(p for p in path.iterdir() if p.suffix == ".jsonl" and p.is_file())
    if not files:
        raise SourceError("no answer files in this folder (*.jsonl, or lighteval details)", file=str(path))
    return files


def one_copy_each(entries: Iterable[tuple], verb: str) -> dict:
    """(model, question) -> item of `entries` (key, must-agree, file, line, item); differing copies stop."""
    out: dict = {}
    for key, same, file, line, item in sorted(entries, key=lambda e: (e[2], e[3])):
        seen = out.setdefault(key, (same, file, line, item))
        if seen[0] != same:
            raise SourceError(
                f"{key[0]} {verb} {key[1]} differently here and in {file}:{line}: pass one of them",
                file=seen[1],
                line=seen[2] or None,
            )
    return {k: v[3] for k, v in sorted(out.items())}


def one_per_question(answers: list[Answer]) -> dict[tuple[str, str], Answer]:
    return one_copy_each(
        [((a.model, a.question_id), a.turns, a.source, a.line, a) for a in answers], "answers"
    )


# --- lighteval details files of the oab_bench task (`DIR/details/<model>/<time>/*.parquet`) ---


class _Specific(BaseModel):
    question_id: NonEmpty


class _Doc(BaseModel):
    specific: _Specific


class _Response(BaseModel):
    text_post_processed: list[str] | None = None
    text: list[str] | None = None


class DetailsRow(BaseModel):  # what an answer is read from in a details row
    doc: _Doc
    model_response: _Response


def model_of(file: Path) -> str:
    """lighteval writes details under details/<model name, may contain '/'>/<timestamp>/."""
    return "/".join(file.parts[len(run_folder_of(file).parts) + 1 : -2]) or file.parent.parent.name


def run_folder_of(file: Path) -> Path:
    """The run (lighteval output folder) a details file belongs to: the folder holding its `details/`."""
    parts = file.parts
    return (
        Path(*parts[: len(parts) - 1 - parts[::-1].index("details")]) if "details" in parts else file.parent
    )


def one_run(path: Path) -> list[Path]:
    """The oab_bench details files of the one run under `path` (a file, or a folder; several runs refused)."""
    path = Path(path)
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("details_*.parquet") if "oab_bench" in p.name)
    if not files:
        raise SourceError(
            "no oab_bench details parquet found (run lighteval with --save-details)", file=str(path)
        )
    runs = sorted({run_folder_of(f) for f in files})
    if len(runs) > 1:
        names = ", ".join(str(r.relative_to(path)) if r.is_relative_to(path) else str(r) for r in runs[:4])
        more = f" and {len(runs) - 4} more" if len(runs) > 4 else ""
        raise SourceError(
            f"holds {len(runs)} runs ({names}{more}): name one run folder, or give each as its own input "
            f"({Path(path) / '*'}/)",
            file=str(path),
        )
    return files


def details_judgments(file: Path) -> dict[int, dict]:
    """Row (from 1, as the readers count) -> the row's `oab_judgment` metric, in plain Python."""
    import pandas as pd

    metrics = pd.read_parquet(file, columns=["metric"])["metric"]
    return {n: plain((m or {}).get("oab_judgment") or {}) for n, m in enumerate(metrics, start=1)}


def load_lighteval_answers(path: Path) -> list[Answer]:
    """Every answer in the run's details files, each with its file and row (copies are settled later)."""
    import pandas as pd

    out: list[Answer] = []
    for file in one_run(path):
        df = pd.read_parquet(file, columns=["doc", "model_response"])
        for n, (doc, response) in enumerate(zip(df["doc"], df["model_response"], strict=True), start=1):
            try:
                row = DetailsRow.model_validate({"doc": plain(doc), "model_response": plain(response)})
            except ValidationError as e:
                raise shape_error(e).at(file=str(file), line=n) from None
            texts = row.model_response.text_post_processed or row.model_response.text or [""]
            qid = row.doc.specific.question_id
            out.append(
                Answer(model=model_of(file), question_id=qid, turns=texts[:1], source=str(file), line=n)
            )
    return out
