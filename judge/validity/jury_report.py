"""A jury's members seen apart: their costs, their agreement with each other, their own records.

Works on judgment records (dicts with `members`), so `oab-bench judge`, `oab-bench run` and the
leaderboard share it.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.judge.judge_label import member_label, member_spec
from oab_bench.judge.leaderboard.inputs import Record
from oab_bench.judge.results_source import open_shared
from oab_bench.judge.validity.agreement import alpha_over, compare_two
from oab_bench.judge.validity.agreement_text import figure_text
from oab_bench.judge.validity.nested import one_each, read_nested_lines
from oab_bench.judge.validity.sources import Graded, Source, source_names


def member_names(records: list[dict]) -> list[str]:
    """The members the records name with their own settings (judge_label.member_spec: one model at
    two efforts is two members, never merged), sorted: a jury's canonical order, whatever a record's."""
    return sorted({member_spec(r, m["judge_model"]) for r in records for m in r.get("members") or []})


def member_sources(records: list[dict]) -> list[Source]:
    """One source per member, from the jury's records (the members' scores they carry)."""
    names = member_names(records)
    graded: dict[str, dict] = {n: {} for n in names}
    for r in records:
        for m in r.get("members") or []:
            graded[member_spec(r, m["judge_model"])][(r["model"], r["question_id"])] = Graded.of_member(r, m)
    return [
        Source(name=letter, path="jury member", judge=n, graded=graded[n])
        for letter, n in zip(source_names(len(names)), names, strict=True)
    ]


def jury_lines(records: list[dict], *, resamples: int = 500, seed: int = 0) -> list[str]:
    """Per member: coverage and cost; then the members' agreement (pairwise exam CCC, alpha)."""
    sources = member_sources(records)
    if len(sources) < 2:
        return []
    lines = []
    for s in sources:
        mine = [
            m for r in records for m in r.get("members") or [] if member_spec(r, m["judge_model"]) == s.judge
        ]
        ok = sum(m["status"] == "ok" for m in mine)
        costs = [m["cost_usd"] for m in mine]
        cost = "unknown" if any(c is None for c in costs) else f"${sum(costs):.4f}"
        cached = sum(m["cached"] for m in mine)
        lines.append(
            f"jury member {s.name} {s.judge}: ok {ok} of {len(mine)} ({cached} from cache), cost {cost}"
        )
    failed = [r for r in records if r.get("members") and r["status"] not in ("ok", "no_answer")]
    how = next(r["judge_model"] for r in records if r.get("members")).split("(")[0].removeprefix("jury-")
    lines.append(
        f"jury rule: a question counts when a strict majority of the {len(sources)} members graded it "
        f"({how} of their item scores, rounded down to the item's grid); {len(failed)} failed that rule"
    )
    notes: list[str] = []
    for x, y in itertools.combinations(sources, 2):
        r = compare_two(x, y, resamples=resamples, seed=seed)
        lines.append(
            f"jury agreement {x.name} vs {y.name}: exam CCC {figure_text(r['exam']['ccc'])} (n={r['exam']['n']})"
        )
    alpha = alpha_over(sources, {}, notes, resamples=resamples, seed=seed)
    lines.append(f"jury agreement: Krippendorff's alpha (exam totals) {figure_text(alpha)}")
    return lines + [f"jury agreement note: {n}" for n in notes]


def member_records(records: list[tuple[int, dict]], source: str) -> list[Record]:
    """Each member's grading as leaderboard records (its own judge), from the jury's records and
    their lines in `source` (so an error about a member's record names its line)."""
    out = []
    for line, r in records:
        for m in r.get("members") or []:
            q = parse_question_id(r["question_id"])
            try:
                judge = member_label(r, m["judge_model"])
            except ValueError as e:
                field, _, why = str(e).partition(": ")
                raise SourceError(why, file=source, line=line, field=field) from None
            out.append(
                Record(
                    judge=f"{judge} (jury member)",
                    model=r["model"],
                    question_id=r["question_id"],
                    exam_id=r["exam_id"],
                    area=q.area,
                    edition=q.edition,
                    status=m["status"],
                    score=m["score"] if m["status"] == "ok" else None,
                    max_score=r["max_score"],
                    source=source,
                    line=line,
                )
            )
    return out


def member_records_of(path: Path) -> list[Record]:
    """The members' records of a judgments file (none for folders and other formats)."""
    path = Path(path)
    if open_shared(path) is None and (path.is_dir() or path.suffix == ".parquet"):
        return []
    return member_records(read_nested_lines(path, "members"), str(path))


def jury_file_sources(path: Path) -> list[Source]:
    """The members of the jury whose judgments file is `path`, as sources to compare."""
    ours = Path(path).is_file() or open_shared(path) is not None
    lines = read_nested_lines(Path(path), "members") if ours else []
    member_records(lines, str(path))  # a member's settings of a wrong shape: its file, line and field
    sources = member_sources(one_each(lines, Path(path)))
    if len(sources) < 2:
        raise ValueError(f"{path}: not a jury's judgments file: give two sources or more")
    return [s.model_copy(update={"path": f"{path} (jury member)"}) for s in sources]
