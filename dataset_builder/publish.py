"""The built folder, its card (README.md with YAML metadata) and files written whole, and `push`: the full
set, one parquet per edition and the card with its configs, uploaded in one commit behind the Hub guard."""

from __future__ import annotations

import argparse
import hashlib
import io
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from oab_bench.conventions import BUILD_MARKER as MARKER
from oab_bench.dataset_builder.build import BuildReport
from oab_bench.dataset_builder.ids import AREAS
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.folders import Writer, check_replaceable, listed, write_listed
from oab_bench.hub_guard import card_data, guarded_push

DATA_FILE = "data/test-00000-of-00001.parquet"
MARKER_HEAD = "written by `oab-bench build`; --overwrite may replace this folder"
BUILD = Writer("oab-bench build", MARKER, head=MARKER_HEAD)


def render_card(rows: list[QuestionRow], report: BuildReport) -> str:
    """The built folder's card; no `configs:` (a local folder declaring them is cached by its name alone)."""
    from huggingface_hub import DatasetCard, DatasetCardData

    meta = DatasetCardData(
        license="apache-2.0",
        language=["pt"],
        language_bcp47=["pt-BR"],
        pretty_name="OAB-Bench",
        task_categories=["text-generation"],
        tags=["legal", "brazilian-bar-exam", "oab", "llm-as-a-judge", "rubric"],
        size_categories=["n<1K" if len(rows) < 1000 else "1K<n<10K"],
        source_datasets=["maritaca-ai/oab-bench"],
    )
    per_area = Counter(r.area for r in rows if r.kind == "peca")
    origins = sorted({(r.provenance.source, r.provenance.revision) for r in rows})
    card = DatasetCard.from_template(
        meta,
        template_str=Path(__file__).with_name("card.md.j2").read_text(encoding="utf-8"),
        questions=len(rows),
        exams=report.exams,
        editions=", ".join(map(str, sorted({r.edition for r in rows}))),
        areas=", ".join(f"{AREAS[a]} ({per_area[a]} exams)" for a in sorted(per_area)),
        corrections="\n".join(f"- {c}" for c in report.corrections) or "- none",
        origin="; ".join(f"`{s}` at revision `{rev}`" for s, rev in origins),
    )
    return f"{card}\n"  # Jinja drops the template's last newline


def is_our_build(folder: Path) -> bool:
    """A folder `oab-bench build` wrote, holding nothing else, unchanged since."""
    try:
        check_replaceable(folder, BUILD)
    except OSError:
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
    """`push`: a build's folder, parquet unchanged (else it fails before any call), behind the Hub guard."""
    from huggingface_hub import DatasetCard, HfApi

    folder = Path(args.dataset)
    ours = listed(folder, BUILD)
    if ours is None or not (folder / DATA_FILE).is_file() or not (folder / "README.md").is_file():
        why = f"no {MARKER} marker with {DATA_FILE} and README.md"
        raise FileNotFoundError(f"{folder} is not a dataset folder made by `oab-bench build` ({why})")
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
        files[f"editions/{e}/test-00000-of-00001.parquet"] = buf.getvalue()
    pushed = DatasetCard(card)  # configs: the full set, one per edition; the repository named
    paths = {"default": "data/test-*", **{f"edition_{e}": f"editions/{e}/test-*" for e in editions}}
    configs = [{"config_name": c, "data_files": [{"split": "test", "path": p}]} for c, p in paths.items()]
    pushed.data["configs"] = [{**configs[0], "default": True}, *configs[1:]]
    names = ", ".join(f"`edition_{e}`" for e in editions)
    use = f"## Use\n\nConfigs: `default` (every question) and one per edition ({names}), e.g. "
    use += f'`load_dataset("{args.repo_id}", "edition_{editions[-1]}", split="test")`.\n'
    pushed.text = pushed.text.replace('"<this repo>"', f'"{args.repo_id}"').replace("## Use\n", use, 1)
    card = str(pushed)  # an edition no longer built goes too:
    return guarded_push(HfApi(), args, card, files, kind="dataset", delete=["data/*.parquet", "editions/**"])
