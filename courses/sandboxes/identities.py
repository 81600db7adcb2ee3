"""Names in a sandbox: the cluster's own, and the identities that act in it.

A sandbox's name comes from the account, never from anything typed: ``sb-<account id>``. The id
(not the username) because it never changes and is always a valid DNS label, as a cluster name must
be; the ``sb-`` prefix is the lab's sign that a cluster is a sandbox (``controlplane.runtime``).

Two identities act in every sandbox, each with bearer tokens of its own:

- the student, ``student:<username>``: the cluster's administrator, through a ClusterRoleBinding
  to ``cluster-admin`` (``bootstrap.py``). Forms, the console and their own kubectl all act as this
  user, so every request they make passes authentication, RBAC, admission and audit as them, and
  ``kubectl auth whoami`` says so;
- the checker, ``kubelab:checker``: a step's check reads the cluster as this user, who may get, list
  and watch everything and change nothing, so a check can never alter what it looks at.

Pure functions; nothing here reads a database or the lab.
"""

from __future__ import annotations

from courses import gateway

#: The user a step's checks read the sandbox as.
CHECKER = "kubelab:checker"
#: What a student's cluster user name starts with.
STUDENT_PREFIX = "student:"


def sandbox_name(*, user_id: int) -> str:
    """The cluster name of the sandbox of account ``user_id``: ``sb-<id>``."""
    return f"{gateway.SANDBOX_PREFIX}{int(user_id)}"


def sandbox_owner(cluster: str) -> int | None:
    """The account id whose sandbox ``cluster`` is, or None if it is no sandbox's name.

    Only the exact form ``sandbox_name`` makes counts (``sb-07`` is nobody's).
    """
    digits = cluster.removeprefix(gateway.SANDBOX_PREFIX)
    if digits == cluster or not digits.isascii() or not digits.isdigit() or str(int(digits)) != digits:
        return None
    return int(digits)


def student_user(*, username: str) -> str:
    """The cluster user of the student with Django username ``username``: ``student:<username>``."""
    return f"{STUDENT_PREFIX}{username}"


__all__ = ["CHECKER", "STUDENT_PREFIX", "sandbox_name", "sandbox_owner", "student_user"]
