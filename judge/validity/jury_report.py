"""A jury's members seen apart (costs, agreement, their own leaderboard records), from the jury's
records; each member named with its own settings (judge_label.member_spec), in sorted order."""

from __future__ import annotations

import itertools
from pathlib import Path

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.judge.judge_label import member_label, member_spec
from oab_bench.judge.leaderboard.inputs import Record
from oab_bench.judge.results_layout import open_shared
from oab_bench.judge.validity.sources import (
    Source,
    nested_graded,
    one_record_each,
    read_nested_lines,
    source_names,
)


def member_sources(records: list[dict], path: str = "jury member") -> list[Source]:
    """One source per member, from the jury's records (the members' scores they carry)."""
    graded = nested_graded(records, "members", lambda r, m: member_spec(r, m["judge_model"]))
    names = source_names(len(graded))
    return [
        Source(name=x, path=path, judge=n, graded=g) for x, (n, g) in zip(names, graded.items(), strict=True)
    ]


def jury_lines(records: list[dict], *, resamples: int = 500, seed: int = 0) -> list[str]:
    """Per member: coverage and cost; then the members' agreement (pairwise exam CCC, alpha)."""
    from oab_bench.judge.validity.agreement import alpha_over, compare_two, figure_text  # scipy: ~0.7 s

    sources = member_sources(records)
    if len(sources) < 2:
        return []
    lines = []
    for s in sources:
        mine = [
            m for r in records for m in r.get("members") or [] if member_spec(r, m["judge_model"]) == s.judge
        ]
        ok, cached = sum(m["status"] == "ok" for m in mine), sum(m["cached"] for m in mine)
        costs = [m["cost_usd"] for m in mine]
        cost = "unknown" if None in costs else f"${sum(costs):.4f}"
        lines.append(
            f"jury member {s.name} {s.judge}: ok {ok} of {len(mine)} ({cached} from cache), cost {cost}"
        )
    failed = [r for r in records if r.get("members") and r["status"] not in ("ok", "no_answer")]
    how = next(r["judge_model"] for r in records if r.get("members")).split("(")[0].removeprefix("jury-")
    lines.append(
        f"jury rule: a question counts when a strict majority of the {len(sources)} members graded it "
        f"({how} of their item scores, rounded down to the item's grid); {len(failed)} failed that rule"
    )
    for x, y in itertools.combinations(sources, 2):
        exam = compare_two(x, y, resamples=resamples, seed=seed)["exam"]
        lines.append(
            f"jury agreement {x.name} vs {y.name}: exam CCC {figure_text(exam['ccc'])} (n={exam['n']})"
        )
    notes: list[str] = []
    alpha = alpha_over(sources, {}, notes, resamples=resamples, seed=seed)
    lines.append(f"jury agreement: Krippendorff's alpha (exam totals) {figure_text(alpha)}")
    return lines + [f"jury agreement note: {n}" for n in notes]


def member_records(records: list[tuple[int, dict]], source: str) -> list[Record]:
    """Each member's grading as leaderboard records (its own judge), from the jury's records and
    their lines in `source` (so an error about a member's record names its line)."""
    out = []
    for line, r in records:
        q = parse_question_id(r["question_id"])
        for m in r.get("members") or []:
            try:
                judge = member_label(r, m["judge_model"])
            except ValueError as e:
                field, _, why = str(e).partition(": ")
                raise SourceError(why, file=source, line=line, field=field) from None
            fields = {k: r[k] for k in ("model", "question_id", "exam_id", "max_score")} | {"line": line}
            fields |= {"area": q.area, "edition": q.edition, "status": m["status"], "source": source}
            score = m["score"] if m["status"] == "ok" else None
            out.append(Record(**fields, judge=f"{judge} (jury member)", score=score))
    return out


def member_records_of(path: Path) -> list[Record]:
    """The members' records of a judgments file (none for folders and other formats)."""
    if open_shared(path) is None and (path.is_dir() or path.suffix == ".parquet"):
        return []
    return member_records(read_nested_lines(path, "members"), str(path))


def jury_file_sources(path: Path) -> list[Source]:
    """The members of the jury whose judgments file is `path`, as sources to compare."""
    lines = read_nested_lines(path, "members") if path.is_file() or open_shared(path) is not None else []
    member_records(lines, str(path))  # a member's settings of a wrong shape: its file, line and field
    sources = member_sources(one_record_each(lines, path), f"{path} (jury member)")
    if len(sources) < 2:
        raise ValueError(f"{path}: not a jury's judgments file: give two sources or more")
    return sources
