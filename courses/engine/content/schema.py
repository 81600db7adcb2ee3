"""Reading YAML strictly: every key known, every value of its type, every problem with its place.

The content files are small and written by hand, so their schema is written here as code rather than
as a JSON Schema: ``Reader.mapping`` refuses unknown keys (a typo such as ``hint:`` for ``hints:``
must not silently drop the hints) and reports missing ones; the other methods check one value each.
A method that finds a problem records it and returns None, so the loader reads on and reports the
whole file at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from courses.engine.content.errors import Problems
from courses.engine.content.model import LANGUAGES

#: The language keys of a mapping by language, as the prose files spell them -> Django's codes.
LANGUAGE_KEYS: Mapping[str, str] = {name.removesuffix(".md"): code for code, name in LANGUAGES.items()}


@dataclass(frozen=True)
class Place:
    """Where a value is: a file and a path into its YAML (``steps[create-configmap].hints[0]``)."""

    file: str
    path: str = ""

    def __truediv__(self, key: str) -> Place:
        return Place(self.file, f"{self.path}.{key}" if self.path else key)

    def item(self, index: int, name: str | None = None) -> Place:
        """The list item at ``index``, named by ``name`` (an id) when it has one."""
        return Place(self.file, f"{self.path}[{name if name else index}]")


def _type_name(value: object) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "true/false"}.get(
        type(value), f"a {type(value).__name__}"
    )


class Reader:
    """Checks values against the schema, recording each problem with its place."""

    def __init__(self, problems: Problems) -> None:
        self.problems = problems

    def problem(self, place: Place, message: str) -> None:
        self.problems.add(place.file, place.path, message)

    def load_yaml(self, path: Path, file: str) -> Any:
        """The document in ``path``; None (and a problem) if it is missing or not YAML."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self.problems.add(file, "", "the file is missing")
            return None
        except (OSError, UnicodeDecodeError) as error:
            self.problems.add(file, "", f"cannot be read: {error}")
            return None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as error:
            self.problems.add(file, _yaml_place(error), f"not valid YAML: {_yaml_message(error)}")
            return None

    def mapping(
        self, place: Place, value: Any, *, required: Iterable[str] = (), optional: Iterable[str] = ()
    ) -> dict[str, Any] | None:
        """The known keys of the mapping ``value``, or None if it is no mapping or lacks a required key.

        Unknown keys are reported and left out, so the rest of the mapping is still read and checked.
        """
        if not isinstance(value, dict):
            self.problem(place, f"must be a mapping, not {_type_name(value)}")
            return None
        required, optional = tuple(required), tuple(optional)
        known = (*required, *optional)
        for key in value:
            if not isinstance(key, str) or key not in known:
                self.problem(place / str(key), f"unknown key (known: {', '.join(known)})")
        missing = [key for key in required if key not in value]
        for key in missing:
            self.problem(place / key, "missing")
        return None if missing else {key: item for key, item in value.items() if key in known}

    def string(self, place: Place, value: Any, *, pattern: re.Pattern[str] | None = None) -> str | None:
        """``value`` if it is a non-empty string (matching ``pattern`` in full, when given)."""
        if not isinstance(value, str) or not value.strip():
            self.problem(place, f"must be a non-empty string, not {_type_name(value)}")
            return None
        if pattern is not None and not pattern.fullmatch(value):
            self.problem(place, f"{value!r} must match {pattern.pattern}")
            return None
        return value

    def integer(self, place: Place, value: Any, *, minimum: int, maximum: int) -> int | None:
        if not isinstance(value, int) or isinstance(value, bool):
            self.problem(place, f"must be a whole number, not {_type_name(value)}")
            return None
        if not minimum <= value <= maximum:
            self.problem(place, f"must be from {minimum} to {maximum}, not {value}")
            return None
        return value

    def number(self, place: Place, value: Any, *, minimum: float, maximum: float) -> float | None:
        if not isinstance(value, int | float) or isinstance(value, bool):
            self.problem(place, f"must be a number, not {_type_name(value)}")
            return None
        if not minimum <= value <= maximum:
            self.problem(place, f"must be from {minimum:g} to {maximum:g}, not {value:g}")
            return None
        return float(value)

    def sequence(self, place: Place, value: Any) -> list[Any] | None:
        if not isinstance(value, list):
            self.problem(place, f"must be a list, not {_type_name(value)}")
            return None
        return value

    def strings(self, place: Place, value: Any, *, pattern: re.Pattern[str] | None = None) -> list[str]:
        """The strings of the list ``value`` (the bad items are reported and left out)."""
        items = self.sequence(place, value)
        found: list[str] = []
        for index, item in enumerate(items or ()):
            text = self.string(place.item(index), item, pattern=pattern)
            if text is not None:
                found.append(text)
        return found

    def languages(self, place: Place, value: Any) -> dict[str, str] | None:
        """A text in every language, ``{en: ..., zh-Hans: ...}``, by Django's language codes."""
        found = self.mapping(place, value, required=LANGUAGE_KEYS)
        if found is None:
            return None
        texts: dict[str, str] = {}
        for key, code in LANGUAGE_KEYS.items():
            text = self.string(place / key, found[key])
            if text is not None:
                texts[code] = text
        return texts if len(texts) == len(LANGUAGE_KEYS) else None


def _yaml_place(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def _yaml_message(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None)
    context = getattr(error, "context", None)
    return " ".join(part for part in (context, problem) if part) or str(error).splitlines()[0]


__all__ = ["LANGUAGE_KEYS", "Place", "Reader"]
