"""Write the Hub-style folder atomically, and push it to the Hub (with a config per edition)."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from oab_bench.conventions import BUILD_MARKER as MARKER
from oab_bench.dataset_builder.build import BuildReport
from oab_bench.dataset_builder.card import render_card
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.folders import Writer, foreign_paths, listed, write_listed
from oab_bench.hub_guard import PushPlan, front_matter, guarded_push, mark_card

DATA_FILE = "data/test-00000-of-00001.parquet"
MARKER_HEAD = "written by `oab-bench build`; --overwrite may replace this folder"
BUILD = Writer(
    "oab-bench build", MARKER, head=MARKER_HEAD, legacy=("README.md", DATA_FILE)
)  # the guard every command shares


def is_our_build(folder: Path) -> bool:
    """A folder `oab-bench build` wrote, holding nothing else, unchanged since (a cached build may be reused)."""
    return foreign_paths(folder, BUILD) == []


def write_dataset(
    rows: list[QuestionRow], report: BuildReport, output: Path, *, overwrite: bool = False
) -> Path:
    """Write `data/test-*.parquet` and `README.md` into a temporary sibling, then swap it in
    (oab_bench/folders.py's write_listed): a failure at any point leaves `output` as it was."""

    def fill(tmp: Path) -> None:
        (tmp / "data").mkdir()
        table = pa.Table.from_pylist([r.model_dump(mode="json") for r in rows])
        pq.write_table(table, tmp / DATA_FILE)
        (tmp / "README.md").write_text(render_card(rows, report), encoding="utf-8")

    return write_listed(output, BUILD, fill, overwrite=overwrite)


EDITION_FILE = "editions/{edition}/test-00000-of-00001.parquet"
HUB_KIND = "dataset"  # the marker's kind on the Hub (hub_guard.KINDS)


def hub_configs(editions: list[int]) -> list[dict]:
    """The pushed card's `configs:`: the full set (default) and one per edition."""
    configs = [
        {"config_name": "default", "data_files": [{"split": "test", "path": "data/test-*"}], "default": True}
    ]
    configs += [
        {"config_name": f"edition_{e}", "data_files": [{"split": "test", "path": f"editions/{e}/test-*"}]}
        for e in editions
    ]
    return configs


def pushed_card(card: str, editions: list[int], repo_id: str) -> str:
    """The built card with `configs:` added (a local folder's card has none: `datasets` 5.2 caches a
    local folder with configs by its name alone), the repository named in its example, and the
    marker that says `oab-bench push` made the repo (hub_guard)."""
    found = front_matter(card)
    if found is None:
        raise ValueError("README.md: no YAML front matter (--- ... ---) to add the configs to")
    meta, body = found
    meta["configs"] = hub_configs(editions)
    names = ", ".join(f"`edition_{e}`" for e in editions)
    body = body.replace(
        'load_dataset("<this repo>", split="test")', f'load_dataset("{repo_id}", split="test")'
    )
    body = body.replace(
        "\nEvaluate a model with lighteval",
        f"\nConfigs: `default` (every question) and one per edition ({names}), e.g.\n"
        f'`load_dataset("{repo_id}", "edition_{editions[-1]}", split="test")`.\n\nEvaluate a model with lighteval',
        1,
    )
    text = f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---\n{body}"
    return mark_card(text, HUB_KIND)


def stage_for_hub(folder: Path, staging: Path, repo_id: str) -> Path:
    """The pushed layout in `staging`: the full parquet, one parquet per edition, the card with configs."""
    table = pq.read_table(folder / DATA_FILE)
    editions = sorted(set(table.column("edition").to_pylist()))
    (staging / "data").mkdir(parents=True)
    shutil.copyfile(folder / DATA_FILE, staging / DATA_FILE)
    for e in editions:
        path = staging / EDITION_FILE.format(edition=e)
        path.parent.mkdir(parents=True)
        pq.write_table(table.filter(pc.equal(table.column("edition"), e)), path)
    card = (folder / "README.md").read_text(encoding="utf-8")
    try:
        text = pushed_card(card, editions, repo_id)
    except ValueError as e:
        raise ValueError(f"{folder / 'README.md'}: {str(e).removeprefix('README.md: ')}") from None
    (staging / "README.md").write_text(text, encoding="utf-8")
    return staging


def check_pushable(folder: Path) -> None:
    """Only what `oab-bench build` wrote is pushed: its marker, and the rows as it wrote them (a card
    edited by hand may go, its front matter intact); anything else fails here, before the Hub."""
    found = listed(folder, BUILD)
    if found is None or not (folder / DATA_FILE).is_file() or not (folder / "README.md").is_file():
        raise FileNotFoundError(
            f"{folder} is not a dataset folder made by `oab-bench build` (no {MARKER} marker with "
            f"{DATA_FILE} and README.md)"
        )
    digest = found.get(DATA_FILE)
    if digest and hashlib.sha256((folder / DATA_FILE).read_bytes()).hexdigest() != digest:
        raise ValueError(f"{folder / DATA_FILE}: changed since the build: build again, then push")


def push_dataset(
    folder: Path,
    repo_id: str,
    *,
    private: bool = False,
    revision: str | None = None,
    replace_foreign: str | None = None,
    dry_run: bool = False,
    api=None,
) -> PushPlan:
    """Upload a folder made by write_dataset, in the pushed layout, to a repo `oab-bench push` made
    or makes (hub_guard); the token comes from HF_TOKEN or `hf auth login`."""
    folder = Path(folder)
    check_pushable(folder)
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    with tempfile.TemporaryDirectory(prefix="oab-bench-push-") as tmp:
        staging = stage_for_hub(folder, Path(tmp) / "hub", repo_id)
        return guarded_push(
            api,
            repo_id,
            staging,
            kind=HUB_KIND,
            commit_message="Update OAB-Bench dataset (oab-bench build)",
            delete_patterns=["data/*.parquet", "editions/**"],  # an edition no longer built goes too
            private=private,
            revision=revision,
            replace_foreign=replace_foreign,
            dry_run=dry_run,
        )
