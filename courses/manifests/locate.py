"""Where a field the API server names is in the student's text. Pure: no I/O.

The API server names fields in two notations, and an answer may use either:

* **apimachinery field paths** (``k8s.io/apimachinery/pkg/util/validation/field/path.go``), in every
  422 Invalid's causes and in strict decoding errors: names joined by ``.``, list indexes and map keys
  in brackets, keys unquoted: ``spec.containers[0].image``, ``metadata.labels[app]``,
  ``data[config.yaml]``, ``spec.template.spec.containers[1].ports[0].containerPort``;
* **structured-merge-diff paths** (``sigs.k8s.io/structured-merge-diff/fieldpath``), in server-side
  apply's conflicts and schema errors: every name after a ``.``, list items by their keys as JSON
  (``.spec.containers[name="web"].image``), set members by value (``.metadata.finalizers[="x"]``),
  atomic list items by index (``.spec.args[0]``).

``parse_field_path`` reads both into steps, and ``locate`` follows them through a document's YAML
nodes (``parse.Document.node``). A field that is there is found at its key (the line of ``image:``),
a list item at its first character. A field that is *not* there ("Required value") is pointed at
through the deepest part of the path that is: the container that lacks an image. A path that cannot be
followed at all gives the document's first line; ``Location.exact`` tells the cases apart. Lines and
columns are 1-based in the whole text (the nodes' marks are), so a field of the third document is
found on the third document's lines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_MERGE_TAG = "tag:yaml.org,2002:merge"


class FieldPathError(ValueError):
    """A field path that is neither notation."""


@dataclass(frozen=True, slots=True)
class Field:
    """``.name``: a field of an object (or a key of a map)."""

    name: str


@dataclass(frozen=True, slots=True)
class Subscript:
    """``[text]``: a list index (``[0]``) or, in a map, a key (``[app]``); the node decides which."""

    text: str


@dataclass(frozen=True, slots=True)
class Match:
    """``[name="web",protocol="TCP"]``: the list item whose fields have these values."""

    fields: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Member:
    """``[="value"]``: the member of a set (a list of scalars) with this value."""

    value: Any


Step = Field | Subscript | Match | Member


@dataclass(frozen=True, slots=True)
class Location:
    """A place in the whole text: 1-based ``line`` and ``column``.

    ``exact``: the field itself was found; otherwise this is the deepest part of its path that exists.
    """

    line: int
    column: int
    exact: bool


def parse_field_path(path: str) -> tuple[Step, ...]:
    """The steps of ``path``, in either notation (module docstring); raises ``FieldPathError``."""
    steps: list[Step] = []
    i, n = 0, len(path)
    if path in ("", "<nil>"):
        return ()
    while i < n:
        char = path[i]
        if char == "[":
            end = _closing_bracket(path, i)
            steps.append(_subscript(path[i + 1 : end]))
            i = end + 1
            continue
        if char == ".":
            i += 1
        elif steps:
            raise FieldPathError(f"expected '.' or '[' at {i} in {path!r}")
        start = i
        while i < n and path[i] not in ".[":
            i += 1
        if i == start:
            raise FieldPathError(f"empty field name at {start} in {path!r}")
        steps.append(Field(path[start:i]))
    return tuple(steps)


def _closing_bracket(path: str, start: int) -> int:
    """The index of the ``]`` that closes the ``[`` at ``start``: outside JSON strings, and followed
    by the end, ``.`` or ``[`` (a map key may itself hold a ``]``)."""
    i, n = start + 1, len(path)
    quoted = False
    while i < n:
        char = path[i]
        if quoted:
            if char == "\\":
                i += 1
            elif char == '"':
                quoted = False
        elif char == '"' and (i == start + 1 or path[i - 1] in "=,"):
            quoted = True
        elif char == "]" and (i + 1 == n or path[i + 1] in ".["):
            return i
        i += 1
    raise FieldPathError(f"unclosed '[' at {start} in {path!r}")


def _subscript(text: str) -> Step:
    if text.startswith("="):
        try:
            return Member(json.loads(text[1:]))
        except ValueError:
            return Member(text[1:])
    if "=" in text:
        fields = _key_fields(text)
        if fields is not None:
            return Match(fields)
    return Subscript(text)


def _key_fields(text: str) -> tuple[tuple[str, Any], ...] | None:
    """``name="web",port=80`` as pairs, or None if it is not that (then it is a map key)."""
    decoder = json.JSONDecoder()
    fields: list[tuple[str, Any]] = []
    i, n = 0, len(text)
    while i < n:
        equals = text.find("=", i)
        if equals <= i:
            return None
        name = text[i:equals]
        try:
            value, end = decoder.raw_decode(text, equals + 1)
        except ValueError:
            return None
        fields.append((name, value))
        if end < n and text[end] != ",":
            return None
        i = end + 1
    return tuple(fields)


# -- following a path through the nodes ---------------------------------------------------------------


def locate(root: Node, path: str) -> Location:
    """Where the field ``path`` is in the document whose node tree is ``root`` (module docstring)."""
    try:
        steps = parse_field_path(path)
    except FieldPathError:
        return _at(root, exact=False)
    place: Node = root  # where the deepest part found so far is marked (a key, or an item)
    node: Node = root  # the value that the next step looks into
    for step in steps:
        found = _step(node, step)
        if found is None:
            return _at(place, exact=False)
        place, node = found
    return _at(place, exact=True)


def _at(node: Node, *, exact: bool) -> Location:
    return Location(node.start_mark.line + 1, node.start_mark.column + 1, exact)


def _step(node: Node, step: Step) -> tuple[Node, Node] | None:
    """Into ``node`` by ``step``: (where to mark it, its value), or None if it is not there."""
    if isinstance(node, MappingNode):
        if isinstance(step, Field):
            return _entry(node, step.name)
        if isinstance(step, Subscript):
            return _entry(node, step.text)
        return None
    if isinstance(node, SequenceNode):
        items: list[Node] = node.value
        if isinstance(step, Subscript) and step.text.isdigit():
            index = int(step.text)
            return (items[index], items[index]) if index < len(items) else None
        if isinstance(step, Match):
            item = next((i for i in items if _matches(i, step.fields)), None)
            return (item, item) if item is not None else None
        if isinstance(step, Member):
            item = next((i for i in items if isinstance(i, ScalarNode) and _same(i, step.value)), None)
            return (item, item) if item is not None else None
    return None


def _entry(node: MappingNode, key: str, seen: frozenset[int] = frozenset()) -> tuple[Node, Node] | None:
    """The key and value nodes of ``key``: the last one written wins, as in the decoded object; a key
    only merged in (``<<: *defaults``) is found where the merged mapping has it."""
    for key_node, value_node in reversed(node.value):
        if isinstance(key_node, ScalarNode) and key_node.tag != _MERGE_TAG and key_node.value == key:
            return key_node, value_node
    for key_node, value_node in node.value:
        if isinstance(key_node, ScalarNode) and key_node.tag == _MERGE_TAG and id(value_node) not in seen:
            merged = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            for source in merged:
                if isinstance(source, MappingNode):
                    found = _entry(source, key, seen | {id(value_node)})
                    if found is not None:
                        return found
    return None


def _same(node: ScalarNode, value: Any) -> bool:
    """Whether a scalar node holds ``value`` (a JSON value from a path): compared as written."""
    if isinstance(value, bool):
        return str(node.value).lower() == ("true" if value else "false")
    if value is None:
        return node.value in ("", "~", "null", "Null", "NULL")
    return str(node.value) == str(value)


def _matches(item: Node, fields: tuple[tuple[str, Any], ...]) -> bool:
    """Whether a list item has the key fields' values. A key field the item leaves out is skipped: the
    API server defaulted it (``protocol: TCP`` of a container port), so the text cannot show it."""
    if not isinstance(item, MappingNode):
        return False
    compared = 0
    for name, value in fields:
        found = _entry(item, name)
        if found is None:
            continue
        if not isinstance(found[1], ScalarNode) or not _same(found[1], value):
            return False
        compared += 1
    return compared > 0


__all__ = [
    "Field",
    "FieldPathError",
    "Location",
    "Match",
    "Member",
    "Step",
    "Subscript",
    "locate",
    "parse_field_path",
]
