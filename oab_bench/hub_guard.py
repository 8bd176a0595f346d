"""Never write to a Hub repo we did not make: our marker in its card, read at the commit written on, then one
`create_commit` on that commit (`push`, `push-results`; docs/sharing.md)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from oab_bench.folders import summarize

MARKER_KEY = "oab_bench"
KINDS = {"dataset": "oab-bench push", "results": "oab-bench push-results"}  # kind -> the command
CARD = "README.md"
WRITABLE = ("new", "empty", "ours")
GATED = "it is gated: this token cannot read its card"


def card_data(text: str) -> dict | None:
    """A card's YAML front matter as the Hub reads it; None without one, or when it is not a mapping."""
    import yaml
    from huggingface_hub import DatasetCard
    from huggingface_hub.repocard import REGEX_YAML_BLOCK

    try:
        return DatasetCard(text).data.to_dict() if REGEX_YAML_BLOCK.search(text) else None
    except (ValueError, yaml.YAMLError):
        return None


def marker_of(text: str) -> dict | None:
    mark = (card_data(text) or {}).get(MARKER_KEY)
    return mark if isinstance(mark, dict) and KINDS.get(mark.get("kind")) == mark.get("made_by") else None


def mark_card(text: str, kind: str) -> str:
    """`text` with our marker of `kind` in its front matter; its other keys stay."""
    from huggingface_hub import DatasetCard

    meta = card_data(text)
    if meta is None:
        raise ValueError(f"{CARD}: no YAML front matter (--- ... ---) to carry the oab-bench marker")
    card, kept = DatasetCard(text), meta.get(MARKER_KEY)
    card.data[MARKER_KEY] = {**(kept if isinstance(kept, dict) else {}), "made_by": KINDS[kind], "kind": kind}
    return str(card)


class PushPlan(BaseModel):
    """What a guarded push does to one repo, decided from what was read before any write."""

    repo_id: str
    kind: str
    revision: str | None
    private: bool
    owner: str = "new"  # one of WRITABLE, else why the repo is not ours
    parent: str | None = None  # the commit checked; None for a new repo
    create_branch: bool = False
    upload: dict[str, int]  # path -> bytes
    replace: list[str] = []
    delete: list[str] = []

    @property
    def where(self) -> str:
        return self.repo_id + (f" (branch {self.revision})" if self.revision else "")

    def lines(self, refused: bool) -> list[str]:
        """`--dry-run`'s plan, one line per file."""
        at, visibility = f"(at commit {self.parent})", "private" if self.private else "public"
        head = {
            "new": f"{self.repo_id} does not exist: would create it ({visibility})",
            "empty": f"{self.where} holds nothing but .gitattributes: would fill it {at}",
            "ours": f"{self.where} was made by `{KINDS[self.kind]}`: would update it {at}",
        }.get(self.owner, f"{self.where}: {self.owner}: ")
        if self.owner not in WRITABLE:
            head += "refused, not written" if refused else "would be written anyway (--replace-foreign)"
        out = [head + (f" and create the branch {self.revision}" if self.create_branch else "")]
        verb = {p: "replace" if p in self.replace else "upload " for p in self.upload}
        out += [f"  {verb[p]} {p} ({n:,} bytes)" for p, n in self.upload.items()]
        out += [f"  delete  {p}" for p in self.delete]
        counts = f"{len(self.upload)} files to upload ({len(self.replace)} replacing), {len(self.delete)}"
        return [*out, counts + " to delete; dry run: nothing was written"]


def check_token(api, repo_id: str) -> None:
    """Fail before any write when the token is missing, invalid or may not write, with the Hub's word."""
    try:
        me = api.whoami()
    except Exception as e:  # LocalTokenNotFoundError, a 401, offline mode: the library's message
        why = "the Hub token (HF_TOKEN or `hf auth login`) could not be checked"
        raise ValueError(f"{repo_id}: {why}: {e}") from None
    token, owner = (me.get("auth") or {}).get("accessToken") or {}, repo_id.split("/")[0]
    grants, role = token.get("fineGrained") or {}, token.get("role")
    names = (owner, repo_id)
    scopes = [s for s in grants.get("scoped") or [] if (s.get("entity") or {}).get("name") in names]
    granted = [*(grants.get("global") or []), *(p for s in scopes for p in s.get("permissions") or [])]
    if role == "read" or (role == "fineGrained" and "repo.write" not in granted):
        why = "is read-only (role: read)" if role == "read" else f"has no repo.write on {owner} or {repo_id}"
        name = f"{token.get('displayName', 'the token')!r} of {me.get('name', '?')}"
        fix = "writing needs a token with write access (https://huggingface.co/settings/tokens)"
        raise ValueError(f"{repo_id}: the Hub says the token {name} {why}: {fix}")


def plan_push(api, plan: PushPlan, delete_patterns: Iterable[str]) -> PushPlan:
    """Read, never write: who made the target (its card at the branch's head or the default's), what goes."""
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
    from huggingface_hub.utils import filter_repo_objects

    try:
        plan.parent = api.repo_info(plan.repo_id, repo_type="dataset").sha
    except RepositoryNotFoundError:  # or private to someone else: create_repo(exist_ok=False) tells
        return plan.model_copy(update={"create_branch": bool(plan.revision)})
    try:
        plan.parent = api.repo_info(plan.repo_id, repo_type="dataset", revision=plan.revision).sha
    except RevisionNotFoundError:
        plan.create_branch = True  # made from the default branch's head
    files = api.list_repo_files(plan.repo_id, repo_type="dataset", revision=plan.parent)
    plan.owner = "empty" if set(files) <= {".gitattributes"} else f"it has no {CARD}, so no oab-bench marker"
    if CARD in files:
        try:
            with tempfile.TemporaryDirectory(prefix="oab-bench-card-") as tmp:
                at = {"repo_type": "dataset", "revision": plan.parent, "cache_dir": tmp}
                path = api.hf_hub_download(plan.repo_id, CARD, **at)
                mark = marker_of(Path(path).read_text(encoding="utf-8", errors="replace"))
            plan.owner = (
                f"its {CARD} carries no oab-bench marker" if mark is None
                else "ours" if mark["kind"] == plan.kind
                else f"its card says `{mark['made_by']}` made it (kind: {mark['kind']})"
            )  # fmt: skip
        except GatedRepoError:
            plan.owner = GATED
    plan.replace = [f for f in files if f in plan.upload]
    deletable = filter_repo_objects(files, allow_patterns=list(delete_patterns))
    plan.delete = sorted(f for f in deletable if f not in plan.upload and f != ".gitattributes")
    return plan


def guarded_push(
    api, args: argparse.Namespace, card: str, files: dict[str, bytes], *, kind: str, delete: Iterable[str]
) -> str | None:
    """Upload `files` and `card` (marked ours of `kind`) in one commit, deleting the remote files matching
    `delete` not uploaded; `args`: cmd_push.add_hub_arguments'. The commit's URL (None: a dry run)."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.errors import HfHubHTTPError

    repo_id, forcing = args.repo_id, args.replace_foreign
    if forcing is not None and forcing != repo_id:
        raise ValueError(f"--replace-foreign {forcing} does not name --repo-id {repo_id}: nothing written")
    files = {CARD: mark_card(card, kind).encode(), **files}
    check_token(api, repo_id)
    sizes = {p: len(d) for p, d in sorted(files.items())}
    plan = PushPlan(repo_id=repo_id, kind=kind, revision=args.revision, private=args.private, upload=sizes)
    plan = plan_push(api, plan, delete)
    forced = plan.owner not in WRITABLE
    refused = forced and (forcing != repo_id or plan.owner == GATED)
    if args.dry_run:
        print("\n".join(plan.lines(refused)))
    replaced, deleted = (summarize(paths) or "nothing" for paths in (plan.replace, plan.delete))
    changes = f"it would replace {replaced} and delete {deleted}"
    if refused and plan.owner == GATED:
        raise ValueError(f"{repo_id}: {GATED}, so it is not written; check --repo-id")
    if refused:
        why = f"{plan.owner}, so `{KINDS[kind]}` did not make it: refusing to write to it; {changes}"
        fix = f"check --repo-id, or pass --replace-foreign {repo_id} to replace them"
        raise ValueError(f"{plan.where}: {why} ({fix})")
    if args.dry_run:
        return None
    if forced:
        why = f"writing to {plan.where} although {plan.owner}: {changes}"
        print(f"--replace-foreign {repo_id}: {why}", file=sys.stderr)
    if plan.owner == "new":
        try:
            api.create_repo(repo_id, repo_type="dataset", private=plan.private, exist_ok=False)
        except HfHubHTTPError as e:
            if e.response is not None and e.response.status_code == 409:
                why = "exists but this token cannot read it (private to someone else?): not written"
                raise ValueError(f"{repo_id} {why}; check --repo-id") from None
            raise
        plan.parent = api.repo_info(repo_id, repo_type="dataset").sha
    if plan.create_branch:
        api.create_branch(repo_id, repo_type="dataset", branch=plan.revision, revision=plan.parent)
    operations = [CommitOperationDelete(path_in_repo=p) for p in plan.delete]
    operations += [CommitOperationAdd(p, d) for p, d in files.items()]
    at = dict(repo_type="dataset", revision=plan.revision, parent_commit=plan.parent)  # refused if it moved
    message = f"Update OAB-Bench {kind} ({KINDS[kind]})"
    return api.create_commit(repo_id, operations, commit_message=message, **at).commit_url
