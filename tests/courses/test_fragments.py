"""Pieces of page rendered once per language (courses/templatetags/fragments.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from unittest import mock

import pytest
from django.template import Context, Template
from django.template.loader import render_to_string
from django.utils import translation
from pytest_django import Settings

from courses.templatetags import fragments

LABELS = "courses/manifests/_fieldform_labels.html"
RENDER = "courses.templatetags.fragments.render_to_string"
PAGE = Template('{% load fragments %}<div>{% per_language "' + LABELS + '" %}</div>')


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    fragments.forget()
    yield
    fragments.forget()


def _labels(page: str) -> dict[str, str]:
    match = re.search(r'<script type="application/json" id="fieldform-labels">(.*?)</script>', page, re.S)
    assert match, "the field form's labels block is missing from the page"
    labels: dict[str, str] = json.loads(match.group(1))
    return labels


def test_each_language_gets_its_own_rendering_and_each_is_made_once(settings: Settings) -> None:
    settings.DEBUG = False
    with mock.patch(RENDER, side_effect=render_to_string) as render:
        with translation.override("en"):
            english = [PAGE.render(Context()) for _ in range(3)]
        with translation.override("zh-hans"):
            chinese = [PAGE.render(Context()) for _ in range(3)]
    assert render.call_count == 2, "the fragment was rendered again for a language it already had"
    assert len(set(english)) == 1 and len(set(chinese)) == 1
    assert _labels(english[0])["form.kind"] == "Kind"
    assert _labels(chinese[0])["form.kind"] != "Kind", "the Chinese page got the English labels"


def test_with_debug_every_page_renders_the_template_again(settings: Settings) -> None:
    settings.DEBUG = True
    with (
        mock.patch(RENDER, side_effect=render_to_string) as render,
        translation.override("en"),
    ):
        PAGE.render(Context())
        PAGE.render(Context())
    assert render.call_count == 2, "an edited template would not show until the process restarts"


def test_the_fragment_is_not_escaped_again(settings: Settings) -> None:
    settings.DEBUG = False
    with translation.override("en"):
        page = PAGE.render(Context())
    assert "&lt;script" not in page and '<script type="application/json" id="fieldform-labels">' in page
