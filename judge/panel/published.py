"""`--panel upstream | PATH [PATH ...]` -> the panel's answers, each model labelled with its source."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.source import HF_PREFIX
from oab_bench.judge.answers import Answer, answer_files_in, load_answers

UPSTREAM = "upstream"


class Panel(BaseModel):
    """Published answers to judge beside a candidate. `sources`: model -> where its answers came
    from (upstream's repository at its commit, or the path given), shown on its leaderboard row."""

    answers: list[Answer]
    sources: dict[str, str]
    files: list[str]  # every answer file (or lighteval folder) read, absolute

    @property
    def models(self) -> list[str]:
        return sorted(self.sources)

    def label(self) -> str:
        return ", ".join(sorted(set(self.sources.values())))


def resolve_panel(specs: list[str]) -> Panel:
    """Every answer of the panel: `upstream`, the six published files (fetched once, verified);
    `hf:...`, a shared results dataset's answers; else a path. Bad input stops here, naming it."""
    from oab_bench.judge.panel.upstream import LABEL, upstream_files

    answers: list[Answer] = []
    sources: dict[str, set[str]] = {}
    read: list[str] = []
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
                sources.setdefault(a.model, set()).add(label)
    return Panel(answers=answers, sources={m: ", ".join(sorted(s)) for m, s in sources.items()}, files=read)


def check_names(candidates: set[str], panel: Panel, what: str = "the candidate") -> None:
    """A candidate named as a panel model (ignoring case) would share its row: an error naming both.
    `what`: how the command calls the others (`judge-sweep`: the models of --answers)."""
    by_name = {m.casefold(): m for m in panel.models}
    for name in sorted(candidates):
        if (twin := by_name.get(name.casefold())) is not None:
            raise ValueError(
                f"{what} {name!r} has the name of the panel's model {twin!r} ({panel.sources[twin]}): "
                f"rename {what} or leave that model's answers out of --panel"
            )
