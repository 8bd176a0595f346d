"""Judge settings are defined once: every field is a flag of `judge` and `run` and an OAB_JUDGE_* variable."""

from __future__ import annotations

import warnings

import pytest

from oab_bench.judge.generation import lighteval_compat
from oab_bench.judge.generation.run_settings import RunSettings
from oab_bench.judge.settings import JudgeSettings, env_var, flag, settings_from
from oab_bench.scripts.cli import build_parser


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


def judge_settings(args) -> JudgeSettings:
    return RunSettings.from_args(args).judge


JUDGE_BASE = ("judge", "--dataset", "d", "--answers", "a.jsonl", "--output", "o.jsonl")
RUN_BASE = ("run", "--model", "openai/m", "--output-dir", "out")


@pytest.mark.parametrize("field", list(JudgeSettings.model_fields))
def test_every_setting_is_a_flag_of_both_commands_and_a_variable(field):
    judge_help = build_parser()._subparsers._group_actions[0].choices["judge"].format_help()
    run_help = build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    assert flag(field) in judge_help
    assert flag(field, "judge-") in run_help
    assert env_var(field) in judge_help


def test_flags_over_environment_over_defaults():
    env = {
        "OAB_JUDGE_MODEL": "openai/from-env",
        "OAB_JUDGE_MAX_TOKENS": "900",
        "OAB_JUDGE_PRICE_INPUT": "1.5",
    }
    s = settings_from(parse(*JUDGE_BASE, "--max-tokens", "700"), env)
    assert (s.judge_model, s.max_tokens, s.price_input, s.timeout) == ("openai/from-env", 700, 1.5, 600.0)
    r = judge_settings(parse(*RUN_BASE, "--judge-timeout", "30", "--judge-prompt", "oab"))
    assert r.timeout == 30.0 and r.judge_model == "openai/gpt-5.2"


def test_run_hands_every_setting_to_the_task(monkeypatch, tmp_path):
    monkeypatch.setenv("OAB_JUDGE_PRICE_OUTPUT", "9")  # stale value in the parent: the flag wins
    args = parse(
        *RUN_BASE,
        "--dataset",
        str(tmp_path),
        "--judge-model",
        "openai/j",
        "--judge-max-tokens",
        "1234",
        "--judge-price-output",
        "2.5",
        "--judge-temperature",
        "none",
    )
    got = judge_settings(args)  # the object the run hands the task, whole
    assert (got.max_tokens, got.price_output, got.temperature, got.api_base) == (1234, 2.5, None, None)


def test_conflicting_mode_and_prompt_are_rejected():
    with pytest.raises(ValueError, match="grades in legacy mode; mode structured conflicts"):
        JudgeSettings(judge_model="j", prompt="upstream-v1", mode="structured", upstream_prompts="p.jsonl")
    assert JudgeSettings(judge_model="j", prompt="upstream-v1", upstream_prompts="p.jsonl").mode == "legacy"
    with pytest.raises(ValueError, match="needs upstream_prompts"):
        JudgeSettings(judge_model="j", prompt="upstream-v2")


def test_bad_environment_value_names_the_variable():
    with pytest.raises(ValueError, match="OAB_JUDGE_CONCURRENCY='many'"):
        settings_from(None, {"OAB_JUDGE_MODEL": "j", "OAB_JUDGE_CONCURRENCY": "many"})
    with pytest.raises(ValueError, match="no judge model"):
        settings_from(None, {})


def test_compat_warns_on_another_lighteval(monkeypatch):
    monkeypatch.setattr(lighteval_compat.importlib.metadata, "version", lambda _: "0.14.0")
    with pytest.warns(UserWarning, match="tested with 0.13.0, found 0.14.0"):
        lighteval_compat.check_version()
    monkeypatch.setattr(lighteval_compat.importlib.metadata, "version", lambda _: "0.13.0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lighteval_compat.check_version()


@pytest.mark.parametrize("value", ["nan", "-5", "inf"])
@pytest.mark.parametrize("field", ["--price-input", "--price-output", "--price-cached-input"])
def test_prices_are_finite_and_not_negative(field, value):
    """A NaN or negative price switched the cost cap off (nothing is ever over it) and wrote NaN."""
    with pytest.raises(ValueError, match=rf"{field} \(OAB_JUDGE_"):
        settings_from(parse(*JUDGE_BASE, "--judge-model", "j", field, value), {})


def test_the_batch_discount_is_a_fraction():
    with pytest.raises(ValueError, match="--price-batch-discount"):
        settings_from(parse(*JUDGE_BASE, "--judge-model", "j", "--price-batch-discount", "7"), {})


def test_blank_values_are_unset_and_blanks_around_a_value_are_dropped():
    s = settings_from(None, {"OAB_JUDGE_MODEL": " j ", "OAB_JUDGE_API_BASE": " ", "OAB_JUDGE_BATCH": "True "})
    assert (s.judge_model, s.api_base, s.batch) == ("j", None, True)
    for blank in (" ", ",", " , "):
        with pytest.raises(ValueError, match="no judge model"):
            settings_from(None, {"OAB_JUDGE_MODEL": blank})
    with pytest.raises(ValueError, match=r"--api-base \(OAB_JUDGE_API_BASE\): 'localhost:8000/v1' is not"):
        settings_from(None, {"OAB_JUDGE_MODEL": "j", "OAB_JUDGE_API_BASE": "localhost:8000/v1"})


def test_a_rule_over_two_settings_names_both_as_the_user_gave_them():
    with pytest.raises(
        ValueError, match=r"^--batch \(OAB_JUDGE_BATCH\) and --max-cost-usd \(OAB_JUDGE_MAX_COST"
    ):
        settings_from(parse(*JUDGE_BASE, "--judge-model", "j", "--batch", "--max-cost-usd", "1"), {})
    with pytest.raises(ValueError, match=r"^--judge-batch \(OAB_JUDGE_BATCH\) and --judge-max-cost-usd"):
        judge_settings(parse(*RUN_BASE, "--judge-batch", "--judge-max-cost-usd", "1"))
