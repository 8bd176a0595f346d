"""Upstream's six published answer files, cached only when their size and SHA-256 are the pinned ones."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from pathlib import Path

REPOSITORY = "maritaca-ai/oab-bench"
COMMIT = "cafe8633e2b8f74165d51a47fe09fe44910ed8eb"
FOLDER = "data/oab_bench/model_answer"
# name, SHA-256, size: computed from ../shared/data/oab_bench_v1/model_answer, which holds these files
# as upstream's repository has them at COMMIT (its blobs hash the same)
PINNED = """
Qwen2.5-72B-Instruct-deepinfra.jsonl 205a71871c07a99a7727be8e54cc7aad599e0a34fd77fe2bdb2ce2e5dc8a27f1 637269
claude-3-5-sonnet-20240620.jsonl 8e1a8106581b3871f7aee461ab21d4f55833fd3482dc84efe90023f805284885 541591
gpt-4o-2024-08-06.jsonl 4c3c8ee0191e86115581c0f5ff347b23aa43d66836bf8c2104d4fb42985b303a 365380
o3-2025-04-16.jsonl b08e63463f70924b606d157752b5ea335670c6a5adf53472dbba7a158da4266f 382858
sabia-3-2024-12-11.jsonl ecae7912098be452269eb0efc6e8eb3406444bc1f7fa2011ab882540859afd4a 519563
sabia-3.1-2025-05-08.jsonl fad5d026149d715f6f3e4013169427842b26c83d67f82ffc3d4cb917e13f8340 357746
"""
FILES = {name: (sha, int(size)) for name, sha, size in map(str.split, PINNED.strip().splitlines())}
DEFAULT_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}/{FOLDER}"
URL_ENV = "OAB_PANEL_URL"  # a mirror holding the six files (the hashes still decide)
CACHE_ENV = "OAB_PANEL_CACHE"  # the folder that holds them (default: the user's cache)
LABEL = f"upstream {REPOSITORY}@{COMMIT}"


class PanelUnavailable(ValueError):
    """The published answers are neither cached nor downloadable (offline, refused, cut)."""


def cache_dir() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser().resolve()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "oab-bench" / "panel" / COMMIT


def is_intact(path: Path) -> bool:
    """`path` holds exactly the pinned bytes of its name."""
    sha, size = FILES[path.name]
    with contextlib.suppress(OSError):
        return path.stat().st_size == size and hashlib.sha256(path.read_bytes()).hexdigest() == sha
    return False


def upstream_files() -> list[Path]:
    """The six files, verified: from the cache, or downloaded into it now."""
    folder, base = cache_dir(), os.environ.get(URL_ENV) or DEFAULT_URL
    missing = [name for name in sorted(FILES) if not is_intact(folder / name)]
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    if missing and base == DEFAULT_URL and offline:  # the Hub's offline switch keeps us off GitHub too
        raise unavailable(folder, missing, "HF_HUB_OFFLINE is set (offline)")
    for i, name in enumerate(missing):
        if (folder / name).exists():
            why = f"--panel upstream: {folder / name} fails its SHA-256 check: fetching it again"
            print(why, file=sys.stderr)
        try:
            fetch(f"{base.rstrip('/')}/{name}", folder / name)
        except OSError as e:  # the files fetched so far stay: a later try fetches only the rest
            raise unavailable(folder, missing[i:], str(e)) from None
    return [folder / name for name in sorted(FILES)]


def unavailable(folder: Path, missing: list[str], why: str) -> PanelUnavailable:
    bad = [name for name in missing if (folder / name).exists()]
    failing = f" ({', '.join(bad)} there, failing its SHA-256 check)" if bad else ""
    return PanelUnavailable(
        f"--panel upstream: {len(missing)} of the {len(FILES)} published answer files are not cached in "
        f"{folder}{failing} and {why}: pass --panel with the answer files or their folder ({REPOSITORY}, "
        f"{FOLDER} at commit {COMMIT}), or copy them into {folder}"
    )


def fetch(url: str, dest: Path) -> Path:
    """`url` written to `dest` once it verifies against `dest`'s pin (else PanelUnavailable); a file that
    cannot be fetched is an OSError (the caller keeps what it has and tries again later)."""
    import httpx  # ~0.3 s: only when something is to be fetched

    from oab_bench.judge.output import write_atomic

    sha, size = FILES[dest.name]
    try:
        resp = httpx.get(url, timeout=httpx.Timeout(60.0, connect=10.0), follow_redirects=True)
    except httpx.HTTPError as e:
        raise OSError(f"{url} could not be read ({type(e).__name__}: {e})") from None
    if resp.status_code != 200:
        raise OSError(f"{url} answered HTTP {resp.status_code}")
    if len(resp.content) != size or hashlib.sha256(resp.content).hexdigest() != sha:
        raise PanelUnavailable(
            f"--panel upstream: {url}: refused, not the published file ({len(resp.content)} bytes where {size} "
            f"were expected, or its SHA-256 is not {sha}); nothing was cached"
        )
    return write_atomic(dest, resp.content)
