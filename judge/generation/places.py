"""Where `oab-bench run` writes, checked before anything is paid or created.

Each place is named by the flag or variable that chose it (or the default it fell back to), its
path, and what would fix it: the Hugging Face caches (`HF_HOME`, where the datasets library
writes and a raw dataset is built; by default under `HOME`), the output folder (and lighteval's
folders in it), the answer cache, the judgment cache (with its batch log).

A cache this user can read but not write (an archived run, a read-only mount, a teammate's
folder without group write) is valid: it serves its hits. A run that would have to keep
something new in it is refused up front, saying how much would be lost, unless
`--cache-read-only` says to go on without keeping it (the lighteval child is then told by
`OAB_CACHE_READ_ONLY=1` to open its stores that way).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NamedTuple

from oab_bench.conventions import ANSWERS_FILE as ANSWERS
from oab_bench.conventions import JUDGMENT_CACHE_FILE as JUDGMENTS
from oab_bench.judge.generation.preflight import PreflightError
from oab_bench.keyed_store import READ_ONLY_ENV, allowed, unwritable

__all__ = [
    "READ_ONLY_ENV",
    "Cache",
    "cache_name",
    "check_cache",
    "check_hf_caches",
    "check_output_folder",
    "check_read_only",
]
MAKE_WRITABLE = "make it writable (group write: chmod g+w, and umask 002 for what runs create)"
ANSWER_FILES = (ANSWERS, Path(ANSWERS).with_suffix(".lock").name)
JUDGE_FILES = (JUDGMENTS, Path(JUDGMENTS).with_suffix(".lock").name)  # its batches are tables of it


class Cache(NamedTuple):
    kind: str  # "answers" or "judgments"
    name: str  # the flag or variable that chose it, as the user would look for it
    path: Path
    read_only: str | None  # why this user cannot write it; None: writable


def hf_places(env, dataset: str | None) -> list[tuple[str, Path, str]]:
    """(name, folder, fix) of the Hugging Face caches this run writes: HF_HOME, and the datasets and
    Hub caches where a variable moves them (the Hub's only for a dataset that is not a folder)."""
    fix = f"set HF_HOME to a folder you can write, or {MAKE_WRITABLE}"
    if env.get("HF_HOME"):
        places = [("HF_HOME", Path(env["HF_HOME"]).expanduser(), fix)]
    elif env.get("XDG_CACHE_HOME"):
        where = Path(env["XDG_CACHE_HOME"]) / "huggingface"
        places = [("HF_HOME (not set: $XDG_CACHE_HOME/huggingface)", where, fix)]
    else:
        home = env.get("HOME") or str(Path("~").expanduser())
        name = f"HF_HOME (not set: $HOME/.cache/huggingface, HOME={home})"
        if not Path(home).is_dir():
            fix = "set HOME to your home folder, or HF_HOME to a folder you can write"
        places = [(name, Path(home) / ".cache" / "huggingface", fix)]
    if env.get("HF_DATASETS_CACHE"):
        fix = f"set HF_DATASETS_CACHE to a folder you can write, or {MAKE_WRITABLE}"
        places.append(("HF_DATASETS_CACHE", Path(env["HF_DATASETS_CACHE"]).expanduser(), fix))
    if not dataset or not Path(dataset).expanduser().is_dir():  # None: the default, a Hub id
        for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
            if env.get(var):
                fix = f"set {var} to a folder you can write, or {MAKE_WRITABLE}"
                places.append((var, Path(env[var]).expanduser(), fix))
                break
    return places


def check_hf_caches(dataset: str | None, env=None) -> None:
    """Before the dataset is read (the datasets library writes its cache, a raw dataset is built
    under HF_HOME): a place this user cannot write fails now, naming its variable."""
    env = os.environ if env is None else env
    problems = [
        f"{name} {path}: {why}: {fix}"
        for name, path, fix in hf_places(env, dataset)
        if (why := unwritable(path))
    ]
    if problems:
        raise PreflightError("\n".join(problems))


def check_output_folder(out: Path, given: str) -> None:
    """The run folder: created if missing, its files replaced (never rewritten in place), and
    lighteval's results and details written into folders an earlier run may have made (a
    teammate's, under another umask): each must be writable, or the run fails after paying."""
    if why := unwritable(out):
        raise PreflightError(f"--output-dir {given}: {why}: {MAKE_WRITABLE}, or give another --output-dir")
    for sub in ("results", "details"):
        top = out / sub
        for folder in [top, *top.rglob("*")] if top.is_dir() else []:
            if folder.is_dir() and not allowed(folder, os.W_OK | os.X_OK):
                raise PreflightError(
                    f"--output-dir {given}: {folder} is not writable by this user (lighteval writes "
                    f"there): {MAKE_WRITABLE}, or give another --output-dir"
                )


def cache_name(flag: str, given: str | None, var: str) -> str:
    if given is not None:
        return flag
    return var if os.environ.get(var) else f"{flag} (default; {var} not set)"


def check_cache(kind: str, name: str, path: Path | None) -> Cache | None:
    """A cache's access (None: the cache is off): read-only or writable; an error for one that
    cannot even be read."""
    if path is None:
        return None
    files = ANSWER_FILES if kind == "answers" else JUDGE_FILES
    for file in files:
        if (path / file).exists() and not allowed(path / file, os.R_OK):
            raise PreflightError(
                f"{name} {path}: {path / file} is not readable by this user: make it readable "
                "(chmod g+r) or use another folder"
            )
    return Cache(kind, name, path, unwritable(path, tuple(path / f for f in files)))


def check_read_only(caches: list[Cache], stored, *, go_on: bool, batch: bool) -> bool:
    """Whether the run uses a read-only cache (the child must open its stores so); refused
    (PreflightError) when it would have to keep something there and `go_on` is not given.
    `stored()`: what the caches lack for this run (`answers_missing`, `judgments_missing`)."""
    read_only = [c for c in caches if c.read_only]
    if not read_only:
        return False
    state = stored()
    if state is None:
        raise PreflightError("the dataset does not load: cannot tell what a read-only cache lacks")
    kinds = {c.kind for c in read_only}
    answers = state.answers_missing if "answers" in kinds else 0
    judgments = state.judgments_missing if "judgments" in kinds else 0
    lines = [f"this cache is read-only: {answers} answers / {judgments} judgments would not be kept"]
    lines += [f"  {c.name} {c.path}: {c.read_only}" for c in read_only]
    if batch and judgments:
        raise PreflightError(
            "\n".join(lines) + "\n--judge-batch records its batches in the judgment cache: "
            f"{MAKE_WRITABLE}, or give another --judge-cache, or judge without --judge-batch"
        )
    if (answers or judgments) and not go_on:
        raise PreflightError(
            "\n".join(lines) + f"\nto go on without keeping them, add --cache-read-only; to keep them, "
            f"{MAKE_WRITABLE}, or give another --answer-cache / --judge-cache"
        )
    if answers or judgments:
        lines.append("going on (--cache-read-only): what is new serves this run only")
    else:
        lines.append("nothing new to keep: its entries are served as they are")
    for line in lines:
        print(f"oab-bench run: {line}", file=sys.stderr)
    return True
