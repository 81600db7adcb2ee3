"""Pieces of page that depend on nothing but the language, rendered once per language.

A chapter page carries the field form's labels: some eighty translated strings, each escaped for
JavaScript, the same bytes for every student who reads the page in the same language, and about a
third of what rendering the page costs. ``{% per_language "template.html" %}`` renders such a template
(without context) the first time it is asked for in each language and keeps the result for the life of
the process, as the translation catalogs themselves are read once per process. With ``DEBUG`` on it
renders every time, so that an edited template shows at once. Django's ``{% cache %}`` would keep it
in the configured cache instead: with Redis (``KUBELAB_CACHE``), a round trip per page, and labels
that outlive a restart with new catalogs.
"""

from __future__ import annotations

from django import template
from django.conf import settings
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language

register = template.Library()

#: (template name, language code) -> the rendered template.
_rendered: dict[tuple[str, str | None], SafeString] = {}


@register.simple_tag
def per_language(template_name: str) -> SafeString:
    """``template_name`` rendered without context in the active language, once per language."""
    if settings.DEBUG:
        return mark_safe(render_to_string(template_name))
    key = (template_name, get_language())
    rendered = _rendered.get(key)
    if rendered is None:
        rendered = _rendered[key] = mark_safe(render_to_string(template_name))
    return rendered


def forget() -> None:
    """Drop every rendering kept (tests that change templates or catalogs call this)."""
    _rendered.clear()
