"""Candidate answers: one text per question, whatever file they came from."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from dataset_builder.errors import SourceError
from dataset_builder.source import SourceAnswer, read_jsonl

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)


class Answer(BaseModel):
    model: str
    question_id: str
    turns: list[str]  # one text, or one per item (upstream's two-turn conversations)
    source: str = ""
    line: int = 0  # in `source`: a JSONL line or a details row (1-based); 0 when unknown

    @property
    def text(self) -> str:
        """The whole answer; separate turns are joined under `# A:` / `# B:`, as upstream's newer protocol does."""
        if len(self.turns) == 1:
            return self.turns[0]
        return "\n\n".join(f"# {chr(65 + i)}:\n{t}" for i, t in enumerate(self.turns))


def strip_reasoning(text: str) -> str:
    """Drop `<think>...</think>` blocks; an unclosed block (a truncated reasoning) leaves nothing after it."""
    text = _THINK_BLOCK.sub("", text)
    close = list(_THINK_CLOSE.finditer(text))
    if close:  # the opening tag was in the prompt (some chat templates add it)
        text = text[close[-1].end() :]
    opened = _THINK_OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    return text.strip()


def load_fastchat_answers(path: Path) -> list[Answer]:
    """An upstream `model_answer/<model>.jsonl` file; the model is `model_id`, else the file name."""
    out = []
    seen: set[str] = set()
    for lineno, a in read_jsonl(path, SourceAnswer):
        if a.question_id in seen:
            raise SourceError(
                f"second answer to {a.question_id!r}", file=str(path), line=lineno, field="question_id"
            )
        seen.add(a.question_id)
        out.append(
            Answer(
                model=a.model_id or path.stem,
                question_id=a.question_id,
                turns=a.turns,
                source=str(path),
                line=lineno,
            )
        )
    return out


def load_answers(path: Path) -> list[Answer]:
    """Detect the format: a shared results dataset (judge/sharing), a lighteval details
    parquet/folder, or a FastChat JSONL file."""
    from .sharing.source import open_shared

    shared = open_shared(path)
    if shared is not None:
        return [
            Answer(model=r.model, question_id=r.question_id, turns=r.turns, source=label, line=n)
            for label, n, r in shared.answers()
        ]
    path = Path(path)
    if path.is_dir() or path.suffix == ".parquet":
        from .details import load_lighteval_answers

        return load_lighteval_answers(path)
    return load_fastchat_answers(path)


def one_per_question(answers: list[Answer]) -> dict[tuple[str, str], Answer]:
    """(model, question) -> its answer. Identical copies (the same answers in two files) are one;
    two different texts are an error naming both places, whatever the order of the files."""
    out: dict[tuple[str, str], Answer] = {}
    for a in answers:
        seen = out.setdefault((a.model, a.question_id), a)
        if seen.turns != a.turns:
            first, second = sorted((seen, a), key=lambda x: (x.source, x.line))
            raise SourceError(
                f"{a.model} answers {a.question_id} differently here and in {second.source}:{second.line}: "
                "pass one of them",
                file=first.source,
                line=first.line or None,
            )
    return out
