"""Submitting the manifest form: a dry run of the whole text first, then the real thing, as the student.

``submit`` is what the form's buttons do, the way ``kubectl`` would do it, through the student's own
credential and the API server's whole pipeline (so every request is authenticated, authorized,
admitted, audited, and animates on their diagram):

* **apply** is server-side apply, one ``PATCH`` per document (kubectl ``apply --server-side``)::

      PATCH /apis/apps/v1/namespaces/default/deployments/web
            ?fieldManager=<student>&fieldValidation=Strict&force=false
      Content-Type: application/apply-patch+yaml

  The body is the document as JSON (which is YAML), as kubectl sends it. The field manager is the
  student's name, so ``metadata.managedFields`` shows which fields they own; ``force=false`` makes a
  field another manager owns a 409 Conflict to learn from, not something silently taken over.
* **dry-run** sends the same requests with ``dryRun=All``: the API server runs every stage,
  admission and validation included, and writes nothing.
* **delete** sends ``DELETE`` for each document's object (``propagationPolicy: Background``, kubectl
  ``delete``'s default).

**Nothing partial.** Every document is first sent with ``dryRun=All``. If any of them is refused,
nothing is written and the result says which one and why; only when all pass are they sent for real,
in order. (Between the two, the cluster can still change: should a document fail then, the result
says which documents were applied before it, and the rest are not sent.)

**What happened**, per document, in kubectl's words: ``created`` (201), ``configured`` or
``unchanged``. kubectl prints ``serverside-applied`` for every server-side apply
(``k8s.io/kubectl/pkg/cmd/apply/apply.go``); the form tells the two apart the way the store does: an
apply that changes nothing is not written (``etcd3`` ``GuaranteedUpdate`` skips an unchanged object),
so the object keeps the resourceVersion the dry run saw. For the dry-run button, the dry run's
answer is compared with the object as it is now.

**Where.** The kind's resource comes from discovery (``discovery.py``); a namespaced kind goes to
``metadata.namespace``, or the student's default namespace (``SandboxAccess.namespace``: ``default``
in a sandbox, their own in a classroom's shared cluster). ``impersonate`` sends ``Impersonate-User``
(a ServiceAccount is the user ``system:serviceaccount:<namespace>:<name>``): the caller passes only
names the chapter allows, and the API server decides with RBAC whether the student may act as them.

**Never a 500.** What the text itself gets wrong is refused before any request (``parse.py``); what
the API server answers is explained (``explain.py``); anything unexpected is logged and becomes a
"could not submit" result. A refusal's trace events (the ``rbac.decision`` of a 403, the
``admission.step`` of a denial) are read from a subscription to the cluster's trace held while the
submission runs, by the request's ``Audit-Id``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

import httpx
from django.utils.translation import gettext, ngettext

from controlplane.api import serializer
from courses import gateway
from courses.manifests import discovery, errors
from courses.manifests.explain import Answer, explain, explain_mapping
from courses.manifests.parse import Document, parse
from courses.manifests.results import (
    ACTIONS,
    Action,
    Diagnostic,
    DocumentResult,
    Problem,
    State,
    SubmitResult,
)

if TYPE_CHECKING:
    from courses.sandboxes.services import SandboxAccess

logger = logging.getLogger(__name__)

APPLY_PATCH: Final = "application/apply-patch+yaml"
#: kubectl delete's default: the object goes now, its dependents after it (the garbage collector).
DELETE_OPTIONS: Final = b'{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}'
#: The API server's limit on a field manager's name (bytes).
MAX_FIELD_MANAGER: Final = 128
#: How many times a real request that flow control throttles (429) is sent again, and the longest
#: wait for it (seconds) whatever its Retry-After says.
THROTTLED_RETRIES: Final = 3
MAX_RETRY_WAIT: Final = 5
#: ``_answer``'s default: the body has not been read as JSON yet.
_UNREAD: Final = object()
#: Texts longer than this are parsed in a worker thread, so that the event loop (which serves the
#: clusters too) is not held for the moment a large text takes.
PARSE_INLINE_LIMIT: Final = 64 * 1024


async def submit(
    *,
    access: SandboxAccess,
    text: str | bytes,
    action: Action,
    field_manager: str,
    impersonate: str | None = None,
) -> SubmitResult:
    """Dry-run, apply or delete the documents of ``text`` in the student's sandbox (module docstring).

    Never raises for anything the text or the API server does; an unexpected error is logged and
    returned as a result that says the manifest could not be submitted.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}: expected one of {', '.join(ACTIONS)}")
    try:
        return await _submit(access, text, action, _manager(field_manager), impersonate)
    except Exception:
        logger.exception("could not submit a manifest to cluster %s", access.cluster)
        summary = gettext(
            "Could not submit the manifest: something went wrong on the lab's side (it has been logged). "
            "Try again in a moment."
        )
        return SubmitResult(action=action, ok=False, summary=summary, impersonated=impersonate)


def _manager(name: str) -> str:
    """The field manager: the name, cut to what the API server accepts (128 bytes, printable)."""
    name = "".join(c for c in name if c.isprintable()) or "kubelab"
    while len(name.encode()) > MAX_FIELD_MANAGER:
        name = name[:-1]
    return name


async def _parse(text: str | bytes) -> tuple[Document, ...]:
    if len(text) > PARSE_INLINE_LIMIT:
        return await asyncio.to_thread(parse, text)
    return parse(text)


async def _submit(
    access: SandboxAccess, text: str | bytes, action: Action, manager: str, impersonate: str | None
) -> SubmitResult:
    try:
        documents = await _parse(text)
    except errors.ManifestError as error:
        return refused(action, error, impersonated=impersonate)
    headers = {"Accept": "application/json"}
    if impersonate is not None:
        if not impersonate or not impersonate.isprintable() or not impersonate.isascii():
            summary = gettext("You cannot act as %(user)s here.") % {"user": repr(impersonate)}
            return SubmitResult(action=action, ok=False, summary=summary, refused=True)
        headers["Impersonate-User"] = impersonate
    try:
        async with gateway.api_client(cluster=access.cluster, token=access.token) as client:
            with _Trace(access.cluster) as trace:
                session = _Session(client, access.cluster, manager, headers, trace, documents)
                session.namespace = access.namespace
                return await session.run(action, impersonated=impersonate)
    except gateway.NotServedHere:
        summary = gettext(
            "Your cluster is not running in this server process, so nothing was sent. Reload the page."
        )
    except gateway.NotRunning as error:
        summary = gettext("Your cluster is %(state)s, so nothing was sent. Reload the page to wake it.") % {
            "state": error.state
        }
    return SubmitResult(action=action, ok=False, summary=summary, impersonated=impersonate)


def refused(action: Action, error: errors.ManifestError, *, impersonated: str | None = None) -> SubmitResult:
    """The result for a text refused before it reached the cluster."""
    problems = error.problems()
    diagnostics = tuple(Diagnostic(p.line, p.column, p.message) for p in problems if p.line is not None)
    notes: tuple[str, ...] = ()
    if len(problems) == 1:
        summary = str(error)
    else:
        summary, notes = error.message, tuple(str(p) for p in problems)
    return SubmitResult(
        action=action,
        ok=False,
        summary=summary,
        diagnostics=diagnostics,
        refused=True,
        notes=notes,
        impersonated=impersonated,
    )


# -- the trace of the submission's own requests ---------------------------------------------------------


class _Trace:
    """The cluster's trace while the submission runs, read by each request's Audit-Id."""

    def __init__(self, cluster: str) -> None:
        try:
            self.subscription: gateway.Subscription | None = gateway.subscribe_trace(cluster=cluster)
        except (gateway.NotServedHere, gateway.NotRunning, RuntimeError):
            self.subscription = None  # explanations lose their trace details, nothing else

    def events(self, audit_id: str | None) -> list[Mapping[str, Any]]:
        """The events of the request ``audit_id`` (drains what came since, so nothing piles up)."""
        if self.subscription is None:
            return []
        batch = self.subscription.drain()
        return [event for event in batch.events if audit_id and event.get("id") == audit_id]

    def __enter__(self) -> _Trace:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.subscription is not None:
            self.subscription.close()


# -- one submission -----------------------------------------------------------------------------------


@dataclass
class _Outcome:
    """What became of one document so far."""

    document: Document
    resource: discovery.Resource | None = None
    state: State | None = None
    dry_run: bool = False
    #: The resourceVersion in the latest answer (the dry run's, then the real request's).
    resource_version: str | None = None
    problem: Problem | None = None
    warnings: list[str] = field(default_factory=list)
    #: Where a namespaced document without ``metadata.namespace`` goes: the student's default one.
    default_namespace: str = "default"

    @property
    def namespace(self) -> str:
        return self.document.namespace or self.default_namespace


@dataclass(frozen=True, slots=True)
class _Sent:
    """A request's answer: its code, its JSON body (None if it was not JSON), the trace events of the
    request (by its Audit-Id), and the API server's warnings."""

    code: int
    body: Any
    answer: Answer
    events: list[Mapping[str, Any]]
    warnings: tuple[str, ...]


class _Session:
    """The requests of one submission, over one client."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        cluster: str,
        manager: str,
        headers: Mapping[str, str],
        trace: _Trace,
        documents: Sequence[Document],
    ) -> None:
        self.client = client
        self.manager = manager
        self.headers = dict(headers)
        self.trace = trace
        self.documents = tuple(documents)
        self.mapper = discovery.RESTMapper(client, cluster=cluster)
        #: The namespace of documents that name none (``SandboxAccess.namespace``).
        self.namespace = "default"

    async def run(self, action: Action, *, impersonated: str | None) -> SubmitResult:
        outcomes = [_Outcome(document, default_namespace=self.namespace) for document in self.documents]
        for index, outcome in enumerate(outcomes):
            await self._dry_run(outcome, action, earlier=self.documents[:index])
        if any(o.problem is not None for o in outcomes):
            for outcome in outcomes:
                if outcome.problem is None:
                    outcome.state, outcome.dry_run = State.NOT_APPLIED, False
            return _result(
                action, outcomes, ok=False, summary=_rejected(action, outcomes), impersonated=impersonated
            )
        if action == "dry-run":
            return _result(
                action, outcomes, ok=True, summary=_passed(len(outcomes)), impersonated=impersonated
            )
        for index, outcome in enumerate(outcomes):
            await self._for_real(outcome, action)
            if outcome.problem is not None:
                for rest in outcomes[index + 1 :]:
                    rest.state, rest.dry_run = State.NOT_APPLIED, False
                summary = _failed_after_dry_run(action, outcomes, index)
                return _result(
                    action, outcomes, ok=False, summary=summary, changed=index > 0, impersonated=impersonated
                )
        return _result(
            action,
            outcomes,
            ok=True,
            summary=_done(action, outcomes),
            changed=True,
            impersonated=impersonated,
        )

    async def _dry_run(self, outcome: _Outcome, action: Action, *, earlier: Sequence[Document]) -> None:
        document = outcome.document
        try:
            outcome.resource = await self.mapper.resource_for(document.api_version, document.kind)
        except discovery.DiscoveryFailed as error:
            outcome.problem = explain(_answer(error.response), document=document)
            outcome.state = State.FAILED
            return
        except discovery.MappingError as error:
            outcome.problem, outcome.state = explain_mapping(error, document=document), State.FAILED
            return
        sent = await self._send(outcome, action, dry_run=True)
        if isinstance(sent, Problem):
            outcome.problem, outcome.state = sent, State.FAILED
            return
        outcome.warnings += sent.warnings
        if not 200 <= sent.code < 300:
            problem = explain(
                sent.answer, document=document, events=sent.events, earlier=earlier, dry_run=True
            )
            outcome.problem, outcome.state = problem, State.FAILED
            return
        outcome.dry_run = True
        outcome.resource_version = _resource_version(sent.body)
        if action == "delete":
            outcome.state = State.DELETED
        elif sent.code == 201:
            outcome.state = State.CREATED
        elif action == "dry-run":
            outcome.state = await self._compare(outcome, sent.body)
        else:
            outcome.state = State.APPLIED

    async def _compare(self, outcome: _Outcome, would_be: Any) -> State:
        """Whether the dry-run apply would change the object: compare its answer with the object now."""
        assert outcome.resource is not None
        document = outcome.document
        path = outcome.resource.path(name=document.name, namespace=outcome.namespace)
        try:
            response = await self.client.get(path, headers=self.headers)
            self.trace.events(None)  # (only drained)
            now = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            now = None
        if now is None:  # the student may not read it (as someone else): say only that it applies
            return State.APPLIED
        return State.UNCHANGED if _comparable(now) == _comparable(would_be) else State.CONFIGURED

    async def _for_real(self, outcome: _Outcome, action: Action) -> None:
        document = outcome.document
        before = outcome.resource_version
        sent = await self._send(outcome, action, dry_run=False)
        outcome.dry_run = False
        if isinstance(sent, Problem):
            outcome.problem, outcome.state = sent, State.FAILED
            return
        outcome.warnings += [w for w in sent.warnings if w not in outcome.warnings]
        if not 200 <= sent.code < 300:
            problem = explain(sent.answer, document=document, events=sent.events, earlier=self.documents)
            outcome.problem, outcome.state = problem, State.FAILED
            return
        outcome.resource_version = _resource_version(sent.body)
        if action == "delete":
            metadata = sent.body.get("metadata") if isinstance(sent.body, dict) else None
            pending = isinstance(metadata, dict) and metadata.get("deletionTimestamp")
            outcome.state = State.DELETING if pending else State.DELETED
        elif sent.code == 201:
            outcome.state = State.CREATED
        elif before is not None and before == outcome.resource_version:
            outcome.state = State.UNCHANGED
        else:
            outcome.state = State.CONFIGURED

    async def _send(self, outcome: _Outcome, action: Action, *, dry_run: bool) -> _Sent | Problem:
        """Send the document's request. A real one that flow control throttles (429) is sent again
        after the wait it asks for, a few times, as client-go does: the dry run has passed, and giving
        up there would leave the submission half applied. A dry run's 429 is the student's to see."""
        sent = await self._send_once(outcome, action, dry_run=dry_run)
        for _ in range(0 if dry_run else THROTTLED_RETRIES):
            if isinstance(sent, Problem) or sent.code != 429:
                break
            wait = sent.answer.retry_after or "1"
            await asyncio.sleep(min(int(wait) if wait.isdigit() else 1, MAX_RETRY_WAIT))
            sent = await self._send_once(outcome, action, dry_run=dry_run)
        return sent

    async def _send_once(self, outcome: _Outcome, action: Action, *, dry_run: bool) -> _Sent | Problem:
        assert outcome.resource is not None
        document = outcome.document
        path = outcome.resource.path(name=document.name, namespace=outcome.namespace)
        params: dict[str, str] = {}
        try:
            if action == "delete":
                if dry_run:
                    params["dryRun"] = "All"
                headers = {**self.headers, "Content-Type": "application/json"}
                response = await self.client.request(
                    "DELETE", path, params=params, content=DELETE_OPTIONS, headers=headers
                )
            else:
                params = {"fieldManager": self.manager, "fieldValidation": "Strict", "force": "false"}
                if dry_run:
                    params["dryRun"] = "All"
                sent = json.dumps(document.body, ensure_ascii=False, separators=(",", ":")).encode()
                headers = {**self.headers, "Content-Type": APPLY_PATCH}
                response = await self.client.patch(path, params=params, content=sent, headers=headers)
        except httpx.TimeoutException:
            return Problem(gettext("The API server did not answer in time; nothing more was sent."))
        except httpx.HTTPError as error:
            return Problem(gettext("Could not reach the API server: %(error)s") % {"error": error})
        body = _json(response)
        answer = _answer(response, body)
        events = self.trace.events(answer.audit_id)
        return _Sent(response.status_code, body, answer, events, _warnings(response))


def _json(response: httpx.Response) -> Any:
    """The answer's body as JSON (None if it is not)."""
    try:
        return serializer.decode(response.content)
    except ValueError:
        return None


def _answer(response: httpx.Response, data: Any = _UNREAD) -> Answer:
    """What the API server answered; ``data``: its body as JSON, if it was read already."""
    if data is _UNREAD:
        data = _json(response)
    status = data if isinstance(data, dict) and data.get("kind") == "Status" else None
    return Answer(
        code=response.status_code,
        status=status,
        text="" if status is not None else response.text[:2000],
        retry_after=response.headers.get("Retry-After"),
        audit_id=response.headers.get("Audit-Id"),
    )


_WARNING = re.compile(r'^\s*\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"')


def _warnings(response: httpx.Response) -> tuple[str, ...]:
    """The ``Warning`` headers' texts (RFC 7234: ``299 - "text"``), as kubectl prints them."""
    found = []
    for header in response.headers.get_list("Warning"):
        match = _WARNING.match(header)
        found.append(re.sub(r"\\(.)", r"\1", match.group(1)) if match else header)
    return tuple(found)


def _resource_version(body: Any) -> str | None:
    metadata = body.get("metadata") if isinstance(body, dict) else None
    version = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
    return version if isinstance(version, str) and version else None


def _comparable(obj: Any) -> Any:
    """An object without what a dry run restamps (the times in managedFields)."""
    if not isinstance(obj, dict):
        return obj
    copy = dict(obj)
    metadata = copy.get("metadata")
    if isinstance(metadata, dict):
        metadata = dict(metadata)
        fields = metadata.get("managedFields")
        if isinstance(fields, list):
            metadata["managedFields"] = [
                {k: v for k, v in entry.items() if k != "time"} if isinstance(entry, dict) else entry
                for entry in fields
            ]
        copy["metadata"] = metadata
    return copy


# -- the result ---------------------------------------------------------------------------------------


def _result(
    action: Action,
    outcomes: Sequence[_Outcome],
    *,
    ok: bool,
    summary: str,
    changed: bool = False,
    impersonated: str | None,
) -> SubmitResult:
    documents = []
    diagnostics: list[Diagnostic] = []
    for outcome in outcomes:
        document, resource = outcome.document, outcome.resource
        namespace = outcome.namespace if resource is not None and resource.namespaced else None
        documents.append(
            DocumentResult(
                number=document.number,
                first_line=document.first_line,
                last_line=document.last_line,
                api_version=document.api_version,
                kind=document.kind,
                name=document.name,
                namespace=namespace,
                state=outcome.state or State.NOT_APPLIED,
                dry_run=outcome.dry_run,
                resource_version=outcome.resource_version,
                problem=outcome.problem,
                warnings=tuple(outcome.warnings),
            )
        )
        if outcome.problem is not None:
            diagnostics += outcome.problem.diagnostics or [
                Diagnostic(document.first_line, None, outcome.problem.summary)
            ]
        diagnostics += [Diagnostic(document.first_line, None, w, "warning") for w in outcome.warnings]
    diagnostics.sort(key=lambda d: (d.line, d.column or 0))
    return SubmitResult(
        action=action,
        ok=ok,
        summary=summary,
        documents=tuple(documents),
        diagnostics=tuple(diagnostics),
        changed=changed,
        impersonated=impersonated,
    )


def _label(outcome: _Outcome) -> str:
    return f"{outcome.document.kind}/{outcome.document.name}"


def _rejected(action: Action, outcomes: Sequence[_Outcome]) -> str:
    failed = [o for o in outcomes if o.problem is not None]
    total = len(outcomes)
    if action == "dry-run":
        return ngettext(
            "The dry run refused %(failed)d of %(total)d documents. Nothing was changed.",
            "The dry run refused %(failed)d of %(total)d documents. Nothing was changed.",
            len(failed),
        ) % {"failed": len(failed), "total": total}
    if len(failed) == 1 and total == 1:
        if action == "delete":
            return gettext("%(label)s was refused in the dry run, so nothing was deleted.") % {
                "label": _label(failed[0])
            }
        return gettext("%(label)s was refused in the dry run, so nothing was applied.") % {
            "label": _label(failed[0])
        }
    values = {
        "failed": len(failed),
        "total": total,
        "first": failed[0].document.number,
        "label": _label(failed[0]),
    }
    if action == "delete":
        return (
            ngettext(
                "Document %(first)d of %(total)d (%(label)s) was refused in the dry run, so none of the "
                "documents was "
                "deleted.",
                "%(failed)d of %(total)d documents were refused in the dry run, so none of them was deleted.",
                len(failed),
            )
            % values
        )
    return (
        ngettext(
            "Document %(first)d of %(total)d (%(label)s) was refused in the dry run, so none of the "
            "documents was "
            "applied.",
            "%(failed)d of %(total)d documents were refused in the dry run, so none of them was applied.",
            len(failed),
        )
        % values
    )


def _passed(total: int) -> str:
    return ngettext(
        "The dry run passed: the API server would accept this document. Nothing was changed.",
        "The dry run passed: the API server would accept all %(total)d documents. Nothing was changed.",
        total,
    ) % {"total": total}


def _done(action: Action, outcomes: Sequence[_Outcome]) -> str:
    total = len(outcomes)
    if action == "delete":
        return ngettext("Deleted %(total)d object.", "Deleted %(total)d objects.", total) % {"total": total}
    counts = {state: sum(1 for o in outcomes if o.state is state) for state in State}
    return ngettext(
        "Applied %(total)d document: %(created)d created, %(configured)d configured, %(unchanged)d "
        "unchanged.",
        "Applied %(total)d documents: %(created)d created, %(configured)d configured, %(unchanged)d "
        "unchanged.",
        total,
    ) % {
        "total": total,
        "created": counts[State.CREATED],
        "configured": counts[State.CONFIGURED],
        "unchanged": counts[State.UNCHANGED],
    }


def _failed_after_dry_run(action: Action, outcomes: Sequence[_Outcome], index: int) -> str:
    values = {"n": index + 1, "label": _label(outcomes[index]), "done": index, "total": len(outcomes)}
    if index == 0:
        return (
            gettext(
                "Document %(n)d (%(label)s) was refused although the dry run had passed (the cluster "
                "changed in "
                "between). Nothing was changed."
            )
            % values
        )
    if action == "delete":
        return (
            ngettext(
                "Document %(n)d (%(label)s) was refused although the dry run had passed (the cluster "
                "changed in "
                "between). The %(done)d document before it was deleted; the rest were not.",
                "Document %(n)d (%(label)s) was refused although the dry run had passed (the cluster "
                "changed in "
                "between). The %(done)d documents before it were deleted; the rest were not.",
                index,
            )
            % values
        )
    return (
        ngettext(
            "Document %(n)d (%(label)s) was refused although the dry run had passed (the cluster changed in "
            "between). The %(done)d document before it was applied; the rest were not.",
            "Document %(n)d (%(label)s) was refused although the dry run had passed (the cluster changed in "
            "between). The %(done)d documents before it were applied; the rest were not.",
            index,
        )
        % values
    )


__all__ = ["APPLY_PATCH", "DELETE_OPTIONS", "refused", "submit"]
