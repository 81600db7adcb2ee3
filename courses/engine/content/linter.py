"""The content linter: a check may only name what its step's text mentions.

A step tells the student what to do; its check decides whether they did it. If the check waits for a
ConfigMap called ``app-config`` and the text never says ``app-config``, the student cannot pass
except by luck: text and check have drifted apart. So every word a check names (``Check.mentions()``:
kinds, object names, the last part of each field path, trace event types, the verbs, resources,
plugins and stages its events name) must appear in the English text of its step (the title and the
step's own section; hints and the solution do not count, the student may never open them).

Matching is forgiving in the ways English is, and strict otherwise:

- case does not matter, and a word must stand on its own (``web`` is not found in ``webhook``);
- a word may take an ending: ``pod`` is mentioned by "pods", ``schedule`` by "scheduler",
  "scheduled" and "scheduling", ``policy`` by "policies"; a plural is mentioned by its singular
  (``configmaps`` by "ConfigMap");
- words written together may be written apart: ``ConfigMap`` is mentioned by "config map",
  ``availableReplicas`` by "available replicas", ``watch.event`` by "watch event";
- a trace type is also mentioned by the words of ``TRACE_ALIASES`` (``store.txn`` by "transaction"),
  because "the write reached etcd as a transaction" is how a chapter should say it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from courses.engine.checks import Check

#: Other words that mention a trace event type: what a chapter calls the event in plain English.
#: Kept small on purpose; each entry is documented in docs/course-format.md.
TRACE_ALIASES: Mapping[str, tuple[str, ...]] = {
    "request.received": ("request",),
    "request.stage": ("request",),
    "request.completed": ("request",),
    "flowcontrol.decision": ("flow control", "priority and fairness"),
    "rbac.decision": ("rbac", "authorization"),
    "admission.step": ("admission",),
    "store.txn": ("transaction",),
    "store.compact": ("compaction",),
    "watch.opened": ("watch",),
    "watch.event": ("watch",),
    "watch.closed": ("watch",),
    "component.state": ("component", "leader"),
    "reconcile": ("controller",),
    "scheduler.decision": ("schedule",),
    "proxy.sync": ("kube-proxy",),
    "fault.applied": ("fault",),
    "fault.cleared": ("fault",),
}

# Where a camelCase or CamelCase word splits into words ("availableReplicas", "ConfigMap", "RBAC").
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")
# What separates the written-together words of a term in the text: nothing, a space, '-', '.', '_'.
_JOIN = r"[\s._-]?"
# The endings a word may take: plurals, past tenses, "-ing", agent nouns ("scheduler").
_ENDING = r"(?:s|es|d|ed|r|er|ers|ing|ings)?"


@dataclass(frozen=True)
class Unmentioned:
    """A word a check names that its step's text does not: in which leaf, and how it could be said."""

    leaf: str
    word: str
    aliases: tuple[str, ...]

    def message(self, which: str) -> str:
        said = f"'{self.word}'" + "".join(f" or '{alias}'" for alias in self.aliases)
        return (
            f"{self.leaf} of the {which} names '{self.word}', which the step's English text never "
            f"mentions (say {said})"
        )


def _singulars(word: str) -> set[str]:
    """``word`` and what it would be without a plural ending."""
    forms = {word}
    if word.endswith("ies") and len(word) > 4:
        forms.add(word[:-3] + "y")
    elif word.endswith("es") and len(word) > 3:
        forms.update({word[:-2], word[:-1]})
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 2:
        forms.add(word[:-1])
    return forms


def _pieces(term: str) -> list[str]:
    """The words of a term: split at spaces, '.', '-', '_' and camelCase boundaries; lower case."""
    pieces: list[str] = []
    for part in re.split(r"[\s._-]+", term.strip()):
        pieces.extend(p.lower() for p in (_CAMEL.findall(part) or [part]) if p)
    return pieces


def _form_pattern(pieces: list[str]) -> str:
    *head, last = pieces
    if last.endswith("y") and len(last) > 2:
        tail = re.escape(last[:-1]) + r"(?:y|ies)"
    elif last.endswith("e") and len(last) > 2:
        tail = re.escape(last[:-1]) + r"e?" + _ENDING
    else:
        tail = re.escape(last) + _ENDING
    return _JOIN.join([*(re.escape(p) for p in head), tail])


@lru_cache(maxsize=4096)
def _pattern(term: str) -> re.Pattern[str]:
    """A pattern that finds ``term`` in lower-cased text, word-ish (see the module's docstring)."""
    forms: list[str] = []
    for form in sorted(_singulars(term)):
        pieces = _pieces(form)
        if pieces:
            forms.append(_form_pattern(pieces))
    # The term exactly as written (``store.txn``, ``kube-proxy``), and its pieces written apart.
    forms.append(re.escape(term.lower()))
    return re.compile(r"(?<![a-z0-9])(?:" + "|".join(forms) + r")(?![a-z0-9])")


def mentions(text: str, word: str) -> bool:
    """Whether ``text`` mentions ``word`` (and, for a trace event type, any of its aliases)."""
    lowered = text.lower()
    terms = (word, *TRACE_ALIASES.get(word, ()))
    return any(_pattern(term).search(lowered) for term in terms)


def _leaf_label(index: int, leaf_id: str | None, kind: str) -> str:
    return f"leaf '{leaf_id}'" if leaf_id else f"leaf {index + 1} ({kind})"


def unmentioned(check: Check, text: str) -> list[Unmentioned]:
    """Every word a leaf of ``check`` names that ``text`` never mentions, leaf by leaf, in order."""
    found: list[Unmentioned] = []
    for index, leaf in enumerate(check.leaves()):
        kind = "state" if hasattr(leaf, "target") else "trace"
        label = _leaf_label(index, leaf.id, kind)
        words = Check(root=leaf, where=check.where).mentions()
        for word in sorted(words):
            if not mentions(text, word):
                found.append(Unmentioned(label, word, TRACE_ALIASES.get(word, ())))
    return found


def lint_words(words: Iterable[str], text: str) -> list[str]:
    """The ``words`` that ``text`` never mentions, sorted (for a quick look from a shell or a test)."""
    return sorted(word for word in set(words) if not mentions(text, word))


__all__ = ["TRACE_ALIASES", "Unmentioned", "lint_words", "mentions", "unmentioned"]
