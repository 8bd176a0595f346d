"""A judge's label in every table and report: its model, its prompt and mode, and the settings that
change how it grades (those a judgment records in `settings`) where they differ from the defaults.

One model judging at two reasoning efforts (or temperatures, reply budgets, answer limits) is two
judges: `openai/x [oab-pt-v1, structured]` and `openai/x [oab-pt-v1, structured, reasoning_effort=high]`,
two tables, never one merged silently. A jury's members are named with their own settings, as a
jury member is written (`openai/a reasoning_effort=low`). At the defaults the label is what it was
before settings counted, so existing files, exports and caches keep their judge; a record that names
no settings (upstream's, or older than the field) is read as before, as the defaults' judge.
"""

from __future__ import annotations

from oab_bench.judge.jury_name import canonical_judge
from oab_bench.judge.settings import JudgeSettings

DEFAULTS = JudgeSettings(judge_model="-").recorded()  # what a record's `settings` names, at its defaults


def our_prompt(record: dict) -> str | None:
    """Our prompt version and mode: the same judge model with another prompt is another judge."""
    prompt, mode = record.get("prompt_version"), record.get("mode")
    return f"{prompt}, {mode}" if prompt and mode else prompt


def judge_label(model: str, prompt: str | None, settings: object = None) -> str:
    """`model [prompt, setting=value...]`; a ValueError (saying which field) for settings of a wrong shape."""
    model = canonical_judge(model)  # a jury named `c, a` in an older record is the jury `a, c`
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
    out = []
    for key, default in DEFAULTS.items():
        if key not in settings:  # not recorded: as the defaults
            continue
        value = settings[key]
        if isinstance(value, bool) or not isinstance(value, str | int | float | None):
            raise ValueError(f"{where}.{key}: {value!r} is not a setting's value")
        if value != default:
            out.append(f"{key}={_text(value)}")
    return out


def _text(value: str | int | float | None) -> str:
    """One spelling per value: 1, 1.0 and 1.00 are `1`; None is `none`, as the flags take it."""
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def member_label(record: dict, member: str) -> str:
    """A jury member's own label, from the jury's record: the member with its recorded settings, so
    one model sitting at two efforts in two juries is two judges under `leaderboard --members`."""
    settings = record.get("settings")
    members = settings.get("members") if isinstance(settings, dict) else None
    own = next((m for m in members or [] if isinstance(m, dict) and m.get("judge_model") == member), None)
    return judge_label(member, our_prompt(record), own)
