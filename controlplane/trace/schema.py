"""The trace schema: what every trace event looks like, written down in code with a version.

A trace event is one observable step of the control plane, as a flat JSON object. Every event has
the same **envelope**, stamped by the cluster's trace bus, then the fields of its **type**::

    {"v": 2, "cluster": "demo", "seq": 42, "ts": 1700000000.25, "type": "store.txn",
     "id": "6f1c...", "from": "apiserver", "to": "etcd", "op": "txn", "revision": 17, ...}

- ``v`` is this schema's version (``SCHEMA_VERSION``). A change that renames or removes a field, or
  changes its meaning, makes a new version; adding an optional field or a new type does not.
- ``cluster`` names the cluster; ``seq`` counts its events 1, 2, 3 ... with no gaps, so a browser
  that sees 41 then 43 knows it missed one and re-syncs from the recorder; ``ts`` is the cluster's
  time in seconds since the epoch.
- ``id`` is the Audit-ID of the API request the event belongs to (the ``Audit-Id`` response header),
  or absent/None for work no request asked for (a lease expiring, a controller's loop).
- ``from`` and ``to`` are the diagram's node ids: ``user:<name>``, ``apiserver``, ``etcd``,
  ``scheduler``, ``controller-manager``, ``kubelet:<node>``, ``kube-proxy:<node>``, ``webhook:<name>``
  (``nodes.py`` builds them). An event that moves between two nodes (a request, a watch event) has
  both; one that happens at a node (a reconcile, a scheduling decision) has only ``from``.

Each type lists its required and optional fields with their JSON types (``EVENT_TYPES``); each has an
example, which ``docs/trace.md`` shows and the tests validate. ``validate`` checks one event and says
what is wrong with it, in words; with ``strict=True`` it also flags fields the schema does not know,
which is how the tests keep the emitters and this file in step.

What an event is about is in fields of its own (a request's verb, resource, namespace and name; the
key, revision and operation of a write; the pod and node of a scheduling decision), so that a reader
never has to parse ``detail``, which is narration for people.

Events carry keys, revisions, sizes and decisions, never object contents that may hold a Secret's
data: the trace is shown to students and exported to files (``redaction.py`` enforces it on export).

The fields that link cause to effect (``id`` on a store transaction, ``revision`` on a watch event,
the triggering ``revision`` and the issued ``requests`` on a reconcile or a scheduling decision) are
described in ``causality.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The version of the schema below; every event carries it as ``v``. Version 2: every ``request.*``
#: event names what its request is about, a write's storage stage names its key, revision and
#: operation (deletes report one too), and what ``detail`` said in words became fields.
SCHEMA_VERSION = 2

#: The envelope's fields, in the order events and exports list them.
ENVELOPE_ORDER = ("v", "cluster", "seq", "ts", "type", "id", "from", "to")

#: The API server's pipeline stages in upstream's order (``request.stage``'s ``stage``). Defined here,
#: in the lowest layer, so that the API server (``controlplane.apiserver.pipeline.STAGES``) and the
#: schema share this one tuple.
PIPELINE_STAGES = (
    "authentication",
    "audit",
    "impersonation",
    "flowcontrol",
    "authorization",
    "mutating-admission",
    "validation",
    "validating-admission",
    "storage",
)

_NONE = type(None)


@dataclass(frozen=True, slots=True)
class Field:
    """One field: the JSON types it may have (``bool`` is never an ``int`` here), and what it means."""

    types: tuple[type, ...]
    doc: str
    choices: tuple[Any, ...] = ()

    def problem(self, name: str, value: Any) -> str | None:
        """Why ``value`` does not fit this field, or None if it does."""
        if isinstance(value, bool) and bool not in self.types:
            return f"{name}: expected {self.type_names()}, got a boolean"
        if not isinstance(value, self.types):
            return f"{name}: expected {self.type_names()}, got {type(value).__name__}"
        if self.choices and value is not None and value not in self.choices:
            return f"{name}: {value!r} is not one of {', '.join(map(repr, self.choices))}"
        return None

    def type_names(self) -> str:
        names = {
            str: "string",
            int: "integer",
            float: "number",
            bool: "boolean",
            list: "array",
            dict: "object",
            _NONE: "null",
        }
        return " or ".join(names.get(t, t.__name__) for t in self.types)


def _f(doc: str, *types: type, choices: tuple[Any, ...] = ()) -> Field:
    return Field(types, doc, choices)


STR = (str,)
INT = (int,)
NUM = (int, float)
BOOL = (bool,)
LIST = (list,)
DICT = (dict,)
OPT_STR = (str, _NONE)
OPT_INT = (int, _NONE)
OPT_NUM = (int, float, _NONE)

ENVELOPE: Mapping[str, Field] = {
    "v": _f("schema version", *INT, choices=(SCHEMA_VERSION,)),
    "cluster": _f("the cluster's name", *STR),
    "seq": _f("position in the cluster's trace, 1, 2, 3 ... without gaps", *INT),
    "ts": _f("the cluster's time, seconds since the epoch", *NUM),
    "type": _f("the event type (below)", *STR),
}

#: Envelope fields that some types require and others leave out.
ID = _f("Audit-ID of the API request this event belongs to", *OPT_STR)
FROM = _f("diagram node the event starts at (or happens at)", *STR)
TO = _f("diagram node the event goes to", *STR)
WATCH = _f("the watch's id (the store's watches are numbered)", str, int)
SOURCE = _f(
    "which watch: the API server's watch on the store, or a client's watch on the API server",
    *STR,
    choices=("store", "apiserver"),
)


@dataclass(frozen=True, slots=True)
class EventType:
    """One type of event: its meaning, its fields, and an example (payload only, no envelope)."""

    name: str
    doc: str
    required: Mapping[str, Field]
    optional: Mapping[str, Field] = field(default_factory=dict)
    example: Mapping[str, Any] = field(default_factory=dict)

    def fields(self) -> Mapping[str, Field]:
        return {**self.required, **self.optional}


_REQUEST_FIELDS: Mapping[str, Field] = {"id": _f("the request's Audit-ID", *STR), "from": FROM, "to": TO}

#: What a request is about: every ``request.*`` event of a request carries the same values (those that
#: are known: a request refused before authentication has no user, a non-resource request no resource).
_REQUEST_IDENTITY: Mapping[str, Field] = {
    "user": _f("authenticated user name (absent when authentication refused it)", *STR),
    "verb": _f("Kubernetes verb (get, list, watch, create ...)", *STR),
    "resource": _f("the resource asked for (pods, deployments ...)", *STR),
    "namespace": _f("the namespace in the path", *STR),
    "name": _f("the object's name in the path", *STR),
    "subresource": _f("the subresource (status, binding, log ...)", *STR),
}

#: What the ``storage`` stage did to the store: ``terminate`` marked the object for deletion (its
#: ``deletionTimestamp`` set, the object kept), ``delete`` removed it for good.
STORAGE_OPS = ("create", "update", "delete", "terminate")

_TYPES = (
    EventType(
        "request.received",
        "An API request arrived at the API server. Emitted once authentication has said who sent it, so"
        " `from` is the sender's node (`user:anonymous` when its credentials were refused), before the"
        " authentication stage's event.",
        {
            **_REQUEST_FIELDS,
            "method": _f("HTTP method", *STR),
            "path": _f("path below the cluster, without the query", *STR),
        },
        {
            **_REQUEST_IDENTITY,
            "query": _f(
                "the query parameters, decoded: each name's value, or a list of its values when the name"
                " is given more than once (absent without a query)",
                *DICT,
            ),
            "user_agent": _f("the client's User-Agent", *STR),
        },
        {
            "id": "9c0e6b1e-audit",
            "from": "user:alice",
            "to": "apiserver",
            "method": "POST",
            "path": "/api/v1/namespaces/default/pods",
            "query": {"dryRun": "All", "fieldManager": "kubectl-client-side-apply"},
            "user": "alice",
            "verb": "create",
            "resource": "pods",
            "namespace": "default",
        },
    ),
    EventType(
        "request.stage",
        "A request passed (or was stopped at) one stage of the pipeline. The storage stage's pass names"
        " the key it wrote, the revision and the operation.",
        {
            **_REQUEST_FIELDS,
            "stage": _f("the pipeline stage", *STR, choices=PIPELINE_STAGES),
            "outcome": _f("pass, or deny (the request stops here)", *STR, choices=("pass", "deny")),
        },
        {
            "detail": _f("what the stage decided, in words (narration: read the fields instead)", *STR),
            **_REQUEST_IDENTITY,
            "key": _f("storage pass: the store key written", *STR),
            "revision": _f("storage pass: the revision of the write", *INT),
            "op": _f(
                "storage pass: create, update, delete (gone for good) or terminate (marked for deletion)",
                *STR,
                choices=STORAGE_OPS,
            ),
        },
        {
            "id": "9c0e6b1e-audit",
            "from": "user:alice",
            "to": "apiserver",
            "stage": "storage",
            "outcome": "pass",
            "detail": "created /registry/pods/default/web at revision 17",
            "user": "alice",
            "verb": "create",
            "resource": "pods",
            "namespace": "default",
            "key": "/registry/pods/default/web",
            "revision": 17,
            "op": "create",
        },
    ),
    EventType(
        "request.completed",
        "The API server answered a request.",
        {**_REQUEST_FIELDS, "code": _f("HTTP status code", *INT), "duration": _f("seconds", *NUM)},
        {
            **_REQUEST_IDENTITY,
            "revision": _f(
                "the store revision the request wrote (the newest, if several), if it wrote one", *INT
            ),
            "audit": _f(
                "the level its audit event was recorded at (Metadata, Request, RequestResponse), if the "
                "audit policy recorded it; the event's auditID is this event's id",
                *STR,
            ),
            "reason": _f(
                "the reason of the Status an error answer carries (Conflict, AlreadyExists, Invalid,"
                " Forbidden, NotFound ...); absent on success and when the answer is no Status",
                *STR,
            ),
        },
        {
            "id": "9c0e6b1e-audit",
            "from": "user:alice",
            "to": "apiserver",
            "user": "alice",
            "verb": "create",
            "resource": "pods",
            "namespace": "default",
            "code": 201,
            "duration": 0.004,
            "revision": 17,
            "audit": "RequestResponse",
        },
    ),
    EventType(
        "flowcontrol.decision",
        "Flow control queued, dispatched or rejected a request (API Priority and Fairness, or"
        " max-in-flight): which FlowSchema and priority level, how full the level was, how long the"
        " request waited. A queued request gets a second event when it is dispatched or rejected.",
        {
            **_REQUEST_FIELDS,
            "outcome": _f(
                "queued (waits for a seat), dispatched (holds its seats) or rejected (429)",
                *STR,
                choices=("queued", "dispatched", "rejected"),
            ),
        },
        {
            "mode": _f("max-inflight when APF is off (absent under APF)", *STR),
            "flowschema": _f("the FlowSchema the request matched", *STR),
            "priority_level": _f("its priority level (max-inflight: readOnly or mutating)", *STR),
            "flow": _f("the flow distinguisher: user name, namespace, or empty", *STR),
            "seats": _f("seats the request takes", *INT),
            "seats_in_use": _f("seats of the level in use after this decision", *INT),
            "concurrency_limit": _f("the level's seats", *INT),
            "waiting": _f("requests waiting in the level's queues after this decision", *INT),
            "queue": _f("the queue the request was put in (shuffle sharding's pick)", *INT),
            "queue_length": _f("requests waiting in that queue after this decision", *INT),
            "waited": _f("seconds the request waited in its queue", *NUM),
            "reason": _f(
                "why it was rejected",
                *STR,
                choices=("queue-full", "concurrency-limit", "time-out", "cancelled"),
            ),
            "retry_after": _f("the Retry-After given to a rejected request, seconds", *INT),
        },
        {
            "id": "9c0e6b1e-audit",
            "from": "user:alice",
            "to": "apiserver",
            "outcome": "dispatched",
            "flowschema": "global-default",
            "priority_level": "global-default",
            "flow": "alice",
            "seats": 1,
            "seats_in_use": 3,
            "concurrency_limit": 5,
            "waiting": 2,
            "queue": 17,
            "queue_length": 0,
            "waited": 0.012,
        },
    ),
    EventType(
        "rbac.decision",
        "The authorizers (Node, then RBAC) allowed or refused a request, and why: for an allowed request,"
        " the binding, role and rule that allowed it; for a refusal, each binding that names the user or"
        " one of its groups and why none of its rules fits, and the 403 message the client gets.",
        {"id": _f("the request's Audit-ID", *STR), "allowed": _f("the verdict", *BOOL)},
        {
            "from": FROM,
            "to": TO,
            "user": _f("user name", *STR),
            "groups": _f("the user's groups", *LIST),
            "verb": _f("verb", *STR),
            "resource": _f("resource (with /subresource)", *STR),
            "group": _f("the resource's API group (absent: the core group)", *STR),
            "namespace": _f("namespace", *STR),
            "name": _f("the object's name", *STR),
            "path": _f("the path of a non-resource request (/version, /apis)", *STR),
            "authorizer": _f("which authorizer decided (Node, RBAC), or those that were asked", *STR),
            "binding": _f("the (Cluster)RoleBinding that allowed it", *OPT_STR),
            "role": _f("the (Cluster)Role it refers to", *OPT_STR),
            "rule": _f("the matching PolicyRule", dict, _NONE),
            "reason": _f("why, in words (for a refusal: what no rule grants)", *STR),
            "considered": _f(
                "for a refusal: the bindings naming the user or its groups, each"
                " {binding, role, subject, why} (why none of its role's rules fits)",
                *LIST,
            ),
            "message": _f("for a refusal: the 403 Status message the client gets", *STR),
        },
        {
            "id": "9c0e6b1e-audit",
            "from": "user:alice",
            "to": "apiserver",
            "allowed": True,
            "user": "alice",
            "groups": ["system:authenticated"],
            "verb": "create",
            "resource": "pods",
            "namespace": "default",
            "authorizer": "RBAC",
            "binding": 'RoleBinding "edit-alice/default"',
            "role": 'ClusterRole "edit"',
            "rule": {"verbs": ["create", "delete"], "apiGroups": [""], "resources": ["pods"]},
            "reason": 'allowed by RoleBinding "edit-alice/default" of ClusterRole "edit" to User "alice"',
        },
    ),
    EventType(
        "admission.step",
        "One admission plugin (or webhook) looked at a request. Built-in plugins go from apiserver to "
        "apiserver; a webhook call goes to webhook:<name>. Plugins that do not care about a request "
        "(DefaultTolerationSeconds and an Event) leave no step.",
        {
            "id": _f("the request's Audit-ID", *STR),
            "plugin": _f("plugin name (DefaultTolerationSeconds), or the webhook's name", *STR),
            "phase": _f("mutating or validating", *STR, choices=("mutating", "validating")),
            "outcome": _f("pass, or deny", *STR, choices=("pass", "deny")),
        },
        {
            "from": FROM,
            "to": TO,
            "patch": _f("the JSON patch a mutating plugin or webhook applied (never a Secret's data)", *LIST),
            "detail": _f("why it refused, or why a failed webhook call was ignored", *STR),
        },
        {
            "id": "9c0e6b1e-audit",
            "from": "apiserver",
            "to": "apiserver",
            "plugin": "DefaultTolerationSeconds",
            "phase": "mutating",
            "outcome": "pass",
            "patch": [
                {
                    "op": "add",
                    "path": "/spec/tolerations",
                    "value": [
                        {
                            "key": "node.kubernetes.io/not-ready",
                            "operator": "Exists",
                            "effect": "NoExecute",
                            "tolerationSeconds": 300,
                        },
                        {
                            "key": "node.kubernetes.io/unreachable",
                            "operator": "Exists",
                            "effect": "NoExecute",
                            "tolerationSeconds": 300,
                        },
                    ],
                }
            ],
        },
    ),
    EventType(
        "store.txn",
        "The API server read from or wrote to the store (op txn: a transaction; get/range: a read).",
        {
            "op": _f("txn, get or range", *STR, choices=("txn", "get", "range")),
            "revision": _f("the revision written (txn) or read at (get, range)", *INT),
        },
        {
            "id": ID,
            "from": FROM,
            "to": TO,
            "key": _f("the key or prefix read", *STR),
            "count": _f("keys read", *INT),
            "succeeded": _f("whether every compare held (txn)", *BOOL),
            "compares": _f("the compares: key, target, op, value (a revision, never data)", *LIST),
            "ops": _f("the operations run: op and key", *LIST),
            "writes": _f(
                "the changes committed: type (PUT, DELETE) and key; a PUT of a Pod, a Node or a leader"
                " Lease also carries what the diagram draws of it, under pod, node or lease"
                " (trace/objects.py: names, phase, conditions, never data)",
                *LIST,
            ),
            "size": _f("bytes written", *INT),
        },
        {
            "id": "9c0e6b1e-audit",
            "from": "apiserver",
            "to": "etcd",
            "op": "txn",
            "revision": 17,
            "succeeded": True,
            "compares": [
                {"key": "/registry/pods/default/web", "target": "create_revision", "op": "=", "value": 0}
            ],
            "ops": [{"op": "put", "key": "/registry/pods/default/web"}],
            "writes": [
                {
                    "type": "PUT",
                    "key": "/registry/pods/default/web",
                    "pod": {
                        "namespace": "default",
                        "name": "web",
                        "generateName": "",
                        "node": "",
                        "phase": "Pending",
                        "deleting": False,
                    },
                }
            ],
        },
    ),
    EventType(
        "store.compact",
        "History before a revision was discarded; older reads and watches fail with 410.",
        {"revision": _f("the new compaction mark", *INT)},
        {"from": FROM, "to": TO},
        {"from": "apiserver", "to": "etcd", "revision": 1200},
    ),
    EventType(
        "watch.opened",
        "A watch started: the API server's watch on the store, or a client's watch on the API server.",
        {"watch": WATCH},
        {
            "id": ID,
            "from": FROM,
            "to": TO,
            "source": SOURCE,
            "prefix": _f("the store prefix watched", *STR),
            "resource": _f("the resource watched", *STR),
            "namespace": _f("the namespace watched (empty: all)", *STR),
            "label_selector": _f("label selector", *STR),
            "field_selector": _f("field selector", *STR),
            "revision": _f("the revision the watch starts after", *OPT_INT),
        },
        {
            "id": "51d2-audit",
            "from": "apiserver",
            "to": "scheduler",
            "source": "apiserver",
            "watch": "w-7",
            "resource": "pods",
            "namespace": "",
            "field_selector": "spec.nodeName=",
            "revision": 12,
        },
    ),
    EventType(
        "watch.event",
        "A watch delivered one change. Its revision names the store transaction that made it.",
        {
            "watch": WATCH,
            "event": _f(
                "store: PUT/DELETE; API: ADDED/MODIFIED/DELETED/BOOKMARK/ERROR",
                *STR,
                choices=("PUT", "DELETE", "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"),
            ),
            "revision": _f("the revision of the change", *INT),
        },
        {
            "id": ID,
            "from": FROM,
            "to": TO,
            "source": SOURCE,
            "key": _f("the key changed", *STR),
            "resource": _f("the resource watched (pods ...): client watches only", *STR),
            "kind": _f("the object's kind", *STR),
            "namespace": _f("the object's namespace", *STR),
            "name": _f("the object's name", *STR),
        },
        {
            "id": "51d2-audit",
            "from": "apiserver",
            "to": "scheduler",
            "source": "apiserver",
            "watch": "w-7",
            "event": "ADDED",
            "revision": 17,
            "key": "/registry/pods/default/web",
            "resource": "pods",
            "kind": "Pod",
            "namespace": "default",
            "name": "web",
        },
    ),
    EventType(
        "watch.closed",
        "A watch ended (closed by its client, timed out, too slow, or compacted away).",
        {"watch": WATCH},
        {
            "id": ID,
            "from": FROM,
            "to": TO,
            "source": SOURCE,
            "prefix": _f("the store prefix watched", *STR),
            "reason": _f("why it ended", *STR),
        },
        {
            "id": "51d2-audit",
            "from": "apiserver",
            "to": "scheduler",
            "source": "apiserver",
            "watch": "w-7",
            "reason": "timeout",
        },
    ),
    EventType(
        "component.state",
        "A component started, stopped, became leader or lost its lease.",
        {"component": _f("the component (kubelet, scheduler ...)", *STR), "state": _f("its new state", *STR)},
        {
            "from": FROM,
            "node": _f("the simulated node, for node components", *STR),
            "reason": _f("why", *STR),
        },
        {"from": "kubelet:node-1", "component": "kubelet", "node": "node-1", "state": "running"},
    ),
    EventType(
        "reconcile",
        "A controller reconciled one object (controller-runtime's reconcileHandler).",
        {
            "controller": _f("the controller", *STR),
            "key": _f("namespace/name (name for cluster-scoped objects)", *STR),
            "result": _f("how it ended", *STR, choices=("success", "error", "requeue", "requeue_after")),
        },
        {
            "from": FROM,
            "namespace": _f("the object's namespace (absent for cluster-scoped objects)", *STR),
            "name": _f("the object's name", *STR),
            "requeue": _f("whether the key goes back on the queue", *BOOL),
            "requeue_after": _f("seconds until it does, when timed", *OPT_NUM),
            "retries": _f("failures in a row so far", *INT),
            "error": _f("the error, when it failed", *OPT_STR),
            "duration": _f("seconds", *NUM),
            "revision": _f("the resourceVersion of the watch event that queued the key", *OPT_INT),
            "requests": _f("Audit-IDs of the API requests this reconcile made", *LIST),
        },
        {
            "from": "controller-manager",
            "controller": "replicaset",
            "key": "default/web-7d4b9",
            "namespace": "default",
            "name": "web-7d4b9",
            "result": "success",
            "requeue": False,
            "requeue_after": None,
            "retries": 0,
            "error": None,
            "duration": 0.003,
            "revision": 21,
            "requests": ["a1b2-audit"],
        },
    ),
    EventType(
        "scheduler.decision",
        "One scheduling attempt: every node's verdict per filter plugin, its scores, and the choice.",
        {
            "pod": _f("namespace/name", *STR),
            "nodes": _f("per node: filters {plugin: {code, reasons}}, scores, total, feasible", *DICT),
            "feasible": _f("the nodes that passed every filter", *LIST),
            "chosen": _f("the node picked, or None", *OPT_STR),
        },
        {
            "from": FROM,
            "namespace": _f("the pod's namespace", *STR),
            "name": _f("the pod's name", *STR),
            "node": _f("the node picked (as chosen; absent when none was)", *STR),
            "message": _f("upstream's FailedScheduling text when no node fits", *OPT_STR),
            "attempts": _f("attempts so far for this pod", *INT),
            "evaluated": _f("nodes the filters looked at (upstream stops early on big clusters)", *INT),
            "of": _f("nodes in the cluster", *INT),
            "skipped": _f(
                "{filters, scores}: plugins whose PreFilter/PreScore said Skip, so they did not run", *DICT
            ),
            "scheduler": _f("schedulerName", *STR),
            "revision": _f("the pod's resourceVersion this attempt saw", *OPT_INT),
            "requests": _f(
                "Audit-IDs of the requests made for this attempt (the binding, or a preemption's writes)",
                *LIST,
            ),
            "preemption": _f(
                "when no node fit, what DefaultPreemption found: {nominated, victims, candidates, message}",
                *DICT,
            ),
        },
        {
            "from": "scheduler",
            "pod": "default/web",
            "namespace": "default",
            "name": "web",
            "scheduler": "default-scheduler",
            "attempts": 1,
            "evaluated": 1,
            "of": 1,
            "skipped": {"filters": ["InterPodAffinity"], "scores": ["NodeAffinity"]},
            "nodes": {
                "node-1": {
                    "filters": {"NodeResourcesFit": {"code": "Success", "reasons": []}},
                    "scores": {"NodeResourcesFit": {"raw": 80, "normalized": 80, "weighted": 80}},
                    "total": 80,
                    "feasible": True,
                }
            },
            "feasible": ["node-1"],
            "chosen": "node-1",
            "node": "node-1",
            "message": None,
            "revision": 17,
            "requests": ["77aa-audit"],
        },
    ),
    EventType(
        "proxy.sync",
        "A kube-proxy rewrote its node's service rules.",
        {
            "node": _f("the node", *STR),
            "sync": _f("syncs so far", *INT),
            "rules": _f("service rules now", *INT),
        },
        {
            "from": FROM,
            "reason": _f("what asked for the sync", *STR),
            "endpoints": _f("endpoints now", *INT),
            "changed": _f("changed destinations (at most a few)", *LIST),
            "changed_count": _f("changed destinations in all", *INT),
            "duration": _f("seconds", *NUM),
        },
        {
            "from": "kube-proxy:node-1",
            "node": "node-1",
            "sync": 3,
            "reason": "endpointslice changed",
            "rules": 4,
            "endpoints": 6,
            "changed": ["10.96.0.12:80/TCP"],
            "changed_count": 1,
            "duration": 0.0004,
        },
    ),
    EventType(
        "fault.applied",
        "A fault from the catalogue was switched on (a link cut, a component stopped, a clock skewed).",
        {"fault": _f("the fault's name in the catalogue", *STR), "target": _f("diagram node or link", *STR)},
        {
            "from": FROM,
            "to": TO,
            "params": _f("the fault's parameters", *DICT),
            "reason": _f("who applied it, why", *STR),
            "expires": _f("when it ends by itself (cluster time, seconds since the epoch)", *NUM),
        },
        {
            "from": "kubelet:node-2",
            "fault": "stop-kubelet",
            "target": "kubelet:node-2",
            "params": {"node": "node-2"},
            "reason": "chapter control-plane/05-nodes, step stop-a-kubelet",
            "expires": 1700000060.0,
        },
    ),
    EventType(
        "fault.cleared",
        "A fault was switched off.",
        {"fault": _f("the fault's name in the catalogue", *STR), "target": _f("diagram node or link", *STR)},
        {
            "from": FROM,
            "to": TO,
            "params": _f("the fault's parameters", *DICT),
            "reason": _f("who cleared it, why (its time is up, the cluster hibernates)", *STR),
        },
        {
            "from": "kubelet:node-2",
            "fault": "stop-kubelet",
            "target": "kubelet:node-2",
            "params": {"node": "node-2"},
            "reason": "cleared by student:alice",
        },
    ),
)

#: Every event type by name.
EVENT_TYPES: Mapping[str, EventType] = {t.name: t for t in _TYPES}


class SchemaError(ValueError):
    """An event that does not fit the schema; ``problems`` says how, one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def validate(event: Mapping[str, Any], *, strict: bool = False, envelope: bool = True) -> list[str]:
    """What is wrong with ``event``: an empty list when it fits the schema.

    ``envelope=False`` checks a payload before the bus stamps it (what an emitter passes to ``emit``
    plus ``type``). ``strict`` also reports fields its type does not list.
    """
    problems: list[str] = []
    if envelope:
        for name, spec in ENVELOPE.items():
            if name not in event:
                problems.append(f"{name}: missing")
            elif (problem := spec.problem(name, event[name])) is not None:
                problems.append(problem)
        seq = event.get("seq")
        if isinstance(seq, int) and not isinstance(seq, bool) and seq < 1:
            problems.append(f"seq: must be 1 or more, got {seq}")
    type_name = event.get("type")
    if not isinstance(type_name, str):
        if not envelope:
            problems.append("type: missing")
        return problems
    etype = EVENT_TYPES.get(type_name)
    if etype is None:
        problems.append(f"type: unknown event type {type_name!r}")
        return problems
    for name, spec in etype.required.items():
        if name not in event:
            problems.append(f"{type_name}.{name}: missing")
        elif (problem := spec.problem(f"{type_name}.{name}", event[name])) is not None:
            problems.append(problem)
    for name, spec in etype.optional.items():
        if name in event and (problem := spec.problem(f"{type_name}.{name}", event[name])) is not None:
            problems.append(problem)
    if strict:
        known = set(etype.required) | set(etype.optional) | set(ENVELOPE)
        problems.extend(f"{type_name}.{name}: not in the schema" for name in event if name not in known)
    return problems


def check(event: Mapping[str, Any], *, strict: bool = False) -> None:
    """Raise ``SchemaError`` unless ``event`` fits the schema."""
    problems = validate(event, strict=strict)
    if problems:
        raise SchemaError(problems)


def example(
    type_name: str, *, cluster: str = "demo", seq: int = 1, ts: float = 1_700_000_000.0
) -> dict[str, Any]:
    """The documented example of ``type_name`` as a whole event (envelope included)."""
    return {
        "v": SCHEMA_VERSION,
        "cluster": cluster,
        "seq": seq,
        "ts": ts,
        "type": type_name,
        **EVENT_TYPES[type_name].example,
    }


__all__ = [
    "ENVELOPE",
    "ENVELOPE_ORDER",
    "EVENT_TYPES",
    "PIPELINE_STAGES",
    "SCHEMA_VERSION",
    "STORAGE_OPS",
    "EventType",
    "Field",
    "SchemaError",
    "check",
    "example",
    "validate",
]
