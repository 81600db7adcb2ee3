"""What a course is made of, once loaded: frozen values the pages, the checks and the solutions read.

A ``Course`` is an ordered tuple of ``Chapter``\\ s; a chapter is an ordered tuple of ``Step``\\ s plus its
prose in each language (``courses.engine.prose.ChapterProse``). A step says, in one place for every
language, what the diagram points at (``Highlight``), which trace types its narration shows, how the
animation plays (``Timeline``), the manifest the form starts with, the buttons it offers
(``Action``, a ``FaultAction`` among them), what it waits for and what "done" means (``Check``\\ s
from ``courses.engine.checks``), its hints (``Hint``) and its solution (``Solution``:
``SolutionManifest``\\ s and ``SolutionCommand``\\ s).

Nothing here does I/O or knows a student: strings may contain ``$student``, which ``for_student``
replaces with the student's cluster user name (``student:<username>``) where a string is used.

Languages are Django's codes: ``en`` and ``zh-hans`` (``LANGUAGES``). A chapter that lacks a language
falls back to English (``Chapter.prose_for``); the loader makes sure none lacks one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from courses.engine.prose import ChapterProse

if TYPE_CHECKING:
    from controlplane.faults.catalogue import FaultSpec
    from courses.engine.checks import Check

#: The languages a course is written in: Django's language code -> the prose file's name.
LANGUAGES: Mapping[str, str] = {"en": "en.md", "zh-hans": "zh-Hans.md"}
#: The language every page falls back to.
DEFAULT_LANGUAGE = "en"
#: Stands for the student's cluster user name (``student:<username>``) in any string of a chapter.
STUDENT = "$student"


def for_student(text: str, user: str) -> str:
    """``text`` with ``$student`` replaced by the student's cluster user name ``user``."""
    return text.replace(STUDENT, user)


def language_code(code: str | None) -> str:
    """The course language for a Django language ``code``: itself if the course has it, else English
    (any Chinese reads ``zh-hans``)."""
    code = (code or DEFAULT_LANGUAGE).lower()
    if code in LANGUAGES:
        return code
    if code.startswith("zh"):
        return "zh-hans"
    return DEFAULT_LANGUAGE


@dataclass(frozen=True)
class Highlight:
    """What the diagram points at while a step is open: node ids and edges between them."""

    nodes: tuple[str, ...] = ()
    edges: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Timeline:
    """How the animation plays while a step is open.

    ``speed``: 1 is normal, 0.5 half speed, 0 paused. ``at``: the id of a ``trace`` leaf of the step's
    check (or wait); once that leaf has matched, the timeline can be deep-linked to the event it matched.
    """

    speed: float = 1.0
    at: str | None = None


@dataclass(frozen=True)
class Request:
    """One API request a step's button sends as the student, through the full pipeline.

    ``path`` is relative to the cluster (``/api/v1/namespaces/default/configmaps``); ``body`` is the
    text of a manifest (a JSON merge patch for PATCH), or None.
    """

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    path: str
    body: str | None = None


@dataclass(frozen=True)
class FaultAction:
    """A fault of the catalogue (``controlplane/faults``) a step applies to the student's own sandbox,
    or clears: ``{fault: stop-kubelet, node: node-2}``, ``{clear: stop-kubelet, node: node-2}``.

    ``spec`` is the fault as checked when the course loaded (its kind, its parameters, its duration);
    ``clear``: the step clears it rather than applying it.
    """

    spec: FaultSpec
    clear: bool = False

    def label(self, lang: str | None) -> str:
        """The catalogue's words for it in Django language ``lang`` ("Stop the kubelet on node-2")."""
        return self.spec.clear_label(lang) if self.clear else self.spec.label(lang)


@dataclass(frozen=True)
class Action:
    """A button a step offers: a kubectl command typed into the console, one API request, or a fault
    applied to (or cleared from) the student's sandbox.

    ``label`` is the button's text by language (Django codes); empty when the chapter gives none, and
    then the page shows the command, the request's method and path, or the catalogue's words for the
    fault.
    """

    kind: Literal["kubectl", "request", "fault"]
    kubectl: str | None = None
    request: Request | None = None
    label: Mapping[str, str] = field(default_factory=dict)
    fault: FaultAction | None = None


@dataclass(frozen=True)
class Hint:
    """A hint of a step, by id; its words are in each language's prose under ``### ... {#id}``.

    ``when``: the id of a leaf of the step's check; while that leaf fails, this hint comes first.
    """

    id: str
    when: str | None = None


@dataclass(frozen=True)
class SolutionManifest:
    """A manifest a solution applies: its text, and whether the lesson is that the cluster refuses it.

    ``refused`` (``{apply: manifests/<file>.yaml, expect: refused}`` in ``chapter.yaml``): the step
    teaches a refusal (validation, admission, a conflict), so the solution goes on only if the API
    server refuses the manifest, and fails if it is applied.
    """

    text: str
    refused: bool = False


@dataclass(frozen=True)
class SolutionCommand:
    """A kubectl command a solution runs, and whether the lesson is that it is refused.

    ``refused`` (``{kubectl: "...", expect: refused}`` in ``chapter.yaml``): the command must fail
    (kubectl exits by itself with a non-zero status, as it does when the API server refuses the
    request: RBAC's 403, a webhook's denial, a 409); the solution fails if it succeeds.
    """

    command: str
    refused: bool = False


@dataclass(frozen=True)
class Solution:
    """What "show me" does, and what "jump to step N" replays for each step before N.

    ``faults``: faults applied to (or cleared from) the sandbox before anything else, in order (a
    step whose lesson needs a stopped kubelet). ``background``: kubectl commands started next and left
    running while the rest runs: a watch
    that must be open before the change it is there to see (``kubectl get configmap -w``, or a
    ``kubectl wait --for=...`` that ends by itself); then ``apply``: manifests, applied (server-side)
    as the student, in order; then ``kubectl``: non-interactive kubectl commands, in order. A manifest
    or a command may be one the cluster is expected to refuse (``refused``): then the refusal is what
    the solution needs. After a moment for their last events, background commands still running are
    stopped.
    """

    apply: tuple[SolutionManifest, ...] = ()
    kubectl: tuple[SolutionCommand, ...] = ()
    background: tuple[str, ...] = ()
    #: Faults applied to (or cleared from) the sandbox first, before anything else of the solution.
    faults: tuple[FaultAction, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.apply and not self.kubectl and not self.background and not self.faults


@dataclass(frozen=True)
class Mistake:
    """A common wrong way to do a step, kept beside it as proof that its check tells the two apart.

    ``actions`` run like a solution (on the student's sandbox, as the student); afterwards the step's
    check must still fail, at the leaf ``failing``, and say what it saw instead. The course's
    playthrough test runs every step's mistake before its solution (docs/course-format.md).
    """

    actions: Solution
    failing: str


@dataclass(frozen=True)
class Step:
    """One step of a chapter, the same in every language (its words are in ``Chapter.prose``)."""

    id: str
    highlight: Highlight
    narration: tuple[str, ...]
    timeline: Timeline | None
    editor: str | None
    actions: tuple[Action, ...]
    wait: Check | None
    check: Check
    hints: tuple[Hint, ...]
    solution: Solution
    mistake: Mistake | None = None


@dataclass(frozen=True)
class Chapter:
    """A chapter: its place in its course, the sandbox it needs, its steps, its prose per language.

    ``nodes``: how many nodes the student's sandbox has in this chapter. ``impersonate``: the users the
    form's "as" and the console's ``--as`` may name here (the API server still decides).
    """

    course: str
    slug: str
    number: int
    nodes: int
    impersonate: tuple[str, ...]
    steps: tuple[Step, ...]
    prose: Mapping[str, ChapterProse]

    def prose_for(self, lang: str | None) -> ChapterProse:
        """The prose in Django language ``lang``, or in English if the chapter is not written in it."""
        return self.prose.get(language_code(lang)) or self.prose[DEFAULT_LANGUAGE]

    def step(self, step_id: str) -> Step | None:
        """The step with id ``step_id``, or None."""
        return next((s for s in self.steps if s.id == step_id), None)

    def index(self, step_id: str) -> int | None:
        """The position of step ``step_id`` (0-based), or None."""
        return next((i for i, s in enumerate(self.steps) if s.id == step_id), None)


@dataclass(frozen=True)
class Course:
    """A course: its slug, its title per language (Django codes), its chapters in order."""

    slug: str
    title: Mapping[str, str]
    chapters: tuple[Chapter, ...]

    def title_for(self, lang: str | None) -> str:
        """The title in Django language ``lang``, or in English."""
        return self.title.get(language_code(lang)) or self.title[DEFAULT_LANGUAGE]

    def chapter(self, slug: str) -> Chapter | None:
        """The chapter called ``slug``, or None."""
        return next((c for c in self.chapters if c.slug == slug), None)


__all__ = [
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "STUDENT",
    "Action",
    "Chapter",
    "Course",
    "FaultAction",
    "Highlight",
    "Hint",
    "Request",
    "Solution",
    "SolutionCommand",
    "SolutionManifest",
    "Step",
    "Timeline",
    "for_student",
    "language_code",
]
