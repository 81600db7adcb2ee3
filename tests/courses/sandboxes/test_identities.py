"""The names in a sandbox: the cluster's, from the account id only, and the identities acting in it."""

from __future__ import annotations

import pytest

from courses import gateway
from courses.sandboxes.identities import CHECKER, sandbox_name, sandbox_owner, student_user


def test_a_sandbox_is_named_after_the_account_id() -> None:
    assert sandbox_name(user_id=42) == "sb-42"
    assert gateway.SANDBOX_PREFIX == "sb-"  # the lab's sign of a sandbox, the same on both sides
    gateway.check_cluster_name(name=sandbox_name(user_id=10**12))  # always a DNS label


@pytest.mark.parametrize(
    ("cluster", "owner"),
    [("sb-42", 42), ("sb-1", 1), ("sb-0", 0), ("sb-042", None), ("sb-", None), ("sb-4a", None),
     ("sb-٤٢", None), ("demo", None), ("team-sb-4", None), ("sb--4", None)],
)  # fmt: skip
def test_only_the_exact_name_has_an_owner(cluster: str, owner: int | None) -> None:
    assert sandbox_owner(cluster) == owner


def test_the_identities_in_a_sandbox() -> None:
    assert student_user(username="alice") == "student:alice"
    assert CHECKER == "kubelab:checker"
