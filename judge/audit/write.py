"""Entry points: `oab-bench report` and the report `oab-bench run` leaves in its output folder."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from oab_bench.conventions import HTML_REPORT_FILE as REPORT_FILE
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.audit.collect import read_inputs
from oab_bench.judge.audit.page import plot_png, render_html
from oab_bench.judge.audit.view import build_view
from oab_bench.judge.output import write_atomic
from oab_bench.judge.redact import redact


def write_report(
    inputs: list[Path],
    output: Path,
    *,
    answers: list[Path] = (),
    dataset: str | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    title: str = "OAB-Bench: audit report",
    expect_dataset: bool = True,
    sweeps: Sequence[dict] = (),
) -> Path:
    """Read the inputs (judgments, run folders, answer files), write one self-contained HTML file.

    `dataset`: the questions' texts and rubrics; with `expect_dataset`, also the questions expected
    (coverage counts the unjudged ones, as `oab-bench leaderboard --dataset` does).
    """
    rows, expected = {}, None
    if dataset:
        from oab_bench.judge.dataset import load_rows

        rows = {r.question_id: r for r in load_rows(dataset)}
        expected = set(rows) if expect_dataset else None
    html = report_html(
        inputs,
        answers,
        rows,
        expected_ids=expected,
        resamples=resamples,
        seed=seed,
        title=title,
        sweeps=sweeps,
    )
    return write_atomic(Path(output), html)


def report_html(
    inputs: list[Path],
    answers: list[Path],
    rows: dict[str, QuestionRow],
    *,
    expected_ids: set[str] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    title: str = "OAB-Bench: audit report",
    sweeps: Sequence[dict] = (),
) -> str:
    """The report's text, from inputs and the question rows (texts and rubrics) by id; `sweeps`:
    judge sweeps' pages (judge/sweep/sweep_page.py's views) shown beside them."""
    data = read_inputs(list(inputs), list(answers), rows)
    view, blobs, tables = build_view(data, rows, expected_ids=expected_ids, resamples=resamples, seed=seed)
    names = sorted({str(p) for p in [*inputs, *answers]})  # the same file whatever their order
    html = render_html(view, blobs, title=title, inputs=names, plot=plot_png(tables), sweeps=sweeps)
    return redact(html)  # a key an error or an answer quoted never reaches the file


def write_run_report(out_dir: Path, dataset: str | None = None) -> Path | None:
    """`report.html` beside a run's results. A report that cannot be written never fails the run:
    the run's own figures are already on disk; the reason is printed. The dataset gives texts only:
    a run of some questions (--max-samples) is not a run with the others missing."""
    out_dir = Path(out_dir)
    try:
        path = write_report(
            [out_dir],
            out_dir / REPORT_FILE,
            dataset=dataset,
            title=f"OAB-Bench run: {out_dir.name}",
            expect_dataset=False,
        )
    except Exception as e:  # a report is a by-product of the run
        print(f"oab-bench run: note: no report.html ({type(e).__name__}: {redact(str(e))})", file=sys.stderr)
        return None
    print(f"report: {path}", file=sys.stderr)
    return path
