"""`--estimate` is what the same command would call: `run` looks up the answer store and the judgment
cache as the run would; `judge` and `probe` say what their cache holds. Nothing is called."""

from __future__ import annotations

import json

from oab_bench.judge.generation.answer_store import AnswerStore, StoredAnswer, answer_key, generation_settings
from oab_bench.judge.generation.task_prompt import candidate_messages
from oab_bench.scripts.cli import main
from tests.probe_rows import probe

MODEL = "openai/cand-estimate"


def _generation(temperature: float = 0.7, max_new_tokens: int = 8192) -> dict:
    from lighteval.models.model_input import GenerationParameters

    params = GenerationParameters(temperature=temperature).model_dump(exclude_none=True)
    return generation_settings(params, max_new_tokens)


def _seed_answers(folder, rows, n: int) -> list:
    store = AnswerStore(folder)
    for i, row in enumerate(rows[:n]):
        key = answer_key(model=MODEL, messages=candidate_messages(row), generation=_generation())
        text = f"<think>pensando {i}</think>Resposta guardada {i}: a ação cabível, com fundamento legal."
        store.put(StoredAnswer(key=key, model=MODEL, texts=[text]))
    return rows[:n]


def _run_estimate(capsys, server, dataset, tmp_path, *extra) -> dict:
    args = ["run", "--model", MODEL, "--api-base", server.url, "--dataset", str(dataset)]
    args += ["--tasks", "oab_bench:penal", "--output-dir", str(tmp_path / "run")]
    args += ["--judge-model", "openai/judge-estimate", "--judge-api-base", server.url]
    args += ["--judge-cache", str(tmp_path / "jc"), "--answer-cache", str(tmp_path / "ac")]
    args += ["--estimate", "--format", "json", *extra]
    capsys.readouterr()
    assert main(args) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_run_estimate_counts_the_stored_answers_and_their_cached_judgments(
    stub, judge_key, built_rows, built_dataset, tmp_path, capsys
):
    server = stub(policy="max")
    rows = [r for r in built_rows[0] if r.area == "penal"]
    est = _run_estimate(capsys, server, built_dataset, tmp_path)  # nothing stored yet
    assert (est["generations_cached"], est["generations_to_pay"]) == (0, 15)
    assert (est["judgments_cached"], est["judgments_to_pay"]) == (0, 15) and est["total"]["calls"] == 15

    stored = _seed_answers(tmp_path / "ac", rows, 10)
    answers = tmp_path / "answers.jsonl"  # the same texts, judged by `oab-bench judge` for 6 of them
    lines = [
        {"question_id": r.question_id, "model_id": MODEL, "choices": [{"turns": [t]}]}
        for r, t in zip(stored[:6], _texts(tmp_path / "ac", stored[:6]), strict=True)
    ]
    answers.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
    judged = ["judge", "--dataset", str(built_dataset), "--answers", str(answers), "--no-progress"]
    judged += ["--judge-model", "openai/judge-estimate", "--api-base", server.url]
    judged += ["--cache", str(tmp_path / "jc"), "--output", str(tmp_path / "judged.jsonl")]
    judged += ["--questions", *(r.question_id for r in stored[:6])]
    assert main(judged) == 0
    before = server.count

    est = _run_estimate(capsys, server, built_dataset, tmp_path)
    assert server.count == before and not (tmp_path / "run").exists()  # nothing called, nothing written
    assert (est["generations_cached"], est["generations_to_pay"]) == (10, 5)
    assert (est["judgments_cached"], est["judgments_to_pay"]) == (6, 9) and est["total"]["calls"] == 9

    # other generation settings are other answers: nothing stored for them
    est = _run_estimate(capsys, server, built_dataset, tmp_path, "--temperature", "0.2")
    assert (est["generations_cached"], est["judgments_cached"]) == (0, 0)
    est = _run_estimate(capsys, server, built_dataset, tmp_path, "--fresh-answers")
    assert est["generations_to_pay"] == 15

    capsys.readouterr()
    args = ["run", "--model", MODEL, "--api-base", server.url, "--dataset", str(built_dataset)]
    args += ["--tasks", "oab_bench:penal", "--output-dir", str(tmp_path / "run"), "--estimate"]
    args += ["--judge-model", "openai/judge-estimate", "--judge-api-base", server.url]
    args += ["--judge-cache", str(tmp_path / "jc"), "--answer-cache", str(tmp_path / "ac")]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "generations: 10 in the answer store (cost 0), 5 to generate" in text
    assert "judgments: 6 in the judgment cache (cost 0), 9 to pay for" in text
    assert "Answers not generated yet" not in text


def _texts(folder, rows) -> list[str]:
    from oab_bench.judge.answers import strip_reasoning

    store = AnswerStore(folder)
    keys = [answer_key(model=MODEL, messages=candidate_messages(r), generation=_generation()) for r in rows]
    return [strip_reasoning(store.get(k).texts[0]) for k in keys]


def test_probe_and_judge_estimates_say_what_the_cache_holds(stub, built_dataset, tmp_path, capsys):
    server = stub(policy="overlap")
    rc, out, _ = probe(capsys, built_dataset, server, tmp_path, "--estimate", "--format", "json")
    est = json.loads(out)
    assert rc == 0 and (est["judgments_cached"], est["judgments_to_pay"]) == (0, 50)
    assert est["generations_cached"] is None  # probe and judge generate nothing
    assert probe(capsys, built_dataset, server, tmp_path)[0] == 0
    before = server.count
    rc, out, _ = probe(capsys, built_dataset, server, tmp_path, "--estimate")
    assert rc == 0 and server.count == before
    assert "judgments: 50 in the judgment cache (cost 0), 0 to pay for" in out
    assert "generations:" not in out
