"""Defects a review found by trying the new commands as an adversary would, each with its neighbours."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.publish import write_dataset
from oab_bench.judge.grading.estimate.core import estimate
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.runner import Judge, run_judge_all
from oab_bench.judge.settings import settings_from
from oab_bench.judge.validity.sources import load_human
from oab_bench.judge.validity.stats import ccc, columns, figure, kappa_pass, mae, pearson
from oab_bench.scripts.cli import main
from tests import synthetic as syn
from tests.test_judge_cost import _pairs
from tests.test_judge_server import settings


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ["--max-cost-usd", "-1"],
            "--max-cost-usd (OAB_JUDGE_MAX_COST_USD): Input should be greater than or equal to 0",
        ),
        (["--repeats", "0"], "--repeats (OAB_JUDGE_REPEATS): Input should be greater than or equal to 1"),
        (
            ["--batch", "--max-cost-usd", "1"],
            "--batch (OAB_JUDGE_BATCH) and --max-cost-usd (OAB_JUDGE_MAX_COST_USD) do not go together",
        ),
        (["--price-input", "nan"], "--price-input (OAB_JUDGE_PRICE_INPUT): Input should be a finite number"),
        (
            ["--api-base", " localhost:1/v1"],
            "--api-base (OAB_JUDGE_API_BASE): 'localhost:1/v1' is not an http",
        ),
    ],
)
def test_bad_settings_are_one_line_each_naming_the_flag(flags, said, tmp_path, capsys):
    answers = tmp_path / "a.jsonl"
    answers.write_text("{}\n")
    args = [
        "judge",
        "--dataset",
        str(tmp_path),
        "--answers",
        str(answers),
        "--output",
        str(tmp_path / "j.jsonl"),
    ]
    assert main([*args, "--judge-model", "openai/x", *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0] and "pydantic" not in err[0], err


def test_output_never_overwrites_an_input(tmp_path, capsys):
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"question_id": "q", "model_id": "m", "choices": [{"turns": ["x"]}]}\n')
    before = answers.read_bytes()
    for argv in (
        ["judge", "--dataset", str(tmp_path / "ds"), "--answers", str(answers), "--output", str(answers)],
        ["agreement", str(answers), str(answers), "--output", str(answers)],
        ["report", str(answers), "--output", str(answers)],
        ["leaderboard", str(answers), "--output", str(answers)],
        ["build", "--source", str(tmp_path), "--output", str(tmp_path), "--overwrite"],
    ):
        assert main([*argv, *(["--judge-model", "openai/x"] if argv[0] == "judge" else [])]) == 2, argv
        assert "would overwrite the input" in capsys.readouterr().err
        assert answers.read_bytes() == before


def test_a_hub_folder_with_an_empty_config_is_a_clear_error(tmp_path):
    pairs = syn.exam()
    folder = syn.write_hub_layout(tmp_path / "raw", [q for q, _ in pairs], [g for _, g in pairs])
    path = folder / "questions" / "train-00000-of-00001.parquet"
    pq.write_table(pq.read_table(path).slice(0, 0), path)
    with pytest.raises(SourceError, match="cannot read config 'questions'"):
        build_rows(f"hf:{folder}")


def test_build_fills_an_existing_empty_folder(built_rows, tmp_path):
    rows, report = built_rows
    (tmp_path / "empty").mkdir()
    out = write_dataset(rows, report, tmp_path / "empty")
    assert (out / "data").is_dir() and (out / "README.md").exists()


def test_graders_mean_is_not_rounded_to_cents(tmp_path):
    csv = tmp_path / "h.csv"
    qid = "39_direito_penal_questao_1"
    csv.write_text(
        "exam_id,question_id,item_id,score,grader\n"
        f"39_direito_penal,{qid},,0.6,ana\n39_direito_penal,{qid},,0.65,bia\n"
    )
    [graded] = load_human("H", csv, {}).graded.values()
    assert graded.score == pytest.approx(0.625)


def test_one_value_or_a_constant_side_gives_null_not_zero():
    notes: list[str] = []
    one = columns([{"exam": "e1", "a": 9.0, "b": 4.0}], "exam", "a", "b")
    assert figure("exam.ccc", ccc, one, notes).value is None
    assert figure("exam.kappa_pass", kappa_pass, one, notes).value is None
    assert figure("exam.mae", mae, one, notes).value == 5.0  # one pair is enough for an error
    flat = columns([{"exam": f"e{i}", "a": 5.0, "b": float(i)} for i in range(4)], "exam", "a", "b")
    assert figure("question.ccc", ccc, flat, notes).value is None
    assert figure("question.pearson", pearson, flat, notes).value is None
    assert any("too few" in n for n in notes) and any("constant" in n for n in notes)


def test_the_cost_cap_is_used_not_just_filled_with_expectations(stub, judge_key, tmp_path):
    """16 calls at a time: refused judgments wait for the calls in flight, which cost less than expected."""
    server = stub()
    pairs = _pairs(6)
    prices = dict(price_input=1000.0, price_output=1000.0, concurrency=16)
    expected = estimate(Judge(settings(server, **prices)), pairs).total.cost_usd
    actual = sum(j.cost_usd for j in run_judge_all(Judge(settings(server, **prices)), pairs, progress=False))
    cap = actual + expected / len(pairs) * 2  # room for everything, far below what was expected in total
    assert cap < expected  # the old rule (reservations fill the cap, then stop) refused most of them
    server.count = 0
    capped = run_judge_all(
        Judge(settings(server, max_cost_usd=cap, **prices), JudgmentStore(tmp_path)), pairs, progress=False
    )
    assert [j.status for j in capped] == ["ok"] * len(pairs) and server.count == len(pairs)
    assert sum(j.cost_usd for j in capped) <= cap


def test_the_budget_serves_several_event_loops(stub, judge_key):
    server = stub()
    judge = Judge(settings(server, price_input=1000.0, price_output=1000.0, max_cost_usd=1e9))
    for _ in range(2):  # a judge reused by a second run (asyncio.run makes a new loop)
        assert {j.status for j in run_judge_all(judge, _pairs(2), progress=False)} == {"ok"}


def test_settings_error_names_the_run_flag(monkeypatch):
    monkeypatch.delenv("OAB_JUDGE_REPEATS", raising=False)
    import argparse

    from oab_bench.judge.settings import add_arguments

    p = argparse.ArgumentParser()
    add_arguments(p, prefix="judge-")
    with pytest.raises(ValueError, match=r"^--judge-max-tokens \(OAB_JUDGE_MAX_TOKENS\)"):
        settings_from(
            p.parse_args(["--judge-model", "openai/x", "--judge-max-tokens", "0"]), {}, prefix="judge-"
        )


def test_an_estimate_with_nothing_left_to_judge_costs_zero_even_unpriced(stub, judge_key, tmp_path):
    server = stub()
    store = JudgmentStore(tmp_path)
    unpriced = settings(server)  # openai/judge-test: no price known
    run_judge_all(Judge(unpriced, store), _pairs(2), progress=False)
    est = estimate(Judge(unpriced, JudgmentStore(tmp_path)), _pairs(2))
    assert est.total.calls == 0 and est.total.cost_usd == 0.0 and est.total.cost_usd_batch == 0.0


def test_a_key_with_a_newline_is_trimmed_and_one_with_a_control_character_fails_at_once(stub, monkeypatch):
    """A pasted key ending in a newline failed every call as a retried 'server error' (no HTTP
    header may hold one); now it is trimmed, and a control character inside fails once, saying why."""
    from oab_bench.judge.grading.client import call_judge
    from oab_bench.judge.grading.loop import run
    from oab_bench.judge.settings import JudgeSettings

    server = stub()
    settings = JudgeSettings(
        judge_model="openai/judge-test", api_base=server.url, max_attempts=3, backoff_initial=0.01
    )
    messages = [{"role": "user", "content": "oi"}]
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "sk-test-123\n")
    assert run(call_judge(settings, messages, None)).status == "ok"
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "sk-test\n123")
    failed = run(call_judge(settings, messages, None))
    assert (failed.status, failed.attempts) == ("api_error", 1)
    assert "control character" in failed.error and "sk-test" not in failed.error
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "  ")  # blank: no key of ours (the local server's dummy)
    assert run(call_judge(settings, messages, None)).status == "ok"


def test_blank_keys_are_missing_keys_before_anything_runs(monkeypatch):
    """`OPENAI_API_KEY=' '` or a blank OAB_JUDGE_API_KEY passed the run's key check and then failed
    every call; blank is missing, as empty is."""
    from oab_bench.judge.generation.preflight import PreflightError, check_credentials
    from oab_bench.judge.settings import JudgeSettings

    for var in ("OAB_JUDGE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", " \n")
    monkeypatch.setenv("OAB_JUDGE_API_KEY", "  ")
    with pytest.raises(PreflightError) as info:
        check_credentials("openai/gpt-4o-mini", None, JudgeSettings(judge_model="openai/gpt-5.2"))
    said = str(info.value)
    assert "the candidate openai/gpt-4o-mini needs OPENAI_API_KEY" in said
    assert "the judge openai/gpt-5.2 needs OAB_JUDGE_API_KEY" in said


def test_a_foreign_judgments_file_in_the_cache_is_refused_untouched(
    tmp_path, upstream_v1, built_dataset, caplog, capsys
):
    """Upstream's judgment file copied into a cache folder: refused before anything is written
    (not even the torn-line seal), one error naming the file, no warning per line; exit 2."""
    import logging
    from argparse import Namespace

    from oab_bench.judge.grading.judge_answers import command_judge
    from oab_bench.judge.grading.judgment_store import StoreError
    from tests.test_judge_server import _answers_file

    upstream = upstream_v1 / "model_judgment" / "o3-2025-04-16_single.sample.jsonl"
    store = tmp_path / "cache" / "judgments.jsonl"
    store.parent.mkdir()
    store.write_bytes(upstream.read_bytes() + b'{"question_id": "torn')
    before = store.read_bytes()
    s = settings_from(None, {"OAB_JUDGE_MODEL": "openai/x"})
    for no_cache in (False, True):
        with (
            caplog.at_level(logging.WARNING, logger="oab_bench.judge.grading.judgment_store"),
            pytest.raises(StoreError) as e,
        ):
            command_judge(Namespace(cache=str(store.parent), no_cache=no_cache), s)
        assert str(e.value).startswith(f"--cache {store}: not an oab-bench judgment store (36 line(s)")
    assert store.read_bytes() == before and not caplog.records

    answers, _ = _answers_file(tmp_path, upstream_v1, 1)
    out = tmp_path / "o.jsonl"
    argv = ["judge", "--dataset", str(built_dataset), "--answers", str(answers), "--judge-model", "openai/x"]
    argv += ["--api-base", "http://127.0.0.1:9/v1", "--output", str(out), "--no-progress"]
    assert main([*argv, "--cache", str(store.parent)]) == 2
    assert "not an oab-bench judgment store" in capsys.readouterr().err
    assert main([*argv, "--cache", str(store)]) == 2  # the store file itself, not its folder
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert f"--cache {store}: not a folder" in err and "Errno" not in err
    assert store.read_bytes() == before and not out.exists()


def test_an_output_that_cannot_be_written_fails_before_any_call(
    stub, judge_key, tmp_path, upstream_v1, built_dataset, capsys
):
    """`--output` an existing folder: exit 2 naming the flag before the judge is called (not after
    paying for every judgment), and no temporary file left; the same for probe's and run's folders."""
    from oab_bench.judge.output import write_atomic
    from tests.test_judge_server import _answers_file

    server = stub()
    answers, _ = _answers_file(tmp_path, upstream_v1, 1)
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    argv = ["judge", "--dataset", str(built_dataset), "--answers", str(answers), "--no-progress"]
    argv += ["--judge-model", "openai/judge-test", "--api-base", server.url, "--cache", str(tmp_path / "c")]
    assert main([*argv, "--output", str(outdir)]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert f"--output {outdir}: is a folder" in err
    with pytest.raises(IsADirectoryError):  # should it fail anyway, it leaves nothing behind
        write_atomic(outdir, "x")
    assert not server.requests and not list(tmp_path.glob(".outdir.*"))

    a_file = tmp_path / "a_file"
    a_file.write_text("")
    probe = ["probe", "--dataset", str(built_dataset), "--questions", "39_direito_penal_questao_3"]
    probe += ["--judge-model", "openai/judge-test", "--api-base", server.url, "--no-progress"]
    assert main([*probe, "--cache", str(tmp_path / "c"), "--output", str(a_file)]) == 2
    assert f"{a_file} is a file, not a folder" in capsys.readouterr().err
    run = ["run", "--model", "openai/cand", "--dataset", str(built_dataset), "--judge-model", "openai/j"]
    assert main([*run, "--output-dir", str(a_file)]) == 2
    assert f"--output-dir {a_file}: is a file, not a folder" in capsys.readouterr().err
    assert not server.requests and a_file.read_text() == ""


def test_run_refuses_a_cache_or_an_output_it_cannot_use_before_any_work(tmp_path, built_dataset, capsys):
    """`oab-bench run` opened its judge cache only in the task, after generating, and found a
    `judgments.jsonl` folder in its output only at the end: both now fail first, naming the flag."""
    run = ["run", "--model", "openai/cand", "--dataset", str(built_dataset), "--judge-model", "openai/j"]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "judgments.jsonl").write_text('{"question_id": "q", "score": 1}\n')
    before = (foreign / "judgments.jsonl").read_bytes()
    assert main([*run, "--output-dir", str(tmp_path / "o1"), "--judge-cache", str(foreign)]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert "--judge-cache (OAB_JUDGE_CACHE):" in err and "not an oab-bench judgment store" in err
    assert (foreign / "judgments.jsonl").read_bytes() == before and not (tmp_path / "o1").exists()

    a_file = tmp_path / "a_file"
    a_file.write_text("")
    assert main([*run, "--output-dir", str(tmp_path / "o2"), "--judge-cache", str(a_file)]) == 2
    assert "--judge-cache (OAB_JUDGE_CACHE): " in capsys.readouterr().err

    out = tmp_path / "o3"
    (out / "judgments.jsonl").mkdir(parents=True)
    assert main([*run, "--output-dir", str(out), "--judge-cache", str(tmp_path / "c")]) == 2
    assert "--output-dir" in capsys.readouterr().err and not (tmp_path / "c").exists()


def test_run_never_writes_in_a_folder_it_did_not_make(stub, tmp_path, built_dataset, capsys, monkeypatch):
    """`--output-dir ~/notes` deleted the judgments.jsonl found there and replaced its model_config.yaml
    before lighteval started: a run now writes only in a new or empty folder, or one a run marked."""
    import oab_bench.judge.generation.run as run_mod

    server = stub()
    started = []
    monkeypatch.setattr(run_mod, "run_redacted", lambda *a, **k: started.append(1) or 1)
    run = ["run", "--model", "openai/cand", "--api-base", server.url, "--dataset", str(built_dataset)]
    run += ["--tasks", "oab_bench:39", "--judge-model", "openai/j", "--judge-api-base", server.url]
    run += ["--judge-cache", str(tmp_path / "jc"), "--answer-cache", str(tmp_path / "ac"), "--no-check-call"]
    notes = tmp_path / "notes"
    (notes / "drafts").mkdir(parents=True)
    (notes / "judgments.jsonl").write_text("someone else's\n")
    (notes / "model_config.yaml").write_text("mine: true\n")
    assert main([*run, "--output-dir", str(notes)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"oab-bench run: error: --output-dir {notes}: not a folder written by")
    assert "drafts/, judgments.jsonl, model_config.yaml" in line
    assert sorted(p.name for p in notes.iterdir()) == ["drafts", "judgments.jsonl", "model_config.yaml"]
    assert (notes / "judgments.jsonl").read_text() == "someone else's\n" and not started

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for _ in range(2):  # an empty folder, then the same folder again: ours now
        assert main([*run, "--output-dir", str(fresh)]) == 1
    assert len(started) == 2 and (fresh / run_mod.RUN_MARKER).is_file()

    older = tmp_path / "older"  # a run folder from before the marker: its summary is ours
    older.mkdir()
    (older / "judgments.jsonl").write_text("")
    summary = {"model": "m", "api_base": None, "judge_model": "j", "results": "r.json", "figures": {}}
    (older / run_mod.SUMMARY_FILE).write_text(json.dumps(summary))
    assert main([*run, "--output-dir", str(older)]) == 1 and (older / run_mod.RUN_MARKER).is_file()
    (notes / run_mod.SUMMARY_FILE).write_text(json.dumps({"model": "m"}))  # not our summary's shape
    assert main([*run, "--output-dir", str(notes)]) == 2


def test_a_candidate_key_with_a_line_break_is_trimmed_or_named(
    stub, tmp_path, built_dataset, capsys, monkeypatch
):
    """OPENAI_API_KEY='sk-...\\r\\n' (a key pasted from a file) made the check call report that the
    candidate's server 'does not answer: Connection error', and lighteval retry it for minutes: the
    judge's own key was trimmed, the provider variables the candidate uses were not."""
    import oab_bench.judge.generation.run as run_mod

    server = stub()
    monkeypatch.setattr(run_mod, "run_redacted", lambda *a, **k: 1)  # stop where lighteval would start
    run = ["run", "--model", "openai/cand", "--api-base", server.url, "--dataset", str(built_dataset)]
    run += ["--tasks", "oab_bench:39", "--judge-model", "openai/j", "--judge-api-base", server.url]
    run += ["--judge-cache", str(tmp_path / "jc"), "--answer-cache", str(tmp_path / "ac")]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cand-123\r\n")
    assert main([*run, "--output-dir", str(tmp_path / "o1")]) == 1  # lighteval's turn: preflight passed
    assert "does not answer" not in capsys.readouterr().err
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cand\n123")
    assert main([*run, "--output-dir", str(tmp_path / "o2")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert (
        line
        == "oab-bench run: error: OPENAI_API_KEY holds a line break or another control character: fix the variable"
    )
    assert not (tmp_path / "o2").exists()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cand-123")
    monkeypatch.setenv("DEPLOY_SSH_KEY", "-----BEGIN KEY-----\nabc\n-----END KEY-----\n")  # not ours
    assert main([*run, "--output-dir", str(tmp_path / "o3")]) == 1


def test_a_folder_that_is_no_dataset_is_refused_naming_it(stub, tmp_path, capsys, monkeypatch):
    """A random folder as --dataset reached `datasets`: `judge` said 'Unknown split "test"', and
    `run` made its check calls and started lighteval, which died on a KeyError traceback."""
    server = stub()
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "todo.txt").write_text("not a dataset\n")
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"question_id": "q", "model_id": "m", "choices": [{"index": 0, "turns": ["x"]}]}\n')
    judge = ["judge", "--answers", str(answers), "--judge-model", "openai/j", "--api-base", server.url]
    run = ["run", "--model", "openai/cand", "--api-base", server.url, "--tasks", "oab_bench:39"]
    run += ["--judge-model", "openai/j", "--judge-api-base", server.url, "--output-dir", str(tmp_path / "o")]
    for argv in (
        [*judge, "--dataset", str(notes), "--output", str(tmp_path / "j.jsonl")],
        [*run, "--dataset", str(notes)],
        [*run, "--dataset", str(answers)],
    ):
        assert main(argv) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        given = argv[argv.index("--dataset") + 1]
        assert line.startswith(f"oab-bench {argv[0]}: error: {given}: not a dataset"), line
    assert not server.requests and not (tmp_path / "o").exists() and not (tmp_path / "j.jsonl").exists()
    assert sorted(p.name for p in notes.iterdir()) == ["sub", "todo.txt"]


@pytest.mark.parametrize("sig, code", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_signal_before_judging_starts_is_one_line_too(monkeypatch, capsys, sig, code):
    """SIGTERM or SIGHUP while a command still loaded its dataset or answers (the first seconds)
    killed it silently: only the judge loop and `run` turned them into one line."""
    import os
    import signal
    import time

    import oab_bench.judge.grading.judge_answers

    def slow_start(args):
        os.kill(os.getpid(), getattr(signal, sig))
        time.sleep(5)  # a handler raises before this ends
        return 0

    monkeypatch.setattr(oab_bench.judge.grading.judge_answers, "run_judge_command", slow_start)
    argv = ["judge", "--dataset", "d", "--answers", "a.jsonl", "--judge-model", "openai/j", "--output", "o"]
    started = time.monotonic()
    assert main(argv) == code
    assert time.monotonic() - started < 4
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"oab-bench judge: stopped by {sig}")
    assert signal.getsignal(getattr(signal, sig)) is signal.SIG_DFL  # put back after the command


def test_a_credential_inside_a_url_is_masked_wherever_we_print():
    """An --api-base given as https://user:pass@host, or a provider URL with ?key=, holds a secret that
    is in no environment variable: redact masks it too (errors, logs, the probe's and estimate's lines)."""
    from oab_bench.judge.redact import redact

    assert (
        redact("api_base=http://user:s3cr3t@host:8000/v1 failed", {})
        == "api_base=http://***@host:8000/v1 failed"
    )
    assert (
        redact("GET https://g.example/v1/m:gen?key=AIzaXYZ&alt=sse", {})
        == "GET https://g.example/v1/m:gen?key=***&alt=sse"
    )
    assert redact("https://h/x?access_token=abc#frag", {}) == "https://h/x?access_token=***#frag"
    plain = "http://127.0.0.1:8000/v1 answered; write to a@b.example; monkey=1&key"
    assert redact(plain, {}) == plain  # nothing secret: nothing changed
