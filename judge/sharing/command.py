"""`oab-bench export` and `oab-bench push-results`: their flags, and what each runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SOURCES_HELP = (
    "run folders, judgment files, probe folders, upstream judgment files, or shared results "
    "(hf:OWNER/NAME[@REV], hf:/abs/folder)"
)


def add_export_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="+", help=SOURCES_HELP)
    p.add_argument(
        "--output", required=True, help="folder to write: new, empty, or one `oab-bench export` wrote"
    )
    _common(p)


def add_push_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="+", help=SOURCES_HELP)
    p.add_argument("--repo-id", required=True, help="OWNER/NAME: the dataset repository on the Hub")
    p.add_argument("--private", action="store_true", help="create the repository private")
    _common(p)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--answers", nargs="+", help="answer files too (FastChat JSONL or lighteval details)")


def dataset_origins(names: set[str | None], given: str | None) -> dict[str, str]:
    """Each dataset that can be read here (--dataset, a local folder an input recorded) -> what it was
    built from, at which revision (its rows' provenance)."""
    from dataset_builder.errors import SourceError

    from ..dataset import load_rows

    out = {}
    for name in sorted(n for n in names if n):
        if name != given and not Path(name).is_dir():
            continue
        try:
            rows = load_rows(name)
        except (SourceError, OSError, ValueError) as e:  # the card says so; the export goes on
            out[name] = f"not readable here: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            continue
        origins = {
            f"built from {r.provenance.source} at revision {r.provenance.revision or 'unknown'}"
            for r in rows
            if r.provenance
        }
        out[name] = "; ".join(sorted(origins)) or "no provenance recorded"
    return out


def export_folder(
    args: argparse.Namespace, output: Path, *, made_by: str, repo_id: str | None = None
) -> Path:
    from .card import render_card
    from .export import collect, write_export

    exported = collect(args.sources, args.dataset, args.answers or [])
    datasets = dataset_origins({args.dataset, *(r.dataset for r in exported.judgments)}, args.dataset)

    def card(configs: dict[str, str]) -> str:
        return render_card(
            exported,
            configs,
            made_by=made_by,
            repo_id=repo_id,
            dataset=args.dataset,
            datasets=datasets,
            resamples=args.resamples,
            seed=args.seed,
        )

    folder = write_export(exported, output, card)
    judges = len({r.judge for r in exported.judgments})
    print(
        f"{len(exported.judgments)} judgments ({judges} judges), {len(exported.answers)} answers",
        file=sys.stderr,
    )
    for note in exported.inputs.notes:
        print(f"oab-bench {args.command}: note: {note}", file=sys.stderr)
    return folder


def run_export(args: argparse.Namespace) -> int:
    from dataset_builder.publish import check_replaceable

    from .export import EXPORT

    output = Path(args.output)
    if output.is_dir() and any(output.iterdir()):  # refused now, before anything is read
        check_replaceable(output.resolve(), mark=EXPORT)
    print(f"wrote {export_folder(args, output, made_by='oab-bench export')}")
    return 0


def run_push_results(args: argparse.Namespace) -> int:
    from .push import MADE_BY, push_results

    def export(folder: Path) -> Path:
        return export_folder(args, folder, made_by=MADE_BY, repo_id=args.repo_id)

    url = push_results(export, args.repo_id, private=args.private)
    print(f"pushed results to {args.repo_id}: {url}")
    return 0
