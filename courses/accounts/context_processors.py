"""What every page's header needs to know about accounts: whether it may offer "Sign up"."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def accounts(request: HttpRequest) -> dict[str, bool]:
    """``open_signup``: ``KUBELAB_OPEN_SIGNUP`` (the header and the sign-in page link to sign-up)."""
    return {"open_signup": settings.KUBELAB_OPEN_SIGNUP}
