"""The answer store: a paid answer is kept once and served to every later run."""

from __future__ import annotations

import sys
import threading
import time

from oab_bench.judge.generation.answer_store import (
    AnswerStore,
    answer_key,
    generation_settings,
)
from oab_bench.scripts.cli import build_parser
from tests.helpers import (
    answer,
)


def test_the_answer_store_keeps_good_answers_only(tmp_path):
    store = AnswerStore(tmp_path)
    assert store.put(answer("a" * 64, "Resposta A."))
    assert not store.put(answer("b" * 64, ""))  # an empty generation is never an answer
    assert not store.put(answer("c" * 64, "   \n"))
    again = AnswerStore(tmp_path)
    assert len(again) == 1 and again.get("a" * 64).texts == ["Resposta A."]
    fresh = AnswerStore(tmp_path, read=False)  # --fresh-answers: nothing served but what it stores
    assert fresh.get("a" * 64) is None and fresh.put(answer("e" * 64, "Resposta E."))
    assert len(fresh) == 1 and len(AnswerStore(tmp_path)) == 2


def test_the_key_is_model_settings_and_prompt_never_the_server():
    messages = [{"role": "user", "content": "Pergunta"}]
    base = {
        "model": "openai/m",
        "messages": messages,
        "generation": generation_settings({"temperature": 0.7}, 8192),
    }
    key = answer_key(**base)
    assert key == answer_key(
        **base | {"generation": generation_settings({"temperature": 0.7, "seed": None}, 8192)}
    )
    for change in (
        {"model": "openai/other"},
        {"messages": [{"role": "user", "content": "Outra"}]},
        {"generation": generation_settings({"temperature": 0.0}, 8192)},
        {"generation": generation_settings({"temperature": 0.7}, 4096)},
    ):
        assert answer_key(**base | change) != key, change


def test_two_threads_asking_for_one_answer_pay_once(tmp_path):
    store = AnswerStore(tmp_path)
    calls = []

    def generate() -> None:
        with store.claim("f" * 64):
            if store.get("f" * 64) is None:
                calls.append(1)
                time.sleep(0.2)
                store.put(answer("f" * 64, "Resposta."))

    threads = [threading.Thread(target=generate) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1


def test_the_run_settings_name_the_stores_and_the_resume_keeps_the_answers(tmp_path, monkeypatch):
    from oab_bench.judge.generation import run
    from oab_bench.judge.generation.run_checks import Stored
    from oab_bench.judge.generation.run_settings import RunSettings

    monkeypatch.chdir(tmp_path)
    argv = ["run", "--model", "openai/x", "--output-dir", "o", "--answer-cache", "ac", "--judge-cache", "jc"]
    monkeypatch.setattr(sys, "argv", ["oab-bench", *argv, "--fresh-answers"])
    s = RunSettings.from_args(build_parser().parse_args([*argv, "--fresh-answers"]))
    # absolute: lighteval works in the output folder
    assert (s.answer_cache, s.judge_cache, s.fresh_answers) == (tmp_path / "ac", tmp_path / "jc", True)
    off = RunSettings.from_args(build_parser().parse_args([*argv, "--answer-cache", "off"]))
    assert off.answer_cache is None and not off.fresh_answers
    monkeypatch.setattr(run, "stored_state", lambda *a: Stored(15, 7, 3, 8, 12))
    assert f"{run.kept(s)}; resume with: {s.resume_command()}" == (
        f"kept 7 of 15 answers ({tmp_path / 'ac'}) and 3 judgments ({tmp_path / 'jc'}); "
        f"resume with: oab-bench {' '.join(argv)}"
    )
