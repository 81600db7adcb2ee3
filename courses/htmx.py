"""htmx, the web application's side of it: whether a request came from htmx (django-htmx's
``request.htmx``, in one function), so a view answers it with only the fragment it swaps in."""

from __future__ import annotations

from django.http import HttpRequest


def is_htmx(request: HttpRequest) -> bool:
    """Whether htmx sent ``request`` (its ``HX-Request: true`` header)."""
    return request.headers.get("HX-Request") == "true"
