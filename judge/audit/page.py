"""The report file: the template filled with the view, the plot inlined, the JSON blobs embedded."""

from __future__ import annotations

import base64
from collections.abc import Sequence

import jinja2

from oab_bench.judge.leaderboard.tables import Table


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("oab_bench.judge.audit", "templates"),
        autoescape=True,  # every text from the inputs is untrusted: answers, analyses, model names
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # |tojson escapes <, >, & and ' so a blob cannot close its <script> element; UTF-8 keeps it small
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "separators": (",", ":")}
    return env


def plot_png(tables: list[Table]) -> str | None:
    """The leaderboard's picture as a data: URL (base64 PNG), None when there is nothing to draw."""
    if not any(r.mean_exam_score is not None for t in tables for r in t.rows):
        return None
    from oab_bench.judge.leaderboard.plot import plot_png_bytes

    return data_url(plot_png_bytes(tables))


def data_url(png: bytes) -> str:
    """A PNG inlined: the page stays one file that loads nothing (its policy allows data: images only)."""
    return "data:image/png;base64," + base64.b64encode(png).decode()


def render_html(
    view: dict, blobs: dict, *, title: str, inputs: list[str], plot: str | None, sweeps: Sequence[dict] = ()
) -> str:
    """`sweeps`: judge sweeps' pages (judge/sweep/sweep_page.py's views), shown as pages of the report."""
    template = environment().get_template("report.html.j2")
    # no clock: the same inputs make the same bytes
    return template.render(title=title, inputs=inputs, plot=plot, blobs=blobs, sweeps=list(sweeps), **view)
