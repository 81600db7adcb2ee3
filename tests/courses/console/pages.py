"""A page holding nothing but the console's partial, with the manifest editor's textarea beside it (what
``kubectl apply -f -`` reads): the browser tests load it instead of a chapter page."""

from __future__ import annotations

from django.template.loader import render_to_string
from django.utils import translation


def console_page(language: str = "en", *, course: str = "c", chapter: str = "ch") -> str:
    with translation.override(language):
        partial = render_to_string("courses/console/_console.html", {"course": course, "chapter": chapter})
    return (
        f'<!doctype html><html lang="{language}"><head><meta charset="utf-8"><title>console</title>'
        '<link rel="stylesheet" href="/static/css/kubelab.css">'
        '<link rel="stylesheet" href="/static/courses/console.css"></head>'
        '<body><main><textarea id="manifest-input">kind: ConfigMap\n</textarea>'
        f"{partial}</main></body></html>"
    )
