"""Failures are values, rendered in the active language only when shown."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.utils import translation

from courses.engine.checks import failures
from courses.engine.checks.describe import objects_phrase
from courses.engine.checks.failures import NOTHING, TEMPLATES, Failure, Phrase, Unknown, show, typeset
from courses.engine.checks.paths import MISSING
from courses.engine.checks.spec import Target


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


def test_failures_are_values() -> None:
    a = Failure(
        "stored", "state.not_found", {"object": Phrase("%(kind)s %(name)s", {"kind": "pod", "name": "web"})}
    )
    b = Failure(
        "stored", "state.not_found", {"object": Phrase("%(kind)s %(name)s", {"kind": "pod", "name": "web"})}
    )
    assert a == b
    assert a != Failure("other", "state.not_found", a.params)
    assert a.render() == "pod web was not found"
    assert a.phrase.template == TEMPLATES["state.not_found"]


def test_rendering_translates_every_piece_when_it_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    failure = Failure(
        "x",
        "state.count_where",
        {
            "bound": Phrase("at least %(n)s", {"n": 3}),
            "objects": "pods",
            "conditions": (
                Phrase("%(field)s = %(value)s", {"field": "status.phase", "value": "Running"}),
                "b",
            ),
            "seen": 1,
        },
    )
    english = failure.render()
    assert english == "expected at least 3 pods with status.phase = Running, b, saw 1"
    # A translation may reorder the pieces; each nested phrase is looked up on its own.
    catalog = {
        TEMPLATES["state.count_where"]: "saw %(seen)s; wanted %(bound)s %(objects)s (%(conditions)s)",
        "at least %(n)s": ">= %(n)s",
        ", ": " & ",
    }
    looked_up: list[str] = []

    def gettext(message: str) -> str:
        looked_up.append(message)
        return catalog.get(message, message)

    monkeypatch.setattr(failures, "gettext", gettext)
    assert failure.render() == "saw 1; wanted >= 3 pods (status.phase = Running & b)"
    assert set(catalog) <= set(looked_up)


def test_unknowns_render_like_failures() -> None:
    unknown = Unknown("s", "unknown.timeout", {"object": "configmap x"})
    assert unknown.render() == "reading configmap x failed: the API server did not answer in time"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("Running", "Running"),
        ("", '""'),
        (3, "3"),
        (2.5, "2.5"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (["a", 1], '["a", 1]'),
        ({"b": 1, "a": [True]}, '{"a": [true], "b": 1}'),
        ("x" * 100, "x" * 100),
    ],
)
def test_show(value: object, shown: str) -> None:
    assert show(value) == shown


def test_show_shortens_long_structures_and_names_nothing() -> None:
    long = show(list(range(100)))
    assert isinstance(long, str) and len(long) == 80 and long.endswith("...")
    assert show(MISSING) is NOTHING
    assert NOTHING.render() == "nothing"


def test_phrase_params() -> None:
    assert (
        Phrase("%(a)s %(b)s %(c)s %(d)s", {"a": None, "b": True, "c": 0.25, "d": ()}).render()
        == "null true 0.25 "
    )
    assert Phrase("plain").render() == "plain"


@pytest.mark.parametrize("code", sorted(TEMPLATES))
def test_every_template_uses_named_placeholders_only(code: str) -> None:
    template = TEMPLATES[code]
    assert re.search(r"%(?!\()", template.replace("%%", "")) is None, (
        "positional placeholders cannot be reordered"
    )
    names = set(re.findall(r"%\((\w+)\)s", template))
    assert template % {name: "X" for name in names}


def test_chinese_pieces_are_joined_without_spaces_and_latin_words_keep_theirs() -> None:
    assert typeset("自 本步骤开始 以来 未见到 student:alice 发出的请求") == (
        "自本步骤开始以来未见到 student:alice 发出的请求"
    )
    assert typeset("期望有 至少 3 个 pods") == "期望有至少 3 个 pods"
    assert typeset("no request was seen since this step began") == "no request was seen since this step began"


@pytest.mark.parametrize(
    ("selector", "english"),
    [
        (
            "!node-role.kubernetes.io/control-plane",
            "nodes without the label node-role.kubernetes.io/control-plane",
        ),
        ("!a,!example.com/b", "nodes without the labels a, example.com/b"),
        ("!a,tier=web", "nodes labelled !a,tier=web"),
        ("tier=web", "nodes labelled tier=web"),
    ],
)
def test_a_selector_of_absent_labels_says_without(selector: str, english: str) -> None:
    target = Target("v1", "Node", "", "v1", "nodes", False, None, None, selector, None, "/registry/minions")
    with translation.override("en"):
        assert failures._render_param(objects_phrase(target)) == english
