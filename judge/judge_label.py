"""A judge's label in every table and report: model (a jury: its name), prompt and mode, and the
recorded settings off their defaults (`openai/x [oab-pt-v1, structured, reasoning_effort=high]`)."""

from __future__ import annotations

import functools

from pydantic import ValidationError

from oab_bench.judge.settings import JudgeSettings

DEFAULTS = JudgeSettings(judge_model="-").recorded()  # what a record's `settings` names, at its defaults


def jury_name(names: list[str], how: str) -> str:
    """A jury's name: its combining rule and its members in sorted order (`a,b` and `b,a` are one jury)."""
    return f"jury-{how}({', '.join(sorted(names))})"


def our_prompt(record: dict) -> str | None:
    """Our prompt version and mode: the same judge model with another prompt is another judge."""
    prompt, mode = record.get("prompt_version"), record.get("mode")
    return f"{prompt}, {mode}" if prompt and mode else prompt


def judge_label(model: str, prompt: str | None, settings: object = None) -> str:
    """`model [prompt, setting=value...]`; a ValueError (saying which field) for settings of a wrong shape."""
    parts = [p for p in (prompt, settings_tag(settings)) if p]
    return f"{model} [{', '.join(parts)}]" if parts else model


def settings_tag(settings: object) -> str | None:
    """The recorded settings that differ from the defaults (a jury's: per member), or None."""
    if settings is None:
        return None
    if not isinstance(settings, dict):
        raise ValueError(f"settings: {settings!r} is not an object")
    if "members" not in settings:
        return ", ".join(_changed(settings, "settings")) or None
    members = settings["members"]
    if not isinstance(members, list) or not all(
        isinstance(m, dict) and isinstance(m.get("judge_model"), str) for m in members
    ):
        raise ValueError("settings.members: not a list of objects each naming its judge_model")
    tags = [
        " ".join([m["judge_model"], *changed])
        for i, m in sorted(enumerate(members), key=lambda x: x[1]["judge_model"])
        if (changed := _changed(m, f"settings.members.{i}"))
    ]
    return ", ".join(tags) or None


def _changed(settings: dict, where: str) -> list[str]:
    """`key=value` for each recorded setting off its default (1 and 1.0 are `1`, None is `none`)."""
    out = []
    for key, default in DEFAULTS.items():
        if key not in settings:  # not recorded: as the defaults
            continue
        value = settings[key]
        if isinstance(value, bool) or not isinstance(value, str | int | float | None):
            raise ValueError(f"{where}.{key}: {value!r} is not a setting's value")
        try:
            value = _valid(key, value)
        except ValueError as e:
            raise ValueError(f"{where}.{key}: {value!r} is not a possible {key} ({e})") from None
        if value != default:
            out.append(f"{key}={_text(value)}")
    return out


def _text(value: str | int | float | None) -> str:
    if value is None or isinstance(value, str):
        return "none" if value is None else value
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@functools.lru_cache(maxsize=1024)
def _valid(key: str, value: str | int | float | None) -> str | int | float | None:
    """The value as the setting holds it (`temperature` 0 is 0.0); ValueError for an impossible one."""
    try:
        got = getattr(JudgeSettings(**{"judge_model": "-", key: value}), key)
    except ValidationError as e:
        raise ValueError(e.errors()[0]["msg"].lower()) from None
    if isinstance(value, str) != isinstance(got, str):
        raise ValueError(f"{'text' if isinstance(value, str) else 'a number'}, not the setting's type")
    return got


def member_label(record: dict, member: str) -> str:
    """A jury member's own label, with its recorded settings (`leaderboard --members`)."""
    return judge_label(member, our_prompt(record), _own(record, member))


def member_spec(record: dict, member: str) -> str:
    """The member as a jury member is written (`openai/a reasoning_effort=high`)."""
    own = _own(record, member)
    return " ".join([member, *(_changed(own, "settings.members") if own else [])])


def _own(record: dict, member: str) -> dict | None:
    """The member's recorded settings (None: at the defaults)."""
    settings = record.get("settings")
    settings_tag(settings)  # its shape checked as the jury's label checks it
    members = settings.get("members") if isinstance(settings, dict) else None
    if members is None:
        return None
    own = [m for m in members if m["judge_model"] == member]
    if len(own) != 1:  # a member graded under settings never recorded, or recorded twice
        raise ValueError(f"settings.members: {len(own)} entries for the member {member!r}, not one")
    return own[0]
