"""inspect-ai logs as a results source: each scored sample of an `.eval` file (or of a folder of them)
gives the answer and the judgment record our scorer put in its score, read with inspect_ai's public
log API; samples that errored carry no judgment (a failure is never a zero)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from oab_bench.dataset_builder.errors import SourceError

SCORER = "oab_judge"


class LogSample(NamedTuple):
    file: str
    line: int  # the sample's position in its log, from 1
    model: str
    question_id: str
    answer: str
    judgment: dict | None  # our judgment record; None when the sample was not scored


def is_log(path: Path) -> bool:
    path = Path(path)
    return path.suffix == ".eval" or (path.is_dir() and any(path.rglob("*.eval")))


def _files(path: Path) -> list[str]:
    from inspect_ai.log import list_eval_logs

    if Path(path).is_file():
        return [str(path)]
    return sorted(info.name.removeprefix("file://") for info in list_eval_logs(str(path), formats=["eval"]))


def _read(file: str, header_only: bool = False):
    from inspect_ai.log import read_eval_log

    try:
        return read_eval_log(file, header_only=header_only)
    except Exception as e:  # a zip that is not an inspect log, a log of a newer inspect...
        raise SourceError(f"not a readable inspect log ({str(e).splitlines()[0]})", file=file) from None


def log_samples(path: Path) -> list[LogSample]:
    out = []
    for file in _files(path):
        log = _read(file)
        for n, s in enumerate(log.samples or [], start=1):
            score = (s.scores or {}).get(SCORER)
            judgment = score.metadata.get("judgment") if score and score.metadata else None
            out.append(LogSample(file, n, log.eval.model, str(s.id), s.output.completion, judgment))
    return out


def recorded_dataset(path: Path) -> str | None:
    """The dataset folder the task was run on (its log's task metadata)."""
    found = {(_read(f, header_only=True).eval.metadata or {}).get("dataset") for f in _files(path)}
    if len(found - {None}) > 1:
        raise SourceError(
            f"made with several datasets ({', '.join(sorted(found - {None}))}): pass --dataset",
            file=str(path),
        )
    return next(iter(found - {None}), None)
