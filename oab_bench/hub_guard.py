"""Never write to a Hub repo we did not make: a marker in the card, read back before any write.

Everything an oab-bench command uploads carries, in its card's YAML front matter,
`oab_bench: {made_by: "oab-bench push", kind: dataset}` (or `push-results` and `results`).
Before anything is created or written the target is read: a repo that does not exist is
created; one whose card carries our marker of the same kind is updated, and so is an empty
one (nothing but `.gitattributes`: what a push whose commit failed leaves); anything else (no
card, a card without the marker, our marker of another kind, a repo this token cannot read)
is refused, naming the repo and what would have been replaced or deleted.

API, for every command that uploads (`push`, `push-results`):

- `mark_card(text, kind) -> str`: the card with our marker of `kind` in its front matter
  (ValueError without front matter); other keys of a marker already there (`format`) are kept. The folder handed to `guarded_push` must carry it.
- `guarded_push(api, repo_id, folder, *, kind, commit_message, delete_patterns=(),
  private=False, revision=None, replace_foreign=None, dry_run=False, say=...) -> PushPlan`:
  uploads every file under `folder` (paths relative to it) in ONE commit, deleting remote files
  that match `delete_patterns` and are not uploaded (`.gitattributes` never). In order: the
  token (`api.whoami()`: a missing, invalid or read-only token fails with the Hub's word), the
  remote (as above), then the writes: create the repo (`exist_ok=False`), create the branch
  `revision` if new, one `create_commit` with `parent_commit` = the commit that was checked, so
  a repo changed meanwhile is not overwritten either. `replace_foreign` is the repo id given
  to `--replace-foreign`: it must equal `repo_id`, and lets a refused repo be written, after
  `say` names the repo and the files once more. `dry_run`: every check, no write; the plan
  is returned, and a refusal is still raised (its `plan` says what was found). After a
  write, the returned plan's `url` is the commit's.
- `describe(plan) -> list[str]`: what a plan uploads, replaces and deletes (for `--dry-run`).
- `HubRefusal` (a ValueError): one line, raised before any write.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel

from oab_bench.folders import summarize

MARKER_KEY = "oab_bench"
KINDS = {"dataset": "oab-bench push", "results": "oab-bench push-results"}  # kind -> the command
CARD = "README.md"
REPO_TYPE = "dataset"  # both kinds are dataset repos: the marker's kind tells them apart
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)

Owner = Literal["new", "empty", "ours", "no-card", "no-marker", "other-kind", "unreadable"]
WRITABLE = ("new", "empty", "ours")  # empty: nothing but .gitattributes (a push whose commit failed)


class PushPlan(BaseModel):
    """What a guarded push does to one repo, decided from what was read before any write."""

    repo_id: str
    kind: str
    revision: str | None = None
    private: bool = False
    owner: Owner
    why: str = ""  # for any owner but new and ours: what the card says
    parent: str | None = None  # the commit checked; None for a new repo
    create_branch: bool = False
    forced: bool = False  # --replace-foreign named this repo
    upload: dict[str, int]  # path -> bytes
    replace: list[str]
    delete: list[str]
    url: str | None = None


class HubRefusal(ValueError):
    """A Hub repo we will not write to: one line, before any write; `plan` says what was found."""

    def __init__(self, line: str, plan: PushPlan | None = None):
        super().__init__(line)
        self.plan = plan


def front_matter(text: str) -> tuple[dict, str] | None:
    """A card's YAML front matter and the body after it; None without one (or not a mapping)."""
    m = _FRONT.match(text)
    if not m:
        return None
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        return None
    return (meta, text[m.end() :]) if isinstance(meta, dict) else None


def marker_of(text: str) -> dict | None:
    """Our marker in a card, as found; None when the card carries none (or a malformed one)."""
    found = front_matter(text)
    mark = found[0].get(MARKER_KEY) if found else None
    if isinstance(mark, dict) and KINDS.get(mark.get("kind")) == mark.get("made_by"):
        return mark
    return None


def mark_card(text: str, kind: str) -> str:
    """`text` with our marker of `kind` in its front matter."""
    found = front_matter(text)
    if found is None:
        raise ValueError(f"{CARD}: no YAML front matter (--- ... ---) to carry the oab-bench marker")
    meta, body = found
    kept = meta.get(MARKER_KEY) if isinstance(meta.get(MARKER_KEY), dict) else {}
    meta[MARKER_KEY] = {**kept, "made_by": KINDS[kind], "kind": kind}  # other keys (format) stay
    return f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---\n{body}"


def _local_files(folder: Path, kind: str) -> dict[str, int]:
    files = {
        p.relative_to(folder).as_posix(): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }
    try:
        card = (folder / CARD).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        card = ""
    if (marker_of(card) or {}).get("kind") != kind:
        raise ValueError(f"{folder / CARD}: carries no oab-bench marker of kind {kind!r}: nothing to push")
    return files


def check_token(api, repo_id: str) -> None:
    """Fail before any write when the token is missing, invalid or read-only, with the Hub's word."""
    try:
        me = api.whoami()
    except Exception as e:  # LocalTokenNotFoundError, a 401, offline mode: the library's message
        raise ValueError(
            f"{repo_id}: the Hub token (HF_TOKEN or `hf auth login`) could not be checked: {e}"
        ) from None
    token = (me.get("auth") or {}).get("accessToken") or {}
    name = f"{token.get('displayName', 'the token')!r} of {me.get('name', '?')}"
    if token.get("role") == "read":
        raise ValueError(
            f"{repo_id}: the Hub says the token {name} is read-only (role: read): "
            "writing needs a token with write access (https://huggingface.co/settings/tokens)"
        )
    if token.get("role") == "fineGrained" and not _may_write(token.get("fineGrained") or {}, repo_id):
        raise ValueError(
            f"{repo_id}: the Hub says the fine-grained token {name} has no repo.write permission on "
            f"{repo_id.split('/')[0]} or {repo_id}: writing needs one (https://huggingface.co/settings/tokens)"
        )


def _may_write(grants: dict, repo_id: str) -> bool:
    owner = repo_id.split("/")[0]
    for scope in grants.get("scoped") or []:
        entity = scope.get("entity") or {}
        if entity.get("name") in (owner, repo_id) and "repo.write" in (scope.get("permissions") or []):
            return True
    return "repo.write" in (grants.get("global") or [])


def _read_card(api, repo_id: str, sha: str) -> str:
    with tempfile.TemporaryDirectory(prefix="oab-bench-card-") as tmp:
        path = api.hf_hub_download(repo_id, CARD, repo_type=REPO_TYPE, revision=sha, cache_dir=tmp)
        try:
            return Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return ""


def _owner_of(api, repo_id: str, sha: str, kind: str) -> tuple[Owner, str, list[str]]:
    """Who made the repo at `sha`, why we say so, and its files."""
    from huggingface_hub.errors import GatedRepoError

    try:
        files = api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=sha)
        if set(files) <= {".gitattributes"}:
            return "empty", "", files
        if CARD not in files:
            return "no-card", f"it has no {CARD}, so no oab-bench marker", files
        mark = marker_of(_read_card(api, repo_id, sha))
    except GatedRepoError:
        return "unreadable", "it is gated: this token cannot read its card", []
    if mark is None:
        return "no-marker", f"its {CARD} carries no oab-bench marker", files
    if mark["kind"] != kind:
        return "other-kind", f"its card says `{mark['made_by']}` made it (kind: {mark['kind']})", files
    return "ours", "", files


def plan_push(
    api,
    repo_id: str,
    folder: Path,
    *,
    kind: str,
    delete_patterns: Iterable[str] = (),
    private: bool = False,
    revision: str | None = None,
) -> PushPlan:
    """Read the target (never write) and decide: see the module's docstring."""
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
    from huggingface_hub.utils import filter_repo_objects

    upload = _local_files(Path(folder), kind)
    plan = {"repo_id": repo_id, "kind": kind, "revision": revision, "private": private, "upload": upload}
    try:
        head = api.repo_info(repo_id, repo_type=REPO_TYPE)
    except GatedRepoError:
        return PushPlan(**plan, owner="unreadable", why="it is gated", replace=[], delete=[])
    except RepositoryNotFoundError:  # or private to someone else: create_repo(exist_ok=False) tells
        return PushPlan(**plan, owner="new", create_branch=bool(revision), replace=[], delete=[])
    target, new_branch = head.sha, False
    if revision:
        try:
            target = api.repo_info(repo_id, repo_type=REPO_TYPE, revision=revision).sha
        except RevisionNotFoundError:
            new_branch = True  # made from the default branch's head
    owner: Owner = "ours"
    why = ""
    for sha in dict.fromkeys((head.sha, target)):  # the repo's card, and the branch's if it has one
        found, reason, files = _owner_of(api, repo_id, sha, kind)
        if found == "empty" and owner == "ours":
            owner = found
        elif found not in WRITABLE and owner in WRITABLE:
            owner, why = found, reason + (f" (on {revision})" if sha != head.sha else "")
    deletable = filter_repo_objects(files, allow_patterns=list(delete_patterns)) if delete_patterns else []
    return PushPlan(
        **plan,
        owner=owner,
        why=why,
        parent=target,
        create_branch=new_branch,
        replace=[f for f in files if f in upload],
        delete=sorted(f for f in deletable if f not in upload and f != ".gitattributes"),
    )


def _where(plan: PushPlan) -> str:
    return plan.repo_id + (f" (branch {plan.revision})" if plan.revision else "")


def _changes(plan: PushPlan) -> str:
    return f"it would replace {summarize(plan.replace) or 'nothing'} and delete {summarize(plan.delete) or 'nothing'}"


def refusal(plan: PushPlan, replace_foreign: str | None = None) -> str | None:
    """The one-line refusal, or None when the plan may be carried out."""
    if plan.owner in WRITABLE or (replace_foreign == plan.repo_id and plan.owner != "unreadable"):
        return None
    if plan.owner == "unreadable":
        return f"{plan.repo_id}: {plan.why}: this token cannot read its card, so it is not written; check --repo-id"
    return (
        f"{_where(plan)}: {plan.why}, so `{KINDS[plan.kind]}` did not make it: refusing to write to it; "
        f"{_changes(plan)} (check --repo-id, or pass --replace-foreign {plan.repo_id} to replace them)"
    )


def describe(plan: PushPlan) -> list[str]:
    """What the plan does, one line per file: for `--dry-run`."""
    if plan.owner == "new":
        head = f"{plan.repo_id} does not exist: would create it ({'private' if plan.private else 'public'})"
    elif plan.owner == "empty":
        head = f"{_where(plan)} holds nothing but .gitattributes: would fill it (at commit {plan.parent})"
    elif plan.owner == "ours":
        head = f"{_where(plan)} was made by `{KINDS[plan.kind]}`: would update it (at commit {plan.parent})"
    else:
        then = "would be written anyway (--replace-foreign)" if plan.forced else "refused, not written"
        head = f"{_where(plan)}: {plan.why}: {then}"
    if plan.create_branch:
        head += f" and create the branch {plan.revision}"
    lines = [head]
    lines += [
        f"  {'replace' if p in plan.replace else 'upload '} {p} ({n:,} bytes)" for p, n in plan.upload.items()
    ]
    lines += [f"  delete  {p}" for p in plan.delete]
    lines.append(
        f"{len(plan.upload)} files to upload ({len(plan.replace)} replacing), {len(plan.delete)} to delete; "
        "dry run: nothing was written"
    )
    return lines


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def guarded_push(
    api,
    repo_id: str,
    folder: Path,
    *,
    kind: str,
    commit_message: str,
    delete_patterns: Iterable[str] = (),
    private: bool = False,
    revision: str | None = None,
    replace_foreign: str | None = None,
    dry_run: bool = False,
    say: Callable[[str], None] = _stderr,
) -> PushPlan:
    """Check, then write in one commit: see the module's docstring."""
    if replace_foreign is not None and replace_foreign != repo_id:
        raise ValueError(
            f"--replace-foreign {replace_foreign} does not name --repo-id {repo_id}: nothing written"
        )
    folder = Path(folder)
    _local_files(folder, kind)  # a folder without our marker fails before the Hub is asked anything
    check_token(api, repo_id)
    plan = plan_push(
        api, repo_id, folder, kind=kind, delete_patterns=delete_patterns, private=private, revision=revision
    )
    line = refusal(plan, replace_foreign)
    if line:
        raise HubRefusal(line, plan)
    plan.forced = plan.owner not in WRITABLE
    if dry_run:
        return plan
    if plan.forced:
        say(f"--replace-foreign {repo_id}: writing to {_where(plan)} although {plan.why}: {_changes(plan)}")
    return plan.model_copy(update={"url": _write(api, plan, folder, commit_message)})


def _write(api, plan: PushPlan, folder: Path, commit_message: str) -> str:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.errors import HfHubHTTPError

    parent = plan.parent
    if plan.owner == "new":
        try:
            api.create_repo(plan.repo_id, repo_type=REPO_TYPE, private=plan.private, exist_ok=False)
        except HfHubHTTPError as e:
            if e.response is not None and e.response.status_code == 409:
                raise HubRefusal(
                    f"{plan.repo_id} exists but this token cannot read it (private to someone else?): "
                    "not written; check --repo-id"
                ) from None
            raise
        parent = api.repo_info(plan.repo_id, repo_type=REPO_TYPE).sha
    if plan.create_branch:
        api.create_branch(plan.repo_id, repo_type=REPO_TYPE, branch=plan.revision, revision=parent)
    operations = [CommitOperationDelete(path_in_repo=p) for p in plan.delete]
    operations += [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(folder / p)) for p in plan.upload]
    info = api.create_commit(
        plan.repo_id,
        operations,
        commit_message=commit_message,
        repo_type=REPO_TYPE,
        revision=plan.revision,
        parent_commit=parent,  # the commit checked: a repo changed meanwhile fails instead
    )
    return str(getattr(info, "commit_url", info))
