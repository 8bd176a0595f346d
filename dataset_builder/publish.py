"""The built folder written whole (oab_bench/folders.py), and `push`: the full set, one parquet per
edition and the card with its configs, uploaded in one commit behind the Hub guard."""

from __future__ import annotations

import argparse
import hashlib
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from oab_bench.conventions import BUILD_MARKER as MARKER
from oab_bench.dataset_builder.build import BuildReport
from oab_bench.dataset_builder.card import pushed_card, render_card
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.folders import Writer, check_replaceable, listed, write_listed
from oab_bench.hub_guard import card_data, guarded_push

DATA_FILE = "data/test-00000-of-00001.parquet"
EDITION_FILE = "editions/{edition}/test-00000-of-00001.parquet"
MARKER_HEAD = "written by `oab-bench build`; --overwrite may replace this folder"
BUILD = Writer("oab-bench build", MARKER, head=MARKER_HEAD)


def is_our_build(folder: Path) -> bool:
    """A folder `oab-bench build` wrote, holding nothing else, unchanged since."""
    try:
        check_replaceable(folder, BUILD)
    except OSError:  # NotOurFolder, FileExistsError
        return False
    return listed(folder, BUILD) is not None


def write_dataset(
    rows: list[QuestionRow], report: BuildReport, output: Path, *, overwrite: bool = False
) -> Path:
    def fill(tmp: Path) -> None:
        (tmp / "data").mkdir()
        pq.write_table(pa.Table.from_pylist([r.model_dump(mode="json") for r in rows]), tmp / DATA_FILE)
        (tmp / "README.md").write_text(render_card(rows, report), encoding="utf-8")

    return write_listed(output, BUILD, fill, overwrite=overwrite)


def push_dataset(args: argparse.Namespace) -> str | None:
    """`push`: a folder `oab-bench build` wrote, its parquet unchanged (its card may be edited), in the
    pushed layout, behind the Hub guard; anything else fails before any call. The commit's URL or None."""
    from huggingface_hub import HfApi

    folder = Path(args.dataset)
    ours = listed(folder, BUILD)
    if ours is None or not (folder / DATA_FILE).is_file() or not (folder / "README.md").is_file():
        raise FileNotFoundError(
            f"{folder} is not a dataset folder made by `oab-bench build` (no {MARKER} marker with "
            f"{DATA_FILE} and README.md)"
        )
    data = (folder / DATA_FILE).read_bytes()
    if hashlib.sha256(data).hexdigest() != ours.get(DATA_FILE):
        raise ValueError(f"{folder / DATA_FILE}: changed since the build: build again, then push")
    card = (folder / "README.md").read_text(encoding="utf-8")
    if card_data(card) is None:
        raise ValueError(f"{folder / 'README.md'}: no YAML front matter (--- ... ---) to add the configs to")
    table = pq.read_table(io.BytesIO(data))
    editions = sorted(set(table.column("edition").to_pylist()))
    files = {DATA_FILE: data}
    for e in editions:
        buf = io.BytesIO()
        pq.write_table(table.filter(pc.equal(table.column("edition"), e)), buf)
        files[EDITION_FILE.format(edition=e)] = buf.getvalue()
    card = pushed_card(card, editions, args.repo_id)  # an edition no longer built goes too:
    return guarded_push(HfApi(), args, card, files, kind="dataset", delete=["data/*.parquet", "editions/**"])
