"""A judge on one line: `MODEL[,SETTING=VALUE...]` or `jury[-mean|-min]:JUDGE|JUDGE...`."""

from __future__ import annotations

import types
from collections.abc import Mapping

from oab_bench.judge.settings import JudgeSettings, env_var, settings_from, values_from_env

ALIASES = {"effort": "reasoning_effort"}
NOT_IN_A_SPEC = {"judge_model", "jury_combine", "max_cost_usd", "repeats"}
JURY_PREFIXES = {"jury:": "median", "jury-median:": "median", "jury-mean:": "mean", "jury-min:": "min"}


def _pairs(part: str) -> tuple[str, dict[str, str]]:
    """`MODEL,key=value,...` -> the model and its settings as written (field names, raw values)."""
    model, *pairs = [p.strip() for p in part.split(",")]
    if not model or "=" in model or " " in model:
        raise ValueError(f"{part!r} does not start with a model name")
    own: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = (x.strip() for x in pair.partition("="))
        field = ALIASES.get(key, key.replace("-", "_"))
        if not sep or not value or " " in value:
            raise ValueError(f"{pair!r} is not SETTING=VALUE (no blanks in the value)")
        if field not in JudgeSettings.model_fields or field in NOT_IN_A_SPEC:
            raise ValueError(
                f"{key!r} is not a judge's own setting (any of `oab-bench judge`'s settings but "
                f"{', '.join(sorted(NOT_IN_A_SPEC))})"
            )
        if field in own:
            raise ValueError(f"{key!r} given twice")
        own[field] = value
    return model, own


def parse_spec(spec: str, env: Mapping[str, str] | None = None) -> JudgeSettings:
    """One judge's settings; a bad spec is a ValueError quoting it."""
    text = spec.strip()
    how = next((h for p, h in JURY_PREFIXES.items() if text.startswith(p)), None)
    try:
        if how is None:
            model, own = _pairs(text)
            converted = {}
            for key, value in own.items():  # converted as the flags convert them ("none": send none)
                try:
                    converted |= values_from_env({env_var(key): value})
                except ValueError as e:
                    raise ValueError(f"{key}={value}: {str(e).split(': ', 1)[-1]}") from None
            return settings_from(types.SimpleNamespace(judge_model=[model], **converted), env or {})
        members = [_pairs(m) for m in text.split(":", 1)[1].split("|") if m.strip()]
        if len(members) < 2:
            raise ValueError("a jury needs two members or more, separated by |")
        written = ",".join(" ".join([model, *(f"{k}={v}" for k, v in own.items())]) for model, own in members)
        return settings_from(types.SimpleNamespace(judge_model=[written], jury_combine=how), env or {})
    except ValueError as e:
        raise ValueError(str(e) if str(e).startswith("judge ") else f"judge {spec!r}: {e}") from None
