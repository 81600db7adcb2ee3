"""The web application's websocket routes, served beside the control plane's (``config/asgi.py``):
each area's consumer, by its own route (the chapter's checks, the kubectl console).

Like the control plane's, every route accepts any segment and lets the consumer refuse, so that a
page can tell the student why (close codes 4403 and 4404).
"""

from __future__ import annotations

from django.urls import URLPattern, path

# chapters: a chapter page's sandbox and checks (courses/chapters/consumer.py)
from courses.chapters.consumer import ChapterConsumer

# console: kubectl in the browser (courses/console/consumer.py)
from courses.console.consumer import ConsoleConsumer

websocket_urlpatterns: list[URLPattern] = [
    # chapters
    path("ws/course/<str:course>/<str:chapter>/steps/", ChapterConsumer.as_asgi(), name="chapter-steps"),
    # console
    path("ws/course/<str:course>/<str:chapter>/console/", ConsoleConsumer.as_asgi(), name="console"),
]

__all__ = ["websocket_urlpatterns"]
