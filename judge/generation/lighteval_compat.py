"""Every workaround for lighteval 0.13, each naming its defect (docs/lighteval-and-vllm.md lists
them): the only module that reaches into lighteval's and litellm's internals. Each patch is limited to
our task, and `install` warns when lighteval is not the version they were written for."""

from __future__ import annotations

import copy
import functools
import importlib.metadata
import importlib.util
import itertools
import logging
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

from oab_bench.judge.generation import task_run
from oab_bench.judge.redact import redact

TESTED_VERSION = "0.13.0"
_CANDIDATE = threading.local()  # set while lighteval's client makes a candidate call
_INSTALLED: list[str] = []


def ensure_offline_safe() -> Path:
    """The plain CLI imports every built-in task, and tiny_benchmarks downloads a pickle at import
    when its file is missing (a crash offline): an empty one stops it."""
    spec = importlib.util.find_spec("lighteval")
    pkl = Path(next(iter(spec.submodule_search_locations))) / "tasks/tasks/tinyBenchmarks.pkl"
    pkl.touch(exist_ok=True)
    return pkl


def check_version() -> None:
    if (version := importlib.metadata.version("lighteval")) != TESTED_VERSION:
        warnings.warn(
            f"oab_bench patches lighteval internals tested with {TESTED_VERSION}, found {version}: "
            "check the workarounds in judge/generation/lighteval_compat.py",
            stacklevel=2,
        )


def install(
    *, task: str, system_key: str, prepare: Callable | None = None, before_evaluating: Callable | None = None
):
    """The patches for `task`, whose documents carry their system prompt under `system_key`;
    `prepare(lighteval_task)` when lighteval builds it; `before_evaluating()` before any model call."""
    import litellm
    from lighteval.models.endpoints import litellm_model
    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.prompt_manager import PromptManager
    from lighteval.tasks.registry import Registry

    if task in _INSTALLED:
        return
    _INSTALLED.append(task)
    check_version()
    litellm.cache = None  # lighteval turns litellm's response cache on, and its hits crash inside litellm
    chat_template, expand = PromptManager._prepare_chat_template, Registry._expand_task_definition
    init, get_docs = LightevalTask.__init__, LightevalTask.get_docs
    first_split = LightevalTask.get_first_possible_fewshot_splits

    def ours(lighteval_task) -> bool:
        return getattr(lighteval_task, "name", "").partition(":")[0] == task

    def prepare_chat_template(self, doc, tokenize: bool = True):  # no per-document system message
        if (rules := (doc.specific or {}).get(system_key)) is None:
            return chat_template(self, doc, tokenize)
        manager = copy.copy(self)  # no shared state: prompts are built from several threads
        manager.system_prompt = f"{self.system_prompt}\n\n{rules}" if self.system_prompt else rules
        return chat_template(manager, doc, tokenize)

    def init_task(self, config, *args, **kwargs):  # a task's dataset is fixed when its module is imported
        init(self, config, *args, **kwargs)
        if prepare is not None and ours(self):
            prepare(self)

    def get_our_docs(self, max_samples: int | None = None):  # no hook for "an evaluation starts"
        docs = get_docs(self, max_samples)
        if before_evaluating is not None and any(system_key in (d.specific or {}) for d in docs):
            before_evaluating()
        return docs

    PromptManager._prepare_chat_template = prepare_chat_template
    # a task name that is also a prefix (`oab_bench`) expands to every `oab_bench:*` task too
    Registry._expand_task_definition = lambda self, name: [name] if name == task else expand(self, name)
    LightevalTask.__init__, LightevalTask.get_docs = init_task, get_our_docs
    # warnings no user can act on: few-shot examples from evaluation data for a zero-shot task, and
    # the dataset splits its own litellm client asks for
    LightevalTask.get_first_possible_fewshot_splits = lambda self, s: (
        None if ours(self) else first_split(self, s)
    )
    not_ours = "You cannot select the number of dataset splits"
    logging.getLogger("lighteval.data").addFilter(lambda r: not r.getMessage().startswith(not_ours))
    _guard_candidate_calls(litellm, litellm_model)


def request_shape(kwargs: dict) -> dict:
    """lighteval sends `max_tokens` and `max_completion_tokens`, and `stop: []`: one limit, `max_tokens`
    (litellm maps it per provider; lighteval's generation setting wins), and no empty `stop`."""
    shaped = dict(kwargs)
    if (limit := shaped.pop("max_completion_tokens", None)) is not None:
        shaped["max_tokens"] = limit
    if not shaped.get("stop"):
        shaped.pop("stop", None)
    return shaped


def _guard_candidate_calls(litellm, litellm_model) -> None:
    """lighteval retries every error 8 times, backing off to a minute, and drops its text. Around each
    document's `__call_api`: the answer store, and no call once stopping. Inside: the request shaped,
    its error kept; a permanent error, or any attempt once stopping, raised as the one error lighteval
    gives up on without sleeping (BadRequestError)."""
    from oab_bench.judge.generation.answer_store import StoredAnswer, answer_key, generation_settings
    from oab_bench.judge.grading.client import permanent

    completion, client = litellm.completion, litellm_model.LiteLLMClient
    call_api = client._LiteLLMClient__call_api

    def candidate_completion(*args, **kwargs):
        if not getattr(_CANDIDATE, "active", False):
            return completion(*args, **kwargs)
        if not task_run.STOPPING.is_set():
            try:
                return completion(*args, **request_shape(kwargs))
            except Exception as e:
                said = f"{type(e).__name__} ({getattr(e, 'status_code', '')}): {e}".replace("\n", " ")
                said = redact(said)[:2000]
                task_run.ERRORS[kwargs["messages"][-1]["content"]] = said
                if not permanent(e):
                    raise
                task_run.REFUSED.append(said)
                task_run.STOPPING.set()
        raise litellm.BadRequestError("oab_bench: stopping", kwargs.get("model"), "oab_bench")

    def ask(self, *args):
        if task_run.STOPPING.is_set():  # the question stays unanswered
            return litellm_model.LitellmModelResponse()
        _CANDIDATE.active = True
        try:
            return call_api(self, *args)
        finally:
            _CANDIDATE.active = False

    def stored_call_api(self, prompt, return_logits, max_new_tokens, num_samples, stop_sequence):
        args = (prompt, return_logits, max_new_tokens, num_samples, stop_sequence)
        if (store := task_run.RUN.answers if task_run.RUN else plain_cli_answers()) is None:
            return ask(self, *args)
        params = self.generation_parameters.model_dump(exclude_none=True)
        generation = generation_settings(params, max_new_tokens, num_samples, stop_sequence)
        key = answer_key(model=self.model, messages=prompt, generation=generation)
        with store.claim(key):  # another run generating it: wait, then read it
            if (stored := store.get(key)) is not None:
                return _response(stored)
            response = ask(self, *args)
            choices = getattr(response, "choices", None) or []
            answer = StoredAnswer(key=key, model=self.model, texts=[c.message.content or "" for c in choices])
            answer.reasonings = [getattr(c.message, "reasoning_content", None) for c in choices]
            answer.finish_reasons = [c.finish_reason for c in choices]
            store.put(answer)
        return response

    litellm.completion = candidate_completion
    client._LiteLLMClient__call_api = stored_call_api


@functools.cache
def plain_cli_answers():
    """The plain CLI's answer store: OAB_ANSWER_CACHE, unset or "off" for none."""
    from oab_bench.judge.generation.answer_store import AnswerStore
    from oab_bench.keyed_store import env_access

    folder = os.environ.get("OAB_ANSWER_CACHE", "")
    return AnswerStore(folder, access=env_access()) if folder and folder.lower() != "off" else None


def _response(stored):
    """A stored answer as the litellm response lighteval reads."""
    from litellm.utils import ModelResponse

    choices = []
    each = itertools.zip_longest(stored.texts, stored.reasonings, stored.finish_reasons)
    for i, (text, thought, finish) in enumerate(each):
        message = {"role": "assistant", "content": text} | ({"reasoning_content": thought} if thought else {})
        choices.append({"index": i, "message": message, "finish_reason": finish or "stop"})
    return ModelResponse(choices=choices)


def load_only_custom_tasks() -> None:
    """With custom tasks, the registry still imports ~660 built-in ones (nltk downloads, a deprecated
    Hub call): `oab-bench run` loads only that module's."""
    from lighteval.tasks.registry import Registry

    load_all = Registry.load_all_task_configs

    def load_all_task_configs(custom_tasks=None, load_multilingual: bool = False):
        if custom_tasks is None:
            return load_all(custom_tasks, load_multilingual)
        return Registry._extract_configs(Registry.create_custom_tasks_module(custom_tasks))

    Registry.load_all_task_configs = staticmethod(load_all_task_configs)


if __name__ == "__main__":
    print(ensure_offline_safe())
