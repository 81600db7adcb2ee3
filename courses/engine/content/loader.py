"""Loading a course from its files, checking everything, and keeping the result.

A course is a directory under the content root (``courses/content/`` unless the setting
``KUBELAB_COURSE_CONTENT`` names another)::

    <course>/course.yaml                 slug, title per language, chapter order
    <course>/<NN>-<slug>/chapter.yaml    the chapter's structure: steps, checks, hints, solutions
    <course>/<NN>-<slug>/en.md           its prose, per language (courses.engine.prose)
    <course>/<NN>-<slug>/zh-Hans.md
    <course>/<NN>-<slug>/manifests/      the manifests its steps start from and solve with

``load_course`` reads and checks all of it, then builds the frozen values of ``model``. Every check
runs, and every problem is collected before anything is raised, so one ``ContentError`` lists them
all, each with its file and place: the YAML schema (unknown keys refused), step and hint ids, diagram
node ids and trace types (docs/trace.md), manifests, checks (``courses.engine.checks.parse_check``),
that each language has exactly the sections the structure asks for, and the content linter
(``linter``): a check names nothing its step's text does not mention.

The result is cached per content root and course for the life of the process: content is part of the
code and changes with a deploy. ``reload()`` forgets it (tests, or a shell after editing a chapter).
The first load of a course reads files; call it from synchronous code (a view, ``checkcontent``,
start-up), not on the event loop.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import yaml
from django.conf import settings

from controlplane.faults import catalogue as faults
from controlplane.trace.schema import EVENT_TYPES
from courses.engine.checks import Check, CheckSpecError, parse_check
from courses.engine.content import linter
from courses.engine.content.diagram import node_id_problem
from courses.engine.content.errors import ContentError, CourseNotFound, Problem, Problems
from courses.engine.content.model import (
    DEFAULT_LANGUAGE,
    LANGUAGES,
    Action,
    Chapter,
    Course,
    FaultAction,
    Highlight,
    Hint,
    Mistake,
    Request,
    Solution,
    SolutionCommand,
    SolutionManifest,
    Step,
    Timeline,
)
from courses.engine.content.schema import Place, Reader
from courses.engine.prose import (
    ID_PATTERN,
    SOLUTION_ID,
    ParsedProse,
    command_problem,
    parse_prose,
)

#: Where the courses are, unless the setting ``KUBELAB_COURSE_CONTENT`` says otherwise.
DEFAULT_ROOT = Path(__file__).resolve().parent.parent.parent / "content"
#: A chapter's directory: its two-digit number and its slug.
CHAPTER_DIR = re.compile(r"(?P<number>[0-9]{2})-(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*)")
#: The most nodes a chapter's sandbox may ask for.
MAX_NODES = 10
#: A user name a chapter may let the student impersonate (``jane``, ``system:serviceaccount:ns:sa``).
USER_NAME = re.compile(r"[A-Za-z0-9$][A-Za-z0-9:@._$-]{0,252}")
#: What a request button may send.
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
#: kubectl words a solution may not use: a solution runs unattended, so nothing may wait for a person
#: or run forever (the console offers those to the student instead).
_WATCH = frozenset({"-w", "--watch", "--watch-only"})
_TTY = frozenset({"-it", "-ti", "-i", "-t", "--stdin", "--tty"})
_INTERACTIVE_SUBCOMMANDS = frozenset({"edit", "exec", "attach", "port-forward", "proxy", "debug"})
#: A solution item's ``expect``: the cluster must refuse it (its one value).
EXPECT_REFUSED = "refused"
#: The key that names a fault to apply, and the one that names a fault to clear (docs/faults.md).
FAULT = "fault"
CLEAR = "clear"


def content_root() -> Path:
    """The directory the courses are read from."""
    configured = getattr(settings, "KUBELAB_COURSE_CONTENT", None)
    return Path(configured) if configured else DEFAULT_ROOT


# -- the public functions ----------------------------------------------------------------------------


def load_course(slug: str, *, root: Path | None = None) -> Course:
    """The course ``slug``, loaded and checked once per process.

    Raises ``CourseNotFound`` if there is no such course, ``ContentError`` if it has problems.
    """
    return _load_course(root or content_root(), slug)


def courses(*, root: Path | None = None) -> list[Course]:
    """Every course under the content root, by slug. Raises ``ContentError`` if any has problems."""
    return list(_load_all(root or content_root()))


def course_slugs(*, root: Path | None = None) -> list[str]:
    """The slugs of the courses under the content root (directories with a ``course.yaml``)."""
    base = root or content_root()
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "course.yaml").is_file())


def problems(*, root: Path | None = None) -> list[Problem]:
    """Every problem of every course under the content root (an empty list: all is well). Not cached."""
    base = root or content_root()
    found: list[Problem] = []
    for slug in course_slugs(root=base):
        try:
            _CourseLoader(base, slug).load()
        except ContentError as error:
            found.extend(error.problems)
    return found


def reload() -> None:
    """Forget every loaded course: the next call reads the files again."""
    _load_course.cache_clear()
    _load_all.cache_clear()


@functools.cache
def _load_course(root: Path, slug: str) -> Course:
    return _CourseLoader(root, slug).load()


@functools.cache
def _load_all(root: Path) -> tuple[Course, ...]:
    loaded: list[Course] = []
    found: list[Problem] = []
    for slug in course_slugs(root=root):
        try:
            loaded.append(_load_course(root, slug))
        except ContentError as error:
            found.extend(error.problems)
    if found:
        raise ContentError(found)
    return tuple(loaded)


# -- one course --------------------------------------------------------------------------------------


class _CourseLoader:
    """Reads one course, collecting its problems."""

    def __init__(self, root: Path, slug: str) -> None:
        if not ID_PATTERN.fullmatch(slug) or not (root / slug / "course.yaml").is_file():
            raise CourseNotFound(f"there is no course {slug!r}")
        self.root = root
        self.slug = slug
        self.directory = root / slug
        self.problems = Problems()
        self.reader = Reader(self.problems)

    def load(self) -> Course:
        file = f"{self.slug}/course.yaml"
        place = Place(file)
        data = self.reader.load_yaml(self.directory / "course.yaml", file)
        found = (
            self.reader.mapping(place, data, optional=("slug", "title", "chapters"))
            if data is not None
            else None
        )
        title: dict[str, str] | None = None
        chapters: list[Chapter] = []
        if found is not None:
            for key in ("slug", "title", "chapters"):
                if key not in found:
                    self.reader.problem(place / key, "missing")
            if "slug" in found and self.reader.string(place / "slug", found["slug"]) not in (None, self.slug):
                self.reader.problem(place / "slug", f"must be the directory's name, {self.slug!r}")
            if "title" in found:
                title = self.reader.languages(place / "title", found["title"])
            if "chapters" in found:
                listed = self.reader.strings(place / "chapters", found["chapters"])
                chapters = [
                    chapter
                    for directory in self._chapter_directories(place / "chapters", listed)
                    if (chapter := _ChapterLoader(self, directory).load()) is not None
                ]
        self.problems.raise_any()
        assert title is not None  # no problems: the title was read
        return Course(slug=self.slug, title=title, chapters=tuple(chapters))

    def _chapter_directories(self, place: Place, listed: list[str]) -> list[Path]:
        """The chapters' directories in the order ``course.yaml`` lists them, checked against the disk."""
        on_disk = sorted(
            p.name for p in self.directory.iterdir() if p.is_dir() and not p.name.startswith(".")
        )
        for name in on_disk:
            if not CHAPTER_DIR.fullmatch(name):
                self.problems.add(
                    f"{self.slug}/{name}", "", "not a chapter directory: name it NN-slug (01-one-hub)"
                )
            elif name not in listed:
                self.reader.problem(place, f"does not list the chapter directory {name!r}")
        numbers: dict[str, str] = {}
        slugs: dict[str, str] = {}
        found: list[Path] = []
        for index, name in enumerate(listed):
            match = CHAPTER_DIR.fullmatch(name)
            if match is None:
                self.reader.problem(
                    place.item(index), f"{name!r} is not a chapter directory's name (NN-slug)"
                )
                continue
            if name not in on_disk:
                self.reader.problem(place.item(index), f"there is no directory {self.slug}/{name}")
                continue
            for seen, key, what in ((numbers, "number", "number"), (slugs, "slug", "slug")):
                if match[key] in seen:
                    self.reader.problem(
                        place.item(index), f"{name!r} has the same {what} as {seen[match[key]]!r}"
                    )
                seen[match[key]] = name
            found.append(self.directory / name)
        good = [n for n in listed if CHAPTER_DIR.fullmatch(n)]
        if good != sorted(good):
            self.reader.problem(
                place, f"must list the chapters in the order of their numbers: {', '.join(sorted(good))}"
            )
        return found


# -- one chapter -------------------------------------------------------------------------------------


@dataclass
class _StepParts:
    """What a step's YAML said, while the chapter's prose is still to be read."""

    id: str
    highlight: Highlight = field(default_factory=Highlight)
    narration: tuple[str, ...] = ()
    timeline: Timeline | None = None
    editor: str | None = None
    actions: tuple[Action, ...] = ()
    wait: Check | None = None
    check: Check | None = None
    hints: tuple[Hint, ...] = ()
    solution: Solution = field(default_factory=Solution)
    mistake: Mistake | None = None


class _ChapterLoader:
    """Reads one chapter directory, reporting into its course's problems."""

    def __init__(self, course: _CourseLoader, directory: Path) -> None:
        match = CHAPTER_DIR.fullmatch(directory.name)
        assert match is not None
        self.course = course
        self.directory = directory
        self.slug = match["slug"]
        self.number = int(match["number"])
        self.prefix = f"{course.slug}/{directory.name}"
        self.reader = course.reader
        self.nodes = 3
        #: Whether chapter.yaml was read far enough to compare the prose with it.
        self.structure = False
        #: Every step id chapter.yaml names, even of steps with problems.
        self.declared: set[str] = set()
        self.manifests: dict[tuple[str, bool], tuple[str | None, str | None]] = {}

    def problem(self, place: Place, message: str) -> None:
        self.reader.problem(place, message)

    def load(self) -> Chapter | None:
        before = len(self.course.problems.found)
        file = f"{self.prefix}/chapter.yaml"
        place = Place(file)
        data = self.reader.load_yaml(self.directory / "chapter.yaml", file)
        found = (
            self.reader.mapping(place, data, optional=("slug", "nodes", "impersonate", "steps"))
            if data is not None
            else None
        )
        impersonate: list[str] = []
        steps: list[_StepParts] = []
        self.structure = found is not None and "steps" in found
        if found is not None:
            for key in ("slug", "nodes", "steps"):
                if key not in found:
                    self.problem(place / key, "missing")
            if "slug" in found and self.reader.string(place / "slug", found["slug"]) not in (None, self.slug):
                self.problem(place / "slug", f"must be the slug of the directory's name, {self.slug!r}")
            if "nodes" in found:
                nodes = self.reader.integer(place / "nodes", found["nodes"], minimum=1, maximum=MAX_NODES)
                self.nodes = nodes if nodes is not None else MAX_NODES
            impersonate = self.reader.strings(
                place / "impersonate", found.get("impersonate", []), pattern=USER_NAME
            )
            if "steps" in found:
                steps = self._steps(place / "steps", found["steps"])
        prose = {code: self._prose(code, name, steps) for code, name in LANGUAGES.items()}
        self._solutions_explained(steps, prose)
        if len(self.course.problems.found) > before:
            return None
        return Chapter(
            course=self.course.slug,
            slug=self.slug,
            number=self.number,
            nodes=self.nodes,
            impersonate=tuple(impersonate),
            steps=tuple(
                Step(
                    id=s.id,
                    highlight=s.highlight,
                    narration=s.narration,
                    timeline=s.timeline,
                    editor=s.editor,
                    actions=s.actions,
                    wait=s.wait,
                    check=cast("Check", s.check),
                    hints=s.hints,
                    solution=s.solution,
                    mistake=s.mistake,
                )
                for s in steps
            ),
            prose={code: parsed.prose for code, parsed in prose.items() if parsed is not None},
        )

    # -- chapter.yaml ------------------------------------------------------------------------------

    def _steps(self, place: Place, value: Any) -> list[_StepParts]:
        items = self.reader.sequence(place, value)
        if items is not None and not items:
            self.problem(place, "a chapter has at least one step")
        steps: list[_StepParts] = []
        seen: set[str] = set()
        for index, item in enumerate(items or ()):
            step_id = item.get("id") if isinstance(item, dict) else None
            named = step_id if isinstance(step_id, str) and ID_PATTERN.fullmatch(step_id) else None
            if isinstance(step_id, str):
                self.declared.add(step_id)
            step_place = place.item(index, named)
            if named is not None and named in seen:
                self.problem(
                    step_place / "id", f"a second step with id {named!r}: step ids are unique in a chapter"
                )
            parts = self._step(step_place, item)
            if parts is not None and parts.id not in seen:
                steps.append(parts)
            if named is not None:
                seen.add(named)
        return steps

    def _step(self, place: Place, value: Any) -> _StepParts | None:
        data = self.reader.mapping(
            place,
            value,
            required=("id",),
            optional=(
                "highlight",
                "narration",
                "timeline",
                "editor",
                "actions",
                "wait",
                "check",
                "hints",
                "solution",
                "mistake",
            ),
        )
        if data is None:
            return None
        step_id = self.reader.string(place / "id", data["id"], pattern=ID_PATTERN)
        if step_id is None:
            return None
        if "check" not in data:
            self.problem(place / "check", "missing: every step says what done means")
        parts = _StepParts(step_id)
        if "highlight" in data:
            parts.highlight = self._highlight(place / "highlight", data["highlight"])
        if "narration" in data:
            parts.narration = self._narration(place / "narration", data["narration"])
        if "editor" in data:
            parts.editor = self._manifest(place / "editor", data["editor"])
        if "actions" in data:
            parts.actions = self._actions(place / "actions", data["actions"])
        if "wait" in data:
            parts.wait = self._check(place / "wait", data["wait"])
        if "check" in data:
            parts.check = self._check(place / "check", data["check"])
        if "hints" in data:
            parts.hints = self._hints(place / "hints", data["hints"], parts.check)
        if "solution" in data:
            parts.solution = self._solution(place / "solution", data["solution"])
        if "mistake" in data:
            parts.mistake = self._mistake(place / "mistake", data["mistake"], parts.check)
        if "timeline" in data:
            parts.timeline = self._timeline(place / "timeline", data["timeline"], (parts.check, parts.wait))
        return parts

    def _node(self, place: Place, value: Any) -> str | None:
        node = self.reader.string(place, value)
        if node is None:
            return None
        problem = node_id_problem(node, nodes_in_chapter=self.nodes)
        if problem is not None:
            self.problem(place, problem)
            return None
        return node

    def _highlight(self, place: Place, value: Any) -> Highlight:
        found = self.reader.mapping(place, value, optional=("nodes", "edges"))
        if found is None:
            return Highlight()
        nodes: list[str] = []
        for index, item in enumerate(self.reader.sequence(place / "nodes", found.get("nodes", [])) or ()):
            if (node := self._node((place / "nodes").item(index), item)) is not None:
                nodes.append(node)
        edges: list[tuple[str, str]] = []
        for index, item in enumerate(self.reader.sequence(place / "edges", found.get("edges", [])) or ()):
            edge_place = (place / "edges").item(index)
            if not isinstance(item, list) or len(item) != 2:
                self.problem(edge_place, "an edge is a pair of node ids: [from, to]")
                continue
            ends = [self._node(edge_place.item(end), item[end]) for end in (0, 1)]
            if ends[0] is not None and ends[1] is not None:
                edges.append((ends[0], ends[1]))
        return Highlight(nodes=tuple(nodes), edges=tuple(edges))

    def _narration(self, place: Place, value: Any) -> tuple[str, ...]:
        types: list[str] = []
        for index, name in enumerate(self.reader.strings(place, value)):
            if name not in EVENT_TYPES:
                self.problem(
                    place.item(index),
                    f"{name!r} is not a trace event type (docs/trace.md: {', '.join(EVENT_TYPES)})",
                )
            elif name in types:
                self.problem(place.item(index), f"{name!r} is listed twice")
            else:
                types.append(name)
        return tuple(types)

    def _timeline(self, place: Place, value: Any, checks: Sequence[Check | None]) -> Timeline | None:
        found = self.reader.mapping(place, value, optional=("speed", "at"))
        if found is None:
            return None
        speed = 1.0
        if "speed" in found:
            read = self.reader.number(place / "speed", found["speed"], minimum=0, maximum=4)
            speed = read if read is not None else speed
        at: str | None = None
        if "at" in found:
            at = self.reader.string(place / "at", found["at"])
            traces = sorted(
                leaf.id
                for check in checks
                if check is not None
                for leaf in check.leaves()
                if leaf.id is not None and hasattr(leaf, "sequence")
            )
            if at is not None and at not in traces:
                known = ", ".join(traces) or "none has an id"
                self.problem(
                    place / "at",
                    f"{at!r} names no trace leaf of the step's check or wait (its trace leaves: {known})",
                )
        return Timeline(speed=speed, at=at)

    def _actions(self, place: Place, value: Any) -> tuple[Action, ...]:
        actions: list[Action] = []
        for index, item in enumerate(self.reader.sequence(place, value) or ()):
            action_place = place.item(index)
            if isinstance(item, dict) and (FAULT in item or CLEAR in item):
                fault_label: dict[str, str] = {}
                if "label" in item:
                    fault_label = self.reader.languages(action_place / "label", item["label"]) or {}
                rest = {key: item[key] for key in item if key != "label"}
                fault = self._fault(action_place, rest)
                if fault is not None:
                    actions.append(Action(kind="fault", fault=fault, label=fault_label))
                continue
            found = self.reader.mapping(action_place, item, optional=("kubectl", "request", "label"))
            if found is None:
                continue
            if ("kubectl" in found) == ("request" in found):
                self.problem(
                    action_place, "an action is either a kubectl command or a request: give one of them"
                )
                continue
            label: dict[str, str] = {}
            if "label" in found:
                label = self.reader.languages(action_place / "label", found["label"]) or {}
            if "kubectl" in found:
                command = self._kubectl(action_place / "kubectl", found["kubectl"], unattended=False)
                if command is not None:
                    actions.append(Action(kind="kubectl", kubectl=command, label=label))
            else:
                request = self._request(action_place / "request", found["request"])
                if request is not None:
                    actions.append(Action(kind="request", request=request, label=label))
        return tuple(actions)

    def _request(self, place: Place, value: Any) -> Request | None:
        found = self.reader.mapping(place, value, required=("method", "path"), optional=("body",))
        if found is None:
            return None
        method = self.reader.string(place / "method", found["method"])
        if method is not None and method not in METHODS:
            self.problem(place / "method", f"must be one of {', '.join(METHODS)}")
            method = None
        path = self.reader.string(place / "path", found["path"])
        if path is not None and (not re.fullmatch(r"/apis?(/[A-Za-z0-9.$:_-]+)*", path)):
            self.problem(
                place / "path", "must be an API path of the cluster: /api/... or /apis/..., no query"
            )
            path = None
        body: str | None = None
        if "body" in found:
            if method == "GET":
                self.problem(place / "body", "a GET sends no body")
            body = self._manifest(place / "body", found["body"], patch=method == "PATCH")
        elif method in ("POST", "PUT", "PATCH"):
            self.problem(place / "body", f"a {method} needs a body: a manifest file")
        if method is None or path is None:
            return None
        return Request(
            method=cast("Literal['GET', 'POST', 'PUT', 'PATCH', 'DELETE']", method), path=path, body=body
        )

    def _kubectl(self, place: Place, value: Any, *, unattended: bool, may_watch: bool = False) -> str | None:
        command = self.reader.string(place, value)
        if command is None:
            return None
        problem = command_problem(command)
        if problem is None and unattended:
            problem = _unattended_problem(shlex.split(command), may_watch=may_watch)
        if problem is not None:
            self.problem(place, problem)
            return None
        return command

    def _check(self, place: Place, value: Any) -> Check | None:
        where = f"{place.file}: {place.path}"
        try:
            return parse_check(value, where=where)
        except CheckSpecError as error:
            message = str(error)
            self.problem(place, message.removeprefix(where).lstrip(": ") or message)
            return None

    def _hints(self, place: Place, value: Any, check: Check | None) -> tuple[Hint, ...]:
        hints: list[Hint] = []
        for index, item in enumerate(self.reader.sequence(place, value) or ()):
            found = self.reader.mapping(place.item(index), item, required=("id",), optional=("when",))
            if found is None:
                continue
            hint_id = self.reader.string(place.item(index) / "id", found["id"], pattern=ID_PATTERN)
            hint_place = place.item(index, hint_id)
            if hint_id == SOLUTION_ID:
                self.problem(
                    hint_place / "id",
                    f"{SOLUTION_ID!r} names the solution's section: call the hint otherwise",
                )
                continue
            if hint_id is not None and any(h.id == hint_id for h in hints):
                self.problem(hint_place / "id", f"a second hint {hint_id!r}: hint ids are unique in a step")
                continue
            when: str | None = None
            if "when" in found:
                when = self.reader.string(hint_place / "when", found["when"])
                if when is not None and check is not None and when not in check.ids():
                    known = ", ".join(sorted(check.ids())) or "none has an id"
                    self.problem(
                        hint_place / "when", f"{when!r} names no part of the step's check (its ids: {known})"
                    )
            if hint_id is not None:
                hints.append(Hint(id=hint_id, when=when))
        return tuple(hints)

    def _fault(self, place: Place, value: dict[str, Any]) -> FaultAction | None:
        """A fault to apply, ``{fault: <kind>, <parameter>: <value>, ..., for: <seconds>}``, or to clear,
        ``{clear: <kind>, <parameter>: <value>, ...}``, checked by the fault catalogue
        (``controlplane.faults.catalogue.check``) against the chapter's nodes."""
        if FAULT in value and CLEAR in value:
            self.problem(
                place, f"a fault is applied ({FAULT}: <kind>) or cleared ({CLEAR}: <kind>), not both"
            )
            return None
        clear = CLEAR in value
        key = CLEAR if clear else FAULT
        for other in ("kubectl", "request"):
            if other in value:
                self.problem(
                    place / other, "unknown key: an action is a kubectl command, a request or a fault"
                )
                return None
        name = self.reader.string(place / key, value[key])
        if name is None:
            return None
        parameters = {k: v for k, v in value.items() if k != key}
        try:
            spec = faults.check(name, parameters, nodes=self.nodes, clearing=clear)
        except faults.InvalidFault as error:
            self.problem(place / (error.parameter or key), str(error))
            return None
        return FaultAction(spec=spec, clear=clear)

    def _solution(self, place: Place, value: Any) -> Solution:
        found = self.reader.mapping(place, value, optional=("faults", "background", "apply", "kubectl"))
        if found is None:
            return Solution()
        applied_faults: list[FaultAction] = []
        for index, item in enumerate(self.reader.sequence(place / "faults", found.get("faults", [])) or ()):
            item_place = (place / "faults").item(index)
            if not isinstance(item, dict) or not (FAULT in item or CLEAR in item):
                self.problem(
                    item_place, f"a solution's fault is {{{FAULT}: <kind>, ...}} or {{{CLEAR}: <kind>, ...}}"
                )
                continue
            if "label" in item:
                self.problem(item_place / "label", "a solution's fault has no button: its label says nothing")
                continue
            if (fault := self._fault(item_place, item)) is not None:
                applied_faults.append(fault)
        applied: list[SolutionManifest] = []
        for index, item in enumerate(self.reader.sequence(place / "apply", found.get("apply", [])) or ()):
            item_place = (place / "apply").item(index)
            expected = self._expectation(item_place, item, "apply")
            if expected is None:
                continue
            name, refused = expected
            text = self._manifest(item_place / "apply" if refused else item_place, name)
            if text is not None:
                applied.append(SolutionManifest(text=text, refused=refused))
        commands: list[SolutionCommand] = []
        for index, item in enumerate(self.reader.sequence(place / "kubectl", found.get("kubectl", [])) or ()):
            item_place = (place / "kubectl").item(index)
            expected = self._expectation(item_place, item, "kubectl")
            if expected is None:
                continue
            written, refused = expected
            command_place = item_place / "kubectl" if refused else item_place
            command = self._kubectl(command_place, written, unattended=True)
            if command is not None:
                commands.append(SolutionCommand(command=command, refused=refused))
        background: list[str] = []
        for index, item in enumerate(
            self.reader.sequence(place / "background", found.get("background", [])) or ()
        ):
            item_place = (place / "background").item(index)
            if isinstance(item, dict):
                self.problem(
                    item_place,
                    "a background command runs beside the rest of the solution and is stopped at its "
                    "end, so nothing can expect it to be refused: write the command alone, or move it "
                    "to kubectl",
                )
                continue
            if (command := self._kubectl(item_place, item, unattended=True, may_watch=True)) is not None:
                background.append(command)
        return Solution(
            apply=tuple(applied),
            kubectl=tuple(commands),
            background=tuple(background),
            faults=tuple(applied_faults),
        )

    def _mistake(self, place: Place, value: Any, check: Check | None) -> Mistake | None:
        """A step's common mistake: what it does, written as a solution is, and ``failing``, the id of
        the check's leaf that must fail after it (docs/course-format.md)."""
        found = self.reader.mapping(
            place, value, required=("failing",), optional=("faults", "background", "apply", "kubectl")
        )
        if found is None:
            return None
        failing = self.reader.string(place / "failing", found.pop("failing"), pattern=ID_PATTERN)
        actions = self._solution(place, found)
        if actions.empty:
            self.problem(place, "a mistake does something: faults, background, apply or kubectl")
            return None
        if failing is None or check is None:
            return None
        if failing not in check.ids():
            known = ", ".join(sorted(check.ids())) or "none has an id"
            self.problem(place / "failing", f"{failing!r} is no id in the step's check (its ids: {known})")
            return None
        return Mistake(actions=actions, failing=failing)

    def _expectation(self, place: Place, value: Any, key: str) -> tuple[Any, bool] | None:
        """A solution's ``apply`` or ``kubectl`` item: the value as written (a manifest file or a
        command), and whether the cluster is expected to refuse it.

        An item is the value alone, or ``{<key>: value, expect: refused}``: the step's lesson is the
        refusal (docs/course-format.md). ``expect`` has that one value; an ordinary item is written
        alone, so the mapping is only for a refusal. None: the mapping has a problem (reported).
        """
        if not isinstance(value, dict):
            return value, False
        found = self.reader.mapping(place, value, required=(key, "expect"))
        if found is None:
            return None
        expect = self.reader.string(place / "expect", found["expect"])
        if expect is None:
            return None
        if expect != EXPECT_REFUSED:
            self.problem(
                place / "expect",
                f"{expect!r}: the one expectation is {EXPECT_REFUSED!r} (an item expected to succeed is "
                "written alone, without a mapping)",
            )
            return None
        return found[key], True

    def _manifest(self, place: Place, value: Any, *, patch: bool = False) -> str | None:
        """The text of the manifest file ``value`` names (under the chapter's ``manifests/``), checked."""
        name = self.reader.string(place, value)
        if name is None:
            return None
        if (name, patch) not in self.manifests:
            self.manifests[(name, patch)] = self._read_manifest(name, patch=patch)
        text, problem = self.manifests[(name, patch)]
        if problem is not None:
            self.problem(place, problem)
        return text

    def _read_manifest(self, name: str, *, patch: bool) -> tuple[str | None, str | None]:
        """The manifest's text, or why it cannot be used."""
        problem = _manifest_path_problem(name)
        if problem is not None:
            return None, problem
        try:
            text = (self.directory / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, f"there is no file {self.prefix}/{name}"
        except (OSError, UnicodeDecodeError) as error:
            return None, f"{name}: cannot be read: {error}"
        problem = _manifest_problem(name, text, patch=patch)
        return (None, problem) if problem is not None else (text, None)

    # -- the prose ---------------------------------------------------------------------------------

    def _prose(self, code: str, name: str, steps: list[_StepParts]) -> ParsedProse | None:
        file = f"{self.prefix}/{name}"
        try:
            text = (self.directory / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            self.course.problems.add(
                file, "", "the file is missing: every chapter is written in every language"
            )
            return None
        except (OSError, UnicodeDecodeError) as error:
            self.course.problems.add(file, "", f"cannot be read: {error}")
            return None
        parsed = parse_prose(text)

        def at(line: int | None) -> str:
            return f"line {line}" if line else ""

        add = self.course.problems.add
        for problem in parsed.problems:
            add(file, at(problem.line), problem.message)
        for ref in parsed.diagram_refs:
            if (why := node_id_problem(ref.node, nodes_in_chapter=self.nodes)) is not None:
                add(file, at(ref.line), f"diagram link: {why}")
        for command in parsed.commands:
            if command.problem is not None:
                add(file, at(command.line), f"{command.command!r}: {command.problem}")
        if not self.structure:
            return parsed
        wanted = [s.id for s in steps]
        for step in steps:
            if step.id not in parsed.step_lines:
                add(file, "", f"no section for step {step.id!r}: add '## <its title> {{#{step.id}}}'")
                continue
            has = parsed.prose.steps[step.id].hints
            for hint in step.hints:
                if hint.id not in has:
                    add(
                        file,
                        at(parsed.step_lines[step.id]),
                        f"step {step.id!r} has no section for its hint {hint.id!r}: "
                        f"add '### <title> {{#{hint.id}}}'",
                    )
            for (step_id, hint_id), line in parsed.hint_lines.items():
                if step_id == step.id and all(h.id != hint_id for h in step.hints):
                    add(
                        file,
                        at(line),
                        f"a section for hint {hint_id!r}, which step {step.id!r} "
                        "does not have in chapter.yaml",
                    )
        for step_id, line in parsed.step_lines.items():
            if step_id not in self.declared:
                add(file, at(line), f"a section for step {step_id!r}, which chapter.yaml does not have")
        in_both = [s for s in parsed.step_lines if s in wanted]
        if in_both != [s for s in wanted if s in parsed.step_lines]:
            add(file, "", f"the steps' sections must come in chapter.yaml's order: {', '.join(wanted)}")
        if code == DEFAULT_LANGUAGE:
            self._lint(file, steps, parsed)
        return parsed

    def _solutions_explained(self, steps: list[_StepParts], prose: dict[str, ParsedProse | None]) -> None:
        """A solution that does something is explained in every language; one explained in some
        language is explained in all."""
        for step in steps:
            explained = {
                code
                for code, parsed in prose.items()
                if parsed is not None
                and step.id in parsed.prose.steps
                and parsed.prose.steps[step.id].solution_html is not None
            }
            if not explained and step.solution.empty:
                continue
            for code, parsed in prose.items():
                if parsed is None or step.id not in parsed.prose.steps or code in explained:
                    continue
                self.course.problems.add(
                    f"{self.prefix}/{LANGUAGES[code]}",
                    f"line {parsed.step_lines[step.id]}",
                    f"step {step.id!r} has no section explaining its solution: "
                    f"add '### <title> {{#{SOLUTION_ID}}}'",
                )

    def _lint(self, file: str, steps: list[_StepParts], parsed: ParsedProse) -> None:
        """The content linter (``linter``): each check names only what its step's English text says."""
        for step in steps:
            prose = parsed.prose.steps.get(step.id)
            if prose is None:
                continue
            for which, check in (("check", step.check), ("wait", step.wait)):
                if check is None:
                    continue
                for found in linter.unmentioned(check, prose.text):
                    self.course.problems.add(
                        file,
                        f"line {parsed.step_lines[step.id]}",
                        f"step {step.id!r}: {found.message(which)}",
                    )


def _unattended_problem(words: list[str], *, may_watch: bool) -> str | None:
    """Why a solution cannot run ``kubectl`` with these words unattended, or None."""
    subcommand = next((w for w in words[1:] if not w.startswith("-")), "")
    flags = {w.split("=", 1)[0] for w in words[1:] if w.startswith("-")}
    if subcommand in _INTERACTIVE_SUBCOMMANDS:
        return f"a solution runs unattended: 'kubectl {subcommand}' waits for a person"
    if tty := sorted(flags & _TTY):
        return f"a solution runs unattended: {' '.join(tty)} waits for a person"
    watching = sorted(flags & _WATCH) + sorted(flags & {"-f", "--follow"} if subcommand == "logs" else set())
    if watching and not may_watch:
        return (
            f"a solution runs unattended: {' '.join(watching)} would never finish "
            "(a watch the solution needs goes under background)"
        )
    return None


def _manifest_path_problem(name: str) -> str | None:
    parts = Path(name).parts
    if Path(name).is_absolute() or ".." in parts or len(parts) < 2 or parts[0] != "manifests":
        return (
            f"{name!r}: a manifest is a file under the chapter's manifests/ directory (manifests/<file>.yaml)"
        )
    if not name.endswith((".yaml", ".yml")):
        return f"{name!r}: a manifest file ends in .yaml"
    return None


def _manifest_problem(name: str, text: str, *, patch: bool) -> str | None:
    """Why the manifest ``text`` is unusable: not YAML, or a document that is no Kubernetes object."""
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return f"{name}: not valid YAML{where}: {getattr(error, 'problem', None) or error}"
    if not documents:
        return f"{name}: the file holds no document"
    if patch:
        if len(documents) != 1 or not isinstance(documents[0], dict):
            return f"{name}: a patch is one mapping"
        return None
    for number, document in enumerate(documents, start=1):
        if not isinstance(document, dict):
            return f"{name}: document {number} is not a mapping"
        missing = [
            key
            for key in ("apiVersion", "kind")
            if not isinstance(document.get(key), str) or not document[key]
        ]
        if missing:
            return f"{name}: document {number} has no {' and no '.join(missing)}"
    return None


__all__ = [
    "DEFAULT_ROOT",
    "content_root",
    "course_slugs",
    "courses",
    "load_course",
    "problems",
    "reload",
]
