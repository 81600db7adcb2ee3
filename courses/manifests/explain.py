"""The API server's refusals, explained to a student and put on the lines they are about. Pure.

Errors are the lesson, so each kind of refusal gets its own explanation (``explain``), built from the
``Status`` the API server answered (apimachinery ``pkg/apis/meta/v1/types.go``: ``reason``,
``message``, ``details.causes``) and, when the form could watch, the trace events of the very request
(matched by its ``Audit-Id``):

* **422 Invalid**: each cause names a field (``spec.containers[0].image``) and is marked at that
  field's line (``locate.py``);
* **400 BadRequest**: the decoder's words; the field paths they name (server-side apply's
  ``.spec.replicas: expected numeric``, strict decoding's ``unknown field "spec.foo"``) are marked too;
* **403 Forbidden** from authorization: the Status message, and from the trace's ``rbac.decision`` the
  authorizer's reason and every binding it considered, with why none of its rules fits;
* **403 (or any code) from admission**: the plugin that denied it, from the trace's ``admission.step``
  (or the webhook named in the message), and its message;
* **404 NotFound**: a namespace that does not exist (or does not exist *yet*: an earlier document of
  the same submission creates it, and a dry run creates nothing), or nothing to delete;
* **409 Conflict**: from server-side apply, the fields another field manager owns (each cause names
  the manager and the field, marked); from optimistic concurrency, the ``resourceVersion`` the
  manifest carries is older than the object: someone wrote it since it was read;
* **429 TooManyRequests**: flow control, with the wait it asks for (``Retry-After``);
* **413**: the request was too large; **401**: the credential was not accepted.

Everything here takes plain values and returns a ``results.Problem``, so each explanation is tested
with a table of answers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext, ngettext

from courses.manifests import discovery
from courses.manifests.locate import locate
from courses.manifests.parse import Document
from courses.manifests.results import Diagnostic, Problem


@dataclass(frozen=True, slots=True)
class Answer:
    """One response of the API server, reduced to what explaining it needs."""

    code: int
    #: The ``Status`` object of a failure (None if the body was not one: flow control's 429 is plain text).
    status: Mapping[str, Any] | None = None
    #: The body as text, when it was not a Status.
    text: str = ""
    #: The ``Retry-After`` header.
    retry_after: str | None = None
    #: The ``Audit-Id`` header: every trace event of the request carries it as ``id``.
    audit_id: str | None = None

    @property
    def reason(self) -> str:
        return _text(self.status, "reason")

    @property
    def message(self) -> str:
        return _text(self.status, "message") or self.text.strip()

    @property
    def details(self) -> Mapping[str, Any]:
        details = self.status.get("details") if self.status else None
        return details if isinstance(details, Mapping) else {}

    @property
    def causes(self) -> list[Mapping[str, Any]]:
        causes = self.details.get("causes")
        return [c for c in causes if isinstance(c, Mapping)] if isinstance(causes, list) else []


def _text(data: Mapping[str, Any] | None, key: str) -> str:
    value = data.get(key) if data else None
    return value if isinstance(value, str) else ""


def _where(document: Document, path: str, message: str) -> Diagnostic:
    location = locate(document.node, path)
    return Diagnostic(location.line, location.column, message)


def _at_start(document: Document, message: str) -> Diagnostic:
    return Diagnostic(document.first_line, None, message)


def _object(document: Document) -> str:
    return f'{document.kind} "{document.name}"'


def explain(
    answer: Answer,
    *,
    document: Document,
    events: Sequence[Mapping[str, Any]] = (),
    earlier: Sequence[Document] = (),
    dry_run: bool = False,
) -> Problem:
    """Why ``answer`` refused ``document``'s request (module docstring).

    ``events``: the trace events of the request (any others are ignored); ``earlier``: the documents
    before it in the submission; ``dry_run``: whether the request was a dry run.
    """
    mine = [e for e in events if answer.audit_id and e.get("id") == answer.audit_id]
    if answer.code == 404:  # NamespaceLifecycle's "namespaces not found" is about the namespace
        return _not_found(answer, document, earlier, dry_run=dry_run)
    denial = next((e for e in mine if e.get("type") == "admission.step" and e.get("outcome") == "deny"), None)
    webhook = re.match(r'admission webhook "([^"]+)" denied the request', answer.message)
    if denial is not None or webhook:
        plugin = str(denial.get("plugin")) if denial is not None else webhook.group(1) if webhook else "?"
        return _admission(answer, document, plugin)
    code = answer.code
    if code == 422:
        return _invalid(answer, document)
    if code == 400:
        return _bad_request(answer, document)
    if code == 401:
        return _problem(
            answer,
            gettext("The API server did not accept your credential (401 Unauthorized). Reload the page."),
        )
    if code == 403:
        rbac = next((e for e in mine if e.get("type") == "rbac.decision" and e.get("allowed") is False), None)
        return _forbidden(answer, document, rbac)
    if code == 409:
        return _conflict(answer, document)
    if code == 413:
        summary = gettext("The request was too large for the API server: %(message)s") % {
            "message": answer.message
        }
        return _problem(answer, summary, _at_start(document, summary))
    if code == 429:
        return _throttled(answer, document)
    summary = gettext("The API server answered %(code)d %(reason)s: %(message)s") % {
        "code": code,
        "reason": answer.reason or gettext("(no reason)"),
        "message": answer.message or gettext("(no message)"),
    }
    return _problem(answer, summary, _at_start(document, summary))


def _problem(
    answer: Answer | None, summary: str, *diagnostics: Diagnostic, details: Sequence[str] = ()
) -> Problem:
    retry = None
    if answer is not None and answer.retry_after and answer.retry_after.strip().isdigit():
        retry = int(answer.retry_after.strip())
    return Problem(
        summary=summary,
        details=tuple(details),
        diagnostics=tuple(diagnostics),
        code=answer.code if answer is not None else None,
        reason=(answer.reason or None) if answer is not None else None,
        retry_after=retry,
    )


def _invalid(answer: Answer, document: Document) -> Problem:
    causes = answer.causes
    diagnostics: list[Diagnostic] = []
    details: list[str] = []
    for cause in causes:
        field_path, message = _text(cause, "field"), _text(cause, "message")
        line = f"{field_path}: {message}" if field_path else message
        details.append(line)
        diagnostics.append(_where(document, field_path, line))
    summary = ngettext(
        "The API server found %(count)d invalid field in %(object)s.",
        "The API server found %(count)d invalid fields in %(object)s.",
        len(causes),
    ) % {"count": len(causes), "object": _object(document)}
    if not causes:
        summary = gettext("The API server refused %(object)s as invalid: %(message)s") % {
            "object": _object(document),
            "message": answer.message,
        }
        diagnostics.append(_at_start(document, summary))
    return _problem(answer, summary, *diagnostics, details=details)


#: Field paths in the decoder's messages: server-side apply's (``.spec.replicas: expected ...``, the
#: path then a colon) and strict decoding's (``unknown field "spec.foo"``).
_APPLY_PATH = re.compile(r'(?<![\w.\]"])(\.[A-Za-z0-9_$-]+(?:\.[A-Za-z0-9_$-]+|\[[^\]]*\])*):')
_STRICT_PATH = re.compile(r'(?:unknown|duplicate) field "([^"]+)"')


def _bad_request(answer: Answer, document: Document) -> Problem:
    message = answer.message
    summary = gettext("The API server could not read %(object)s: %(message)s") % {
        "object": _object(document),
        "message": message,
    }
    paths = [m.group(1) for m in _APPLY_PATH.finditer(message)] + [
        m.group(1) for m in _STRICT_PATH.finditer(message)
    ]
    diagnostics = [_where(document, path, message) for path in dict.fromkeys(paths)]
    return _problem(answer, summary, *(diagnostics or [_at_start(document, message)]))


def _admission(answer: Answer, document: Document, plugin: str) -> Problem:
    summary = gettext("The admission plugin %(plugin)s denied %(object)s: %(message)s") % {
        "plugin": plugin,
        "object": _object(document),
        "message": answer.message,
    }
    return _problem(answer, summary, _at_start(document, summary))


#: An authorizer's refusal (``responsewriters.Forbidden``): ``... is forbidden: User "x" cannot ...``.
_AUTHORIZATION = re.compile(r'(?:^|is )forbidden: User "(?:[^"\\]|\\.)*" cannot ')


def _forbidden(answer: Answer, document: Document, rbac: Mapping[str, Any] | None) -> Problem:
    if rbac is None and not _AUTHORIZATION.search(answer.message):
        # Not an authorizer's words, and no trace to tell: admission, most likely, without its name.
        summary = gettext("The API server refused it (403 Forbidden): %(message)s") % {
            "message": answer.message
        }
        return _problem(answer, summary, _at_start(document, summary))
    summary = gettext("Authorization refused it (403 Forbidden): %(message)s") % {"message": answer.message}
    details: list[str] = []
    if rbac is not None:
        reason = rbac.get("reason")
        if isinstance(reason, str) and reason:
            details.append(gettext("Why: %(reason)s") % {"reason": reason})
        considered = rbac.get("considered")
        for binding in considered if isinstance(considered, list) else []:
            if isinstance(binding, Mapping):
                details.append(
                    gettext("%(binding)s gives %(subject)s the %(role)s: %(why)s")
                    % {
                        "binding": binding.get("binding", "?"),
                        "subject": binding.get("subject", "?"),
                        "role": binding.get("role", "?"),
                        "why": binding.get("why", "?"),
                    }
                )
    return _problem(answer, summary, _at_start(document, summary), details=details)


def _not_found(answer: Answer, document: Document, earlier: Sequence[Document], *, dry_run: bool) -> Problem:
    details = answer.details
    if details.get("kind") == "namespaces":
        namespace = str(details.get("name", ""))
        maker = next(
            (d for d in earlier if d.kind == "Namespace" and d.api_version == "v1" and d.name == namespace),
            None,
        )
        if maker is not None and dry_run:
            summary = gettext(
                'The namespace "%(namespace)s" does not exist yet: document %(n)d creates it, but a dry run '
                "creates nothing, so this document cannot be checked before it exists. Apply document "
                "%(n)d on "
                "its own first, then the rest."
            ) % {"namespace": namespace, "n": maker.number}
        else:
            summary = gettext(
                'The namespace "%(namespace)s" does not exist. Create it first, or set metadata.namespace '
                "to one "
                "that does."
            ) % {"namespace": namespace}
        return _problem(answer, summary, _where(document, "metadata.namespace", summary))
    summary = gettext("%(object)s was not found: %(message)s") % {
        "object": _object(document),
        "message": answer.message,
    }
    return _problem(answer, summary, _where(document, "metadata.name", summary))


_MANAGER = re.compile(r'conflict with "((?:[^"\\]|\\.)*)"(?: using (\S+))?')


def _conflict(answer: Answer, document: Document) -> Problem:
    conflicts = [c for c in answer.causes if _text(c, "reason") == "FieldManagerConflict"]
    if conflicts:
        details: list[str] = []
        diagnostics: list[Diagnostic] = []
        for cause in conflicts:
            found = _MANAGER.search(_text(cause, "message"))
            manager = found.group(1) if found else "?"
            field_path = _text(cause, "field")
            line = gettext(
                '%(field)s belongs to the field manager "%(manager)s", which set it last. Server-side '
                "apply does "
                "not take a field from another manager: leave the field out of your manifest, or give it the "
                "value %(manager)s set (kubectl apply --force-conflicts would take it over)."
            ) % {"field": field_path, "manager": manager}
            details.append(line)
            diagnostics.append(_where(document, field_path, line))
        summary = ngettext(
            "Apply conflict: %(count)d field of %(object)s is owned by another field manager, so nothing was "
            "changed.",
            "Apply conflict: %(count)d fields of %(object)s are owned by other field managers, so nothing "
            "was "
            "changed.",
            len(conflicts),
        ) % {"count": len(conflicts), "object": _object(document)}
        return _problem(answer, summary, *diagnostics, details=details)
    if "has been modified" in answer.message:
        written = document.body.get("metadata", {}).get("resourceVersion")
        summary = gettext(
            "%(object)s has changed since it was read: your manifest carries metadata.resourceVersion "
            '"%(version)s", and the object has been written since. Take resourceVersion out of the manifest '
            "(apply does not need it), or read the object again and make your change to what is there now."
        ) % {"object": _object(document), "version": written}
        return _problem(answer, summary, _where(document, "metadata.resourceVersion", summary))
    summary = gettext("Conflict (409): %(message)s") % {"message": answer.message}
    return _problem(answer, summary, _at_start(document, summary))


def _throttled(answer: Answer, document: Document) -> Problem:
    seconds = answer.retry_after or str(answer.details.get("retryAfterSeconds", "") or "1")
    summary = gettext(
        "The API server is throttling your requests (429 Too Many Requests, from flow control): wait "
        "%(seconds)s s and try again."
    ) % {"seconds": seconds}
    problem = _problem(
        answer, summary, _at_start(document, summary), details=[answer.message] if answer.message else []
    )
    if problem.retry_after is None and seconds.isdigit():
        return Problem(
            problem.summary, problem.details, problem.diagnostics, problem.code, problem.reason, int(seconds)
        )
    return problem


# -- before the request: the kind ---------------------------------------------------------------------


def explain_mapping(error: discovery.MappingError, *, document: Document) -> Problem:
    """Why ``document``'s apiVersion and kind name no resource (a ``DiscoveryFailed`` is an answer of
    the API server: its caller explains that with ``explain``)."""
    values = {
        "kind": getattr(error, "kind", document.kind),
        "version": getattr(error, "api_version", document.api_version),
    }
    if isinstance(error, discovery.InvalidAPIVersion):
        summary = gettext(
            'apiVersion "%(version)s" is not a version: write "v1" or "group/version", like apps/v1.'
        ) % (values)
        return _problem(None, summary, _where(document, "apiVersion", summary))
    elsewhere = ", ".join(getattr(error, "elsewhere", ()))
    if isinstance(error, discovery.UnknownAPIVersion):
        summary = gettext('The API server does not serve apiVersion "%(version)s".') % values
        if elsewhere:
            summary += " " + gettext("%(kind)s is served as %(elsewhere)s.") % {
                **values,
                "elsewhere": elsewhere,
            }
        elif error.served:
            summary += " " + gettext("Its group is served as %(served)s.") % {
                "served": ", ".join(error.served)
            }
        return _problem(None, summary, _where(document, "apiVersion", summary))
    summary = gettext('There is no kind "%(kind)s" in %(version)s.') % values
    if isinstance(error, discovery.UnknownKind) and error.similar:
        summary += " " + gettext("Did you mean %(similar)s?") % {"similar": error.similar}
    elif elsewhere:
        summary += " " + gettext("%(kind)s is served as %(elsewhere)s: change apiVersion.") % {
            **values,
            "elsewhere": elsewhere,
        }
    return _problem(None, summary, _where(document, "kind", summary))


__all__ = ["Answer", "explain", "explain_mapping"]
