"""Impersonation: acting as another user (``kubectl --as``), if the real user may impersonate.

PLACEHOLDER (issue 3): impersonation headers are refused outright (403), since nothing can check the
``impersonate`` verb yet; the security issue implements upstream's rules.
"""

from __future__ import annotations

from controlplane.apiserver import errors, pipeline
from controlplane.apiserver.http import Request

HEADERS = ("impersonate-user", "impersonate-group", "impersonate-uid")


def impersonate(request: Request) -> None:
    if any(h in request.headers for h in HEADERS) or any(
        h.startswith("impersonate-extra-") for h in request.headers
    ):
        pipeline.stage("impersonation", "deny", "impersonation is not available yet")
        user = request.user.username if request.user else "system:anonymous"
        raise errors.StatusError(
            403,
            "Forbidden",
            f'users "{request.headers.get("impersonate-user", "")}" is forbidden: '
            f'User "{user}" cannot impersonate resource "users" in API group "" at the cluster scope',
        )
    pipeline.stage("impersonation", "pass", "no impersonation requested")
