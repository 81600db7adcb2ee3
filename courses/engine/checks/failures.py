"""Failures as values: what a check says when it does not hold, in the student's language.

A failing check must tell the student which condition failed and what was seen instead
("expected at least 3 available replicas of deployment web, saw 1"; "no create request for
configmaps by student:alice was seen since this step began"). The evaluator is pure and knows no
language, so it does not build sentences: it returns a ``Failure``, a *value* made of

- ``leaf_id``: the id of the check node that failed (a hint's ``when`` names it), or None;
- ``code``: which kind of failure (``state.at_least_count``, ``trace.none`` ...), the key of its
  message template in ``TEMPLATES``;
- ``params``: what goes into the template: numbers, texts, the value seen, and ``Phrase``\\ s, smaller
  translatable pieces ("deployment web", "create request for configmaps").

Templates are marked with ``gettext_noop`` so that ``makemessages`` collects them, and only
``render()`` translates, with ``django.utils.translation.gettext`` in whatever language is active when
the page or the socket renders it. The same ``Failure`` therefore reads in English for one student and
in Chinese for the next, and tests compare values, not sentences. Named placeholders
(``%(object)s``) let a translation put the pieces in its own order.

An ``Unknown`` has the same shape and says why a part of a check could not be evaluated (the API
server answered 500, a read timed out, the trace lost events): it is shown as "not known yet", logged
for the course's author, and never as the student's failure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from django.utils.translation import gettext

from courses.engine.checks.paths import MISSING


def gettext_noop(message: str) -> str:
    """Mark ``message`` for translation, translating nothing now (``makemessages`` finds the calls).

    Django's own ``gettext_noop`` reads the settings when called; this one does not, so that the
    checks core imports and runs (parsing, the benchmark) without a configured Django.
    """
    return message


#: What may fill a placeholder: plain values, a phrase, or several phrases (joined with ", ").
Param: TypeAlias = "str | int | float | bool | Phrase | tuple[Param, ...] | None"


def _render_param(value: Param) -> str:
    if isinstance(value, Phrase):
        return value.render()
    if isinstance(value, tuple):
        return gettext(", ").join(_render_param(item) for item in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@dataclass(frozen=True, slots=True)
class Phrase:
    """A translatable piece of text: a ``gettext_noop`` template and what fills it."""

    template: str
    params: Mapping[str, Param] = field(default_factory=dict, hash=False)

    def render(self) -> str:
        """The phrase in the active language."""
        text = gettext(self.template)
        if not self.params:
            return text
        return text % {name: _render_param(value) for name, value in self.params.items()}


#: Chinese, Japanese and Korean characters and their punctuation (full-width forms included).
_CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"
#: Spaces between two of them: where translated pieces meet ("自 本步骤开始 以来").
_CJK_GAP = re.compile(f"(?<=[{_CJK}]) +(?=[{_CJK}])")


def typeset(text: str) -> str:
    """``text`` without the spaces a sentence of pieces leaves between two CJK characters.

    Chinese writes no spaces between words; the pieces of a message are translated one by one and
    joined by their templates' spaces, which English needs. A space beside a Latin word or a number
    stays ("至少 3 个", "deployment web 的"), as Chinese typesetting keeps it.
    """
    return _CJK_GAP.sub("", text)


#: What a seen value that is not there reads as ("saw nothing").
NOTHING = Phrase(gettext_noop("nothing"))


def show(value: Any) -> str | Phrase:
    """A value seen in an object or named in a check, as a student reads it.

    Strings as they are (an empty one as ``""``), numbers and booleans as JSON writes them, lists and
    maps as short JSON; ``MISSING`` (the path led nowhere) as the translated "nothing".
    """
    if value is MISSING:
        return NOTHING
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    text = json.dumps(value, sort_keys=True, separators=(", ", ": "), default=str)
    return text if len(text) <= 80 else text[:77] + "..."


#: Every failure's and unknown's message, by code. ``render`` translates them.
TEMPLATES: Mapping[str, str] = {
    # A state leaf: the object and its fields.
    "state.not_found": gettext_noop("%(object)s was not found"),
    "state.equals": gettext_noop("expected %(field)s of %(object)s to be %(expected)s, saw %(seen)s"),
    "state.equals_count": gettext_noop("expected %(expected)s %(field)s of %(object)s, saw %(seen)s"),
    "state.at_least": gettext_noop(
        "expected %(field)s of %(object)s to be at least %(expected)s, saw %(seen)s"
    ),
    "state.at_least_count": gettext_noop(
        "expected at least %(expected)s %(field)s of %(object)s, saw %(seen)s"
    ),
    "state.at_most": gettext_noop(
        "expected %(field)s of %(object)s to be at most %(expected)s, saw %(seen)s"
    ),
    "state.at_most_count": gettext_noop(
        "expected at most %(expected)s %(field)s of %(object)s, saw %(seen)s"
    ),
    "state.exists": gettext_noop("expected %(object)s to have %(field)s, but it has none"),
    "state.absent": gettext_noop("expected %(object)s to have no %(field)s, saw %(seen)s"),
    "state.matches": gettext_noop(
        'expected %(field)s of %(object)s to read like "%(example)s", saw %(seen)s'
    ),
    "state.contains": gettext_noop("expected %(field)s of %(object)s to contain %(expected)s, saw %(seen)s"),
    "state.count": gettext_noop("expected %(bound)s %(objects)s, saw %(seen)s"),
    "state.count_where": gettext_noop("expected %(bound)s %(objects)s with %(conditions)s, saw %(seen)s"),
    # A trace leaf: the events of its sequence.
    "trace.none": gettext_noop("no %(what)s was seen since %(since)s"),
    "trace.stopped": gettext_noop("saw the %(done)s, but no %(next)s after it"),
    "trace.too_late": gettext_noop(
        "saw the %(done)s, but the %(next)s did not come within %(limit)s of the %(first)s"
    ),
    "trace.too_early": gettext_noop("the %(early)s came before the %(first)s"),
    # A step that waits for several events (times: {at_least: N}), not all of them seen yet.
    "trace.counted": gettext_noop("expected the %(what)s %(times)s since %(since)s, saw it %(seen)s"),
    "trace.counted_after": gettext_noop(
        "after the %(done)s, expected the %(what)s %(times)s, saw it %(seen)s"
    ),
    "trace.counted_too_late": gettext_noop(
        "expected the %(what)s %(times)s within %(limit)s, saw it %(seen)s"
    ),
    "trace.counted_too_late_after": gettext_noop(
        "expected the %(what)s %(times)s within %(limit)s of the %(first)s, saw it %(seen)s"
    ),
    # A not: what it wraps holds.
    "not.seen": gettext_noop("did not expect the %(what)s, but it was seen"),
    "not.held": gettext_noop("did not expect %(what)s, but it holds"),
    # Unknowns: the check could not tell.
    "unknown.not_read": gettext_noop("%(object)s has not been read yet"),
    "unknown.api_error": gettext_noop(
        "reading %(object)s failed: the API server answered %(status)s: %(message)s"
    ),
    "unknown.api_status": gettext_noop("reading %(object)s failed: the API server answered %(status)s"),
    "unknown.timeout": gettext_noop("reading %(object)s failed: the API server did not answer in time"),
    "unknown.trace_gap": gettext_noop(
        "the trace lost events %(first)s to %(last)s, so the %(what)s may have been missed"
    ),
}


@dataclass(frozen=True, slots=True)
class Failure:
    """A condition of a check that does not hold, and what was seen instead."""

    leaf_id: str | None
    code: str
    params: Mapping[str, Param] = field(default_factory=dict, hash=False)

    @property
    def phrase(self) -> Phrase:
        return Phrase(TEMPLATES[self.code], self.params)

    def render(self) -> str:
        """The message in the active language (``django.utils.translation``)."""
        return typeset(self.phrase.render())


@dataclass(frozen=True, slots=True)
class Unknown:
    """A part of a check that could not be evaluated, and why: never the student's failure."""

    leaf_id: str | None
    code: str
    params: Mapping[str, Param] = field(default_factory=dict, hash=False)

    @property
    def phrase(self) -> Phrase:
        return Phrase(TEMPLATES[self.code], self.params)

    def render(self) -> str:
        """The reason in the active language."""
        return typeset(self.phrase.render())


__all__ = ["NOTHING", "TEMPLATES", "Failure", "Param", "Phrase", "Unknown", "show", "typeset"]
