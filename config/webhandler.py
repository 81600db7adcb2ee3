"""Django's ASGI handler, with its middleware run as one synchronous chain: one thread hop per request.

Django's own ``ASGIHandler`` builds an asynchronous middleware chain. Its middleware (sessions,
CSRF, authentication, locale, messages ...) are ``MiddlewareMixin`` classes whose asynchronous path
calls each ``process_request`` and ``process_response`` through ``sync_to_async``: about twenty round
trips per page between the event loop and Django's thread ("a performance penalty of around a
millisecond per context switch", Django's docs: topics/async, "Async adapter functions"). In the lab,
the event loop also runs every cluster, so each round trip waits behind the clusters' work: a page
that takes 15 ms of Python took 40 ms to answer, and far longer under a class.

This handler loads the same middleware in synchronous mode and runs the whole chain, view included,
in one ``sync_to_async`` call on Django's thread. An ``async def`` view still runs on the event loop:
Django's synchronous path hands it to ``async_to_sync``, which, called from that thread, schedules the
coroutine on the loop the request came from (asgiref's ``AsyncToSync`` uses the calling
``SyncToAsync``'s main loop), so a view that talks to a cluster talks to it where it lives.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase


class SyncChainASGIHandler(ASGIHandler):
    """``ASGIHandler`` whose middleware chain is synchronous, entered once per request."""

    def __init__(self) -> None:
        # ASGIHandler.__init__ would load the asynchronous chain; this one loads the synchronous one.
        self.load_middleware(is_async=False)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase = await sync_to_async(self.get_response, thread_sensitive=True)(request)
        return response


def get_asgi_application() -> SyncChainASGIHandler:
    """Django's ``get_asgi_application``, with the one-hop handler."""
    import django

    django.setup(set_prefix=False)
    return SyncChainASGIHandler()
