"""The request scope: on whose behalf a registry write is made, and what it must pass on its way.

The registry (``registry.py``) is called with an object, not with a request; yet every write it makes
for a request must be admitted as that request (``admission/``), checked against the writer's own
permissions if it is an RBAC object (``authz/escalation.py``), reported stage by stage on the trace
(``pipeline.py``), named by its Audit-ID in the store's ``store.txn`` event, and counted among the
revisions the request wrote (its ``request.completed`` names the last). A ``RequestScope`` is all of
that as one value, which the handler makes once per request and passes to every registry write:

- ``user``: who asks (the user the request acts as, after impersonation);
- ``admission``: the admission chain with the request's attributes, or None;
- ``report``: where the pipeline stages go (``pipeline.NO_REPORT`` when nobody watches);
- ``audit_id``: the request's Audit-ID;
- ``written``: the list the revisions it writes go to.

Every write method of ``Registry`` takes the scope as a required argument, and raises
``MissingRequestScope`` without one: a write cannot forget its request and slip past admission
unnoticed. A write that is rightly not admitted says so, in words, where it is made:

- the API server's own writes (the system namespaces, the ``kubernetes`` Service and its endpoints,
  the bootstrap RBAC policy and flow-control objects, the rules of aggregated ClusterRoles) are made
  with ``RequestScope.unadmitted(reason="...")``, as upstream's internal writes go straight to storage;
- a write a handler makes for a request upstream admitted in another form (the pod an eviction deletes
  was admitted as the ``pods/eviction`` create) uses ``scope.already_admitted("...")``: the same
  request, user and trace, without admitting the write again.

The scope is frozen: a stage that wants a different one makes a new one. Its ``admission`` holds the
admission's state (warnings for the client), and ``written`` is a list that grows: the two things a
request accumulates while it is served.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from controlplane.apiserver import pipeline
from controlplane.apiserver.admission import Admission
from controlplane.apiserver.admission.attributes import Object
from controlplane.apiserver.pipeline import NO_REPORT, Reporter
from controlplane.identity import UserInfo


class MissingRequestScope(TypeError):
    """A registry write was called without a ``RequestScope``."""


@dataclass(frozen=True, slots=True)
class RequestScope:
    """Who a write is for, and what it passes on its way to the store (see the module docstring)."""

    #: Who asks: the user the request acts as. None for the API server's own writes.
    user: UserInfo | None
    #: The admission chain and the request's attributes; None when the writes are not admitted.
    admission: Admission | None
    #: Where the pipeline stages of the writes go.
    report: Reporter = NO_REPORT
    #: The Audit-ID of the request (None for the API server's own writes): the ``store.txn`` events of
    #: its writes name it.
    audit_id: str | None = None
    #: The revisions the writes committed, oldest first (None: nobody collects them).
    written: list[int] | None = None
    #: Why the writes are not admitted, in words ("" when they are).
    unadmitted_because: str = ""

    def __post_init__(self) -> None:
        if (self.admission is None) != bool(self.unadmitted_because):
            raise ValueError("a RequestScope is admitted, or says why it is not (and not both)")

    @classmethod
    def unadmitted(cls, *, reason: str) -> RequestScope:
        """The scope of a write the API server makes on its own: no request, no user, no admission,
        nothing reported. ``reason`` says which write it is and why it is not admitted."""
        return cls(user=None, admission=None, unadmitted_because=reason)

    def already_admitted(self, reason: str) -> RequestScope:
        """This request's scope for a write upstream does not admit again (``reason`` says why):
        the same user, reporter, Audit-ID and revisions, without admission."""
        return dataclasses.replace(self, admission=None, unadmitted_because=reason)

    # -- what the registry calls -------------------------------------------------------------------

    def stage(self, name: str, outcome: str, detail: str = "", **fields: str | int) -> None:
        """Report that the write passed (``pass``) or was stopped at (``deny``) stage ``name``."""
        self.report(name, outcome, detail, **fields)

    def stored(self, op: str, key: str, revision: int, *, detail: str = "") -> None:
        """The write committed ``key`` at ``revision``: report the storage stage, note the revision."""
        if self.written is not None:
            self.written.append(revision)
        pipeline.stored(self.report, op, key, revision, detail=detail)

    def warn(self, text: str) -> None:
        """A warning for the client (a ``Warning`` header); a write nobody asked for has no client."""
        if self.admission is not None:
            self.admission.scope.warn(text)

    async def mutate(self, operation: str, obj: Object, old: Object | None) -> Object:
        """The mutating admission of a CREATE or UPDATE (``obj`` as is when not admitted)."""
        if self.admission is None:
            return obj
        return await self.admission.mutate(operation, obj, old)

    async def validate(self, operation: str, obj: Object, old: Object | None) -> None:
        """The validating admission of a CREATE or UPDATE; raises a StatusError to refuse."""
        if self.admission is not None:
            await self.admission.validate(operation, obj, old)

    async def admit_delete(self, old: Object) -> None:
        """Both admission phases of a DELETE of ``old``."""
        if self.admission is not None:
            await self.admission.admit_delete(old)


def required(scope: object, write: str) -> RequestScope:
    """``scope`` if it is a ``RequestScope``; else ``MissingRequestScope`` naming the ``write``."""
    if not isinstance(scope, RequestScope):
        raise MissingRequestScope(
            f"{write} needs a RequestScope (got {scope!r}): pass the request's, or "
            'RequestScope.unadmitted(reason="...") for a write the API server makes on its own'
        )
    return scope


__all__ = ["MissingRequestScope", "RequestScope", "required"]
