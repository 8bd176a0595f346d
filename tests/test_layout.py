"""The shape of the package: one namespace, one-way imports, a docstring per stage, commands beside code."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

# repository folder -> its name in the namespace (pyproject.toml's package-dir)
MAPPED = {
    "oab_bench": "oab_bench",
    "dataset_builder": "oab_bench.dataset_builder",
    "judge": "oab_bench.judge",
}
MAPPED["scripts"] = "oab_bench.scripts"

# Who may import whom: a module may import its own layer or any layer listed before it.
LAYERS = [
    "oab_bench",  # shared mechanisms: file names, folder guard, signals, keyed store
    "oab_bench.dataset_builder",
    "oab_bench.judge",  # the core: records, scoring, aggregation, settings
    "oab_bench.judge.grading",
    "oab_bench.judge.leaderboard",
    "oab_bench.judge.validity",
    "oab_bench.judge.audit",
    "oab_bench.judge.panel",  # --panel: judged through grading by judge and run; read by nobody below it
    "oab_bench.judge.sweep",  # which judge: composes probe, agreement, the panel's answers, the report's page
    "oab_bench.judge.sharing",  # export reads what the leaderboard and the report read
    "oab_bench.judge.generation",
    "oab_bench_task",
    "oab_bench.scripts",
    "oab_bench.__main__",  # the entry point: `python -m oab_bench`
]


def modules() -> dict[str, Path]:
    found = {}
    for folder, name in MAPPED.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([name, *parts])] = path
    found["oab_bench_task"] = REPO / "oab_bench_task.py"
    return found


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """Every module of ours `path` imports, at the top or inside a function (both make a circle)."""
    got = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    typing_only = {  # `if TYPE_CHECKING:` imports are types, not imports at run time
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for stmt in block.body
        for n in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            got |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                ).strip(".")
            got.add(base)
            got |= {f"{base}.{a.name}" for a in node.names}
    return {m for m in got if m in known and m != name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(path, name, set(mods)) for name, path in mods.items()}


def layer(name: str) -> int:
    best = max((p for p in LAYERS if name == p or name.startswith(p + ".")), key=len)
    return LAYERS.index(best)


def test_no_import_circles():
    g = graph()
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(g[node]):
            if nxt.startswith(node + ".") or node.startswith(nxt + "."):
                continue  # a package and its own modules
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(g):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_imports_flow_one_way():
    wrong = [
        f"{a} imports {b}"
        for a, deps in graph().items()
        for b in deps
        if layer(b) > layer(a) and not b.startswith(a + ".")
    ]
    assert not wrong, "\n".join(sorted(wrong))


def test_no_private_name_crosses_a_package():
    wrong = []
    for name, path in modules().items():
        package = name.rpartition(".")[0] if path.name != "__init__.py" else name
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("oab_bench"):
                other = node.module.rpartition(".")[0]
                for alias in node.names:
                    if alias.name.startswith("_") and other != package and node.module != package:
                        wrong.append(f"{name}: from {node.module} import {alias.name}")
    assert not wrong, "\n".join(wrong)


def test_every_package_says_what_it_holds():
    for _name, path in modules().items():
        if path.name == "__init__.py":
            doc = ast.get_docstring(ast.parse(path.read_text()))
            assert doc and len(doc) > 40, f"{path.relative_to(REPO)}: say what the package holds"


def test_no_two_modules_share_a_name():
    """A newcomer tells modules apart by name: no `command.py` twice, no `repeats.py` in two places."""
    seen: dict[str, list[str]] = {}
    for name, path in modules().items():
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(name)
    assert not {k: v for k, v in seen.items() if len(v) > 1}


def test_every_subcommand_is_one_module_in_scripts():
    from oab_bench.scripts.cli import COMMANDS

    for name in COMMANDS:
        path = REPO / "scripts" / f"cmd_{name.replace('-', '_')}.py"
        assert path.exists(), path
        source = path.read_text()
        assert "def add_arguments(" in source and "def main(" in source and "HELP = " in source


def test_no_module_reads_the_old_top_level_names():
    """Installed, only `oab_bench` and `oab_bench_task` exist: `import judge` would be another copy."""
    wrong = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                wrong += [
                    f"{name}: {n}"
                    for n in names
                    if n.split(".")[0] in ("judge", "scripts", "dataset_builder")
                ]
    assert not wrong, "\n".join(wrong)


def test_nothing_points_outside_the_repository():
    """A clone has no ../shared/notes: code, config and docs say what they need in their own words."""
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    wrong = []
    for rel in tracked.split():
        if rel.startswith("tests/") or not rel.endswith((".py", ".md", ".toml", ".yaml", "Makefile")):
            continue
        text = (REPO / rel).read_text(errors="replace")
        if "shared/notes" in text:
            wrong.append(rel)
    assert not wrong, wrong


def test_the_cli_starts_without_heavy_imports():
    """`-h` imports none of them; `oab-bench judge` imports scipy (~0.7 s) only for a jury's lines."""
    heavy = ["litellm", "lighteval", "datasets", "sklearn", "scipy", "matplotlib", "jinja2", "torch"]
    code = "import sys; from oab_bench.scripts.cli import build_parser; build_parser(); print(' '.join(sorted(sys.modules)))"
    code += "; import oab_bench.judge.validity.jury_report; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    parser_modules, scipy_for_jury_report = out.stdout.splitlines()
    assert not [h for h in heavy if h in parser_modules.split()] and scipy_for_jury_report == "False"


@pytest.mark.parametrize("module", ["oab_bench.scripts.cli", "oab_bench"])
def test_python_dash_m_runs_the_cli(module):
    out = subprocess.run([sys.executable, "-m", module, "-h"], capture_output=True, text=True, cwd="/")
    assert out.returncode == 0 and "leaderboard" in out.stdout


def test_every_package_is_in_the_wheel():
    """pyproject.toml lists the packages by hand (the folders are mapped into the namespace): a new
    subpackage left out would work in the checkout and be missing once installed."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {name for name, path in modules().items() if path.name == "__init__.py"}
    assert packages == listed, f"missing: {sorted(packages - listed)}; extra: {sorted(listed - packages)}"


def test_the_longest_modules_named_to_run_first_exist():
    """A renamed module would silently lose its early start (tests/conftest.py LONGEST_FIRST)."""
    from tests.conftest import LONGEST_FIRST

    assert [n for n in LONGEST_FIRST if not (REPO / "tests" / n).is_file()] == []
