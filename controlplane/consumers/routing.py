"""The websocket URLs, served by ``config/asgi.py`` behind the origin check and session authentication.

``/ws/lab/<cluster>/trace/``: one cluster's trace (``trace.TraceConsumer``). Any name is routed to
the consumer, which answers an unknown one with close code 4404 instead of a failed handshake, so the
page can tell the student why.
"""

from __future__ import annotations

from django.urls import URLPattern, path

from controlplane.consumers.trace import TraceConsumer

websocket_urlpatterns: list[URLPattern] = [
    path("ws/lab/<str:cluster>/trace/", TraceConsumer.as_asgi(), name="trace-stream"),
]

__all__ = ["websocket_urlpatterns"]
