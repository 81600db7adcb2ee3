"""The errors of loading a course: every problem found, each with its file and its place.

Content is checked as a whole: the loader does not stop at the first mistake, it collects them all
(``Problems``) and raises one ``ContentError`` that lists every one, so an author fixes a chapter in
one round. A place is a path into the YAML (``steps[create-configmap].hints[0].when``) or a line of a
prose file (``line 42``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the content: the file (relative to the content root), where, and what."""

    file: str
    place: str
    message: str

    def __str__(self) -> str:
        return ": ".join(part for part in (self.file, self.place, self.message) if part)


class ContentError(Exception):
    """The content is not valid; ``problems`` lists every problem found, in the order of the files."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        super().__init__(f"the course content has {count}:\n" + "\n".join(f"  {p}" for p in problems))


class CourseNotFound(LookupError):
    """There is no course by that slug (or the slug is not one a course could have)."""


@dataclass
class Problems:
    """The problems found so far, while the loader reads on."""

    found: list[Problem] = field(default_factory=list)

    def add(self, file: str, place: str, message: str) -> None:
        self.found.append(Problem(file, place, message))

    def __bool__(self) -> bool:
        return bool(self.found)

    def raise_any(self) -> None:
        if self.found:
            raise ContentError(list(self.found))


__all__ = ["ContentError", "CourseNotFound", "Problem", "Problems"]
