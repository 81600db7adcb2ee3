"""``SignedInUserMiddleware``: an async view's ``request.auser()`` answers with the user read once."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from courses.accounts.middleware import SignedInUserMiddleware

pytestmark = pytest.mark.django_db


def _request(user: Any) -> HttpRequest:
    request = RequestFactory().get("/learn/")
    request.user = user

    async def unread() -> Any:
        raise AssertionError("auser read the user again")

    request.auser = unread
    return request


def _middleware() -> SignedInUserMiddleware:
    return SignedInUserMiddleware(lambda request: HttpResponse())


async def _async_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse()


def _sync_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse()


@pytest.mark.parametrize("signed_in", [True, False])
def test_before_an_async_view_auser_answers_with_the_user_read_in_the_chain(signed_in: bool) -> None:
    user: Any = (
        User.objects.create_user("lin", password="a long enough password") if signed_in else AnonymousUser()
    )
    request = _request(user)
    _middleware().process_view(request, _async_view)
    assert async_to_sync(request.auser)() is user


def test_before_a_synchronous_view_nothing_changes() -> None:
    request = _request(AnonymousUser())
    before = request.auser
    _middleware().process_view(request, _sync_view)
    assert request.auser is before
