"""The authentication backend: Django's ``ModelBackend`` (username and password, checked against the
``User`` table), with failed attempts counted and limited (``courses.accounts.ratelimit``).

The limit sits here, where every password is checked, rather than in one view: the sign-in page and
the admin's sign-in both call ``django.contrib.auth.authenticate``, which asks this backend, so neither
is a way around it. While a username or an address is refused, the backend raises ``PermissionDenied``:
Django's ``authenticate`` then stops and answers "no user" without checking the password at all, so a
right guess during the wait is worth nothing. The sign-in page asks ``ratelimit.signin_refusal`` first,
so it can say when to try again; the admin just says the sign-in failed.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from courses.accounts import ratelimit


class RateLimitedModelBackend(ModelBackend):
    """``ModelBackend`` that refuses a username or client address with too many recent failures."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if username is None or password is None:
            return None
        ip = ratelimit.client_ip(request) if request is not None else None
        if ratelimit.signin_refusal(username=username, ip=ip) is not None:
            raise PermissionDenied
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            ratelimit.record_failure(username=username, ip=ip)
        else:
            ratelimit.clear_failures(username=username)
        return user

    async def aauthenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        # ModelBackend's own aauthenticate would skip the limit: run the limited one off the loop.
        return await sync_to_async(self.authenticate)(request, username=username, password=password, **kwargs)
