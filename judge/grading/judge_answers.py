"""`oab-bench judge`: answer files in, one JSON line per (model, question) out."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oab_bench.judge.answers import Answer, one_per_question, read_answer_files
from oab_bench.judge.dataset import load_rows
from oab_bench.judge.grading.batch.submit import BatchPending
from oab_bench.judge.grading.judgment_store import JudgmentStore, StoreError, default_cache_dir
from oab_bench.judge.grading.jury import make_judge
from oab_bench.judge.grading.runner import dump_jsonl, run_judge_all
from oab_bench.judge.output import check_output, write_atomic
from oab_bench.judge.records import Usage
from oab_bench.judge.settings import settings_from


def pair_answers(rows, answers: list[Answer]):
    """(pairs to grade, by model then dataset order; (row, model) not answered; ids the dataset lacks)."""
    by_id = {r.question_id: r for r in rows}
    unknown = sorted({a.question_id for a in answers} - set(by_id))
    got = one_per_question([a for a in answers if a.question_id in by_id])
    models = sorted({model for model, _ in got})  # by model, not by the order of the answer files
    pairs = [(r, got[m, r.question_id]) for m in models for r in rows if (m, r.question_id) in got]
    missing = [(r, m) for m in models for r in rows if (m, r.question_id) not in got]
    return pairs, missing, unknown


def pairs_to_grade(rows, answers: list[Answer], questions) -> tuple[list, list]:
    """(pairs, missing) of `pair_answers`; an answer the dataset lacks is an error unless --questions chose."""
    pairs, missing, unknown = pair_answers(rows, answers)
    if unknown and not questions:
        raise ValueError(f"answers to questions the dataset does not have: {', '.join(unknown[:5])}")
    return pairs, missing


@dataclass
class Beside:
    """Answers judged after the candidates' (`judge --panel`): their own bill and judgments lines."""

    pairs: list
    print_estimate: Callable[..., int]
    dump: Callable[[list], str]


def run_judge_command(
    args: argparse.Namespace,
    jury_lines: Callable[[list[dict]], list[str]] | None = None,
    beside: Callable[[list, list[Answer]], Beside] | None = None,
) -> int:
    """`beside(rows, answers)`: what to judge beside the candidates, read before any call."""
    settings = settings_from(args, os.environ)
    if not args.estimate:  # --estimate writes nothing
        check_output(Path(args.output))
    rows = load_rows(args.dataset, questions=args.questions)
    if not rows:
        raise ValueError(f"no questions in {args.dataset} match {args.questions}")
    answers = read_answer_files(args.answers)
    pairs, missing = pairs_to_grade(rows, answers, args.questions)
    extra = beside(rows, answers) if beside is not None else None
    extra_pairs = extra.pairs if extra is not None else []
    judge = command_judge(args, settings)
    if args.estimate:
        from oab_bench.judge.grading.bill import estimate, print_estimate

        if extra is not None:
            return extra.print_estimate(estimate(judge, pairs), estimate(judge, extra_pairs), args.format)
        return print_estimate(estimate(judge, pairs), args.format)
    try:  # the candidates first: a --max-cost-usd cap reaches them before what is beside them
        judgments = run_judge_all(judge, pairs + extra_pairs, progress=not args.no_progress)
    except BatchPending as e:  # --batch-wait ran out: the batches keep running, a rerun reattaches
        print(f"oab-bench judge: {e}\nresume: oab-bench {shlex.join(sys.argv[1:])}", file=sys.stderr)
        return 3
    judgments, of_extra = judgments[: len(pairs)], judgments[len(pairs) :]
    why = "the answer files have no answer to this question"
    judgments += [judge.unanswered(row, model, why) for row, model in missing]
    text = dump_jsonl(judgments) + (extra.dump(of_extra) if extra is not None else "")
    write_atomic(Path(args.output), text)
    failed = print_outcome(judgments + of_extra, jury_lines)
    print(f"wrote {args.output}", file=sys.stderr)
    return 1 if failed else 0


def command_judge(args: argparse.Namespace, settings):
    """The judge (or jury, or repeats) of a command, with the cache of --cache/--no-cache."""
    try:
        store = JudgmentStore(Path(args.cache) if args.cache else default_cache_dir(), read=not args.no_cache)
    except StoreError as e:
        raise StoreError(f"--cache {e}") from None
    return make_judge(settings, store)


def print_outcome(judgments, jury_lines: Callable[[list[dict]], list[str]] | None = None) -> list:
    """Totals, a jury's lines and the first failures on stderr; returns the judgments not ok."""
    print(summary(judgments), file=sys.stderr)
    if jury_lines is not None and any(j.members for j in judgments):
        for line in jury_lines([j.record() for j in judgments]):
            print(line, file=sys.stderr)
    failed = [j for j in judgments if j.status != "ok"]
    for j in failed[:20]:
        print(f"not ok: {j.model} {j.question_id}: {j.status}: {j.error}", file=sys.stderr)
    if len(failed) > 20:
        print(f"... and {len(failed) - 20} more", file=sys.stderr)
    return failed


def summary(judgments) -> str:
    """Statuses, tokens and cost of what was called now (cached judgments cost nothing)."""
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(Counter(j.status for j in judgments).items()))
    fresh = [j for j in judgments if not j.cached]
    u = sum((j.usage for j in fresh), Usage())
    unpriced = sum(1 for j in fresh if j.cost_usd is None and j.usage.prompt_tokens)
    share = f", {u.cached_tokens / u.prompt_tokens:.0%}" if u.prompt_tokens else ""
    tokens = f"prompt {u.prompt_tokens} (cached {u.cached_tokens}{share}), completion {u.completion_tokens}"
    unknown = f" (+{unpriced} calls with no known price)" if unpriced else ""
    cost = f"${sum(j.cost_usd or 0.0 for j in fresh):.4f}{unknown}"
    head = f"{len(judgments)} judgments ({len(judgments) - len(fresh)} from cache)"
    return f"{head}: {statuses}; tokens: {tokens} (reasoning {u.reasoning_tokens}); cost {cost}"
