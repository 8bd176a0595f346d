"""Upstream's judgment files (`model_judgment/<judge>_single.jsonl`): one line per question turn,
summed here into one record per question.

Each turn's score is checked against that turn's value; an unparsed score (-1) is a failed
judgment of its question and a missing turn leaves the question unjudged, never a zero.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.schema import PECA_MAX, QuestionRow, money
from oab_bench.judge.judge_label import judge_label
from oab_bench.judge.leaderboard.judged import Record, id_facts, record_of
from oab_bench.judge.scoring import annulled_part

UPSTREAM_KEYS = {"question_id", "model", "judge", "score", "turn"}


ITEM_MAX = 0.65  # a questão's two items are worth 0.65 and 0.60: the most a turn can be without the dataset


def _check_texts(v: dict, keys: tuple[str, ...], source: str, line: int, optional=()) -> None:
    """Each of `keys` a non-empty string (those in `optional` may also be null): a number or a
    list where a name belongs would become a judge or model of its own, or crash the report."""
    for key in keys:
        x = v.get(key)
        if (x is None and key in optional) or (isinstance(x, str) and x):
            continue
        raise SourceError(f"{x!r} is not a non-empty string", file=source, line=line, field=key)


def _upstream_judge(r: dict, source: str, line: int) -> tuple[str, str | None]:
    """Upstream's `judge`: [judge model, prompt name]."""
    judge = r["judge"]
    if (
        not isinstance(judge, list)
        or not 1 <= len(judge) <= 2
        or not all(isinstance(x, str) and x for x in judge[:1])
        or not all(x is None or isinstance(x, str) for x in judge[1:])
    ):
        raise SourceError(
            f"{judge!r} is not [judge model, prompt name]", file=source, line=line, field="judge"
        )
    return judge[0], (judge[1:] or [None])[0]


def _turn(r: dict, n_turns: int, path: Path, lineno: int) -> int:
    turn = r["turn"]
    if isinstance(turn, str) and turn.strip().isdigit():
        turn = int(turn)
    if not isinstance(turn, int) or isinstance(turn, bool) or not 1 <= turn <= n_turns:
        raise SourceError(
            f"{r['turn']!r} is not a turn of {r['question_id']} (1..{n_turns})",
            file=str(path),
            line=lineno,
            field="turn",
        )
    return turn


def from_upstream(path: Path, rows: list[tuple[int, dict]], dataset: dict[str, QuestionRow]) -> list[Record]:
    """Sum a question's turns; a -1 (no score found) or a missing turn is not a zero.

    Each turn's score is checked against that turn's value; a turn scored twice with different
    scores is an error naming both lines (no line order may win); a turn whose every rubric row
    FGV annulled counts in full, as in our own judgments (judge/scoring.py)."""
    turns: dict[tuple[str, str, str], dict[int, tuple[float, int]]] = defaultdict(dict)
    prompts: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    first_line: dict[tuple[str, str, str], int] = {}
    for lineno, r in rows:
        missing = UPSTREAM_KEYS - set(r)
        if missing:
            raise SourceError(f"missing keys {sorted(missing)}", file=str(path), line=lineno)
        _check_texts(r, ("question_id", "model"), str(path), lineno)
        judge_model, prompt = _upstream_judge(r, str(path), lineno)
        qid = r["question_id"]
        try:
            id_facts(qid)
        except ValueError as e:
            raise SourceError(str(e), file=str(path), line=lineno, field="question_id") from None
        key = (judge_model, r["model"], qid)
        try:
            score = float(r["score"]) if not isinstance(r["score"], bool) else math.nan
        except (TypeError, ValueError):
            score = math.nan
        if not math.isfinite(score):
            raise SourceError(f"{r['score']!r} is not a number", file=str(path), line=lineno, field="score")
        turn = _turn(r, 1 if "peca" in qid else 2, path, lineno)
        value = _turn_value(dataset.get(qid), qid, turn)
        if score < 0 and score != -1:
            raise SourceError(
                f"{score} is negative (only -1, upstream's 'no score found', is allowed)",
                file=str(path),
                line=lineno,
                field="score",
            )
        if score > value + 1e-6:
            raise SourceError(
                f"{score} is above turn {turn}'s value {value}", file=str(path), line=lineno, field="score"
            )
        if turn in turns[key]:
            before, where = turns[key][turn]
            if before != score:
                raise SourceError(
                    f"{r['model']} on {qid} turn {turn} (judge {judge_model}) scores {score} here "
                    f"and {before} on line {where}: keep one of them",
                    file=str(path),
                    line=lineno,
                    field="score",
                )
            continue  # the same line twice: one judgment
        turns[key][turn] = (score, lineno)
        first_line.setdefault(key, lineno)
        prompts[key].add((prompt or "").removesuffix("-multi-turn"))
    out = []
    for (judge_model, model, qid), by_turn in sorted(turns.items()):
        row = dataset.get(qid)
        n_turns = 1 if "peca" in qid else 2
        scores = [by_turn[t][0] if t in by_turn else None for t in range(1, n_turns + 1)]
        if row is not None:  # a turn FGV annulled whole is everyone's, whatever the judge said
            scores = [
                row.items[t].max_score if s is not None and annulled_part(row, row.items[t].label) else s
                for t, s in enumerate(scores)
            ]
        if any(s is None for s in scores):
            status, score = "missing_turn", None
        elif any(s < 0 for s in scores):
            status, score = "parse_error", None
        else:
            status, score = "ok", money(sum(scores))
            limit = row.max_score if row is not None else id_facts(qid)[3]
            if score > limit + 1e-6:
                line = first_line[(judge_model, model, qid)]
                raise SourceError(
                    f"turns add up to {score}, above {limit}", file=str(path), line=line, field="score"
                )
        prompt = ",".join(sorted(p for p in prompts[(judge_model, model, qid)] if p)) or None
        out.append(
            record_of(
                qid,
                row.max_score if row is not None else None,
                judge=judge_label(judge_model, prompt),
                model=model,
                status=status,
                score=score,
                source=str(path),
                line=first_line[(judge_model, model, qid)],
            )
        )
    return out


def _turn_value(row: QuestionRow | None, qid: str, turn: int) -> float:
    """What turn `turn` is worth: the dataset's item value, else the most any item can be."""
    if row is not None and len(row.items) >= turn:
        return row.items[turn - 1].max_score
    return PECA_MAX if "peca" in qid else ITEM_MAX
