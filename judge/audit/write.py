"""`oab-bench report` and the report a run leaves in its folder: the inputs read, the view built,
the template filled with the plot inlined (one file that loads nothing), keys redacted."""

from __future__ import annotations

import base64
import sys
from collections.abc import Sequence
from pathlib import Path

import jinja2

from oab_bench.conventions import HTML_REPORT_FILE
from oab_bench.judge.audit.collect import read_inputs
from oab_bench.judge.audit.view import build_view
from oab_bench.judge.leaderboard.tables import cents
from oab_bench.judge.output import write_atomic
from oab_bench.judge.redact import redact


def environment() -> jinja2.Environment:
    """The templates' environment (the sweep's page uses it too): every text from the inputs is
    escaped, and |tojson keeps a blob from closing its <script> element."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("oab_bench.judge.audit", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "separators": (",", ":")}
    env.filters["cents"] = cents
    return env


def data_url(png: bytes) -> str:
    """A PNG inlined: the page stays one file (its policy allows data: images only)."""
    return "data:image/png;base64," + base64.b64encode(png).decode()


def report_html(
    inputs: list[Path],
    answers: list[Path],
    rows: dict,
    *,
    expected_ids: set[str] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    title: str = "OAB-Bench: audit report",
    sweeps: Sequence[dict] = (),
) -> str:
    """The report's text from the inputs and the question rows (texts, rubrics) by id; `sweeps`:
    judge sweeps' pages (judge/sweep/sweep_page.py) shown beside them."""
    from oab_bench.judge.leaderboard.plot import plot_png_bytes

    data = read_inputs(list(inputs), list(answers), rows)
    view, blobs, tables = build_view(data, rows, expected_ids=expected_ids, resamples=resamples, seed=seed)
    drawn = any(r.mean_exam_score is not None for t in tables for r in t.rows)
    html = (
        environment()
        .get_template("report.html.j2")
        .render(  # no clock: the same inputs, the same bytes
            title=title,
            inputs=sorted({str(p) for p in [*inputs, *answers]}),
            plot=data_url(plot_png_bytes(tables)) if drawn else None,
            blobs=blobs,
            sweeps=list(sweeps),
            **view,
        )
    )
    return redact(html)  # a key an error or an answer quoted never reaches the file


def write_report(
    inputs: list[Path], output: Path, *, answers=(), dataset=None, expect_dataset: bool = True, **options
) -> Path:
    """One self-contained HTML file. `dataset`: the questions' texts and rubrics; with
    `expect_dataset`, also the questions expected (coverage counts the unjudged ones)."""
    rows = {}
    if dataset:
        from oab_bench.judge.dataset import load_rows

        rows = {r.question_id: r for r in load_rows(dataset)}
    expected = set(rows) if dataset and expect_dataset else None
    html = report_html(inputs, answers, rows, expected_ids=expected, **options)
    return write_atomic(Path(output), html)


def write_run_report(out_dir: Path, dataset: str | None = None) -> Path | None:
    """`report.html` beside a run's results, never failing the run (its figures are on disk; the
    reason is printed). The dataset gives texts only: a run of some questions is not one with the
    others missing."""
    out_dir = Path(out_dir)
    try:
        title = f"OAB-Bench run: {out_dir.name}"
        out = out_dir / HTML_REPORT_FILE
        path = write_report([out_dir], out, dataset=dataset, title=title, expect_dataset=False)
    except Exception as e:  # a report is a by-product of the run
        print(f"oab-bench run: note: no report.html ({type(e).__name__}: {redact(str(e))})", file=sys.stderr)
        return None
    print(f"report: {path}", file=sys.stderr)
    return path
