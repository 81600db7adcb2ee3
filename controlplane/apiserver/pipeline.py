"""The pipeline: the stages every API request passes, in upstream's order, and the value each makes.

kube-apiserver wraps its handlers in filters (``DefaultBuildHandlerChain`` in
``k8s.io/apiserver/pkg/server/config.go``); each filter looks at the request, decides, and calls the
next. Kubelab runs the same stages in the same order, and makes what each stage decided a value of its
own: a frozen dataclass that the stage returns and the next stage takes. A reader follows a request by
following the values (``APIServer._serve`` is the whole sequence in one function)::

    Request               what arrived (http.py): method, path, headers, its RequestInfo and Audit-ID
     | authentication  -> Authenticated: who sent it, how that was proven, its node on the diagram
     | audit              records the request; decides nothing the later stages read
     | impersonation   -> Impersonated: whom the request acts as (its sender, or whom it impersonates)
     | flow control    -> Dispatched: it holds a seat; ``send`` adds flow control's response headers
     | authorization   -> Authorized: why it was allowed
     | the handler        (routing.py) decode, mutating admission, validation, validating admission,
                          storage: every write goes through the registry with a ``RequestScope``

Each value carries everything before it: an ``Authorized`` request is also ``Dispatched``,
``Impersonated`` and ``Authenticated``, and names its ``request``. None of them changes once made, so
a stage cannot quietly alter what an earlier one decided; impersonation does not overwrite the user
authentication found, it adds ``acting``.

**Reporting.** Every stage tells the trace whether the request passed it or was stopped there
(``request.stage``), through a ``Reporter`` the server makes for the request: ``report("validation",
"deny", "spec.containers: Required value")``. With nobody watching the trace the reporter is
``NO_REPORT``, which does nothing. ``detail`` is narration for people; what a reader of the trace needs
is in fields of their own. The storage stage's pass says what it wrote (``stored``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from controlplane.apiserver.http import Request, Send
from controlplane.identity import UserInfo
from controlplane.trace.schema import PIPELINE_STAGES

#: The stages of the pipeline, in upstream's order (the diagram draws them as a strip). The schema's
#: tuple itself: the trace sits below the API server, so the list lives there.
STAGES = PIPELINE_STAGES


class Reporter(Protocol):
    """Where the stages of one request go (the API server's trace): ``report(stage, outcome, detail)``.

    ``outcome`` is ``pass`` or ``deny`` (the request stops here); ``fields`` go into the event as they
    are (the storage stage's ``key``, ``revision`` and ``op``).
    """

    def __call__(self, name: str, outcome: str, detail: str, /, **fields: str | int) -> None: ...


def _no_report(name: str, outcome: str, detail: str, /, **fields: str | int) -> None:
    """Reports nothing: the reporter of a request nobody watches, and of the server's own writes."""


#: The reporter that reports nothing.
NO_REPORT: Reporter = _no_report

#: How the storage stage says what it wrote, by its ``op`` (``schema.STORAGE_OPS``).
_STORED = {"create": "created", "update": "updated", "delete": "deleted", "terminate": "marked"}


def stored(report: Reporter, op: str, key: str, revision: int, *, detail: str = "") -> None:
    """Report the storage stage's pass: the request wrote ``key`` at ``revision`` (``op``: create,
    update, delete, or terminate: marked for deletion, kept until its grace period or finalizers end).
    ``detail`` adds to the sentence (``with 2 claims``)."""
    what = f"{key} Terminating" if op == "terminate" else key
    extra = f" {detail}" if detail else ""
    report(
        "storage",
        "pass",
        f"{_STORED[op]} {what}{extra} at revision {revision}",
        key=key,
        revision=revision,
        op=op,
    )


# -- the values the stages make ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Authenticated:
    """Authentication said who sent ``request`` (``filters/authentication.py``)."""

    request: Request
    #: The user its credentials prove (``system:anonymous`` when anonymous requests are allowed).
    user: UserInfo
    #: How they were proven, in words for the trace (``token: alice``, ``x509 CN=...``).
    how: str
    #: The user's node on the topology diagram (``user:alice``, ``scheduler``, ``kubelet:node-1``).
    source: str

    def acting_as(self, user: UserInfo) -> Impersonated:
        """The impersonation stage's value: the rest of the pipeline sees ``user``."""
        return Impersonated(self.request, self.user, self.how, self.source, user)


@dataclass(frozen=True, slots=True)
class Impersonated(Authenticated):
    """Impersonation decided whom the request acts as (``filters/impersonation.py``)."""

    #: The user flow control, authorization, admission and the audit's ``impersonatedUser`` see:
    #: ``user`` itself, or the user it impersonates (``kubectl --as``) if it was allowed to.
    acting: UserInfo

    def dispatched(self, send: Send) -> Dispatched:
        """The flow-control stage's value: the request holds a seat and answers through ``send``."""
        return Dispatched(self.request, self.user, self.how, self.source, self.acting, send)


@dataclass(frozen=True, slots=True)
class Dispatched(Impersonated):
    """Flow control (``filters/priority_and_fairness.py``) found the request a seat, held until answered."""

    #: Where the response goes: the client's, with flow control's headers added (and, for a watch,
    #: the seat given back when the headers go out).
    send: Send

    def authorized(self, reason: str) -> Authorized:
        """The authorization stage's value."""
        return Authorized(self.request, self.user, self.how, self.source, self.acting, self.send, reason)


@dataclass(frozen=True, slots=True)
class Authorized(Dispatched):
    """An authorizer allowed the request (``filters/authorization.py``); the handler serves it next."""

    #: Why, as the authorizer said it (the audit event's ``authorization.k8s.io/reason``).
    reason: str


#: How far a request got: what arrived, or the last stage value made from it.
Stage = Request | Authenticated


__all__ = [
    "NO_REPORT",
    "STAGES",
    "Authenticated",
    "Authorized",
    "Dispatched",
    "Impersonated",
    "Reporter",
    "Stage",
    "stored",
]
