"""What every judge of a sweep grades: the dataset's chosen questions (`--dataset`, else
OAB_BENCH_DATASET, else upstream's Hub dataset, as `run` reads it) and the real answers to agree
on. Those answers are the panel's published ones (`--panel`, read by judge/panel/ as `judge
--panel` and `run --panel` read it), the user's (`--answers`), or both; with neither flag, the
default is `--panel upstream`: upstream's six answer files, downloaded once, verified, cached."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.panel.published import UPSTREAM
from oab_bench.judge.panel.upstream import PanelUnavailable

ANSWERS_WHAT = "the --answers model"  # how a panel-name clash names the user's model


@dataclass
class Material:
    pool: list  # every row of the dataset
    rows: list  # the chosen rows
    pairs: list  # (row, answer) every judge grades for the agreement
    missing: list  # (row, model) of --answers with no answer: recorded as such
    source: str  # where the answers came from, for the report's line
    notes: list[str] = field(default_factory=list)
    panel: dict[str, str] = field(default_factory=dict)  # a panel's model -> its answers' source


def panel_specs(args: argparse.Namespace) -> list[str]:
    """`--panel` as given; `upstream` when neither `--panel` nor `--answers` is."""
    if args.panel:
        return list(args.panel)
    return [] if args.answers else [UPSTREAM]


def _panel(specs: list[str], defaulted: bool):
    from oab_bench.judge.panel.published import resolve_panel

    try:
        return resolve_panel(specs)
    except PanelUnavailable as e:
        if not defaulted:
            raise
        raise PanelUnavailable(
            f"neither --answers nor --panel was given, so the answers to agree on are the default "
            f"--panel upstream, and {e}; or pass --answers FILE... (two models or more)"
        ) from None


def load_material(args: argparse.Namespace) -> Material:
    """Every input read and checked before any call; bad input is a ValueError naming it."""
    from oab_bench.judge.answers import read_answer_files

    answers = read_answer_files(args.answers or [])
    specs = panel_specs(args)
    panel = _panel(specs, defaulted=not args.panel) if specs else None  # first: a missing panel fails fast
    from oab_bench.judge.dataset import dataset_argument, load_rows, select_rows
    from oab_bench.judge.grading.judge_answers import pairs_to_grade  # (imports litellm: seconds)
    from oab_bench.judge.panel.judging import panel_pairs

    dataset, origin = dataset_argument(args)
    pool = load_rows(dataset, origin=origin)
    rows = select_rows(pool, args.questions)
    if not rows:
        raise ValueError(f"no questions in {dataset} ({origin}) match {args.questions}")
    pairs, missing = pairs_to_grade(rows, answers, args.questions)
    n = len(args.answers or [])
    sources, notes = [f"--answers ({n} file{'s' if n > 1 else ''})"] if n else [], []
    if panel is not None:
        got, notes = panel_pairs(panel, rows, {a.model for a in answers}, ANSWERS_WHAT)
        pairs += got
        answers += panel.answers
        sources.append(f"--panel {' '.join(specs)}: {panel.label()}")
    probe = next((a for a in answers if a.model.startswith("probe:")), None)
    if probe is not None:
        raise SourceError(
            f"model {probe.model!r}: the probe: prefix is the sweep's own",
            file=probe.source or None,
            line=probe.line or None,
        )
    if len({a.model for _, a in pairs}) < 2:
        raise ValueError(
            "the agreement needs the answers of two models or more to the questions chosen "
            "(--answers, --panel)"
        )
    marks = dict(panel.sources) if panel is not None else {}
    return Material(pool, rows, pairs, missing, "; ".join(sources), notes, marks)


def print_notes(material: Material) -> None:
    from oab_bench.judge.panel.judging import print_notes as notes

    notes([f"answers to agree on: {material.source}", *material.notes], "judge-sweep")
