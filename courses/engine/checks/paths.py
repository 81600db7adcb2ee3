"""Field paths: how a check points at one value inside a Kubernetes object.

A state check says *which* field it means with a path, the way ``kubectl get -o jsonpath`` or
``kubectl explain`` would, only shorter::

    status.availableReplicas                  a field of a field
    spec.containers[0].image                  [n]: the n-th item of a list (from 0; -1 is the last)
    status.conditions[type=Ready].status      [key=value]: the item of a list whose field has a value
    metadata.labels["app.kubernetes.io/name"] ["..."]: a map key with dots or brackets in it

``[key=value]`` is how upstream itself picks a condition (``kubectl wait --for=condition=Ready`` reads
``status.conditions`` the same way): the list's order is not part of the API, so an index would break
the day a controller adds a condition before it. The value is compared as text, so
``[containerPort=80]`` finds the port whose ``containerPort`` is the number 80.

``parse_path`` turns the text into a ``FieldPath`` once, when the course loads, and refuses what it
cannot read (``PathError`` says where); ``resolve`` then follows it through an object, and answers
``MISSING`` when some step is not there, which a condition reports as "saw nothing". Both are pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final


class PathError(ValueError):
    """A path that cannot be parsed: the message says what is wrong and where."""


class _Missing:
    """The one value ``resolve`` answers when the path leads nowhere (a field or item not there)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()


@dataclass(frozen=True, slots=True)
class Key:
    """A map key: ``.name`` or ``["name"]``."""

    name: str


@dataclass(frozen=True, slots=True)
class Index:
    """A list item by position: ``[n]``; negative counts from the end, as in Python."""

    position: int


@dataclass(frozen=True, slots=True)
class Select:
    """A list item by content: ``[field=value]``, the first item whose ``field`` reads as ``value``."""

    field: str
    value: str


Step = Key | Index | Select


@dataclass(frozen=True, slots=True)
class FieldPath:
    """A parsed path: its steps and the text it was written as (for messages)."""

    text: str
    steps: tuple[Step, ...]

    @property
    def last_name(self) -> str:
        """The last map key of the path (``status`` for ``status.conditions[type=Ready].status``)."""
        for step in reversed(self.steps):
            if isinstance(step, Key):
                return step.name
        return ""

    @property
    def plain(self) -> bool:
        """Whether the path is only map keys (no ``[...]``), so its last key names what it reads."""
        return all(isinstance(step, Key) for step in self.steps)

    def __str__(self) -> str:
        return self.text


# One token at a time: a bare name, [n], [key=value], ["quoted"] or ['quoted'].
_NAME = re.compile(r"[^.\[\]]+")
_BRACKET = re.compile(r"""\[(?:(-?\d+)|"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^=\]\[]+)=([^\]]*))\]""")


def parse_path(text: str) -> FieldPath:
    """Parse ``text`` into a ``FieldPath``; ``PathError`` names the first character it cannot read."""
    if not isinstance(text, str) or not text:
        raise PathError("a path must be a non-empty string")
    steps: list[Step] = []
    pos = 0
    expect_name = True  # at the start and after a dot, a name must come (or a bracket at the start)
    while pos < len(text):
        char = text[pos]
        if char == ".":
            if expect_name:
                raise PathError(f"{text!r}: empty name at character {pos + 1}")
            expect_name = True
            pos += 1
            continue
        if char == "[":
            if expect_name and steps:
                raise PathError(f"{text!r}: a name must follow the dot at character {pos}")
            match = _BRACKET.match(text, pos)
            if match is None:
                raise PathError(
                    f"{text!r}: cannot read the bracket at character {pos + 1}"
                    ' (write [0], [key=value] or ["key"])'
                )
            number, double, single, field, value = match.groups()
            if number is not None:
                steps.append(Index(int(number)))
            elif double is not None or single is not None:
                quoted = double if double is not None else single
                assert quoted is not None
                steps.append(Key(re.sub(r"\\(.)", r"\1", quoted)))
            else:
                steps.append(Select(field.strip(), value.strip()))
            expect_name = False
            pos = match.end()
            continue
        if char == "]":
            raise PathError(f"{text!r}: unexpected ']' at character {pos + 1}")
        if not expect_name:
            raise PathError(f"{text!r}: expected '.' or '[' at character {pos + 1}")
        name = _NAME.match(text, pos)
        assert name is not None  # char is none of . [ ]
        steps.append(Key(name.group()))
        expect_name = False
        pos = name.end()
    if expect_name:
        raise PathError(f"{text!r}: the path ends with a dot")
    return FieldPath(text, tuple(steps))


def _as_text(value: Any) -> str | None:
    """How ``[key=value]`` reads an item's field: strings as they are, numbers and booleans as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return None


def resolve(obj: Any, path: FieldPath) -> Any:
    """The value ``path`` leads to in ``obj``, or ``MISSING`` when some step of it is not there.

    A JSON ``null`` is a value (``None``), not ``MISSING``: the conditions decide what it means.
    """
    value = obj
    for step in path.steps:
        if isinstance(step, Key):
            if not isinstance(value, Mapping) or step.name not in value:
                return MISSING
            value = value[step.name]
        elif isinstance(step, Index):
            if not isinstance(value, Sequence) or isinstance(value, str):
                return MISSING
            if not -len(value) <= step.position < len(value):
                return MISSING
            value = value[step.position]
        else:
            if not isinstance(value, Sequence) or isinstance(value, str):
                return MISSING
            for item in value:
                if isinstance(item, Mapping) and _as_text(item.get(step.field)) == step.value:
                    value = item
                    break
            else:
                return MISSING
    return value


__all__ = ["MISSING", "FieldPath", "Index", "Key", "PathError", "Select", "parse_path", "resolve"]
