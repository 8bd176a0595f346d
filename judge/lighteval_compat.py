"""Every workaround for lighteval 0.13 in one place (../shared/notes/lighteval-0.13.md).

- `ensure_offline_safe`: lighteval's registry imports all built-in tasks on each run, and
  `tiny_benchmarks` downloads a pickle at import time when its file is missing (crashing
  offline); an empty file in its place avoids the download.
- `install`: the exam's rules as a real system message (no per-document system prompt in
  0.13), the exact name `oab_bench` meaning that task alone (not every `oab_bench:*` too),
  and no litellm response cache (lighteval sets one; a hit crashes inside litellm and the
  run quietly returns empty answers).

Each patch is limited to our task and checked against the version it was written for: with
another lighteval, `install` warns, because these patches reach into its internals.
"""

from __future__ import annotations

import copy
import importlib.metadata
import importlib.util
import warnings
from pathlib import Path

TESTED_VERSION = "0.13.0"


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
            "check the system prompt, task expansion and litellm cache workarounds in judge/lighteval_compat.py",
            stacklevel=2,
        )
    return version


def install(*, task: str, system_key: str) -> None:
    """Apply the patches for `task`, whose documents carry their system prompt under `system_key`."""
    import litellm

    check_version()
    litellm.cache = None
    _install_system_prompt_from_doc(system_key)
    _run_only_the_named_task(task)


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


if __name__ == "__main__":
    print(ensure_offline_safe() or "lighteval not installed")
