"""`lighteval endpoint ...` as `oab-bench run` starts it, without lighteval's other backends.

`python -m lighteval` imports every backend's module before it parses its arguments (inspect_ai,
nanotron, sglang, vllm, custom), a cost at every run's start (docs/performance.md) for an
endpoint evaluation that uses none of them. This is lighteval's own `endpoint` sub-app, under a root app
with the plain CLI's settings (no locals in tracebacks) and logging, so the child behaves, logs
and fails as `lighteval endpoint ...` does, loading only the custom tasks it is given.
"""

from __future__ import annotations

import logging.config

import colorlog
import lighteval.main_endpoint
import typer

from oab_bench.judge.generation.lighteval_compat import load_only_custom_tasks

# as lighteval/__main__.py configures it, so the child's log reads as the plain CLI's
LOGGING = {
    "version": 1,
    "formatters": {
        "c": {
            "()": colorlog.ColoredFormatter,
            "format": "[%(asctime)s] [%(log_color)s%(levelname)8s%(reset)s]: %(message)s (%(filename)s:%(lineno)s)",
            "log_colors": {"DEBUG": "cyan", "INFO": "green", "WARNING": "yellow", "ERROR": "red"},
        },
    },
    "handlers": {"h": {"class": "logging.StreamHandler", "formatter": "c", "level": logging.INFO}},
    "root": {"handlers": ["h"], "level": logging.INFO},
}

app = typer.Typer(pretty_exceptions_show_locals=False)  # a local may hold a key: never print it
app.add_typer(lighteval.main_endpoint.app, name="endpoint")

if __name__ == "__main__":
    logging.config.dictConfig(LOGGING)
    logging.captureWarnings(capture=True)
    load_only_custom_tasks()  # no built-in task imported: no nltk download, no Hub FutureWarning
    app(prog_name="lighteval")
