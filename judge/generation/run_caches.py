"""What the answer and judgment caches hold for a run, looked at without creating or writing anything.

The cache checks before a paid call, `run --estimate`, the check call's "is anything left to pay"
and the line an interrupted run prints all count through `stored_state`, the lookups the
generation and the judge will make: they agree on what is kept.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import NamedTuple

from oab_bench.judge.generation.answer_store import CACHE_ENV
from oab_bench.judge.generation.places import cache_name, check_cache, check_read_only
from oab_bench.judge.generation.run_settings import (
    answer_cache,
    judge_cache,
    litellm_name,
    model_config,
    selected_rows,
)
from oab_bench.judge.generation.vllm_server import vllm_target
from oab_bench.judge.grading.judgment_store import StoreError, check_folder
from oab_bench.judge.settings import JudgeSettings


class Stored(NamedTuple):
    questions: int
    answered: int  # answers stored
    judged: int | None  # stored answers needing no judge call (None: the judge cache is off)
    answers_missing: int
    judgments_missing: int  # to make and keep (every judgment of an answer not stored yet; the panel's)


def run_answers(args: argparse.Namespace) -> tuple[list, list[str | None]]:
    """The questions this run asks and, for each, the answer the answer store already holds for its
    model and generation settings (None: to generate), looked up as the generation will look it up."""
    from lighteval.models.model_input import GenerationParameters

    from oab_bench.judge.generation.answer_store import generation_settings, stored_texts

    rows = selected_rows(args.dataset, args.tasks, args.max_samples)
    params = GenerationParameters(**model_config(args, Path())["model_parameters"]["generation_parameters"])
    generation = generation_settings(params.model_dump(exclude_none=True), args.max_new_tokens)
    folder = None if args.fresh_answers else answer_cache(args)
    return rows, stored_texts(folder, litellm_name(args.model), generation, rows)


def run_judge(settings: JudgeSettings, store=None):
    """The judge (jury, repeats) the run's task will make, named as litellm is called (`vllm:X` is
    `openai/<served name>`): the same cache keys."""
    from oab_bench.judge.grading.jury import make_judge

    if vllm_target(settings.judge_model):
        settings = settings.model_copy(update={"judge_model": litellm_name(settings.judge_model)})
    return make_judge(settings, store)


def stored_progress(args: argparse.Namespace, settings: JudgeSettings) -> tuple[int, int, int | None] | None:
    """(questions, answers already stored, judgments of those already cached or None when the judge
    cache is off) for this run; None when that cannot be told (the dataset does not load here)."""
    state = stored_state(args, settings)
    return None if state is None else (state.questions, state.answered, state.judged)


def stored_state(args: argparse.Namespace, settings: JudgeSettings, panel=None) -> Stored | None:
    """What the caches hold for this run, looked at without creating or writing anything; with
    `panel` (run --panel: its Panel and pairs), its judgments count among those missing."""
    from lighteval.models.model_input import GenerationParameters

    from oab_bench.judge.answers import Answer, strip_reasoning
    from oab_bench.judge.generation.answer_store import AnswerStore, answer_key, generation_settings
    from oab_bench.judge.generation.task_prompt import candidate_messages
    from oab_bench.judge.grading.judgment_store import JudgmentStore
    from oab_bench.judge.panel.judging import unstored

    try:
        rows = selected_rows(args.dataset, args.tasks, args.max_samples)
    except Exception:  # lighteval will say what is wrong with the dataset
        return None
    model = litellm_name(args.model)
    folder = answer_cache(args)
    answers = AnswerStore(folder, access="read") if folder and not args.fresh_answers else None
    params = GenerationParameters(**model_config(args, Path())["model_parameters"]["generation_parameters"])
    generation = generation_settings(params.model_dump(exclude_none=True), args.max_new_tokens)
    judges = judge_cache(args)
    store = JudgmentStore(judges, access="read") if judges else None
    # the judge the task makes, its cache looked at as it will be (panel/judging.unstored): an empty
    # or too long answer calls nothing and keeps nothing; a truncated one is keyed by what is sent
    judge = run_judge(settings, store or JudgmentStore(None))
    graders = len(getattr(judge, "runs", None) or getattr(judge, "members", None) or [judge])
    stored = judged = missing = 0
    for row in rows:
        key = answer_key(model=model, messages=candidate_messages(row), generation=generation)
        answer = answers.get(key) if answers else None
        if answer is None:
            missing += graders
            continue
        stored += 1
        text = strip_reasoning(answer.texts[0])
        lacking = unstored(judge, [(row, Answer(model=model, question_id=row.question_id, turns=[text]))])
        missing += lacking
        judged += not lacking
    if panel is not None and store is not None:  # the same judge, the same lookups
        missing += unstored(judge, panel[1])
    return Stored(len(rows), stored, judged if store is not None else None, len(rows) - stored, missing)


def check_cache_folders(args: argparse.Namespace) -> None:
    """The task opens both stores: their refusals now, naming the flag, not as lighteval's traceback."""
    from oab_bench.judge.generation import answer_store
    from oab_bench.judge.generation.answer_store import CACHE_ENV

    if (judges := judge_cache(args)) is not None:
        try:
            check_folder(judges)
        except StoreError as e:
            raise ValueError(f"--judge-cache (OAB_JUDGE_CACHE): {e}") from None
    if (answers := answer_cache(args)) is not None:
        try:
            answer_store.check_folder(answers)
        except ValueError as e:
            raise ValueError(f"--answer-cache ({CACHE_ENV}): {e}") from None


def check_caches(args: argparse.Namespace, settings: JudgeSettings, panel=None) -> bool:
    """The answer and judgment caches: ours, readable, and writable or allowed to be read-only
    (True: a read-only cache is used; the child opens its stores so, and so is the panel judged).
    A panel's judgments count among those a read-only cache would not keep."""
    judges = judge_cache(args)  # its folder already checked by check_cache_folders, which run calls first
    caches = [
        check_cache(
            "answers", cache_name("--answer-cache", args.answer_cache, CACHE_ENV), answer_cache(args)
        ),
        check_cache("judgments", cache_name("--judge-cache", args.judge_cache, "OAB_JUDGE_CACHE"), judges),
    ]
    caches = [c for c in caches if c is not None]
    if args.cache_read_only:  # no write to any cache, whatever the permissions
        caches = [c._replace(read_only=c.read_only or "--cache-read-only") for c in caches]
    return check_read_only(
        caches,
        lambda: stored_state(args, settings, panel),
        go_on=args.cache_read_only,
        batch=settings.batch,
    )


def batches_running(args: argparse.Namespace) -> Path | None:
    """The judgment cache folder when its batch log has batches still to collect (else None: no
    batch was ever created, or all were collected, and "they go on running" would be untrue)."""
    from oab_bench.conventions import BATCH_FILE
    from oab_bench.judge.grading.batch.state import BatchLog

    folder = judge_cache(args)
    if folder is None or not (folder / BATCH_FILE).is_file():
        return None
    return folder if BatchLog(folder).open_keys() else None


def stopped_line(args: argparse.Namespace, settings: JudgeSettings, signame: str) -> str:
    """One line: what an interrupted run kept, and the command that resumes it."""
    try:
        progress = stored_progress(args, settings)
    except BaseException:  # a second Ctrl-C, say: the line without numbers
        progress = None
    answers, judges = answer_cache(args), judge_cache(args)
    if progress is None:
        kept = f"answers kept in {answers or '(no answer store)'}, judgments in {judges or '(no judgment cache)'}"
    else:
        questions, answered, judged = progress
        kept = f"kept {answered} of {questions} answers ({answers or 'no answer store'})"
        kept += (
            f" and {judged} judgments ({judges})"
            if judged is not None
            else ", judgments not kept (--judge-cache off)"
        )
    return f"oab-bench run: stopped ({signame}); {kept}; resume with: {resume_command()}"


def resume_command() -> str:
    """This run's own command line (less --fresh-answers: a resume keeps what was generated)."""
    argv = [a for a in sys.argv[1:] if a != "--fresh-answers"]
    return (
        shlex.join(["oab-bench", *argv]) if argv and argv[0] == "run" else "the same `oab-bench run` command"
    )
