"""Errors name their cause: the file (and line) of a decoding error, the separator or header hint
of a CSV, the flag of a path, "not a number" for NaN, the subcommand's own usage for a wrong flag."""

from __future__ import annotations

import pytest

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.validity.sources import load_source
from oab_bench.scripts.cli import main
from tests import synthetic as syn
from tests.helpers import source_a

HEADER = "exam_id,question_id,item_id,score,grader"
ROW = "90_direito_civil,90_direito_civil_questao_1,A1,0.5"


def _csv(tmp_path, data: bytes):
    path = tmp_path / "h.csv"
    path.write_bytes(data)
    return path


# --- a human CSV ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "line", "hint"),
    [("latin-1", 3, "Latin-1"), ("cp1252", 3, "Windows-1252"), ("utf-16", 1, "UTF-16")],
)
def test_a_csv_in_another_encoding_names_file_line_and_encoding(tmp_path, capsys, encoding, line, hint):
    """Was `'utf-8' codec can't decode byte 0xe3 in position 94`, naming no file."""
    text = f"{HEADER}\n{ROW},ana\n{ROW.replace('A1', 'B1')},João\n"
    path = _csv(tmp_path, text.encode(encoding))
    with pytest.raises(
        SourceError, match=rf"h\.csv:{line}: not UTF-8 \(byte \d+: .*{hint}.*save it as CSV UTF-8"
    ):
        load_source("H", path)
    assert main(["agreement", str(path), str(source_a(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert f"oab-bench agreement: error: {path}:{line}: not UTF-8" in err and "codec" not in err


def test_a_csv_with_a_bom_reads(tmp_path):
    path = _csv(tmp_path, f"{HEADER}\n{ROW},João\n".encode("utf-8-sig"))
    assert load_source("H", path).graders == {}  # one grader, read


@pytest.mark.parametrize(
    ("header", "hint"),
    [
        (HEADER.replace(",", ";"), "separated by semicolons; separate the columns with commas"),
        (HEADER.replace(",", "\t"), "separated by tabs"),
        (HEADER.replace(",", ", "), "have blanks or capitals"),
        (" " + HEADER.replace("question_id", "Question_ID"), "have blanks or capitals"),
    ],
    ids=["semicolons", "tabs", "blanks", "capitals"],
)
def test_a_csv_header_says_what_is_wrong_with_it(tmp_path, header, hint):
    """Was "missing columns [...]" alone: every column missing, when the file used another
    separator or wrote the names with blanks around them."""
    path = _csv(tmp_path, f"{header}\n".encode())
    with pytest.raises(SourceError, match=r"h\.csv:1: missing columns .*" + hint):
        load_source("H", path)


def test_a_csv_line_number_counts_blank_lines(tmp_path):
    """A blank line is skipped by the reader, not by the line numbers: the bad row is line 4."""
    path = _csv(tmp_path, f"{HEADER}\n{ROW},ana\n\n{ROW},\n".encode())
    with pytest.raises(SourceError, match=r"h\.csv:4: field 'grader'"):
        load_source("H", path)


# --- an output path that is a folder -------------------------------------------------------------


@pytest.mark.parametrize("where", ["empty folder", "folder holding the inputs"])
@pytest.mark.parametrize("command", ["agreement", "report", "leaderboard", "leaderboard --plot"])
def test_an_output_folder_is_said_to_be_one(tmp_path, capsys, command, where):
    """`agreement --output DIR` claimed it would overwrite an input (a folder holding one) or died
    on `[Errno 21] Is a directory: '.DIR.x1y2'`; it is a folder, not a file to write."""
    a = source_a(tmp_path)
    folder = tmp_path if where == "folder holding the inputs" else tmp_path / "out"
    folder.mkdir(exist_ok=True)
    name, *flag = command.split()
    flag = flag or ["--output"]
    argv = {"agreement": [name, str(a), str(a)], "report": [name, str(a)], "leaderboard": [name, str(a)]}[
        name
    ]
    assert main([*argv, *flag, str(folder), "--resamples", "50"]) == 2
    err = capsys.readouterr().err
    assert f"oab-bench {name}: error: {flag[0]} {folder}: is a folder; give a file path" in err, err
    assert "overwrite" not in err and "Errno" not in err


def test_judge_output_folder_is_said_to_be_one(tmp_path, capsys):
    assert (
        main(["judge", "--dataset", "d", "--answers", "a", "--output", str(tmp_path), "--judge-model", "m"])
        == 2
    )
    assert f"--output {tmp_path}: is a folder; give a file path" in capsys.readouterr().err


# --- build --source hf:/folder -------------------------------------------------------------------


def test_a_hub_folder_without_readme_is_said_so(tmp_path, capsys):
    """Was a raw `[Errno 2] No such file or directory: '.../README.md'`."""
    empty = tmp_path / "empty"
    empty.mkdir()
    upstream = syn.write_source(tmp_path / "upstream", syn.exam())  # upstream's JSONL files
    file = tmp_path / "file.txt"
    file.write_text("x")
    cases = [
        (
            empty,
            "no README.md: not upstream's Hub layout (a README.md declaring the configs questions and guidelines",
        ),
        (upstream, "; upstream's JSONL files are read without hf: (--source FOLDER)"),
        (file, "is a file, not a folder"),
    ]
    for folder, said in cases:
        assert main(["build", "--source", f"hf:{folder}", "--output", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert f"oab-bench build: error: hf:{folder}: " in err and said in err and "Errno" not in err, err
    assert not (tmp_path / "out").exists()


# --- NaN and infinity ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "env", "said"),
    [
        (
            ["judge", "--max-cost-usd", "nan"],
            {},
            "--max-cost-usd (OAB_JUDGE_MAX_COST_USD): nan is not a number",
        ),
        (["judge"], {"OAB_JUDGE_MAX_COST_USD": "nan"}, "(OAB_JUDGE_MAX_COST_USD): nan is not a number"),
        (
            ["judge", "--max-cost-usd", "inf"],
            {},
            "--max-cost-usd (OAB_JUDGE_MAX_COST_USD): inf is not finite",
        ),
        (["judge", "--batch-wait", "inf"], {}, "--batch-wait (OAB_JUDGE_BATCH_WAIT): inf is not finite"),
        (["judge", "--temperature", "nan"], {}, "--temperature (OAB_JUDGE_TEMPERATURE): nan is not a number"),
        (
            ["probe", "--max-cost-usd", "nan"],
            {},
            "--max-cost-usd (OAB_JUDGE_MAX_COST_USD): nan is not a number",
        ),
    ],
    ids=["judge-flag", "judge-env", "judge-inf", "batch-wait-inf", "temperature", "probe"],
)
def test_nan_is_not_a_number(tmp_path, capsys, monkeypatch, argv, env, said):
    """`--max-cost-usd nan` was "Input should be greater than or equal to 0" (NaN compares false)."""
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    more = {
        "judge": ["--dataset", "d", "--answers", "a", "--output", str(tmp_path / "o.jsonl")],
        "probe": ["--dataset", "d", "--output", str(tmp_path / "p")],
    }[argv[0]]
    assert main([*argv, *more, "--judge-model", "openai/j"]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--temperature", "--candidate-timeout", "--candidate-retry-sleep"])
def test_run_nan_is_not_a_number(capsys, flag):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--model", "openai/m", "--output-dir", "o", flag, "nan"])
    assert stop.value.code == 2 and f"argument {flag}: 'nan' is not a number" in capsys.readouterr().err


# --- a wrong flag: the subcommand's own usage ----------------------------------------------------

REQUIRED = {
    "build": ["--source", "s", "--output", "o"],
    "push": ["--dataset", "d", "--repo-id", "o/n"],
    "judge": ["--dataset", "d", "--answers", "a", "--output", "o"],
    "probe": ["--dataset", "d"],
    "run": ["--model", "openai/m", "--output-dir", "o"],
    "leaderboard": ["a.jsonl"],
    "compare": ["m1", "m2", "a.jsonl"],
    "report": ["a.jsonl", "--output", "r.html"],
    "agreement": ["a.jsonl", "b.jsonl"],
}


@pytest.mark.parametrize("command", REQUIRED)
def test_a_wrong_flag_prints_the_subcommands_usage(capsys, command):
    """Was the top-level usage (`oab-bench [-h] {build,push,...}`), which lists no flag of the command."""
    with pytest.raises(SystemExit) as stop:
        main([command, *REQUIRED[command], "--no-such-flag", "1"])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err.startswith(f"usage: oab-bench {command} ") and "{build,push" not in err, err
    assert f"oab-bench {command}: error: unrecognized arguments: --no-such-flag 1" in err


# --- a cache path that is a file -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "env", "said"),
    [
        (
            "--answer-cache",
            "",
            "--answer-cache (OAB_ANSWER_CACHE): {file}: is a file, not a folder (a cache is a folder",
        ),
        ("", "OAB_ANSWER_CACHE", "--answer-cache (OAB_ANSWER_CACHE): {file}/sub: {file} is a file"),
        ("--judge-cache", "", "--judge-cache (OAB_JUDGE_CACHE): {file}: is a file, not a folder"),
    ],
    ids=["answer-cache-flag", "answer-cache-env", "judge-cache-flag"],
)
@pytest.mark.parametrize("estimate", [False, True])
def test_a_cache_that_is_a_file_names_its_flag(tmp_path, capsys, monkeypatch, flag, env, said, estimate):
    """`--answer-cache FILE` was `[Errno 17] File exists` (in lighteval's process, after the checks);
    both caches are now checked before anything, `--estimate` included."""
    file = tmp_path / "afile"
    file.write_text("x")
    dataset = syn.write_source(tmp_path / "src", syn.exam())
    argv = ["run", "--model", "openai/m", "--output-dir", str(tmp_path / "out"), "--dataset", str(dataset)]
    if flag:
        argv += [flag, str(file)]
    else:
        monkeypatch.setenv(env, str(file / "sub"))
    assert main([*argv, "--no-check-call", *(["--estimate"] if estimate else [])]) == 2
    err = capsys.readouterr().err
    assert said.format(file=file) in err and "Errno" not in err, err
    assert not (tmp_path / "out").exists()
