"""Helpers shared by test modules (a test module never imports another): made-up rows, judges, runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.schema import PASS_MARK, Item, QuestionRow, RubricItem, UpstreamText, money
from oab_bench.judge.answers import Answer
from oab_bench.judge.generation.answer_store import (
    StoredAnswer,
)
from oab_bench.judge.grading import grader
from oab_bench.judge.grading.client import CHECK_PROMPT
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.judge.leaderboard import tables as lb
from oab_bench.judge.leaderboard.inputs import read_inputs
from oab_bench.judge.settings import JudgeSettings
from tests import synthetic as syn
from tests.conftest import REPO, SECRET, oab

J1, J2 = "openai/gpt-5.2", "anthropic/claude-judge"
KEY_VARS = ("OPENAI_API_KEY", "OAB_JUDGE_API_KEY", "ANTHROPIC_API_KEY")


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def judged(row, score_of=max) -> dict:
    """Our judgment of `row`, each rubric item scored by `score_of(allowed)`, as a judgments file line."""
    items = [
        {"item_id": r.item_id, "score": score_of(r.allowed_scores), "max_score": r.max_score, "analysis": ""}
        for r in row.rubric
    ]
    return {
        "question_id": row.question_id,
        "exam_id": row.exam_id,
        "model": "model-x",
        "judge_model": J1,
        "prompt_version": "oab-pt-v1",
        "mode": "structured",
        "status": "ok",
        "score": round(sum(i["score"] for i in items), 2),
        "max_score": row.max_score,
        "items": items,
    }


def cli_build(src, out, *extra):
    """`oab-bench build` of a made-up source, with its own errata file."""
    return oab("build", "--source", src, "--output", out, "--errata", Path(src) / "errata.yaml", *extra)


def _no_base_settings():
    from oab_bench.judge.settings import JudgeSettings

    return JudgeSettings(judge_model="openai/gpt-4o-mini", max_attempts=6, backoff_initial=1.0)


def clean_env(**extra) -> dict:
    """No keys, no OAB_* settings (the task_module fixture sets some for its module)."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS and not k.startswith("OAB_")}
    return env | {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"} | extra


def answer(key: str, text: str) -> StoredAnswer:
    return StoredAnswer(key=key, model="m", texts=[text], finish_reasons=["stop"])


def run_cmd(tmp_path, dataset, candidate_url, judge_url, *extra) -> list:
    args = ["run", "--model", "openai/cand", "--api-base", candidate_url, "--dataset", dataset]
    args += ["--tasks", "oab_bench:penal", "--judge-model", "openai/judge-x", "--judge-api-base", judge_url]
    args += [
        "--judge-cache",
        tmp_path / "jc",
        "--answer-cache",
        tmp_path / "ac",
        "--output-dir",
        tmp_path / "r",
    ]
    return [*args, *extra]


def standin_python(tmp_path: Path, started: Path) -> Path:
    """A `python` for OAB_BENCH_VLLM_PYTHON that only records it was asked to start a server."""
    script = tmp_path / "python-standin"
    script.write_text(f"#!/bin/sh\ntouch {started}\nsleep 60\n")
    script.chmod(0o755)
    return script


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


EXAMS = ("90_direito_civil", "90_direito_penal", "91_direito_civil")


def model_file(path: Path, model: str, *, tamper: bool = False, failed: str | None = None) -> Path:
    """Three made-up exams of `model`; `tamper`: one questão worth 2.00, another filed under a wrong exam."""
    recs = []
    for exam in EXAMS:
        recs += exam_records(model, J1, exam, 4.0, 1.0)
    if tamper:
        recs[1]["max_score"] = 2.0  # 90_direito_civil_questao_1
        recs[7]["exam_id"] = "91_direito_penal"  # 90_direito_penal_questao_2
    if failed:  # an earlier failed judgment of this question, as another run would have left it
        recs = [dict(r, status="api_error", score=None) for r in recs if r["question_id"] == failed]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def board(paths, dataset=None) -> tuple[dict, str]:
    got = read_inputs([str(p) for p in paths], dataset)
    tables, notes = lb.build_tables(got.records, expected_ids=got.expected, truth=got.truth, resamples=300)
    return json.loads(lb.render_json(tables, notes + got.notes)), lb.render_markdown(tables, notes)


def rows_of(data: dict) -> dict[str, dict]:
    return {r["model"]: r for r in data["rows"]}


def answers_file(path: Path, model: str, answers: dict[str, str]) -> Path:
    lines = [
        {
            "question_id": q,
            "answer_id": q,
            "model_id": model,
            "choices": [{"index": 0, "turns": [t]}],
            "tstamp": 0,
        }
        for q, t in answers.items()
    ]
    return write_jsonl(path, lines)


def _count_in_flight(monkeypatch) -> dict:
    """Wrap the judge call: how many run at once, at most, and how many started."""
    seen = {"now": 0, "max": 0, "started": 0}
    call = grader.call_judge

    async def counted(*args, **kwargs):
        seen["now"] += 1
        seen["started"] += 1
        seen["max"] = max(seen["max"], seen["now"])
        try:
            return await call(*args, **kwargs)
        finally:
            seen["now"] -= 1

    monkeypatch.setattr(grader, "call_judge", counted)
    return seen


def made_up_judgment(**fields):
    """An ok Judgment of a made-up questão (1.00 of 1.25); `fields` override any of its values."""
    from oab_bench.judge.records import Judgment

    made_up = dict(question_id="90_direito_civil_questao_1", exam_id="90_direito_civil", model="m")
    made_up |= dict(
        judge_model="j", prompt_version="v", mode="structured", status="ok", score=1.0, max_score=1.25
    )
    return Judgment(**made_up | fields)


def _ok(row, key: str):
    return made_up_judgment(
        question_id=row.question_id,
        exam_id=row.exam_id,
        judge_model="openai/judge-test",
        max_score=row.max_score,
        cache_key=key,
        score=0.0,
        cost_usd=0.0,
    )


SWAP = {
    "question_id": "91_direito_penal_questao_1",
    "problem": "values swapped",
    "evidence": "tables say A 0.65, B 0.60",
    "correction": {"values": [0.65, 0.6]},
}


ANNUL = {
    "question_id": "90_direito_civil_questao_3",
    "problem": "item B annulled",
    "evidence": "FGV annulled it",
    "correction": {"annulled": ["B1"]},
}


def two_exams() -> list[tuple[dict, dict]]:
    """Two made-up exams, one needing a values errata and the other an annulment."""
    swapped = syn.questao(91, "penal", 1, values=(0.6, 0.65))
    swapped[1]["choices"][0]["turns"] = [
        "A.\n\n" + syn.table([("A. Tese (0,55), Art. (0,10).", "0,00/0,55/0,65")]),
        "B.\n\n" + syn.table([("B. Tese (0,50), Art. (0,10).", "0,00/0,50/0,60")]),
    ]
    annulled = syn.questao(90, "civil", 3, rows_b=[("B. (Anulada)", "0,00/0,50/0,60")])
    return syn.replace(syn.exam(90, "civil"), annulled) + syn.replace(syn.exam(91, "penal"), swapped)


def _write_lines(path, objects, *, newline: str, **dumps) -> None:
    path.write_bytes("".join(json.dumps(o, **dumps) + newline for o in objects).encode("utf-8"))


def _bad_question(tmp_path, n: int, **changes) -> str:
    """Build one exam whose line `n + 1` of question.jsonl has `changes`; the SourceError's text."""
    pairs = syn.exam()
    src = syn.write_source(tmp_path / "src", pairs)
    pairs[n][0].update(changes)
    # ASCII-escaped JSON: a lone surrogate can only be written as an escape
    (src / "question.jsonl").write_text("".join(json.dumps(q) + "\n" for q, _ in pairs))
    with pytest.raises(SourceError) as info:
        build_rows(src, src / "errata.yaml")
    return str(info.value)


TASK = "oab_bench:penal"  # 3 whole exams, 15 questions: enough, and quick


def alternate_score(row) -> float:
    """What the stub judge (policy 'alternate') gives: even-positioned items full, odd ones 0; annulled full."""
    gradable = [r for r in row.rubric if not r.annulled]
    return money(
        sum(r.max_score for i, r in enumerate(gradable) if i % 2 == 0)
        + sum(r.max_score for r in row.rubric if r.annulled)
    )


def expected_figures(rows) -> dict:
    rows = [r for r in rows if r.area == "penal"]
    exams = defaultdict(float)
    for r in rows:
        exams[r.exam_id] += alternate_score(r)
    totals = [money(t) for t in exams.values()]
    return {
        "exam_score": sum(totals) / len(totals),
        "pass_rate": sum(t >= PASS_MARK for t in totals) / len(totals),
        "question_score_pct": 100 * sum(alternate_score(r) / r.max_score for r in rows) / len(rows),
        "coverage": 1.0,
        "exams_complete": float(len(totals)),
    }


def env_for(**extra) -> dict:
    env = dict(os.environ)
    env.update(
        {
            "OPENAI_API_KEY": SECRET,
            "OAB_JUDGE_API_KEY": SECRET,
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
        }
    )
    env.update(extra)
    return env


def run_bench(
    model, candidate_url, judge_url, dataset, tmp_path, *extra, env: dict | None = None
) -> tuple[Path, subprocess.CompletedProcess]:
    """`oab-bench run` on TASK, as a user types it; returns the output folder and the process."""
    out = tmp_path / "run"
    args = ["run", "--model", model, "--api-base", candidate_url, "--dataset", dataset, "--tasks", TASK]
    args += ["--judge-model", "openai/judge-e2e", "--judge-api-base", judge_url]
    args += ["--judge-cache", tmp_path / "jc", "--answer-cache", tmp_path / "ac", "--output-dir", out]
    return out, oab(*args, *extra, env=env or env_for())


def results_json(out: Path) -> dict:
    (path,) = list((out / "results").rglob("results_*.json"))
    return json.loads(path.read_text())


def check_no_secret(out: Path, *texts: str) -> None:
    for p in out.rglob("*"):
        if p.is_file():
            assert SECRET.encode() not in p.read_bytes(), p
    for t in texts:
        assert SECRET not in t


def is_check_call(request) -> bool:
    return request["body"]["messages"][-1]["content"] == CHECK_PROMPT


def candidate_calls(server) -> list[dict]:
    """Generation requests the stub received (not judge calls, not the preflight's check calls)."""
    return [
        r
        for r in server.requests
        if r["body"].get("response_format", {}).get("type") != "json_schema" and not is_check_call(r)
    ]


def judge_calls(server) -> list[dict]:
    return [r for r in server.requests if r["body"].get("response_format", {}).get("type") == "json_schema"]


def check_candidate_requests(server, rows) -> None:
    system_prompts = {r.system_prompt for r in rows}
    candidate = [r["body"] for r in candidate_calls(server)]
    assert len(candidate) == 15
    for body in candidate:
        assert body["messages"][0]["role"] == "system" and body["messages"][0]["content"] in system_prompts
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert "(Valor: " in body["messages"][1]["content"]
        assert (
            "max_completion_tokens" not in body and body["max_tokens"] > 0
        )  # one limit (test_request_shape.py)
        assert body.get("stop", ["none sent"]) != []


def made_up_row(annulled: bool = False) -> QuestionRow:
    rubric = [
        RubricItem(
            item_id="A1",
            part="A",
            section="",
            label="A.",
            description="Tese inventada (0,55), Art. 1º (0,10).",
            max_score=0.65,
            allowed_scores=[0.0, 0.55, 0.65],
        ),
        RubricItem(
            item_id="B1",
            part="B",
            section="",
            label="B.",
            description="Outra tese (0,30).",
            max_score=0.3,
            allowed_scores=[0.0, 0.3],
        ),
        RubricItem(
            item_id="B2",
            part="B",
            section="",
            label="B.",
            description="Prazo (0,30).",
            max_score=0.3,
            allowed_scores=[0.0, 0.3],
            annulled=annulled,
        ),
    ]
    return QuestionRow(
        question_id="90_direito_civil_questao_1",
        edition=90,
        area="civil",
        exam_id="90_direito_civil",
        kind="questao",
        number=1,
        system_prompt="Sistema fictício.",
        statement="Caso inventado.",
        items=[
            Item(label="A", prompt="Pergunta A?", max_score=0.65),
            Item(label="B", prompt="Pergunta B?", max_score=0.6),
        ],
        max_score=1.25,
        reference=["Gabarito A.", "Gabarito B."],
        rubric=rubric,
        upstream=UpstreamText(
            statement="QUESTÃO\n\nCaso inventado.",
            turns=["Pergunta A?", "Pergunta B?"],
            values=[0.65, 0.6],
            reference_turns=["ref A", "ref B"],
        ),
    )


def settings(server, **kw) -> JudgeSettings:
    base = dict(
        judge_model="openai/judge-test",
        api_base=server.url,
        backoff_initial=0.01,
        backoff_max=5,
        timeout=5,
        max_attempts=3,
        concurrency=4,
    )
    return JudgeSettings(**(base | kw))


def grade(server, row=None, answer="Resposta do candidato.", store=None, **kw):
    row = row or made_up_row()
    judge = Judge(settings(server, **kw), store)
    return run_judge_all(
        judge, [(row, Answer(model="m", question_id=row.question_id, turns=[answer]))], progress=False
    )[0]


def _answers_file(tmp_path, upstream_v1, n=None):
    lines = (upstream_v1 / "model_answer" / "o3-2025-04-16.jsonl").read_text(encoding="utf-8").split("\n")
    lines = [line for line in lines if line.strip()][:n]
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, [json.loads(line)["question_id"] for line in lines]


def _judge_args(dataset, answers, server, cache, out, *extra) -> list[str]:
    common = ["--dataset", str(dataset), "--answers", str(answers), "--judge-model", "openai/judge-test"]
    return [
        *common,
        "--api-base",
        server.url,
        "--cache",
        str(cache),
        "--output",
        str(out),
        "--no-progress",
        *extra,
    ]


def _cli(args, env_extra=None, command="judge", **kw):
    """`oab-bench judge ARGS...` (or another command) in a process of its own, output piped."""
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.Popen(
        [sys.executable, "-m", "oab_bench.scripts.cli", command, *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def exam_records(model, judge, exam, peca, questao, *, failed=(), missing=()):
    """A made-up exam: the peça scores `peca`, each questão `questao` (ok unless listed)."""
    out = []
    for n in range(5):
        qid = f"{exam}_peca_praticoprofissional" if n == 0 else f"{exam}_questao_{n}"
        if n in missing:
            continue
        status = "api_error" if n in failed else "ok"
        out.append(
            {
                "question_id": qid,
                "exam_id": exam,
                "model": model,
                "judge_model": judge,
                "prompt_version": "oab-pt-v1",
                "mode": "structured",
                "status": status,
                "score": None if status != "ok" else (peca if n == 0 else questao),
                "max_score": 5.0 if n == 0 else 1.25,
            }
        )
    return out


def _pairs(n: int):
    row = made_up_row()
    return [
        (
            row,
            Answer(
                model=f"m{i % 2}", question_id=row.question_id, turns=[f"Resposta {i}: " + "tese " * 40 * i]
            ),
        )
        for i in range(n)
    ]


# --- made-up judgment sources ---------------------------------------------------------------

JUDGE = "openai/judge-made-up"  # made-up judgment sources (agreement, readers, strict figures)
AGREEMENT_EXAMS = [f"{e}_direito_{a}" for e in (90, 91) for a in ("civil", "penal", "tributario")]


def judgment(model, qid, exam, score, max_score, items, status="ok"):
    return {
        "question_id": qid,
        "exam_id": exam,
        "model": model,
        "judge_model": JUDGE,
        "prompt_version": "oab-pt-v1",
        "mode": "structured",
        "status": status,
        "score": score if status == "ok" else None,
        "max_score": max_score,
        "items": [{"item_id": k, "score": v, "max_score": max_score} for k, v in items.items()]
        if status == "ok"
        else [],
    }


def exam(model, exam_id, peca, questao, skip=()):
    """Peça `peca` (items P1 + P2), four questões at `questao` each (items A1 + B1)."""
    out = []
    if "peca" not in skip:
        out.append(
            judgment(
                model,
                f"{exam_id}_peca_praticoprofissional",
                exam_id,
                peca,
                5.0,
                {"P1": min(peca, 2.5), "P2": max(0.0, peca - 2.5)},
            )
        )
    for n in range(1, 5):
        if n in skip:
            continue
        out.append(
            judgment(
                model,
                f"{exam_id}_questao_{n}",
                exam_id,
                questao,
                1.25,
                {"A1": questao / 2, "B1": questao / 2},
            )
        )
    return out


# exam totals of model m1 under source A: 9, 7, 5, 4, 8, 3 (peça + 4 x 1.0)
PECAS = [5.0, 3.0, 1.0, 0.0, 4.0, 0.0]
QUESTAO = [1.0, 1.0, 1.0, 1.0, 1.0, 0.75]


def source_a(tmp_path, name="a.jsonl"):
    recs = []
    for e, p, q in zip(AGREEMENT_EXAMS, PECAS, QUESTAO, strict=True):
        recs += exam("m1", e, p, q)
        recs += exam("m2", e, max(0.0, p - 1.0), q)
    return write_jsonl(tmp_path / name, recs)


def details_run(folder: Path, model: str, records: list[dict]) -> Path:
    """A lighteval run folder whose details file of the oab_bench task holds `records` as judgments."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = folder / "details" / model / "2025-01-01T00-00-00"
    where.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist([{"metric": {"oab_judgment": r}} for r in records])
    pq.write_table(table, where / "details_oab_bench|0_2025-01-01T00-00-00.parquet")
    return folder


def repeated(model, exam, pecas, questao=1.0):
    """Exam `exam` graded len(pecas) times: the peça's score changes per repeat, the questões' do not."""
    out = []
    for n in range(5):
        qid = f"{exam}_peca_praticoprofissional" if n == 0 else f"{exam}_questao_{n}"
        scores = pecas if n == 0 else [questao] * len(pecas)
        out.append(
            {
                "question_id": qid,
                "exam_id": exam,
                "model": model,
                "judge_model": "openai/j",
                "prompt_version": "oab-pt-v1",
                "mode": "legacy",
                "status": "ok",
                "score": scores[0],
                "max_score": 5.0 if n == 0 else 1.25,
                "items": [],
                "repeats": [
                    {
                        "judge_model": "openai/j",
                        "repeat": k,
                        "status": "ok",
                        "score": s,
                        "items": {},
                        "cached": False,
                    }
                    for k, s in enumerate(scores)
                ],
            }
        )
    return out


def closed_url() -> str:
    """http://127.0.0.1:PORT where nothing listens (the port was taken and released): refused at once."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


# The headless browser the report tests look through.
def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe:
        return exe
    message = "chromium not installed: `apt-get install chromium` (`make test` installs it under CI)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)  # under CI the browser test never skips
    pytest.skip(message)


def browse(exe: str, url: str, tmp: Path, *flags: str) -> subprocess.CompletedProcess:
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]
    cmd += [
        "--disable-background-networking",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp / 'profile'}",
        *flags,
        url,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


# Made-up judgments to grade, at known prices.
PRICES = {"price_input": 1.0, "price_cached_input": 1.0, "price_output": 2.0}


def pairs(n: int, row=None):
    row = row or made_up_row()
    return [
        (row, Answer(model=f"m{i}", question_id=row.question_id, turns=[f"resposta {i}"])) for i in range(n)
    ]


def readme_block(heading: str) -> str:
    """The first bash block under `heading` in README.md, as a reader copies it."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    return section[section.index("```bash\n") + 8 : section.index("\n```", section.index("```bash"))]
