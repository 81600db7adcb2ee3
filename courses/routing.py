"""The web application's websocket routes, served beside the control plane's (``config/asgi.py``):
each area's consumer, by its own route (the chapter's checks, the kubectl console).

Like the control plane's, every route accepts any segment and lets the consumer refuse, so that a
page can tell the student why (close codes 4403 and 4404).
"""

from __future__ import annotations

from django.urls import URLPattern

websocket_urlpatterns: list[URLPattern] = []

__all__ = ["websocket_urlpatterns"]
