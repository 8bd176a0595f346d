"""Every workaround for lighteval 0.13 in one place (docs/lighteval-and-vllm.md).

- `ensure_offline_safe`: lighteval's registry imports all built-in tasks on each run, and
  `tiny_benchmarks` downloads a pickle at import time when its file is missing (crashing
  offline); an empty file in its place avoids the download.
- `load_only_custom_tasks` (what `oab-bench run`'s lighteval child calls): with `--custom-tasks`,
  lighteval's registry still imports its ~660 built-in tasks, one of which downloads nltk's punkt
  (network errors in an offline log) and others call a deprecated Hub API (a FutureWarning);
  only the custom tasks are loaded.
- `install`: the exam's rules as a real system message (no per-document system prompt in
  0.13), the exact name `oab_bench` meaning that task alone (not every `oab_bench:*` too), the
  dataset resolved when a task is built to run, not when the tasks are listed,
  no "Careful, the task ... is using evaluation data to build the few shot examples" for a
  zero-shot task nor "You cannot select the number of dataset splits" (lighteval's litellm
  client asking its own data loader for what it refuses), one token limit per candidate request
  (lighteval sends both `max_tokens` and `max_completion_tokens`, and `stop: []`), and no
  litellm response cache (lighteval sets one; a hit crashes inside litellm and the run quietly
  returns empty answers).
  lighteval has no hook for "an evaluation of this task
  starts": `install` runs the task's own check (the judge's configuration) when the
  evaluation prepares our documents, never while they are merely browsed.
- `install` also keeps the candidate's answers (answer_store.py, when OAB_ANSWER_CACHE names a
  folder): a stored answer is served instead of a call, and only missing ones are generated;
  a permanent error from the candidate (401, 403, 404, a 400 no retry can fix) ends the run
  at once with the provider's message, instead of lighteval retrying it for minutes; and
  SIGTERM stops generating, lets calls in flight finish (and be stored) for a grace period,
  then interrupts the run.

Each patch is limited to our task and checked against the version it was written for: with
another lighteval, `install` warns, because these patches reach into its internals. The module
is long on purpose: one file to read (and to delete) when lighteval fixes these upstream.
"""

from __future__ import annotations

import copy
import importlib.metadata
import importlib.util
import logging
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from oab_bench.conventions import CHILD_STOP_GRACE_S

TESTED_VERSION = "0.13.0"
PERMANENT_EXIT = 75  # the child's exit code after a permanent candidate error (its message on stderr)
PERMANENT_PREFIX = "oab_bench: candidate error (permanent): "
STOPPING = threading.Event()


def ensure_offline_safe() -> Path | None:
    spec = importlib.util.find_spec("lighteval")
    if spec is None or not spec.submodule_search_locations:
        return None
    pkl = Path(next(iter(spec.submodule_search_locations))) / "tasks" / "tasks" / "tinyBenchmarks.pkl"
    if not pkl.exists():
        try:
            pkl.touch()
        except OSError:
            return None
    return pkl


def check_version() -> str:
    version = importlib.metadata.version("lighteval")
    if version != TESTED_VERSION:
        warnings.warn(
            f"oab_bench patches lighteval internals tested with {TESTED_VERSION}, found {version}: "
            "check the system prompt, task expansion and litellm cache workarounds in judge/generation/lighteval_compat.py",
            stacklevel=2,
        )
    return version


def install(
    *,
    task: str,
    system_key: str,
    before_evaluating: Callable[[], None] | None = None,
    dataset: Callable[[], str] | None = None,
) -> None:
    """Apply the patches for `task`, whose documents carry their system prompt under `system_key`;
    `before_evaluating` runs once an evaluation has our documents, before any model is loaded or called;
    `dataset` gives the folder to load, resolved when lighteval builds the task (not when it lists it)."""
    import litellm

    check_version()
    litellm.cache = None
    _install_system_prompt_from_doc(system_key)
    if before_evaluating is not None:
        _check_before_evaluating(system_key, before_evaluating)
    _run_only_the_named_task(task)
    if dataset is not None:
        _dataset_resolved_when_built(task, dataset)
    _no_few_shot_split_warning(task)
    _no_dataset_split_warning()
    _one_token_limit()
    _serve_stored_answers()
    if _in_lighteval_cli():  # a process of its own: never exit or take signals in a notebook or pytest
        _stop_on_permanent_errors()
        _stop_gracefully_on_sigterm()


def _in_lighteval_cli() -> bool:
    """`lighteval ...`, `python -m lighteval ...`, or lighteval_endpoint.py (what `oab-bench run`
    starts: lighteval's endpoint command without its other backends)."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    return script.name.startswith("lighteval") or script.parent.name == "lighteval"


def _install_system_prompt_from_doc(system_key: str) -> None:
    """Make the exam's rules a real system message with every backend and the plain CLI.

    lighteval 0.13 has no per-document system message (a Doc's `instruction` is pasted into
    the user message). Its PromptManager builds every chat prompt (API and local models);
    for documents carrying `system_key` we give it that system prompt. A system prompt set in
    the model config comes first, joined with ours.
    """
    from lighteval.tasks.prompt_manager import PromptManager

    original = PromptManager._prepare_chat_template
    if getattr(original, "_oab_bench", False):
        return

    def prepare(self, doc, tokenize: bool = True):
        exam_rules = (doc.specific or {}).get(system_key)
        if exam_rules is None:
            return original(self, doc, tokenize)
        manager = copy.copy(self)  # no shared state: prompts may be built from several threads
        manager.system_prompt = f"{self.system_prompt}\n\n{exam_rules}" if self.system_prompt else exam_rules
        return original(manager, doc, tokenize)

    prepare._oab_bench = True
    PromptManager._prepare_chat_template = prepare


def _check_before_evaluating(system_key: str, check: Callable[[], None]) -> None:
    """`LightevalTask.get_docs` prepares an evaluation's documents (the pipeline calls it before it
    loads the model; `tasks inspect` reads `eval_docs` instead): run `check` there when the
    documents are ours, so browsing needs no judge and an evaluation without one fails at once."""
    from lighteval.tasks.lighteval_task import LightevalTask

    original = LightevalTask.get_docs
    if getattr(original, "_oab_bench", False):
        return

    def get_docs(self, max_samples: int | None = None):
        docs = original(self, max_samples)
        if any(system_key in (doc.specific or {}) for doc in docs):
            check()
        return docs

    get_docs._oab_bench = True
    LightevalTask.get_docs = get_docs


def _run_only_the_named_task(task: str) -> None:
    """`oab_bench` is a task and a prefix: lighteval would expand it to every `oab_bench:*`
    task too and generate each answer three times. An exact task name means that task."""
    from lighteval.tasks.registry import Registry

    original = Registry._expand_task_definition
    if getattr(original, "_oab_bench", False):
        return

    def expand(self, task_definition: str):
        if task_definition == task:
            return [task]
        return original(self, task_definition)

    expand._oab_bench = True
    Registry._expand_task_definition = expand


def _dataset_resolved_when_built(task: str, dataset: Callable[[], str]) -> None:
    """Our tasks' `hf_repo` is the dataset as given: listing them (`lighteval tasks dump` reads every
    field) resolves and fetches nothing, offline too. The folder lighteval loads is resolved when it
    builds one of our tasks to run it."""
    from lighteval.tasks.lighteval_task import LightevalTask

    original = LightevalTask.__init__
    if getattr(original, "_oab_bench", False):
        return

    def init(self, config, *args, **kwargs):
        original(self, config, *args, **kwargs)
        if self.name == task or self.name.startswith(f"{task}:"):
            self.dataset_path = dataset()

    init._oab_bench = True
    LightevalTask.__init__ = init


def load_only_custom_tasks() -> None:
    """With `--custom-tasks`, the registry loads that module's tasks and no built-in one: importing
    the built-ins downloads nltk data and warns about a deprecated Hub argument, for tasks this
    run never uses. Without custom tasks, lighteval's own behaviour."""
    from lighteval.tasks.registry import Registry

    original = Registry.load_all_task_configs
    if getattr(original, "_oab_bench", False):
        return

    def load_all_task_configs(custom_tasks=None, load_multilingual: bool = False):
        if custom_tasks is None:
            return original(custom_tasks=custom_tasks, load_multilingual=load_multilingual)
        return Registry._extract_configs(Registry.create_custom_tasks_module(custom_tasks))

    load_all_task_configs._oab_bench = True
    Registry.load_all_task_configs = staticmethod(load_all_task_configs)


def _no_few_shot_split_warning(task: str) -> None:
    """Our tasks have one split, `test`, and no few-shot examples: lighteval's warning that it
    would build few-shot examples from evaluation data is not the user's to act on. (Asked for
    few-shot examples anyway, lighteval takes them from `test`, as it did.)"""
    from lighteval.tasks.lighteval_task import LightevalTask

    original = LightevalTask.get_first_possible_fewshot_splits
    if getattr(original, "_oab_bench", False):
        return

    def first_split(self, available_splits):
        name = getattr(self, "name", "")
        if name == task or name.startswith(f"{task}:"):
            return None
        return original(self, available_splits)

    first_split._oab_bench = True
    LightevalTask.get_first_possible_fewshot_splits = first_split


class _NotTheUsers(logging.Filter):
    """Drops lighteval's warning about dataset splits its own litellm client asks for."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("You cannot select the number of dataset splits")


def _no_dataset_split_warning() -> None:
    log = logging.getLogger("lighteval.data")
    if not any(isinstance(f, _NotTheUsers) for f in log.filters):
        log.addFilter(_NotTheUsers())


def request_shape(kwargs: dict) -> dict:
    """A candidate request as every provider takes it: one token limit, `max_tokens` (litellm
    renames it `max_completion_tokens` for OpenAI's reasoning models, and maps it for Anthropic,
    Gemini and the rest; lighteval sets both, and an OpenAI-compatible server received both), and
    no empty `stop` list."""
    shaped = dict(kwargs)
    limit = shaped.pop("max_completion_tokens", None)  # lighteval's generation setting, else max_tokens
    if limit is not None:
        shaped["max_tokens"] = limit
    if not shaped.get("stop"):
        shaped.pop("stop", None)
    return shaped


def _one_token_limit() -> None:
    import litellm

    original = litellm.completion
    if getattr(original, "_oab_bench_shape", False):
        return

    def completion(*args, **kwargs):
        return original(*args, **request_shape(kwargs))

    completion._oab_bench_shape = True
    litellm.completion = completion


def _stop_on_permanent_errors() -> None:
    """lighteval retries every error (8 times, backing off to a minute): a rejected key costs
    minutes and its message shows only at the end. A permanent error ends the process now."""
    import litellm

    from oab_bench.judge.grading.client import permanent

    original = litellm.completion
    if getattr(original, "_oab_bench", False):
        return

    def completion(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except Exception as e:
            if not permanent(e):
                raise
            from oab_bench.judge.redact import redact

            status = getattr(e, "status_code", "")
            text = redact(f"{type(e).__name__} ({status}): {e}".replace("\n", " "))[:2000]
            sys.stderr.write(f"\n{PERMANENT_PREFIX}{text}\n")
            sys.stderr.flush()
            os._exit(PERMANENT_EXIT)  # lighteval would catch an exception and retry

    completion._oab_bench = True
    litellm.completion = completion


def _serve_stored_answers() -> None:
    """Answer from the store when it holds the answer; generate (and store) only what is missing.

    lighteval's litellm client makes one call per document in `__call_api` (after building the
    prompt, before its retries): we wrap that call. An empty answer is returned, not stored.
    """
    folder = os.environ.get("OAB_ANSWER_CACHE", "")
    if not folder or folder.lower() == "off":
        return
    from lighteval.models.endpoints import litellm_model

    from oab_bench.judge.generation.answer_store import (
        FRESH_ENV,
        AnswerStore,
        StoredAnswer,
        answer_key,
        generation_settings,
    )
    from oab_bench.keyed_store import READ_ONLY_ENV, NotWritable, env_access

    client = litellm_model.LiteLLMClient
    original = client._LiteLLMClient__call_api
    if getattr(original, "_oab_bench", False):
        return
    try:
        store = AnswerStore(folder, read=os.environ.get(FRESH_ENV) != "1", access=env_access())
    except NotWritable as e:  # before any answer is generated
        raise NotWritable(
            f"OAB_ANSWER_CACHE: {e} (or {READ_ONLY_ENV}=1 to go on without keeping answers)"
        ) from None

    def call_api(self, prompt, return_logits, max_new_tokens, num_samples, stop_sequence):
        params = self.generation_parameters.model_dump(exclude_none=True)
        generation = generation_settings(params, max_new_tokens, num_samples, stop_sequence)
        key = answer_key(model=self.model, messages=prompt, generation=generation)
        with store.claim(key):
            stored = store.get(key)
            if stored is not None:
                return _response(stored.texts, stored.reasonings, stored.finish_reasons)
            if STOPPING.is_set():  # stopping: no new calls, the question stays unanswered
                return litellm_model.LitellmModelResponse()
            response = original(self, prompt, return_logits, max_new_tokens, num_samples, stop_sequence)
            choices = getattr(response, "choices", None) or []
            store.put(
                StoredAnswer(
                    key=key,
                    model=self.model,
                    texts=[c.message.content or "" for c in choices],
                    reasonings=[getattr(c.message, "reasoning_content", None) for c in choices],
                    finish_reasons=[c.finish_reason for c in choices],
                )
            )
        return response

    call_api._oab_bench = True
    client._LiteLLMClient__call_api = call_api


def _response(texts: list[str], reasonings: list, finish_reasons: list):
    from litellm.utils import ModelResponse

    choices = []
    for i, text in enumerate(texts):
        message = {"role": "assistant", "content": text}
        if i < len(reasonings) and reasonings[i]:
            message["reasoning_content"] = reasonings[i]
        finish = finish_reasons[i] if i < len(finish_reasons) else "stop"
        choices.append({"index": i, "message": message, "finish_reason": finish or "stop"})
    return ModelResponse(choices=choices)


def _stop_gracefully_on_sigterm() -> None:
    """SIGTERM (what `oab-bench run` sends on Ctrl-C, SIGTERM, SIGHUP): start no new candidate
    call, let those in flight finish and be stored, then interrupt like Ctrl-C (the judge awaits
    its calls in flight, judge/grading/runner.py); whatever still runs after CHILD_STOP_GRACE_S is ended.

    The handler takes no lock: SIGTERM can come again while it runs (when `oab-bench` is
    SIGKILLed, the kernel sends its parent-death signal once per parent thread that ends), and a
    second run of a handler holding a lock (Event.set) waited for it forever, in the same thread.
    It only wakes a thread that does the rest."""
    if threading.current_thread() is not threading.main_thread():
        return
    if getattr(signal.getsignal(signal.SIGTERM), "_oab_bench", False):
        return
    wake_read, wake_write = os.pipe()
    fired: list[int] = []

    def on_sigterm(signum, frame):
        if not fired:  # list.append: atomic, no lock
            fired.append(signum)
            os.write(wake_write, b"x")

    def stop() -> None:
        os.read(wake_read, 1)
        STOPPING.set()
        # Ctrl-C in the main thread (asyncio's, or KeyboardInterrupt): sent to that thread, so a
        # wait it is blocked in is interrupted
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        time.sleep(CHILD_STOP_GRACE_S)
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=stop, name="oab-bench-sigterm", daemon=True).start()
    on_sigterm._oab_bench = True
    signal.signal(signal.SIGTERM, on_sigterm)


if __name__ == "__main__":
    print(ensure_offline_safe() or "lighteval not installed")
