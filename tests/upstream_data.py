"""Upstream's release for the test suite on a machine without ../shared: fetched, pinned, checked.

The suite reads upstream's data from ../shared/data (tests/conftest.py; OAB_BENCH_SHARED_DATA
overrides). Where ../shared is missing, `make test` runs this first: it downloads the same files
from upstream's GitHub repository (maritaca-ai/oab-bench) at the commits ../shared was taken from,
checks each against the SHA-256 of ../shared's copy, and moves them into a cache folder only when
every one arrived intact (nothing half-written). It prints on stdout the folder the suite should
read. Offline, it says which files it could not fetch; the tests that need them are then skipped,
each saying why (`pytest -rs`). The tests never call this over the network.

python -m tests.upstream_data [--shared ../shared/data] [--cache DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

BASE_URL = "https://raw.githubusercontent.com/maritaca-ai/oab-bench"
URL_ENV = "OAB_BENCH_UPSTREAM_URL"  # another base (a mirror; the tests' local server)
RELEASE = "cafe8633e2b8f74165d51a47fe09fe44910ed8eb"  # editions 39-41, six models' answers
PROMPTS_V2 = "0d548a7d280a5b479ecb471cc9b3dda88dac9d4b"  # a later commit: adds single-oab-v2
SAMPLE_EXAMS = ("39_direito_penal", "39_direito_administrativo")  # the judgment sample's lines
MARKER = "oab_bench_v1/question.jsonl"  # a data folder holds the release when it holds this


def sample_lines(data: bytes) -> bytes:
    """The judgment sample: the lines of upstream's o3 judgments of two exams, in file order."""
    lines = [x for x in data.split(b"\n") if x.strip()]
    keep = [x for x in lines if str(json.loads(x).get("question_id", "")).startswith(SAMPLE_EXAMS)]
    return b"".join(x + b"\n" for x in keep)


class Wanted(NamedTuple):
    target: str  # where ../shared/data holds it
    commit: str
    source: str  # its path in upstream's repository
    sha256: str  # of ../shared's copy
    select: Callable[[bytes], bytes] | None = None


_ANSWERS = {
    "Qwen2.5-72B-Instruct-deepinfra": "205a71871c07a99a7727be8e54cc7aad599e0a34fd77fe2bdb2ce2e5dc8a27f1",
    "claude-3-5-sonnet-20240620": "8e1a8106581b3871f7aee461ab21d4f55833fd3482dc84efe90023f805284885",
    "gpt-4o-2024-08-06": "4c3c8ee0191e86115581c0f5ff347b23aa43d66836bf8c2104d4fb42985b303a",
    "o3-2025-04-16": "b08e63463f70924b606d157752b5ea335670c6a5adf53472dbba7a158da4266f",
    "sabia-3-2024-12-11": "ecae7912098be452269eb0efc6e8eb3406444bc1f7fa2011ab882540859afd4a",
    "sabia-3.1-2025-05-08": "fad5d026149d715f6f3e4013169427842b26c83d67f82ffc3d4cb917e13f8340",
}
V1, SRC = "oab_bench_v1", "data/oab_bench"
FILES: tuple[Wanted, ...] = (
    Wanted(
        f"{V1}/LICENSE",
        RELEASE,
        "LICENSE",
        "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4",
    ),
    Wanted(
        f"{V1}/question.jsonl",
        RELEASE,
        f"{SRC}/question.jsonl",
        "bb55d391a539b038fed13cd2cf2fd550ac68902ffc7f0c58cd136394394968ea",
    ),
    Wanted(
        f"{V1}/reference_answer/guidelines.jsonl",
        RELEASE,
        f"{SRC}/reference_answer/guidelines.jsonl",
        "2d96111d1b78acac9a0dd32f42cd2b898b82c67c2691fd35948e7e5cbefcaba9",
    ),
    Wanted(
        f"{V1}/judge_prompts.jsonl",
        RELEASE,
        "data/judge_prompts.jsonl",
        "a6db67d687d856bcc8d55a52ce6cb6b3d9079e2881e311ed984314df87642ca0",
    ),
    *(
        Wanted(f"{V1}/model_answer/{m}.jsonl", RELEASE, f"{SRC}/model_answer/{m}.jsonl", h)
        for m, h in _ANSWERS.items()
    ),
    Wanted(
        f"{V1}/model_judgment/o3-2025-04-16_single.sample.jsonl",
        RELEASE,
        f"{SRC}/model_judgment/o3-2025-04-16_single.jsonl",
        "5bcae3f8884e67ec56869f39af4ad0588b6844e08e3f79fff3010d260e52bc61",
        sample_lines,
    ),
    Wanted(
        "judge_prompts_v2.jsonl",
        PROMPTS_V2,
        "data/judge_prompts.jsonl",
        "3592147c396bee1b3b221b0e86481abf36fa53b86403edd72f54250a93109ac3",
    ),
)


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "oab-bench" / "upstream-data" / RELEASE[:12]


def complete(folder: Path, files: tuple[Wanted, ...] = FILES) -> bool:
    """Every file there with the hash it must have."""
    return all(
        (folder / w.target).is_file()
        and hashlib.sha256((folder / w.target).read_bytes()).hexdigest() == w.sha256
        for w in files
    )


def _get(url: str, timeout: float) -> bytes:
    import httpx

    resp = httpx.get(url, timeout=timeout, follow_redirects=True)
    resp.raise_for_status()
    return resp.content


def fetch(
    dest: Path, *, base_url: str = BASE_URL, files: tuple[Wanted, ...] = FILES, timeout: float = 60.0
) -> list[str]:
    """Download every file into `dest` (all or nothing); returns what went wrong, one line per file."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="oab-bench-upstream-") as scratch:
        for w in files:
            url = f"{base_url.rstrip('/')}/{w.commit}/{w.source}"
            try:
                data = _get(url, timeout)
                data = w.select(data) if w.select else data
            except Exception as e:  # offline, 404, a file no longer JSON: say which and why
                problems.append(
                    f"{w.target}: {url}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                )
                continue
            got = hashlib.sha256(data).hexdigest()
            if got != w.sha256:
                problems.append(f"{w.target}: {url}: SHA-256 {got[:16]}..., expected {w.sha256[:16]}...")
                continue
            path = Path(scratch) / w.target
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        if not problems:
            dest.parent.mkdir(parents=True, exist_ok=True)
            staged = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
            shutil.rmtree(staged)
            shutil.copytree(scratch, staged)
            if dest.exists():  # an incomplete folder from elsewhere: replaced whole
                shutil.rmtree(dest)
            staged.rename(dest)
    return problems


def data_folder(shared: Path, cache: Path, *, base_url: str = BASE_URL) -> tuple[Path, list[str]]:
    """(the folder the suite reads, what could not be fetched): ../shared when it is there, else the
    cache, fetched when it is not complete."""
    if (shared / MARKER).is_file():
        return shared, []
    if complete(cache):
        return cache, []
    return cache, fetch(cache, base_url=base_url)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.upstream_data", description=__doc__.splitlines()[0])
    p.add_argument("--shared", default="../shared/data", help="the developers' copy (default ../shared/data)")
    p.add_argument("--cache", help=f"where to fetch it when --shared is missing (default {default_cache()})")
    args = p.parse_args(argv)
    shared, cache = Path(args.shared).resolve(), Path(args.cache) if args.cache else default_cache()
    folder, problems = data_folder(shared, cache, base_url=os.environ.get(URL_ENV) or BASE_URL)
    if folder != shared and not problems:
        print(
            f"upstream_data: no {shared}: upstream's release (commit {RELEASE[:12]}) is in {folder}",
            file=sys.stderr,
        )
    for line in problems:
        print(f"upstream_data: not fetched: {line}", file=sys.stderr)
    if problems:
        print(
            f"upstream_data: no {shared} and upstream's release could not be fetched: the tests that read it "
            "are skipped (each says why in pytest's summary); under CI=true they fail",
            file=sys.stderr,
        )
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
