"""Audit: the pipeline stage that records who did what, before and after the request is served.

Right after authentication (the user is known, nothing is decided yet) the cluster's audit policy is
asked how much of this request to record (``controlplane.apiserver.audit``). At ``None`` nothing more
happens. Otherwise the request gets an ``AuditContext`` holding its event; the ``RequestReceived``
stage is written at once (unless the rule omits it), the authorizer's decision is added as
annotations, the answer's status code (and, at the levels that need them, the bodies) are taken as
the response is sent, and ``ResponseComplete`` is written when the request ends (``Panic`` if the
server failed; ``ResponseStarted`` first for a watch, when its headers are out).

The stage tells the trace the level (``request.stage`` detail ``level Metadata (rule 7)``), and
``request.completed`` carries ``audit`` (the level) when an event was written: the event's
``auditID`` is the trace event's ``id``, so the browser can find one from the other.

Bodies are collected only when the level needs them: the request's is already in memory once the
handler has read it (``Request.body``); the response's is taken from the ``send`` calls. The
impersonated user is the user the request acted as when it differs from the authenticated one (the
impersonation stage's ``acting``).

A request's audit exists from the moment it arrives (``RequestAudit``, upstream's ``WithAuditInit``):
its ``send`` is watched from the start, though whether anything is recorded is only known once
authentication has said who asks. The hooks in ``server.py`` are one call each: ``observing`` (wraps
``send``), ``record_received``, ``record_unauthenticated``, ``record_panic``, ``record_completed``;
the authorization stage adds its decision itself (``record_authorization``), as upstream's does.
Upstream: ``k8s.io/apiserver/pkg/endpoints/filters/audit.go`` (``WithAudit``,
``WithFailedAuthenticationAudit``), ``pkg/audit/request.go``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from prometheus_client.metrics_core import Metric

from controlplane.apiserver.apiservermetrics import request_kind
from controlplane.apiserver.audit.event import (
    DECISION_ANNOTATION,
    REASON_ANNOTATION,
    PendingEvent,
    failure_status,
    new_event,
    object_ref,
    success_status,
    user_json,
    with_status,
)
from controlplane.apiserver.audit.log import AuditLog
from controlplane.apiserver.audit.policy import Attributes, Level, Policy, RequestAuditConfig, Stage
from controlplane.apiserver.http import Message, Request, Send
from controlplane.apiserver.pipeline import Authenticated, Reporter
from controlplane.identity import UserInfo
from controlplane.metrics.vectors import CounterVec

#: The longest response body kept for ``responseObject``; a longer one is left out.
MAX_RESPONSE_BODY = 3 * 1024 * 1024


#: Policy decisions an auditor remembers at most (then it starts again).
DECISION_CACHE_SIZE = 10_000
#: Users' audit documents an auditor remembers at most (then it starts again).
USER_CACHE_SIZE = 1024


class Auditor:
    """One API server's audit: its policy, its log, and the clock its timestamps read.

    It is also a metrics collector (register it with the cluster's ``MetricsRegistry``): upstream's
    ``apiserver_audit_event_total``, ``apiserver_audit_error_total{plugin}`` and
    ``apiserver_audit_level_total{level}`` (``k8s.io/apiserver/pkg/audit/metrics.go``).
    """

    def __init__(self, policy: Policy, log: AuditLog, *, now: Callable[[], float]) -> None:
        self.policy = policy
        self.log = log
        self.now = now
        self.events = CounterVec(
            "apiserver_audit_event_total",
            "Counter of audit events generated and sent to the audit backend.",
            (),
        )
        self.levels = CounterVec(
            "apiserver_audit_level_total",
            "Counter of policy levels for audit events (1 per request).",
            ("level",),
        )
        self.events.inc((), 0)  # the series exists before the first event
        self._decided: dict[object, RequestAuditConfig] = {}
        #: ``user_json`` documents, by the id of the ``UserInfo`` they were made from (kept with it).
        self._users: dict[int, tuple[UserInfo, dict[str, Any]]] = {}
        #: Whether any rule names objects (``resourceNames``): only then does a name change a decision.
        self._names_matter = any(gr.resource_names for rule in policy.rules for gr in rule.resources)

    def evaluate(self, attrs: Attributes) -> RequestAuditConfig:
        # The policy never changes under a running server, and clients repeat their requests: walk
        # the rules once per distinct request. A resource request is judged without its path, and
        # without its object's name unless a rule lists names: every pod's create is one decision.
        key: object = attrs
        if attrs.is_resource_request:
            key = (
                attrs.user,
                attrs.groups,
                attrs.verb,
                attrs.namespace,
                attrs.api_group,
                attrs.resource,
                attrs.subresource,
                attrs.name if self._names_matter else "",
            )
        return self._decide(key, attrs)

    def evaluate_request(self, request: Request, user: UserInfo | None) -> RequestAuditConfig:
        """``evaluate(attributes(request, user))``; for a resource request whose decision is known,
        without making its attributes (the key is ``evaluate``'s, read from the request info)."""
        info = request.info
        if not info.is_resource_request:
            return self.evaluate(attributes(request, user))
        name, groups = (user.username, user.groups) if user is not None else ("", ())
        key = (
            name,
            groups,
            info.verb,
            info.namespace,
            info.api_group,
            info.resource,
            info.subresource,
            info.name if self._names_matter else "",
        )
        config = self._decided.get(key)
        if config is None:
            return self._decide(key, attributes(request, user))
        self.levels.inc((config.level.wire,))
        return config

    def _decide(self, key: object, attrs: Attributes) -> RequestAuditConfig:
        config = self._decided.get(key)
        if config is None:
            if len(self._decided) >= DECISION_CACHE_SIZE:
                self._decided.clear()
            config = self._decided[key] = self.policy.evaluate(attrs)
        self.levels.inc((config.level.wire,))
        return config

    def user_json(self, user: UserInfo) -> dict[str, Any]:
        """The audit event's ``user`` (``event.user_json``), made once per user object.

        Authentication hands out the same ``UserInfo`` for the same credential (a client certificate's
        user is remembered with its chain), so the document is kept with the object it was made from;
        the identity check makes a recycled ``id`` harmless. Events share it: nothing changes an
        event's ``user`` once made (the writer thread only encodes it).
        """
        known = self._users.get(id(user))
        if known is not None and known[0] is user:
            return known[1]
        if len(self._users) >= USER_CACHE_SIZE:
            self._users.clear()
        document = user_json(user)
        self._users[id(user)] = (user, document)
        return document

    def write(self, pending: PendingEvent) -> None:
        self.events.inc(())
        self.log.write(pending)

    async def close(self) -> None:
        await self.log.close()

    def collect(self) -> Iterable[Metric]:
        yield self.events.collect()
        errors = CounterVec(
            "apiserver_audit_error_total",
            "Counter of audit events that failed to be audited properly. Plugin identifies the plugin "
            "affected by the error.",
            ("plugin",),
        )
        errors.inc(("log",), self.log.dropped + self.log.errors)
        yield errors.collect()
        yield self.levels.collect()


@dataclass
class AuditContext:
    """One audited request: its event so far, and what is gathered for its last stage."""

    auditor: Auditor
    config: RequestAuditConfig
    event: dict[str, Any]
    #: The user authentication found (None for a request it refused).
    user: UserInfo | None
    long_running: bool
    annotations: dict[str, str] = field(default_factory=dict)
    code: int = 0
    response_json: bool = False
    #: The response's body chunks, when the level or a failure needs them.
    chunks: list[bytes] | None = None
    size: int = 0
    panic: str = ""

    def write(self, stage: Stage, pending: PendingEvent | None = None) -> None:
        omit = self.config.omit_stages
        if omit and stage in omit:  # (an enum's hash is Python code: skip it for an empty set)
            return
        event = {
            **self.event,
            "stage": stage.value,
            # Seconds here; the writer thread formats both timestamps (``event.encode``).
            "stageTimestamp": self.event["requestReceivedTimestamp"]
            if stage is Stage.REQUEST_RECEIVED
            else self.auditor.now(),
        }
        if self.annotations:
            event["annotations"] = dict(self.annotations)
        if pending is None:
            self.auditor.write(PendingEvent(event))
            return
        self.auditor.write(
            PendingEvent(
                event,
                pending.request_body,
                pending.request_content_type,
                pending.record_request,
                pending.response_body,
                pending.status_body,
                pending.omit_managed_fields,
                pending.request_accepted,
            )
        )


class RequestAudit:
    """One request's audit, from its arrival to its end (upstream's audit context, which
    ``WithAuditInit`` makes before anything else runs).

    Empty (``context`` None) until the audit stage asks the policy, and for good if the server has no
    audit policy or the policy does not record the request.
    """

    __slots__ = ("auditor", "context")

    def __init__(self, auditor: Auditor | None) -> None:
        self.auditor = auditor
        #: The event being recorded, if the policy records the request.
        self.context: AuditContext | None = None


# -- attributes --------------------------------------------------------------------------------------


def attributes(request: Request, user: UserInfo | None) -> Attributes:
    """What the policy decides on (upstream's authorizer attributes)."""
    info = request.info
    name, groups = (user.username, user.groups) if user is not None else ("", ())
    if not info.is_resource_request:
        return Attributes(name, groups, request.method.lower(), False, path=request.path)
    return Attributes(
        name,
        groups,
        info.verb,
        True,
        path=request.path,
        namespace=info.namespace,
        api_group=info.api_group,
        resource=info.resource,
        subresource=info.subresource,
        name=info.name,
    )


def source_ips(request: Request) -> list[str]:
    """``X-Forwarded-For``, then ``X-Real-Ip``, then the connection's address (``utilnet.SourceIPs``)."""
    headers = request.headers
    if "x-forwarded-for" not in headers and "x-real-ip" not in headers:  # the usual case
        return [request.client_host] if request.client_host else []
    ips = [ip.strip() for ip in headers.get("x-forwarded-for", "").split(",") if ip.strip()]
    if real := headers.get("x-real-ip", "").strip():
        ips.append(real)
    if request.client_host:
        ips.append(request.client_host)
    return list(dict.fromkeys(ips))


def request_uri(request: Request) -> str:
    return request.path + ("?" + urlencode(request.query) if request.query else "")


# -- the hooks ---------------------------------------------------------------------------------------


def observing(audit: RequestAudit, send: Send) -> Send:
    """``send``, watched for the status code and, when the level needs it, the response body."""
    if audit.auditor is None:
        return send

    async def observed(message: Message) -> None:
        context = audit.context
        if context is not None:
            _observe(context, message)
        await send(message)

    return observed


def _observe(context: AuditContext, message: Message) -> None:
    if message["type"] == "http.response.start":
        context.code = int(message.get("status", 200))
        content_type = b""
        for key, value in message.get("headers", ()):  # (``respond`` puts it first)
            if key.lower() == b"content-type":
                content_type = value
                break
        context.response_json = content_type.startswith(b"application/json")
        # A failure's Status (small) is read for responseStatus; a body only at RequestResponse, and
        # never a watch's stream.
        if context.code >= 400 or (
            context.config.level >= Level.REQUEST_RESPONSE and not context.long_running
        ):
            context.chunks = []
        if context.long_running:  # a watch: its first event says it has started
            context.write(Stage.RESPONSE_STARTED, _status_only(context.event, context.code))
    elif message["type"] == "http.response.body" and context.chunks is not None:
        chunk = message.get("body", b"")
        context.size += len(chunk)
        if context.size > MAX_RESPONSE_BODY:
            context.chunks = None
        else:
            context.chunks.append(chunk)


def _status_only(event: dict[str, Any], code: int) -> PendingEvent:
    return PendingEvent(with_status(event, success_status(code)))


def record_received(authenticated: Authenticated, audit: RequestAudit, report: Reporter) -> None:
    """The audit stage: the request's user is known, so decide its level and write ``RequestReceived``."""
    auditor = audit.auditor
    if auditor is None:
        report("audit", "pass", "no audit policy: nothing recorded")
        return
    config = _begin(audit, auditor, authenticated.request, authenticated.user)
    if config.level is Level.NONE:
        report("audit", "pass", "level None: not recorded" + _rule(config))
        return
    detail = f"level {config.level.wire}{_rule(config)}"
    if config.capped:
        detail += ": a Secret's or a token's body is never recorded"
    report("audit", "pass", detail)


def record_unauthenticated(request: Request, audit: RequestAudit) -> None:
    """A request refused by authentication is recorded too, without a user (upstream's
    ``WithFailedAuthenticationAudit``); no pipeline stage is reported, authentication stopped it."""
    if audit.auditor is not None:
        _begin(audit, audit.auditor, request, None)


def _begin(
    audit: RequestAudit, auditor: Auditor, request: Request, user: UserInfo | None
) -> RequestAuditConfig:
    config = auditor.evaluate_request(request, user)
    if config.level is Level.NONE:
        return config
    info = request.info
    ref = None
    if info.is_resource_request:
        ref = object_ref(
            resource=info.resource,
            namespace=info.namespace,
            name=info.name,
            api_group=info.api_group,
            api_version=info.api_version,
            subresource=info.subresource,
        )
    event = new_event(
        audit_id=request.audit_id,
        level=config.level.wire,
        request_uri=request_uri(request),
        verb=info.verb if info.is_resource_request else request.method.lower(),  # as ``attributes``
        user=user,
        user_document=None if user is None else auditor.user_json(user),
        source_ips=source_ips(request),
        agent=request.headers.get("user-agent", ""),
        object_ref=ref,
        received_at=auditor.now(),
    )
    long_running = request_kind(request.method, request.query, request.path) is None
    context = AuditContext(auditor, config, event, user, long_running)
    audit.context = context
    context.write(Stage.REQUEST_RECEIVED)
    return config


def _rule(config: RequestAuditConfig) -> str:
    return "" if config.rule is None else f" (rule {config.rule + 1})"


def annotations_of(audit: RequestAudit) -> dict[str, str]:
    """Where others add the request's audit annotations (upstream's ``Attributes.AddAnnotation``):
    its event's, or a dict nobody reads if the request is not recorded."""
    return audit.context.annotations if audit.context is not None else {}


def record_authorization(audit: RequestAudit, allowed: bool, reason: str) -> None:
    """The authorizer's decision, as upstream's annotations."""
    context = audit.context
    if context is not None:
        context.annotations[DECISION_ANNOTATION] = "allow" if allowed else "forbid"
        context.annotations[REASON_ANNOTATION] = reason


def record_panic(audit: RequestAudit, error: BaseException) -> None:
    """The server failed while serving the request: its last stage is ``Panic``."""
    context = audit.context
    if context is not None:
        context.panic = f"APIServer panic'd: {error!r}"


def record_completed(audit: RequestAudit, request: Request, acting: UserInfo | None, code: int) -> str:
    """The request ended with ``code``: write its last stage; the level it was recorded at, or "".

    ``acting`` is the user it acted as (None if it never got past authentication): the audit event's
    ``impersonatedUser`` when it is not the authenticated one.
    """
    context = audit.context
    if context is None:
        return ""
    audit.context = None
    config = context.config
    event = context.event
    user = acting
    # (``is`` first: a request that impersonates nobody acts as the very user authentication found,
    # and comparing two users field by field is Python code.)
    if user is not None and context.user is not None and user is not context.user and user != context.user:
        event = {**event, "impersonatedUser": user.to_json()}
    if context.panic:
        status: dict[str, Any] = {
            "metadata": {},
            "status": "Failure",
            "message": context.panic,
            "reason": "InternalError",
            "code": 500,
        }
        context.event = with_status(event, status)
        context.write(Stage.PANIC)
        return config.level.wire
    body = b"".join(context.chunks) if context.chunks is not None else None
    context.event = with_status(event, success_status(code) if code < 400 else failure_status(code, None))
    records_request = config.level >= Level.REQUEST
    names_object = "name" not in event.get("objectRef", {"name": ""})  # a create: named in its body
    context.write(
        Stage.RESPONSE_COMPLETE,
        PendingEvent(
            context.event,
            request_body=request.body if records_request or names_object else None,
            request_content_type=request.content_type,
            record_request=records_request,
            response_body=body
            if body and config.level >= Level.REQUEST_RESPONSE and context.response_json and code < 400
            else None,
            status_body=body if body and code >= 400 and context.response_json else None,
            omit_managed_fields=config.omit_managed_fields,
            request_accepted=code < 400,
        ),
    )
    return config.level.wire
