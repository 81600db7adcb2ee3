"""What a submission of the manifest form came to: per document, and as a whole. Plain values.

``services.submit`` returns a ``SubmitResult``; the result partial (``_result.html``) shows it, and the
chapter's solutions read ``ok`` and ``summary``. For each document there is a ``DocumentResult``: what
the API server answered for it, in kubectl's words where kubectl has them (``created``,
``configured``, ``unchanged``, ``deleted``; ``(server dry run)`` after them when nothing was written),
with the object's ``resourceVersion``; or the ``Problem`` it was refused with, or that it was not
applied because another document was refused (nothing partial).

A ``Diagnostic`` is one message at one place of the text: the editor draws it in the gutter. The list
of them (``SubmitResult.diagnostics``) is the JSON block of the HTML contract: 1-based ``line`` and
``column`` in the whole textarea text, across ``---`` documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from django.utils.translation import gettext

Action = Literal["dry-run", "apply", "delete"]
ACTIONS: tuple[Action, ...] = ("dry-run", "apply", "delete")


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One message at one place of the text (1-based; ``column`` None: the whole line)."""

    line: int
    column: int | None
    message: str
    severity: Literal["error", "warning"] = "error"

    def as_json(self) -> dict[str, Any]:
        return {"line": self.line, "column": self.column, "message": self.message, "severity": self.severity}


@dataclass(frozen=True, slots=True)
class Problem:
    """Why the API server (or the way to it) refused one document's request, in the student's words.

    ``summary`` is one sentence; ``details`` are the lines that explain it (each invalid field, the
    RBAC bindings that were considered, each conflicting field); ``diagnostics`` put them on the
    lines of the text they are about. ``code`` and ``reason`` are the HTTP status and the Status
    reason (None when the request was never answered); ``retry_after`` is a 429's wait in seconds.
    """

    summary: str
    details: tuple[str, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    code: int | None = None
    reason: str | None = None
    retry_after: int | None = None


class State(StrEnum):
    """What happened to one document."""

    #: The object was made (kubectl: ``created``).
    CREATED = "created"
    #: The object existed and the apply changed it (kubectl: ``configured``).
    CONFIGURED = "configured"
    #: The object existed and the apply changed nothing: its resourceVersion stayed (``unchanged``).
    UNCHANGED = "unchanged"
    #: Applied, and whether it changed anything is not known (kubectl's ``serverside-applied``).
    APPLIED = "applied"
    #: The object is gone (kubectl: ``deleted``).
    DELETED = "deleted"
    #: Deletion started; finalizers still hold the object (a namespace being emptied, say).
    DELETING = "deleting"
    #: The API server (or the way to it) refused this document: see its ``problem``.
    FAILED = "failed"
    #: It was fine, but another document was refused, so nothing was applied (nothing partial).
    NOT_APPLIED = "not-applied"


@dataclass(frozen=True, slots=True)
class DocumentResult:
    """One document of the submission and what became of it."""

    number: int
    first_line: int
    last_line: int
    api_version: str
    kind: str
    name: str
    #: The namespace it was sent to (None: a cluster-scoped kind, or never mapped to a resource).
    namespace: str | None
    state: State
    #: Whether this state is a dry run's (nothing was written).
    dry_run: bool = False
    #: The object's resourceVersion in the API server's answer (a dry run of a create has none).
    resource_version: str | None = None
    problem: Problem | None = None
    #: The API server's warnings (``Warning`` headers: deprecated APIs and the like).
    warnings: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``ConfigMap/colours``: how the result names the object."""
        return f"{self.kind}/{self.name}"

    @property
    def outcome(self) -> str:
        """The state in words, kubectl's where it has them."""
        words = {
            State.CREATED: gettext("created"),
            State.CONFIGURED: gettext("configured"),
            State.UNCHANGED: gettext("unchanged"),
            State.APPLIED: gettext("applied"),
            State.DELETED: gettext("deleted"),
            State.DELETING: gettext("deletion started (finalizers pending)"),
            State.FAILED: gettext("refused"),
            State.NOT_APPLIED: gettext("not applied"),
        }[self.state]
        if self.dry_run and self.state not in (State.FAILED, State.NOT_APPLIED):
            return gettext("%(outcome)s (server dry run)") % {"outcome": words}
        return words


@dataclass(frozen=True, slots=True)
class SubmitResult:
    """A whole submission: whether it did what was asked, a sentence about it, each document.

    ``refused``: stopped before anything reached the cluster (the text itself was refused). ``changed``:
    something was written to the cluster (False after any dry run, and after every refusal, except when
    a document failed after the dry run had passed: then ``summary`` says what was applied).
    """

    action: Action
    ok: bool
    summary: str
    documents: tuple[DocumentResult, ...] = ()
    #: Every diagnostic, in the order of the text (the editor's JSON block).
    diagnostics: tuple[Diagnostic, ...] = ()
    refused: bool = False
    changed: bool = False
    #: The user the requests were made as, when not the student (``Impersonate-User``).
    impersonated: str | None = None
    #: Further lines under the summary (a refusal's other problems, for instance).
    notes: tuple[str, ...] = field(default=())

    def diagnostics_json(self) -> list[dict[str, Any]]:
        """The diagnostics as the editor reads them (``json_script`` renders this list)."""
        return [diagnostic.as_json() for diagnostic in self.diagnostics]


__all__ = ["ACTIONS", "Action", "Diagnostic", "DocumentResult", "Problem", "State", "SubmitResult"]
