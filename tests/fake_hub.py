"""A fake `HfApi` holding dataset repos in memory: the calls hub_guard makes, with the Hub's
error types, every write counted. Any other method is an AttributeError, so a call the guard
does not expect fails loudly instead of passing silently."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import httpx
from huggingface_hub import CommitOperationAdd, CommitOperationDelete
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    LocalTokenNotFoundError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

WRITES = ("create_repo", "create_branch", "create_commit")
WRITE_TOKEN = {"name": "me", "auth": {"accessToken": {"displayName": "laptop", "role": "write"}}}
NO_TOKEN = "no token"


def _response(status: int) -> httpx.Response:
    return httpx.Response(status, request=httpx.Request("GET", "https://hub.invalid/api"))


def _sha(files: dict[str, bytes], parent: str) -> str:
    h = hashlib.sha1(parent.encode())
    for path, data in sorted(files.items()):
        h.update(path.encode() + b"\0" + data)
    return h.hexdigest()


class FakeHub:
    """`repos[repo_id][branch]` is a list of commits `(sha, {path: bytes})`, newest last."""

    def __init__(self, token: dict | str = WRITE_TOKEN):
        self.token = token
        self.repos: dict[str, dict[str, list[tuple[str, dict[str, bytes]]]]] = {}
        self.hidden: set[str] = set()  # private to someone else: 404 to read, 409 to create
        self.gated: set[str] = set()
        self.calls: list[tuple[str, tuple, dict]] = []

    # the test's side
    def seed(self, repo_id: str, files: dict[str, str | bytes], branch: str = "main") -> None:
        files = {p: d.encode() if isinstance(d, str) else d for p, d in files.items()}
        files.setdefault(".gitattributes", b"*.parquet filter=lfs\n")
        self.repos.setdefault(repo_id, {})[branch] = [(_sha(files, branch), files)]

    def files(self, repo_id: str, branch: str = "main") -> dict[str, bytes]:
        return self.repos[repo_id][branch][-1][1]

    @property
    def writes(self) -> list[str]:
        return [name for name, _, _ in self.calls if name in WRITES]

    def __getattr__(self, name: str):
        raise AttributeError(f"FakeHub has no {name}: the guard called something unexpected")

    # the HfApi side
    def _log(self, name: str, *args, **kwargs) -> None:
        self.calls.append((name, args, kwargs))

    def _head(self, repo_id: str, revision: str | None):
        if repo_id not in self.repos or repo_id in self.hidden:
            raise RepositoryNotFoundError(f"404 Repository Not Found for {repo_id}", response=_response(404))
        branches = self.repos[repo_id]
        for commits in branches.values():
            for sha, files in commits:
                if revision == sha:
                    return sha, files
        if (revision or "main") not in branches:
            raise RevisionNotFoundError(f"404 Revision Not Found: {revision}", response=_response(404))
        return branches[revision or "main"][-1]

    def whoami(self, token=None, **kw):
        self._log("whoami")
        if self.token == NO_TOKEN:
            raise LocalTokenNotFoundError(
                "Token is required to call the /whoami-v2 endpoint, but no token found."
            )
        return self.token

    def repo_info(self, repo_id, *, repo_type=None, revision=None, **kw):
        self._log("repo_info", repo_id, revision=revision)
        assert repo_type == "dataset"
        sha, _ = self._head(repo_id, revision)
        return SimpleNamespace(id=repo_id, sha=sha)

    def list_repo_files(self, repo_id, *, repo_type=None, revision=None, **kw):
        self._log("list_repo_files", repo_id, revision=revision)
        return sorted(self._head(repo_id, revision)[1])

    def hf_hub_download(self, repo_id, filename, *, repo_type=None, revision=None, cache_dir=None, **kw):
        self._log("hf_hub_download", repo_id, filename, revision=revision)
        if repo_id in self.gated:
            raise GatedRepoError(f"Access to {repo_id} is restricted", response=_response(403))
        files = self._head(repo_id, revision)[1]
        if filename not in files:
            raise RemoteEntryNotFoundError(f"404 {filename}", response=_response(404))
        path = Path(cache_dir) / repo_id.replace("/", "--") / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[filename])
        return str(path)

    def create_repo(self, repo_id, *, repo_type=None, private=None, exist_ok=False, **kw):
        self._log("create_repo", repo_id, repo_type=repo_type, private=private, exist_ok=exist_ok)
        if repo_id in self.repos:
            if exist_ok and repo_id not in self.hidden:
                return f"https://hub.invalid/datasets/{repo_id}"
            raise HfHubHTTPError(
                "409 Conflict: You already created this dataset repo", response=_response(409)
            )
        self.seed(repo_id, {})
        return f"https://hub.invalid/datasets/{repo_id}"

    def create_branch(self, repo_id, *, branch, revision=None, repo_type=None, exist_ok=False, **kw):
        self._log("create_branch", repo_id, branch=branch, revision=revision)
        start = self._head(repo_id, revision)
        self.repos[repo_id][branch] = [start]

    def create_commit(
        self, repo_id, operations, *, commit_message, repo_type=None, revision=None, parent_commit=None, **kw
    ):
        operations = list(operations)
        self._log(
            "create_commit", repo_id, operations=operations, revision=revision, parent_commit=parent_commit
        )
        branch = revision or "main"
        head_sha, files = self.repos[repo_id][branch][-1]
        if parent_commit is not None and parent_commit != head_sha:
            raise HfHubHTTPError(
                "412 Precondition Failed: parent commit is not the head", response=_response(412)
            )
        files = dict(files)
        for op in operations:
            if isinstance(op, CommitOperationDelete):
                files.pop(op.path_in_repo)
            elif isinstance(op, CommitOperationAdd):
                data = op.path_or_fileobj
                files[op.path_in_repo] = data if isinstance(data, bytes) else Path(data).read_bytes()
        sha = _sha(files, head_sha)
        self.repos[repo_id][branch].append((sha, files))
        return SimpleNamespace(commit_url=f"https://hub.invalid/datasets/{repo_id}/commit/{sha}")
