"""The docs stay short where they must and true to the tree: the README's length, a module map with
every module, and no file, page or link that does not exist."""

from __future__ import annotations

import re
import subprocess

from tests.helpers import REPO

README_MAX_LINES = 250
PAGES = sorted((REPO / "docs").glob("*.md"))


def tracked() -> list[str]:
    cmd = ["git", "ls-files", "--cached", "--others", "--exclude-standard"]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [p for p in out.split() if (REPO / p).exists()]  # a deletion not yet committed is gone


def docs() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in [REPO / "README.md", *PAGES]}


def test_the_readme_is_short():
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md: {lines} lines; move the detail to docs/"


def test_the_module_map_names_every_module():
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = [
        p
        for p in tracked()
        if p.endswith((".py", ".sh", ".yaml"))
        and not p.startswith(("tests/", ".ci/"))
        and p != "pyproject.toml"
    ]
    missing = [p for p in modules if f"`{p}`" not in text]
    assert not missing, f"docs/architecture.md: add a line for {missing}"


def test_every_file_the_docs_name_exists():
    """A backquoted `path/to/file.py` (or a bare module name, `file.py`) in the README or docs/ is in
    the tree. Bare names of other kinds (`model_config.yaml`) are files a run writes, not ours."""
    files = tracked()
    names = {p.rsplit("/", 1)[-1] for p in files}
    wrong = []
    for page, text in docs().items():
        for path in re.findall(r"`([\w./-]+\.(?:py|sh|yaml|toml|j2))`", text):
            if path in files or ("/" not in path and (path in names or not path.endswith(".py"))):
                continue
            wrong.append(f"{page}: {path}")
    assert not wrong, wrong


def test_every_link_between_pages_resolves():
    wrong = []
    for path in [REPO / "README.md", *PAGES]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            if not (path.parent / target).exists():
                wrong.append(f"{path.relative_to(REPO)}: {target}")
    assert not wrong, wrong


def test_code_and_config_point_only_at_pages_that_exist():
    wrong = []
    for rel in tracked():
        if rel.startswith("tests/") or not rel.endswith((".py", ".toml", ".yaml", ".sh", "Makefile")):
            continue
        for page in re.findall(r"\bdocs/[\w-]+\.md", (REPO / rel).read_text(errors="replace")):
            if not (REPO / page).is_file():
                wrong.append(f"{rel}: {page}")
    assert not wrong, wrong


def test_every_flag_the_docs_give_an_oab_bench_command_exists():
    """A command in the README or docs/ (`oab-bench SUB ... --flag`) names only flags SUB takes
    (what a quoted argument holds, such as --vllm-args "...", is another program's)."""
    from oab_bench.scripts.cli import build_parser

    commands = build_parser().commands
    wrong = []
    for page, text in docs().items():
        for sub, rest in re.findall(r"oab-bench ([a-z-]+)((?: [^\n`|]*(?:\\\n)?)*)", text):
            if sub in commands:
                takes = set(re.findall(r"--[a-z][\w-]*", commands[sub].format_help()))
                given = re.findall(r"(?<![\w-])--[a-z][\w-]*", re.sub(r'"[^"]*"', "", rest))
                wrong += [f"{page}: oab-bench {sub} {flag}" for flag in given if flag not in takes]
    assert not wrong, wrong
