"""What judging costs: the estimate before spending, the cost cap, cached input, lean pricing."""

from __future__ import annotations

import json

import pytest

from oab_bench.judge.grading.bill import estimate
from oab_bench.judge.grading.client import cost, map_prices
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.judge_answers import summary
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.grading.prompts import build_messages, marks_cache
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.judge.records import Usage
from tests.conftest import oab
from tests.helpers import (
    _answers_file,
    _judge_args,
    _pairs,
    clean_env,
    made_up_judgment,
    made_up_row,
    settings,
)


def test_estimate_calls_nothing_and_counts_what_the_run_reports(
    stub, judge_key, tmp_path, built_dataset, upstream_v1
):
    server = stub()
    answers, ids = _answers_file(tmp_path, upstream_v1, 4)
    args = _judge_args(
        built_dataset, answers, server, tmp_path / "cache", tmp_path / "out.jsonl", "--questions", *ids
    )
    args[args.index("openai/judge-test")] = "openai/gpt-5.2"  # o200k, as the stub counts
    env = clean_env(OAB_JUDGE_API_KEY=judge_key)

    proc = oab("judge", *args, "--estimate", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert server.count == 0 and not (tmp_path / "out.jsonl").exists()
    est = json.loads(proc.stdout)
    keys = {"model", "calls", "prompt_tokens", "completion_tokens", "cost_usd", "cost_usd_batch"}
    assert set(est["total"]) == keys and all(set(m) == keys for m in est["models"])
    assert est["total"]["calls"] == 4 and est["total"]["cost_usd_batch"] == pytest.approx(
        est["total"]["cost_usd"] / 2
    )

    assert oab("judge", *args, env=env).returncode == 0
    reported = sum(
        json.loads(x)["usage"]["prompt_tokens"] for x in (tmp_path / "out.jsonl").read_text().splitlines()
    )
    assert server.count == 4
    print(f"estimated {est['total']['prompt_tokens']} prompt tokens, the run reported {reported}")
    assert abs(est["total"]["prompt_tokens"] - reported) <= 0.10 * reported

    again = oab("judge", *args, "--estimate", env=env)  # all cached now: nothing left to pay
    assert (
        again.returncode == 0 and "nothing was called" in again.stdout and "cached judgments" in again.stdout
    )
    assert server.count == 4


def test_cost_cap_leaves_budget_statuses_and_a_rerun_finishes_without_repeating(stub, judge_key, tmp_path):
    server = stub()
    pairs = _pairs(6)
    prices = dict(price_input=1000.0, price_output=1000.0, concurrency=1)
    full = estimate(Judge(settings(server, **prices)), pairs).total.cost_usd
    cap = full / 2

    store = JudgmentStore(tmp_path)
    first = run_judge_all(Judge(settings(server, max_cost_usd=cap, **prices), store), pairs, progress=False)
    statuses = [j.status for j in first]
    assert "budget" in statuses and "ok" in statuses and set(statuses) <= {"ok", "budget"}
    assert all(j.score is None and "max-cost-usd" in j.error for j in first if j.status == "budget")
    assert server.count == statuses.count("ok")
    assert sum(j.cost_usd for j in first) <= cap

    store = JudgmentStore(tmp_path)
    second = run_judge_all(
        Judge(settings(server, max_cost_usd=full * 2, **prices), store), pairs, progress=False
    )
    assert {j.status for j in second} == {"ok"}
    assert server.count == len(pairs)  # each judgment paid once over both runs
    assert f"budget {statuses.count('budget')}" in summary(first)


def test_cost_cap_needs_a_known_price(stub, judge_key):
    with pytest.raises(ValueError, match="no known price"):
        Judge(settings(stub(), max_cost_usd=1.0))


def test_cached_prompt_tokens_are_priced_and_shown(stub, judge_key):
    server = stub()  # reports half of every prompt as cached
    judge = Judge(settings(server, price_input=2.0, price_cached_input=0.2, price_output=8.0))
    [j] = run_judge_all(judge, _pairs(1), progress=False)
    u = j.usage
    assert u.cached_tokens == u.prompt_tokens // 2 > 0
    assert j.cost_usd == pytest.approx(
        ((u.prompt_tokens - u.cached_tokens) * 2.0 + u.cached_tokens * 0.2 + u.completion_tokens * 8.0) / 1e6
    )
    assert "%)" in summary([j])  # cached share


def test_map_prices_price_cached_input_at_the_cached_rate():
    p = map_prices("openai/gpt-4o")
    usage = Usage(prompt_tokens=1000, cached_tokens=400, completion_tokens=100)
    expected = 600 * p.input + 400 * p.cached_input + 100 * p.output
    assert p.cached_input < p.input and cost(settings_for("openai/gpt-4o"), usage) == pytest.approx(expected)
    assert cost(settings_for("openai/no-such-model"), usage) is None  # unknown, never zero


def settings_for(model: str):
    from oab_bench.judge.settings import JudgeSettings

    return JudgeSettings(judge_model=model)


def test_anthropic_prompts_mark_everything_but_the_answer_for_caching():
    row = made_up_row()
    plain = build_messages(row, "Minha resposta.", "structured")
    marked = build_messages(row, "Minha resposta.", "structured", cache_prefix=True)
    blocks = marked[1]["content"]
    assert blocks[0]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in blocks[1]
    assert "".join(b["text"] for b in blocks) == plain[1]["content"] and marked[0] == plain[0]
    assert "Minha resposta." in blocks[1]["text"] and "Minha resposta." not in blocks[0]["text"]
    assert marks_cache("anthropic/claude-sonnet-4-5") and not marks_cache("openai/gpt-5.2")


def test_run_estimate_prices_the_judging_before_generating(stub, judge_key, tmp_path, built_dataset):
    server = stub()
    args = ["run", "--model", "openai/candidate", "--api-base", server.url, "--dataset", built_dataset]
    args += ["--tasks", "oab_bench:41", "--output-dir", tmp_path / "run", "--judge-model", "openai/gpt-5.2"]
    args += [
        "--judge-api-base",
        server.url,
        "--judge-cache",
        tmp_path / "cache",
        "--estimate",
        "--format",
        "json",
    ]
    proc = oab(*args, env=clean_env(OAB_JUDGE_API_KEY=judge_key))
    assert proc.returncode == 0, proc.stderr
    est = json.loads(proc.stdout)
    assert server.count == 0 and est["models"][0]["model"] == "openai/candidate"
    assert est["total"]["calls"] > 0 and est["total"]["cost_usd"] > est["total"]["cost_usd_batch"] > 0


def test_a_price_given_alone_leaves_the_others_to_the_cost_map():
    """--price-input alone made output free (and cached input full price); now each price not
    given is the cost map's."""
    from oab_bench.judge.grading.client import prices
    from oab_bench.judge.settings import JudgeSettings

    known = map_prices("openai/gpt-5.2")
    only_input = prices(JudgeSettings(judge_model="openai/gpt-5.2", price_input=10))
    assert (only_input.input, only_input.output) == (pytest.approx(10e-6), known.output)
    only_output = prices(JudgeSettings(judge_model="openai/gpt-5.2", price_output=10))
    assert only_output.input == known.input and only_output.cached_input == known.cached_input
    free_cache = prices(JudgeSettings(judge_model="openai/gpt-5.2", price_cached_input=0))
    assert free_cache.cached_input == 0 and free_cache.input == known.input
    unknown = prices(JudgeSettings(judge_model="openai/judge-x", price_input=1))
    assert unknown.output is None  # unknown stays unknown: the cap then asks for both prices


def test_a_jurys_members_share_one_cap_each_reserved_at_its_own_price(stub, judge_key):
    import asyncio

    from oab_bench.judge.grading.jury import Jury

    server = stub()
    jury = Jury(
        settings(
            server,
            judge_model="openai/dear price_input=100 price_output=100,openai/cheap price_input=1 price_output=1",
            max_cost_usd=1000.0,
        )
    )
    by_name = {m.settings.judge_model: m for m in jury.members}  # members in canonical (sorted) order
    dear, cheap = by_name["openai/dear"], by_name["openai/cheap"]
    assert dear.budget is cheap.budget
    row, answer = _pairs(2)[1]

    async def reserve():
        return [await m.budget.reserve(row, answer, m) for m in (dear, cheap)]

    got_dear, got_cheap = asyncio.run(reserve())
    assert got_dear == pytest.approx(100 * got_cheap)
    assert dear.budget.in_flight == pytest.approx(got_dear + got_cheap)


@pytest.mark.slow
def test_litellms_bundled_cost_map_whatever_is_imported_first(tmp_path):
    """judge/batch imported litellm before judge/client asked for the bundled map: every command
    then fetched prices from GitHub (offline: three warnings; online: prices of the day)."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    code = (
        "import oab_bench.judge.grading.batch.submit\n"
        "from litellm.litellm_core_utils.get_model_cost_map import get_model_cost_map_source_info as f\n"
        "print(f()['source'], f()['is_env_forced'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.split() == ["local", "True"], out.stderr[-2000:]
    assert "fetch" not in out.stderr


def test_the_budget_expects_completion_tokens_per_question_kind():
    """The budget priced every judgment at the mean of all cached ones: a peça's (long) reply was
    expected as short as a questão's. The kind is told from the cached judgments' ids."""
    from types import SimpleNamespace

    from oab_bench.judge.grading.grader import completion_history
    from oab_bench.judge.records import Judgment

    def judged(qid: str, tokens: int) -> Judgment:
        return made_up_judgment(
            question_id=qid,
            prompt_version="p",
            score=0.0,
            max_score=5.0 if "peca" in qid else 1.25,
            usage=Usage(prompt_tokens=10, completion_tokens=tokens),
        )

    store = SimpleNamespace(
        judgments=lambda: [
            judged("90_direito_civil_peca_praticoprofissional", 3000),
            judged("90_direito_civil_questao_1", 500),
            judged("90_direito_civil_questao_2", 700),
        ]
    )
    judge = SimpleNamespace(
        store=store, identity=lambda: dict(judge_model="j", prompt_version="p", mode="structured")
    )
    means, _ = completion_history(judge)
    assert means == {"peca": 3000, "questao": 600}


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


def test_an_estimate_with_nothing_left_to_judge_costs_zero_even_unpriced(stub, judge_key, tmp_path):
    server = stub()
    store = JudgmentStore(tmp_path)
    unpriced = settings(server)  # openai/judge-test: no price known
    run_judge_all(Judge(unpriced, store), _pairs(2), progress=False)
    est = estimate(Judge(unpriced, JudgmentStore(tmp_path)), _pairs(2))
    assert est.total.calls == 0 and est.total.cost_usd == 0.0 and est.total.cost_usd_batch == 0.0


def test_an_unpriced_estimate_says_so_in_words_and_names_the_price_flags(stub, judge_key, capsys):
    """It printed "unknown" and `{'peca': 2500, 'questao': 1000}`, naming no way to give a price."""
    from oab_bench.judge.grading.bill import print_estimate

    print_estimate(estimate(Judge(settings(stub())), _pairs(2)))
    text = capsys.readouterr().out
    assert "defaults of 2500 (peça) and 1000 (questão) tokens" in text and "{" not in text
    assert "cost unknown: litellm's cost map has no price for the judge openai/judge-test" in text
    assert "--price-input and --price-output" in text and "--judge-price-input" in text
