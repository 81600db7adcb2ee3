"""Which language a request is answered in: the browser's choice, else the person's, else the browser's
preferred languages.

Django's ``LocaleMiddleware`` picks the language first, from (in this order) the language cookie
that the header's switch sets (``django_language``), the browser's ``Accept-Language``, and
``LANGUAGE_CODE`` (English). This middleware, after authentication, adds one step for a signed-in
person whose browser has no cookie: the language saved in their ``Preference``. The precedence is

1. the cookie: an explicit choice made in this browser;
2. the signed-in person's saved choice (``Preference.language``);
3. ``Accept-Language``, then English.

So a choice follows a person to a browser they have never used, yet a browser where someone clicked
the switch keeps what they clicked. The two rarely differ: switching while signed in sets both, and
signing in sets the cookie to the saved choice (``courses.accounts.views.SignInView``), so on a shared
classroom computer the next student gets their own language, not the last one's.

It costs one small query per request only for a signed-in person whose browser has no cookie (none
for visitors, none once the switch was used). It serves both sync and async views without a thread
hop: the async path reads the user and the preference with Django's async methods.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils import translation

from courses.accounts import services


def _has_browser_choice(request: HttpRequest) -> bool:
    return services.supported_language(request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME)) is not None


def _activate(request: HttpRequest, language: str | None) -> None:
    if language is not None:
        translation.activate(language)
        request.LANGUAGE_CODE = translation.get_language()


class PreferredLanguageMiddleware:
    """Applies a signed-in person's saved language when their browser made no choice of its own."""

    sync_capable = True
    async_capable = True

    def __init__(
        self, get_response: Callable[[HttpRequest], HttpResponseBase | Awaitable[HttpResponseBase]]
    ) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self.__acall__(request)
        if not _has_browser_choice(request) and request.user.is_authenticated:
            _activate(request, services.preferred_language(user_id=request.user.pk))
        return self.get_response(request)

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        if not _has_browser_choice(request):
            user = await request.auser()
            if user.is_authenticated:
                _activate(request, await services.apreferred_language(user_id=user.pk))
        response = self.get_response(request)
        assert not isinstance(response, HttpResponseBase)  # async chain: an awaitable
        return await response


class SignedInUserMiddleware:
    """Reads the signed-in user once, on Django's thread, for an ``async def`` view as well.

    An async view asks ``await request.auser()``, and Django's ``auser`` reads the session and the user
    again, each through a ``sync_to_async`` hop from the event loop to Django's thread and back (and
    the loop also runs every cluster, so each hop waits behind their work). The lab's middleware chain
    already runs on that thread, once per request (``config/webhandler.py``): so, before an async
    view, the user is read here (what ``request.user`` reads: the session, then one query) and
    ``auser`` answers with it, with no hop. A synchronous view reads ``request.user`` as before.
    """

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view: Callable[..., Any], *args: Any) -> None:
        if not iscoroutinefunction(view):
            return
        user = request.user
        user.is_authenticated  # noqa: B018 (reads the lazy user now, on this thread)

        async def auser() -> Any:
            return user

        request.auser = auser
