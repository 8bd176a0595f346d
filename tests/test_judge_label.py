"""A judge is its model, prompt and the settings that change how it grades (judge/judge_label.py): one
model at two reasoning efforts is two judges in every reader, whatever the order of the files; at
the defaults, or in a record that names no settings, the label is what it always was."""

from __future__ import annotations

import json

import pytest

from oab_bench.judge.judge_label import judge_label
from oab_bench.scripts.cli import main
from tests.helpers import exam_records
from tests.helpers import write_jsonl as write

EXAM = "39_direito_penal"
JUDGE = "openai/j"
PLAIN = f"{JUDGE} [oab-pt-v1, structured]"


def judged(path, effort, *models):
    """`models` (name, peça, questão) graded by JUDGE at this reasoning effort."""
    settings = {"max_tokens": 16000, "temperature": 0.0, "reasoning_effort": effort}
    rows = [r for m in models for r in exam_records(*m[:1], JUDGE, EXAM, *m[1:])]
    return write(path, [{**r, "settings": settings} for r in rows])


def run(capsys, *args):
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_labels_name_only_what_differs_from_the_defaults():
    prompt = "oab-pt-v1, structured"
    assert judge_label(JUDGE, prompt) == judge_label(JUDGE, prompt, {}) == PLAIN  # an older record: as before
    defaults = {"max_tokens": 16000, "temperature": 0, "reasoning_effort": None, "long_answers": "too_long"}
    assert judge_label(JUDGE, prompt, defaults) == PLAIN  # 0 and 0.0 are one temperature
    changed = {"temperature": None, "reasoning_effort": "high", "max_tokens": 8000.0}
    assert (
        judge_label(JUDGE, prompt, changed)
        == f"{JUDGE} [{prompt}, max_tokens=8000, temperature=none, reasoning_effort=high]"
    )
    members = [
        {"judge_model": "openai/b", "temperature": 0.5},
        {"judge_model": "openai/a", "reasoning_effort": "low", "max_tokens": 16000},
        {"judge_model": "openai/c"},
    ]
    jury = "jury-median(openai/a, openai/b, openai/c)"
    want = f"{jury} [{prompt}, openai/a reasoning_effort=low, openai/b temperature=0.5]"
    for order in (members, members[::-1]):  # its members in any order: one jury
        assert (
            judge_label(
                jury,
                prompt,
                {"jury_combine": "median", "members": order},
            )
            == want
        )
    assert judge_label(jury, prompt, {"members": [{"judge_model": "openai/a"}]}) == f"{jury} [{prompt}]"


@pytest.mark.parametrize("reverse", [False, True], ids=["low first", "high first"])
def test_one_model_at_two_efforts_is_two_judges_in_every_reader(tmp_path, capsys, reverse):
    low = judged(tmp_path / "low.jsonl", "low", ("m-a", 4.0, 1.0), ("m-b", 3.0, 0.5))
    high = judged(tmp_path / "high.jsonl", "high", ("m-a", 4.0, 1.0), ("m-c", 2.0, 0.5), ("m-b", 1.0, 0.25))
    files = [high, low] if reverse else [low, high]
    rc, out, err = run(capsys, "leaderboard", *files, "--format", "json", "--resamples", "50")
    assert rc == 0, err  # m-b scored twice, by two judges: no clash, no pick
    tables = {}
    for r in json.loads(out)["rows"]:
        tables.setdefault(r["judge"], {})[r["model"]] = r["mean_exam_score"]
    assert tables == {
        f"{JUDGE} [oab-pt-v1, structured, reasoning_effort=high]": {"m-a": 8.0, "m-c": 4.0, "m-b": 2.0},
        f"{JUDGE} [oab-pt-v1, structured, reasoning_effort=low]": {"m-a": 8.0, "m-b": 5.0},
    }
    rc, markdown, _ = run(capsys, "leaderboard", *files, "--resamples", "50")
    rc_again, again, _ = run(capsys, "leaderboard", *files[::-1], "--resamples", "50")
    assert rc == rc_again == 0 and markdown == again  # the same tables whatever the order of the files
    rc, out, err = run(capsys, "agreement", *files, "--format", "json", "--resamples", "50")
    assert rc == 0, err
    sides = {s["judge"] for s in json.loads(out)["sources"]}
    assert sides == set(tables)
    both = tmp_path / "both.jsonl"  # one file holding both: two judges, not one source
    both.write_text(low.read_text() + high.read_text())
    rc, _, err = run(capsys, "agreement", both, low, "--resamples", "50")
    assert rc == 2 and "holds 2 judges" in err and "reasoning_effort=high" in err


@pytest.mark.parametrize(
    ("settings", "field"),
    [("high", "settings"), ({"reasoning_effort": ["high"]}, "settings.reasoning_effort"),
     ({"members": [{"temperature": 0.5}]}, "settings.members"),
     ({"max_tokens": "16000"}, "settings.max_tokens"),  # text for a number: never a setting's value
     ({"max_tokens": 8000.5}, "settings.max_tokens"), ({"long_answers": "cut"}, "settings.long_answers"),
     ({"members": [{"judge_model": "openai/a"}, {"judge_model": "openai/b", "temperature": "hot"}]},
      "settings.members.1.temperature")],
)  # fmt: skip
def test_settings_of_a_wrong_shape_name_file_line_and_field(tmp_path, capsys, settings, field):
    path = judged(tmp_path / "j.jsonl", None, ("m-a", 4.0, 1.0))
    lines = path.read_text().splitlines()
    lines[1] = json.dumps({**json.loads(lines[1]), "settings": settings})
    path.write_text("\n".join(lines) + "\n")
    rc, _, err = run(capsys, "leaderboard", path)
    assert rc == 2 and f"{path}:2: field '{field}'" in err, err


def test_compare_and_report_keep_the_two_efforts_apart(tmp_path, capsys):
    low = judged(tmp_path / "low.jsonl", "low", ("m-a", 4.0, 1.0), ("m-b", 3.0, 0.5))
    high = judged(tmp_path / "high.jsonl", "high", ("m-a", 4.0, 1.0), ("m-b", 1.0, 0.25))
    rc, out, err = run(capsys, "compare", "m-a", "m-b", low, high, "--resamples", "50")
    assert rc == 0, err
    lines = sorted(line for line in out.splitlines() if line.startswith("judge "))
    assert [line.split(":")[0] for line in lines] == [
        f"judge {JUDGE} [oab-pt-v1, structured, reasoning_effort=high]",
        f"judge {JUDGE} [oab-pt-v1, structured, reasoning_effort=low]",
    ]
    assert "+6.00" in lines[0] and "+3.00" in lines[1]  # each judge's own difference, never pooled
    page = tmp_path / "r.html"
    assert run(capsys, "report", high, low, "--output", page, "--resamples", "50")[0] == 0
    text = page.read_text()
    assert "reasoning_effort=high" in text and "reasoning_effort=low" in text
