"""Quiet logs: no download a run does not need, no warning that is not the user's to act on, one
language for the plot's labels, and an unknown cost that stays unknown on every run."""

from __future__ import annotations

import json
import logging
import math
import re

import pytest

from oab_bench.judge.aggregate import QuestionResult, run_cost
from oab_bench.judge.records import Judgment, MemberScore
from tests.conftest import REPO
from tests.helpers import made_up_judgment


@pytest.mark.slow  # imports lighteval
def test_the_run_loads_only_our_tasks(built_dataset, monkeypatch):
    """As `oab-bench run` loads them: the registry imports the custom tasks alone, never a built-in
    one (they download nltk's punkt and call the Hub's deprecated list_models, a FutureWarning)."""
    import importlib
    import warnings

    import nltk
    from lighteval.tasks.registry import Registry

    from oab_bench.judge.generation.lighteval_compat import load_only_custom_tasks

    monkeypatch.setenv("OAB_BENCH_DATASET", str(built_dataset))
    monkeypatch.setenv("OAB_JUDGE_MODEL", "openai/judge-unit")
    monkeypatch.setattr(nltk, "download", lambda *a, **k: pytest.fail("nltk.download called"))
    imported, import_module = [], importlib.import_module  # the registry imports each task module so

    def spy(name: str, *args, **kwargs):
        imported.append(name)
        return import_module(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", spy)
    patched = Registry.__dict__["load_all_task_configs"]  # restored after the test, whatever it was
    monkeypatch.setattr(Registry, "load_all_task_configs", patched)
    load_only_custom_tasks()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        registry = Registry(tasks="oab_bench|0", custom_tasks=str(REPO / "oab_bench_task.py"))
    assert list(registry.task_to_configs) == ["oab_bench"], registry.task_to_configs
    assert [name for name in imported if name.startswith("lighteval.tasks.")] == []  # no built-in task
    assert not [w for w in seen if issubclass(w.category, FutureWarning)], [str(w.message) for w in seen]
    assert len(registry._task_registry) == 1 + 7 + 6  # oab_bench, 7 areas, 6 editions


@pytest.mark.slow
def test_a_zero_shot_task_does_not_warn_about_few_shot_examples(built_dataset, monkeypatch, caplog):
    monkeypatch.setenv("OAB_BENCH_DATASET", str(built_dataset))
    monkeypatch.setenv("OAB_JUDGE_MODEL", "openai/judge-unit")
    from lighteval.tasks.lighteval_task import LightevalTask, LightevalTaskConfig

    import oab_bench_task

    with caplog.at_level(logging.WARNING):
        task = LightevalTask(oab_bench_task.TASKS_TABLE[0])
        other = LightevalTaskConfig(  # another task keeps lighteval's warning
            name="someone_else",
            prompt_function=oab_bench_task.oab_prompt,
            hf_repo="x/y",
            hf_subset="default",
            hf_avail_splits=["test"],
            evaluation_splits=["test"],
            metrics=[],
        )
        LightevalTask(other)
    careful = [r.getMessage() for r in caplog.records if "Careful" in r.getMessage()]
    assert task.fewshot_split is None
    assert careful == [
        "Careful, the task someone_else is using evaluation data to build the few shot examples."
    ]


def test_the_plot_speaks_english(tmp_path, monkeypatch):
    from oab_bench.judge.leaderboard import plot
    from oab_bench.judge.leaderboard import tables as lb
    from oab_bench.judge.leaderboard.inputs import load_records
    from tests.helpers import J1, exam_records

    recs = exam_records("model-a", J1, "90_direito_civil", 4.0, 1.0)
    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    tables, _ = lb.build_tables(load_records(path), resamples=100)
    fig = plot.figure(tables)
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    labels = " ".join(texts)
    assert "pass mark (6.00)" in labels and "Mean exam score by area" in labels
    assert f"Judge: {tables[0].judge}" in labels and "mean exam score (0-10), 95% interval" in labels
    for portuguese in ("aprovação", "nota média", "Nota média", "Juiz", "IC 95%", "aprovados", "exames"):
        assert portuguese not in labels, portuguese
    assert re.search(r"Direito Civil", labels)  # the area keeps the exam's name, as in the tables
    plot.plt.close(fig)


def _judgment(cost: float | None, cached: bool) -> Judgment:
    return made_up_judgment(judge_model="openai/unpriced", cost_usd=cost, cached=cached)


@pytest.mark.parametrize(("cost", "first", "again"), [(None, None, None), (0.25, 0.25, 0.0)])
def test_an_unknown_cost_is_unknown_on_every_run(cost, first, again):
    """The first run of an unpriced judge said NaN, its rerun (every judgment cached) said 0."""
    for cached, expected in ((False, first), (True, again)):
        j = _judgment(cost, cached)
        assert j.sample()["cost_usd"] == expected
        assert MemberScore.of(j).cost_usd == expected
        total = run_cost([QuestionResult.model_validate(j.sample())])
        assert math.isnan(total) if expected is None else total == expected, (cached, total)
