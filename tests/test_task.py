"""The lighteval task file's own behaviour, without running lighteval end to end."""

from __future__ import annotations

import math

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # the task file imports lighteval's task code: ~12 s of CPU


def test_exact_task_name_is_one_task_and_subtasks_exist(task_module):
    from lighteval.tasks.registry import Registry

    registry = Registry(tasks="oab_bench|0", custom_tasks=str(REPO / "oab_bench_task.py"))
    assert list(registry.task_to_configs) == ["oab_bench"]
    registry = Registry(
        tasks="oab_bench:penal|0,oab_bench:41|0", custom_tasks=str(REPO / "oab_bench_task.py")
    )
    assert sorted(registry.task_to_configs) == ["oab_bench:41", "oab_bench:penal"]
    names = {t.name for t in task_module.TASKS_TABLE}
    assert {"oab_bench", "oab_bench:do_trabalho", "oab_bench:39", "oab_bench:44"} <= names and len(
        names
    ) == 1 + 7 + 6


def test_system_prompt_is_a_system_message_and_joins_a_configured_one(task_module, built_rows):
    from lighteval.tasks.prompt_manager import PromptManager

    rows, _ = built_rows
    row = rows[1]
    doc = task_module.oab_prompt(row.model_dump(mode="json"), "oab_bench")
    plain = PromptManager(use_chat_template=True).prepare_prompt_api(doc)
    assert plain == [{"role": "system", "content": row.system_prompt}, {"role": "user", "content": doc.query}]
    configured = PromptManager(use_chat_template=True, system_prompt="Seja conciso.").prepare_prompt_api(doc)
    assert configured[0] == {"role": "system", "content": f"Seja conciso.\n\n{row.system_prompt}"}
    assert len(configured) == 2


def test_candidate_prompt_lists_items_with_values(task_module, built_rows):
    rows, _ = built_rows
    by_id = {r.question_id: r for r in rows}
    q = task_module.candidate_prompt(by_id["39_direito_penal_questao_1"])
    assert "A) " in q and "(Valor: 0,65)" in q and "B) " in q and "(Valor: 0,60)" in q  # the corrected values
    assert q.endswith("identificando cada resposta pela letra do item.")
    p = task_module.candidate_prompt(by_id["39_direito_penal_peca_praticoprofissional"])
    assert "(Valor: 5,00)" in p and "PEÇA PRÁTICO" not in p


def evaluation_docs(task_name: str, max_samples: int | None = None) -> list:
    """The documents lighteval's pipeline prepares for an evaluation of `task_name` (get_docs)."""
    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.registry import Registry

    tasks = Registry(tasks=f"{task_name}|0", custom_tasks=str(REPO / "oab_bench_task.py")).load_tasks()
    LightevalTask.load_datasets(tasks, 1)
    return [doc for task in tasks.values() for doc in task.get_docs(max_samples)]


def test_documents_load_without_a_judge_and_an_evaluation_checks_it_first(
    task_module, monkeypatch, built_rows
):
    """Browsing the task (its documents, `lighteval tasks inspect`) needs no judge; an evaluation
    (lighteval's pipeline preparing our documents) fails before any model is loaded or called."""
    rows, _ = built_rows
    for unset in (
        lambda: monkeypatch.delenv("OAB_JUDGE_MODEL"),
        lambda: monkeypatch.setenv("OAB_JUDGE_MODEL", ""),
    ):
        unset()
        doc = task_module.oab_prompt(rows[0].model_dump(mode="json"), "oab_bench")
        assert doc.specific[task_module.SYSTEM_KEY] == rows[0].system_prompt
        with pytest.raises(  # one line under lighteval's CLI, no traceback (SystemExit's message)
            SystemExit,
            match=r"^oab_bench: error: OAB_JUDGE_MODEL is not set: the oab_bench task needs a judge",
        ):
            evaluation_docs("oab_bench:39")
    monkeypatch.setenv("OAB_JUDGE_MODEL", "openai/judge-unit")
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "sk-test")
    assert {d.specific["question_id"] for d in evaluation_docs("oab_bench:39")} == {
        r.question_id for r in rows if r.edition == 39
    }


def test_run_counts_the_questions_lighteval_samples(task_module, built_dataset, monkeypatch):
    """`run --max-samples N` looks in its caches for the N questions lighteval's seeded shuffle takes
    (run_settings.selected_rows): a complete read-only cache is not refused for the others."""
    from oab_bench.judge.generation.run_settings import RunSettings, selected_rows
    from oab_bench.scripts.cli import build_parser

    monkeypatch.setenv("OAB_JUDGE_MODEL", "openai/judge-unit")
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "sk-test")
    for tasks, n in (("oab_bench:penal", 5), ("oab_bench:penal,oab_bench:civil", 4)):
        docs = [d for name in tasks.split(",") for d in evaluation_docs(name, n)]
        argv = ["run", "--model", "m", "--output-dir", "o", "--dataset", str(built_dataset), "--tasks", tasks]
        s = RunSettings.from_args(build_parser().parse_args([*argv, "--max-samples", str(n)]))
        rows = selected_rows(s)
        assert {r.question_id for r in rows} == {d.specific["question_id"] for d in docs}
        assert len(rows) == len(docs) < len(selected_rows(s, sampled=False))


def test_a_judge_cache_it_cannot_use_fails_before_the_evaluation(task_module, monkeypatch, tmp_path):
    """OAB_JUDGE_CACHE naming another tool's folder was refused only when the first answers were
    judged, after every answer had been generated (and paid for)."""
    (tmp_path / "judgments.jsonl").write_text('{"question_id": "q", "score": 1}\n')
    monkeypatch.setenv("OAB_JUDGE_CACHE", str(tmp_path))
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "sk-test")
    with pytest.raises(
        SystemExit,
        match=f"^oab_bench: error: OAB_JUDGE_CACHE: {tmp_path}/judgments.jsonl: not an oab-bench judgment store",
    ):
        task_module.check_judge_configured()
    monkeypatch.setenv("OAB_JUDGE_CACHE", "off")
    task_module.check_judge_configured()
    monkeypatch.delenv("OAB_JUDGE_API_KEY")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SystemExit, match=r"^oab_bench: error: no API key: the judge openai/judge-unit needs"):
        task_module.check_judge_configured()  # its key too, named as the plain CLI sets it


def test_corpus_figures_leave_out_incomplete_exams(task_module):
    def v(exam, n, status="ok", score=1.0):
        return {
            "question_id": f"{exam}_questao_{n}",
            "exam_id": exam,
            "status": status,
            "score": score if status == "ok" else None,
            "max_score": 1.25,
        }

    def peca(exam, score):
        return {
            "question_id": f"{exam}_peca_praticoprofissional",
            "exam_id": exam,
            "status": "ok",
            "score": score,
            "max_score": 5.0,
        }

    values = [peca("90_direito_civil", 4.0), *(v("90_direito_civil", n) for n in range(1, 5))]
    values += [
        peca("90_direito_penal", 5.0),
        *(v("90_direito_penal", n) for n in range(1, 4)),
        v("90_direito_penal", 4, "no_answer"),
    ]
    f = task_module.corpus_figures(values)
    assert f["exam_score"] == 8.0 and f["pass_rate"] == 1.0 and f["exams_complete"] == 1.0
    assert f["coverage"] == pytest.approx(9 / 10)
    none = task_module.corpus_figures(values[5:])
    assert math.isnan(none["exam_score"]) and math.isnan(none["pass_rate"]) and none["exams_complete"] == 0.0


def test_a_broken_patch_is_its_own_error_not_a_missing_task_table(task_module, monkeypatch):
    """lighteval looks TASKS_TABLE up with hasattr, which took an AttributeError while making it (a
    lighteval internal moved) for "no tasks here": "Cannot find task oab_bench" instead of the cause."""

    def broken():
        raise AttributeError("type object 'LiteLLMClient' has no attribute '_moved'")

    monkeypatch.setattr(task_module, "_tasks_table", broken)
    with pytest.raises(RuntimeError, match=r"making TASKS_TABLE: AttributeError.*_moved"):
        hasattr(task_module, "TASKS_TABLE")
    assert not hasattr(task_module, "NOT_OURS")
