"""Bearer tokens: only their hashes on disk, the right user back for the right token, nothing otherwise."""

from __future__ import annotations

import datetime as dt
import json
import stat
from pathlib import Path

import pytest

from controlplane.clusterfiles import RECHECK_SECONDS, Recheck
from controlplane.identity import SYSTEM_MASTERS, UserInfo
from controlplane.tokens import TOKENS_FILE, TokenRegistry, token_hash


def test_only_the_hash_of_a_token_is_stored(tmp_path: Path) -> None:
    registry = TokenRegistry.load(tmp_path)
    token = registry.issue("admin", [SYSTEM_MASTERS])
    text = (tmp_path / TOKENS_FILE).read_text()
    assert token not in text
    assert token_hash(token) in text
    document = json.loads(text)
    assert document["version"] == 1
    [entry] = document["tokens"]
    assert entry["sha256"] == token_hash(token)
    assert entry["user"]["username"] == "admin"
    assert entry["user"]["groups"] == [SYSTEM_MASTERS]
    assert stat.S_IMODE((tmp_path / TOKENS_FILE).stat().st_mode) == 0o600
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_token_authenticates_its_user(tmp_path: Path) -> None:
    registry = TokenRegistry.load(tmp_path)
    token = registry.issue("admin", [SYSTEM_MASTERS], uid="u-1")
    assert registry.authenticate(token) == UserInfo("admin", "u-1", (SYSTEM_MASTERS,))
    # And after a restart, from the file.
    assert TokenRegistry.load(tmp_path).authenticate(token) == UserInfo("admin", "u-1", (SYSTEM_MASTERS,))


@pytest.mark.parametrize("wrong", ["", "x", "not-a-token" * 3, "a" * 10_000])
def test_a_wrong_token_is_nobody(tmp_path: Path, wrong: str) -> None:
    registry = TokenRegistry.load(tmp_path)
    token = registry.issue("alice")
    assert registry.authenticate(wrong) is None
    assert registry.authenticate(token[:-1]) is None
    assert registry.authenticate(token + "x") is None


def test_tokens_are_random_and_each_issue_is_a_new_token(tmp_path: Path) -> None:
    registry = TokenRegistry.load(tmp_path)
    first, second = registry.issue("admin", [SYSTEM_MASTERS]), registry.issue("admin", [SYSTEM_MASTERS])
    assert first != second
    assert len(first) >= 43
    user_first, user_second = registry.authenticate(first), registry.authenticate(second)
    assert user_first is not None and user_second is not None
    # The same person: the uid of the first token is kept for the next.
    assert user_first.uid == user_second.uid != ""
    assert registry.authenticate(registry.issue("bob")) != user_first
    assert len(registry) == 3


def test_a_token_issued_by_another_process_works_at_once(tmp_path: Path) -> None:
    serving = TokenRegistry.load(tmp_path)  # as runlab's API server holds it
    before = serving.issue("alice")
    token = TokenRegistry.load(tmp_path).issue("bob", ["students"])  # as `manage.py kubeconfig`
    user = serving.authenticate(token)
    assert user is not None and (user.username, user.groups) == ("bob", ("students",))
    assert serving.authenticate(before) is not None  # the other process kept alice's token


def test_revoke_forgets_every_token_of_a_user(tmp_path: Path) -> None:
    registry = TokenRegistry.load(tmp_path)
    tokens = [registry.issue("alice"), registry.issue("alice")]
    bob = registry.issue("bob")
    assert registry.revoke("alice") == 2
    assert all(registry.authenticate(t) is None for t in tokens)
    assert registry.authenticate(bob) is not None
    assert TokenRegistry.load(tmp_path).authenticate(tokens[0]) is None
    assert registry.revoke("nobody") == 0


def test_entries_say_who_and_when_but_not_the_token(tmp_path: Path) -> None:
    registry = TokenRegistry.load(tmp_path, now=lambda: dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC))
    token = registry.issue("alice", ["students"])
    [entry] = registry.entries()
    assert entry.issued == "2030-01-02T03:04:05Z"
    assert entry.user.username == "alice"
    assert token not in repr(entry)


def test_an_empty_registry_writes_nothing(tmp_path: Path) -> None:
    registry = TokenRegistry.load(tmp_path)
    assert registry.authenticate("anything") is None
    assert len(registry) == 0
    assert not (tmp_path / TOKENS_FILE).exists()


def test_a_damaged_registry_is_an_error_on_load(tmp_path: Path) -> None:
    (tmp_path / TOKENS_FILE).write_text('{"version": 1, "tokens": [{"sha256": "short"}]}')
    with pytest.raises(RuntimeError, match="cannot read the token registry"):
        TokenRegistry.load(tmp_path)


def test_a_user_needs_a_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="user name"):
        TokenRegistry.load(tmp_path).issue("")


def test_user_info_json_round_trip() -> None:
    user = UserInfo.create("alice", uid="u", groups=["a", "b", "a"], extra={"k": ["v"]})
    assert user.groups == ("a", "b")
    assert user.to_json() == {"username": "alice", "uid": "u", "groups": ["a", "b"], "extra": {"k": ["v"]}}
    assert UserInfo.from_json(user.to_json()) == user
    assert UserInfo("bob").to_json() == {"username": "bob"}
    assert UserInfo("bob").with_groups("system:authenticated").groups == ("system:authenticated",)
    with pytest.raises(ValueError, match="username"):
        UserInfo.from_json({"groups": []})


def test_a_token_revoked_by_another_process_stops_working_within_a_recheck(tmp_path: Path) -> None:
    serving = TokenRegistry.load(tmp_path)
    clock = [0.0]
    serving.recheck = Recheck(monotonic=lambda: clock[0])
    token = serving.issue("alice")
    assert serving.authenticate(token) is not None
    assert TokenRegistry.load(tmp_path).revoke("alice") == 1
    assert serving.authenticate(token) is not None  # the file was looked at a moment ago
    clock[0] += RECHECK_SECONDS
    assert serving.authenticate(token) is None, "a revoked token still worked after a recheck interval"


def test_an_unknown_token_has_the_file_read_again_within_the_interval(tmp_path: Path) -> None:
    serving = TokenRegistry.load(tmp_path)
    serving.recheck = Recheck(monotonic=lambda: 0.0)  # the interval never passes
    assert serving.authenticate("not-a-token") is None
    token = TokenRegistry.load(tmp_path).issue("bob")  # manage.py kubeconfig's
    user = serving.authenticate(token)
    assert user is not None and user.username == "bob", "an unknown token did not make the file be read"


def test_a_registry_damaged_while_serving_accepts_no_token(tmp_path: Path) -> None:
    serving = TokenRegistry.load(tmp_path)
    token = serving.issue("alice")
    (tmp_path / TOKENS_FILE).write_text("{ damaged")
    assert serving.authenticate(token) is None
    # Repaired, it is read again.
    (tmp_path / TOKENS_FILE).unlink()
    assert serving.authenticate(serving.issue("bob")) is not None
