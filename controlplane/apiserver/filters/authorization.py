"""Authorization: may this user do this verb on this resource?

PLACEHOLDER (issue 3): every authenticated user may do everything. The security issue replaces this
module with the node authorizer and RBAC, and explains each decision on the trace.
"""

from __future__ import annotations

from controlplane.apiserver.http import Request


def authorize(request: Request) -> tuple[bool, str]:
    """(allowed, reason)."""
    return True, "placeholder authorizer: every authenticated user is allowed"
