"""Never write to a Hub repo we did not make: our marker in its card, read back before any write.

Every card an oab-bench command uploads (`push`, `push-results`) carries in its YAML front matter
`oab_bench: {made_by: "oab-bench push", kind: dataset}` (or `oab-bench push-results`, `results`).
`guarded_push` checks the token first (`whoami`: a missing, invalid or read-only token fails with the
Hub's word), then reads the target: a missing repo is created; one whose card carries our marker of
the same kind, or holding nothing but `.gitattributes` (a push whose commit failed), is updated;
anything else (no card, no marker, our marker of the other kind, a gated card) is refused in one line
naming what would be replaced and deleted, unless `--replace-foreign` names the repo. The write is
one `create_commit` whose `parent_commit` is the commit checked: the Hub itself refuses it if the
repo changed meanwhile. `--dry-run` prints the plan and writes nothing.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from oab_bench.folders import summarize

MARKER_KEY = "oab_bench"
KINDS = {"dataset": "oab-bench push", "results": "oab-bench push-results"}  # kind -> the command
CARD = "README.md"
REPO_TYPE = "dataset"  # both kinds are dataset repos: the marker's kind tells them apart
WRITABLE = ("new", "empty", "ours")
GATED = "it is gated: this token cannot read its card"


class HubRefusal(ValueError):
    """A Hub repo we will not write to: one line, before any write."""


def card_data(text: str) -> dict | None:
    """A card's YAML front matter as the Hub reads it; None without one, or when it is not a mapping."""
    import yaml
    from huggingface_hub import DatasetCard
    from huggingface_hub.repocard import REGEX_YAML_BLOCK

    if not REGEX_YAML_BLOCK.search(text):
        return None
    try:
        return DatasetCard(text).data.to_dict()
    except (ValueError, yaml.YAMLError):
        return None


def marker_of(text: str) -> dict | None:
    """Our marker in a card, as found; None when the card carries none (or a malformed one)."""
    mark = (card_data(text) or {}).get(MARKER_KEY)
    return mark if isinstance(mark, dict) and KINDS.get(mark.get("kind")) == mark.get("made_by") else None


def mark_card(text: str, kind: str) -> str:
    """`text` with our marker of `kind` in its front matter; its other keys (`format`) stay."""
    from huggingface_hub import DatasetCard

    if card_data(text) is None:
        raise ValueError(f"{CARD}: no YAML front matter (--- ... ---) to carry the oab-bench marker")
    card = DatasetCard(text)
    kept = card.data.get(MARKER_KEY)
    card.data[MARKER_KEY] = {**(kept if isinstance(kept, dict) else {}), "made_by": KINDS[kind], "kind": kind}
    return str(card)


class PushPlan(BaseModel):
    """What a guarded push does to one repo, decided from what was read before any write."""

    repo_id: str
    kind: str
    revision: str | None = None
    private: bool = False
    owner: str = "new"  # one of WRITABLE, else why the repo is not ours
    parent: str | None = None  # the commit checked; None for a new repo
    create_branch: bool = False
    upload: dict[str, int]  # path -> bytes
    replace: list[str] = []
    delete: list[str] = []

    @property
    def where(self) -> str:
        return self.repo_id + (f" (branch {self.revision})" if self.revision else "")

    @property
    def changes(self) -> str:
        replace, delete = summarize(self.replace) or "nothing", summarize(self.delete) or "nothing"
        return f"it would replace {replace} and delete {delete}"


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
    grants = token.get("fineGrained") or {}
    owner = repo_id.split("/")[0]
    scoped = [
        s.get("permissions") or []
        for s in grants.get("scoped") or []
        if (s.get("entity") or {}).get("name") in (owner, repo_id)
    ]
    if token.get("role") == "fineGrained" and not any(
        "repo.write" in p for p in [grants.get("global") or [], *scoped]
    ):
        raise ValueError(
            f"{repo_id}: the Hub says the fine-grained token {name} has no repo.write permission on "
            f"{owner} or {repo_id}: writing needs one (https://huggingface.co/settings/tokens)"
        )


def _owner(api, repo_id: str, sha: str, kind: str) -> tuple[str, list[str]]:
    """Who made the repo at `sha` (one of WRITABLE, else why it is not ours), and its files."""
    files = api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=sha)
    if set(files) <= {".gitattributes"}:
        return "empty", files
    if CARD not in files:
        return f"it has no {CARD}, so no oab-bench marker", files
    with tempfile.TemporaryDirectory(prefix="oab-bench-card-") as tmp:
        path = api.hf_hub_download(repo_id, CARD, repo_type=REPO_TYPE, revision=sha, cache_dir=tmp)
        mark = marker_of(Path(path).read_text(encoding="utf-8", errors="replace"))
    if mark is None:
        return f"its {CARD} carries no oab-bench marker", files
    if mark["kind"] != kind:
        return f"its card says `{mark['made_by']}` made it (kind: {mark['kind']})", files
    return "ours", files


def plan_push(api, plan: PushPlan, delete_patterns: Iterable[str]) -> PushPlan:
    """Read the target (never write): who made it, at which commit, what would be replaced and deleted.
    The repo's card is read, and the branch's when `--revision` names one it has."""
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
    from huggingface_hub.utils import filter_repo_objects

    try:
        head = api.repo_info(plan.repo_id, repo_type=REPO_TYPE).sha
    except RepositoryNotFoundError:  # or private to someone else: create_repo(exist_ok=False) tells
        return plan.model_copy(update={"create_branch": bool(plan.revision)})
    plan.parent = head
    if plan.revision:
        try:
            plan.parent = api.repo_info(plan.repo_id, repo_type=REPO_TYPE, revision=plan.revision).sha
        except RevisionNotFoundError:
            plan.create_branch = True  # made from the default branch's head
    owners, files = [], []
    try:
        for sha in dict.fromkeys((head, plan.parent)):
            owner, files = _owner(api, plan.repo_id, sha, plan.kind)
            owners.append(owner + (f" (on {plan.revision})" if sha != head and owner not in WRITABLE else ""))
    except GatedRepoError:
        owners = [GATED]
    plan.owner = next((o for o in owners if o not in WRITABLE), min(owners))  # "empty" before "ours"
    plan.replace = [f for f in files if f in plan.upload]
    deletable = filter_repo_objects(files, allow_patterns=list(delete_patterns))
    plan.delete = sorted(f for f in deletable if f not in plan.upload and f != ".gitattributes")
    return plan


def describe(plan: PushPlan, refused: bool) -> list[str]:
    """What the plan does, one line per file: for `--dry-run`."""
    if plan.owner == "new":
        head = f"{plan.repo_id} does not exist: would create it ({'private' if plan.private else 'public'})"
    elif plan.owner == "empty":
        head = f"{plan.where} holds nothing but .gitattributes: would fill it (at commit {plan.parent})"
    elif plan.owner == "ours":
        head = f"{plan.where} was made by `{KINDS[plan.kind]}`: would update it (at commit {plan.parent})"
    else:
        then = "refused, not written" if refused else "would be written anyway (--replace-foreign)"
        head = f"{plan.where}: {plan.owner}: {then}"
    lines = [head + (f" and create the branch {plan.revision}" if plan.create_branch else "")]
    lines += [
        f"  {'replace' if p in plan.replace else 'upload '} {p} ({n:,} bytes)" for p, n in plan.upload.items()
    ]
    lines += [f"  delete  {p}" for p in plan.delete]
    lines.append(
        f"{len(plan.upload)} files to upload ({len(plan.replace)} replacing), {len(plan.delete)} to delete; "
        "dry run: nothing was written"
    )
    return lines


def guarded_push(
    api,
    repo_id: str,
    card: str,
    files: dict[str, bytes | Path],
    *,
    kind: str,
    commit_message: str,
    delete_patterns: Iterable[str] = (),
    private: bool = False,
    revision: str | None = None,
    replace_foreign: str | None = None,
    dry_run: bool = False,
) -> str | None:
    """Upload `files` and `card` (as README.md, marked as ours of `kind`) in ONE commit, deleting remote
    files matching `delete_patterns` that are not uploaded, after the checks of the module's docstring.
    `replace_foreign` (`--replace-foreign`) must name `repo_id`; it lets a refused repo be written
    (not a gated one), after naming the files once more. Returns the commit's URL (None: a dry run)."""
    if replace_foreign is not None and replace_foreign != repo_id:
        raise ValueError(
            f"--replace-foreign {replace_foreign} does not name --repo-id {repo_id}: nothing written"
        )
    files = {CARD: mark_card(card, kind).encode(), **files}
    sizes = {p: len(d) if isinstance(d, bytes) else d.stat().st_size for p, d in sorted(files.items())}
    check_token(api, repo_id)
    plan = PushPlan(repo_id=repo_id, kind=kind, revision=revision, private=private, upload=sizes)
    plan = plan_push(api, plan, delete_patterns)
    forced = plan.owner not in WRITABLE
    refused = forced and (replace_foreign != repo_id or plan.owner == GATED)
    if dry_run:
        print("\n".join(describe(plan, refused)))
    if refused and plan.owner == GATED:
        raise HubRefusal(f"{repo_id}: {GATED}, so it is not written; check --repo-id")
    if refused:
        raise HubRefusal(
            f"{plan.where}: {plan.owner}, so `{KINDS[kind]}` did not make it: refusing to write to it; "
            f"{plan.changes} (check --repo-id, or pass --replace-foreign {repo_id} to replace them)"
        )
    if dry_run:
        return None
    if forced:
        print(
            f"--replace-foreign {repo_id}: writing to {plan.where} although {plan.owner}: {plan.changes}",
            file=sys.stderr,
        )
    return _write(api, plan, files, commit_message)


def _write(api, plan: PushPlan, files: dict[str, bytes | Path], commit_message: str) -> str:
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
    operations += [
        CommitOperationAdd(path_in_repo=p, path_or_fileobj=d if isinstance(d, bytes) else str(d))
        for p, d in files.items()
    ]
    info = api.create_commit(
        plan.repo_id,
        operations,
        commit_message=commit_message,
        repo_type=REPO_TYPE,
        revision=plan.revision,
        parent_commit=parent,  # the commit checked: a repo changed meanwhile fails instead
    )
    return info.commit_url
