"""The report file: the template filled with the view, the plot inlined, the JSON blobs embedded."""

from __future__ import annotations

import base64

import jinja2

from oab_bench.judge.leaderboard.tables import Table


def _environment() -> jinja2.Environment:
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

    return "data:image/png;base64," + base64.b64encode(plot_png_bytes(tables)).decode()


def render_html(view: dict, blobs: dict, *, title: str, inputs: list[str], plot: str | None) -> str:
    template = _environment().get_template("report.html.j2")
    # no clock: the same inputs make the same bytes
    return template.render(title=title, inputs=inputs, plot=plot, blobs=blobs, **view)
