"""`oab-bench push` writes only to a Hub repo it made (the marker in the card), and a dry run writes nothing.

Against tests/fake_hub.py: every write the guard could make is counted there.
"""

from __future__ import annotations

import pytest
import yaml

from oab_bench.dataset_builder.build import build_rows
from oab_bench.dataset_builder.publish import DATA_FILE, write_dataset
from oab_bench.hub_guard import card_data, mark_card, marker_of
from oab_bench.scripts.cli import main
from tests import synthetic as syn
from tests.fake_hub import NO_TOKEN, FakeHub

REPO = "me/oab-bench"
FOREIGN_CARD = "---\nlicense: mit\npretty_name: Someone's corpus\n---\n# Someone's dataset\n"


@pytest.fixture
def built(tmp_path):
    """A dataset folder `oab-bench build` wrote: two editions."""
    src = syn.write_source(tmp_path / "src", syn.exam(90) + syn.exam(91, "penal"))
    rows, report = build_rows(src, src / "errata.yaml")
    return write_dataset(rows, report, tmp_path / "ds")


@pytest.fixture
def hub(monkeypatch):
    import huggingface_hub

    fake = FakeHub()
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda *a, **k: fake)
    return fake


def push(built, *extra: str) -> int:
    return main(["push", "--dataset", str(built), "--repo-id", REPO, *extra])


def test_a_new_repo_is_created_and_its_card_carries_our_marker(built, hub, capsys):
    assert push(built) == 0
    assert hub.writes == ["create_repo", "create_commit"]
    create = next(kw for name, _, kw in hub.calls if name == "create_repo")
    assert create["exist_ok"] is False  # a repo that appeared since the check is not written
    files = hub.files(REPO)
    assert sorted(files) == [
        ".gitattributes",
        "README.md",
        DATA_FILE,
        "editions/90/test-00000-of-00001.parquet",
        "editions/91/test-00000-of-00001.parquet",
    ]
    assert marker_of(files["README.md"].decode()) == {"made_by": "oab-bench push", "kind": "dataset"}
    assert f"pushed {built} to {REPO}: https://hub.invalid/" in capsys.readouterr().out


def test_our_repo_is_updated_in_one_commit_on_the_commit_checked(built, hub, tmp_path):
    assert push(built) == 0
    hub.repos[REPO]["main"][-1][1]["editions/89/test-00000-of-00001.parquet"] = b"an edition no longer built"
    checked = hub.repos[REPO]["main"][-1][0]
    hub.calls.clear()
    assert push(built) == 0
    assert hub.writes == ["create_commit"]
    commit = next(kw for name, _, kw in hub.calls if name == "create_commit")
    assert commit["parent_commit"] == checked  # a repo changed since the check fails, not overwritten
    assert "editions/89/test-00000-of-00001.parquet" not in hub.files(REPO)  # deleted, as before
    assert ".gitattributes" in hub.files(REPO)


def foreign(hub):
    hub.seed(REPO, {"README.md": FOREIGN_CARD, "data/train-00000-of-00001.parquet": b"PAR1 theirs"})


def no_card(hub):
    hub.seed(REPO, {"data/train-00000-of-00001.parquet": b"PAR1 theirs"})


def other_kind(hub):
    card = mark_card("---\nlicense: apache-2.0\n---\n# Our results\n", "results")
    hub.seed(REPO, {"README.md": card, "data/test-00000-of-00001.parquet": b"PAR1 our leaderboard"})


def bad_marker(hub):  # a marker whose command is not the one of its kind: not ours
    card = "---\noab_bench: {made_by: someone, kind: dataset}\n---\n"
    hub.seed(REPO, {"README.md": card, "data/train-00000-of-00001.parquet": b"PAR1 theirs"})


@pytest.mark.parametrize(
    ("seed", "why"),
    [
        (foreign, "its README.md carries no oab-bench marker"),
        (no_card, "it has no README.md, so no oab-bench marker"),
        (other_kind, "its card says `oab-bench push-results` made it (kind: results)"),
        (bad_marker, "its README.md carries no oab-bench marker"),
    ],
)
def test_a_repo_we_did_not_make_is_refused_in_one_line_with_zero_writes(built, hub, capsys, seed, why):
    seed(hub)
    before = dict(hub.files(REPO))
    assert push(built) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"oab-bench push: error: {REPO}: {why}, so `oab-bench push` did not make it")
    assert f"--replace-foreign {REPO}" in err
    if seed is other_kind:
        assert f"would replace README.md, {DATA_FILE} and delete nothing" in err
    else:
        assert "and delete data/train-00000-of-00001.parquet" in err
    assert hub.writes == [] and hub.files(REPO) == before


def test_replace_foreign_must_name_the_repo_and_then_names_the_files_again(built, hub, capsys):
    foreign(hub)
    assert push(built, "--replace-foreign", "me/other") == 2
    assert "--replace-foreign me/other does not name --repo-id me/oab-bench" in capsys.readouterr().err
    assert hub.writes == []
    assert push(built, "--replace-foreign", REPO) == 0
    err = capsys.readouterr().err
    assert (
        f"--replace-foreign {REPO}: writing to {REPO} although its README.md carries no oab-bench marker"
        in err
    )
    assert "it would replace README.md and delete data/train-00000-of-00001.parquet" in err
    assert hub.writes == ["create_commit"]
    assert marker_of(hub.files(REPO)["README.md"].decode())["kind"] == "dataset"  # ours from now on


def test_dry_run_prints_the_plan_and_writes_nothing(built, hub, capsys):
    assert push(built, "--dry-run") == 0
    out = capsys.readouterr().out
    assert f"{REPO} does not exist: would create it (public)" in out
    assert f"  upload  {DATA_FILE} (" in out and "dry run: nothing was written" in out
    assert hub.writes == [] and REPO not in hub.repos

    assert push(built) == 0
    hub.calls.clear()
    hub.repos[REPO]["main"][-1][1]["editions/89/test-00000-of-00001.parquet"] = b"old"
    assert push(built, "--dry-run") == 0
    out = capsys.readouterr().out
    assert f"{REPO} was made by `oab-bench push`: would update it" in out
    assert "  replace README.md (" in out and "  delete  editions/89/test-00000-of-00001.parquet" in out
    assert hub.writes == []


def test_dry_run_of_a_foreign_repo_shows_the_plan_then_the_refusal(built, hub, capsys):
    foreign(hub)
    assert push(built, "--dry-run") == 2
    got = capsys.readouterr()
    assert "refused, not written" in got.out and "  delete  data/train-00000-of-00001.parquet" in got.out
    assert "refusing to write to it" in got.err
    assert hub.writes == []


@pytest.mark.parametrize(
    ("token", "said"),
    [
        (NO_TOKEN, "the Hub token (HF_TOKEN or `hf auth login`) could not be checked: Token is required"),
        (
            {"name": "me", "auth": {"accessToken": {"displayName": "ro", "role": "read"}}},
            "the Hub says the token 'ro' of me is read-only (role: read)",
        ),
        (
            {
                "name": "me",
                "auth": {
                    "accessToken": {
                        "displayName": "fg",
                        "role": "fineGrained",
                        "fineGrained": {
                            "global": [],
                            "scoped": [
                                {
                                    "entity": {"type": "user", "name": "me"},
                                    "permissions": ["repo.content.read"],
                                }
                            ],
                        },
                    }
                },
            },
            "has no repo.write on me or me/oab-bench",
        ),
    ],
)
def test_a_missing_or_read_only_token_fails_before_any_read_or_write(built, hub, capsys, token, said):
    hub.token = token
    assert push(built) == 2
    assert said in capsys.readouterr().err
    assert [name for name, _, _ in hub.calls] == ["whoami"]


def test_a_fine_grained_token_with_write_on_the_owner_may_push(built, hub):
    grants = {
        "global": [],
        "scoped": [{"entity": {"type": "user", "name": "me"}, "permissions": ["repo.write"]}],
    }
    hub.token = {"name": "me", "auth": {"accessToken": {"role": "fineGrained", "fineGrained": grants}}}
    assert push(built) == 0 and hub.writes == ["create_repo", "create_commit"]


def test_a_repo_private_to_someone_else_is_not_written(built, hub, capsys):
    foreign(hub)
    hub.hidden.add(REPO)  # reads as missing; creating it conflicts
    assert push(built) == 2
    assert f"{REPO} exists but this token cannot read it" in capsys.readouterr().err
    assert hub.writes == ["create_repo"]  # refused by the Hub: nothing created, nothing committed
    assert sorted(hub.files(REPO)) == [".gitattributes", "README.md", "data/train-00000-of-00001.parquet"]


def test_a_gated_repo_whose_card_cannot_be_read_is_refused(built, hub, capsys):
    foreign(hub)
    hub.gated.add(REPO)
    assert push(built, "--replace-foreign", REPO) == 2  # what cannot be read cannot be listed: no override
    assert "it is gated: this token cannot read its card" in capsys.readouterr().err
    assert hub.writes == []


def test_a_new_branch_of_our_repo_starts_at_the_commit_checked(built, hub):
    assert push(built) == 0
    head = hub.repos[REPO]["main"][-1][0]
    hub.calls.clear()
    assert push(built, "--revision", "v1") == 0
    assert hub.writes == ["create_branch", "create_commit"]
    branch = next(kw for name, _, kw in hub.calls if name == "create_branch")
    assert branch["revision"] == head


def test_a_branch_is_checked_as_well_as_the_repo(built, hub, capsys):
    assert push(built) == 0
    hub.seed(REPO, {"README.md": FOREIGN_CARD}, branch="theirs")
    hub.calls.clear()
    assert push(built, "--revision", "theirs") == 2
    assert f"{REPO} (branch theirs): its README.md carries no oab-bench marker, so" in capsys.readouterr().err
    assert hub.writes == []


def test_the_pushed_card_keeps_its_metadata_and_the_marker_survives_a_round_trip(built, hub):
    assert push(built) == 0
    card = hub.files(REPO)["README.md"].decode()
    meta = card_data(card)
    assert meta["license"] == "apache-2.0" and [c["config_name"] for c in meta["configs"]][:2] == [
        "default",
        "edition_90",
    ]
    assert meta["oab_bench"] == {"made_by": "oab-bench push", "kind": "dataset"}
    assert yaml.safe_load(card.split("---\n")[1]) == meta and "\n# OAB-Bench\n" in card
    assert f'load_dataset("{REPO}", "edition_91", split="test")' in card
    assert marker_of(mark_card(card, "dataset")) == meta["oab_bench"]  # marking twice: one marker


def test_a_push_whose_commit_failed_can_be_run_again(built, hub, monkeypatch, capsys):
    """create_repo done, create_commit failed: the repo holds only .gitattributes, nothing to lose."""
    real = hub.create_commit

    def fails(*a, **kw):
        hub.calls.append(("create_commit", a, kw))
        raise OSError("connection reset")

    monkeypatch.setattr(hub, "create_commit", fails, raising=False)
    assert push(built) == 2 and sorted(hub.files(REPO)) == [".gitattributes"]
    monkeypatch.setattr(hub, "create_commit", real, raising=False)
    assert push(built, "--dry-run") == 0
    assert f"{REPO} holds nothing but .gitattributes: would fill it" in capsys.readouterr().out
    hub.calls.clear()
    assert push(built) == 0 and hub.writes == ["create_commit"]
    assert marker_of(hub.files(REPO)["README.md"].decode())["kind"] == "dataset"
