"""A trace driver for benchmarks: a busy cluster's trace events, made up, emitted at a set rate.

The topology page draws whatever its cluster's trace bus sends it. To see how it copes with a busy
cluster (``python -m bench ui``: 2000 events a second for ten minutes) something has to make that many
events, and a real cluster on a small machine makes a few hundred a second at most. This module makes
them instead and hands them to the cluster's real ``TraceBus``, so that everything after the bus (the
recorder, the websocket consumer's framing, redaction and JSON encoding, the browser) does its real
work on them.

``Workload`` is the stream of events: pure and seeded, no I/O, no clock. It plays the control plane's
everyday work the way the real emitters report it (the shapes, fields and order were copied from a
traced ``kubectl create deployment``):

- **a pod's life**: the ReplicaSet controller creates the pod (the whole pipeline: authentication,
  audit, flow control, RBAC, admission with the ServiceAccount and toleration patches, the etcd write),
  the watch events carry it to the scheduler and the controller manager, the scheduler decides and
  binds, the kubelet of the chosen node is told, asks for a token, patches the pod's status and
  reports its reconcile; events are recorded along the way;
- **a pod's end**, which makes room for the next one: the controller manager deletes it (graceful),
  the kubelet makes the final delete, the DELETED watch events go out; the ReplicaSet controller's
  reconcile then names the deletion's revision as its cause and the new pod's create as its request;
- each kubelet **renewing its node lease**, and the node-lifecycle controller looking at it;
- **reads**: a controller's GET, a person's LIST;
- a student's request **refused by RBAC** at authorization, with every binding considered;
- now and then a **watch timing out** and its client watching again.

Several of these run at once (``concurrency``) and their events are interleaved, as concurrent
requests' events are. Revisions rise by one per write, in the order the writes are emitted, from
``first_revision``. Pods come and go: at most ``pods`` live at once (the oldest is deleted before a new
one is made), spread over the nodes, so the diagram shows a steady cluster rather than one that grows
without end. Every event fits the schema (``schema.validate(strict=True)``, checked by
``tests/bench/test_tracedriver.py``), and about nine in ten belong to pods' lives.

``Driver`` emits a workload into a ``TraceSink`` (a cluster's bus) at ``rate`` events a second from an
asyncio task: every ``tick`` it emits the events due by then, so that a tick that comes late catches
up, but never more than ``max_burst`` at once (if the process cannot keep up, the driver falls behind
and says so in its ``DriverStats`` rather than flooding the loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
import uuid
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from controlplane.trace.sink import TraceSink

#: One event before the bus stamps it: its type and its fields (what an emitter passes to ``emit``).
Payload = tuple[str, dict[str, Any]]
#: A scenario: the events of one piece of work, in order; it returns the revision it wrote last.
Scenario = Generator[Payload, None, int | None]

NAMESPACE = "bench"
REPLICASET = "web-7957885594"

#: How often each kind of work starts (pods' lives make most of the events in a busy cluster).
SCENARIO_WEIGHTS = {"pod": 10, "lease": 4, "read": 4, "refusal": 2, "rewatch": 1}


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sends a request: its diagram node, its identity, and how flow control and RBAC see it."""

    node: str
    user: str
    groups: tuple[str, ...]
    authentication: str
    flowschema: str
    priority_level: str
    concurrency_limit: int
    user_agent: str
    authorizer: str = "RBAC"
    binding: str = ""

    @property
    def allowed_by(self) -> str:
        if self.authorizer == "Node":
            return "a kubelet may act on its own node's pods and lease (NodeRestriction: its own)"
        return f'allowed by {self.binding} to User "{self.user}"'


def controller_manager() -> Caller:
    return Caller(
        node="controller-manager",
        user="system:kube-controller-manager",
        groups=("system:authenticated",),
        authentication="x509 CN=system:kube-controller-manager",
        flowschema="kube-controller-manager",
        priority_level="workload-high",
        concurrency_limit=10,
        user_agent="kube-controller-manager/v1.37.0-kubelab",
        binding='ClusterRoleBinding "system:controller:replicaset-controller" of ClusterRole '
        '"system:controller:replicaset-controller"',
    )


def scheduler() -> Caller:
    return Caller(
        node="scheduler",
        user="system:kube-scheduler",
        groups=("system:authenticated",),
        authentication="x509 CN=system:kube-scheduler",
        flowschema="kube-scheduler",
        priority_level="workload-high",
        concurrency_limit=10,
        user_agent="kube-scheduler/v1.37.0-kubelab",
        binding='ClusterRoleBinding "system:kube-scheduler" of ClusterRole "system:kube-scheduler"',
    )


def kubelet(node: str) -> Caller:
    return Caller(
        node=f"kubelet:{node}",
        user=f"system:node:{node}",
        groups=("system:nodes", "system:authenticated"),
        authentication=f"x509 CN=system:node:{node}, O=system:nodes",
        flowschema="system-nodes",
        priority_level="system",
        concurrency_limit=8,
        user_agent=f"kubelet/v1.37.0-kubelab (node/{node})",
        authorizer="Node",
    )


def person(name: str, *, admin: bool) -> Caller:
    return Caller(
        node=f"user:{name}",
        user=name,
        groups=("system:masters", "system:authenticated") if admin else ("system:authenticated",),
        authentication=f"token: {name}",
        flowschema="exempt" if admin else "global-default",
        priority_level="exempt" if admin else "global-default",
        concurrency_limit=0 if admin else 20,
        user_agent="kubectl/v1.37.1 (linux/amd64) kubernetes/f78e722",
        binding='ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin"',
    )


@dataclass(frozen=True, slots=True)
class Write:
    """What a request writes: ``created``/``updated``/``deleted`` one key (a delete removes it)."""

    key: str
    how: str

    @property
    def removes(self) -> bool:
        return self.how == "deleted"


@dataclass(slots=True)
class Pod:
    name: str
    node: str

    @property
    def key(self) -> str:
        return f"/registry/pods/{NAMESPACE}/{self.name}"


class Workload:
    """An endless, seeded stream of trace payloads as a busy cluster makes them (see the module)."""

    def __init__(
        self,
        *,
        seed: int = 1,
        nodes: Sequence[str] = ("node-1", "node-2", "node-3"),
        pods: int = 24,
        concurrency: int = 4,
        first_revision: int = 1,
    ) -> None:
        if not nodes:
            raise ValueError("a workload needs at least one node")
        self.rng = random.Random(seed)
        self.nodes = tuple(nodes)
        self.max_pods = max(1, pods)
        self.concurrency = max(1, concurrency)
        self.revision = first_revision - 1
        self.pods: deque[Pod] = deque()
        self._store_watches = {"pods": 2, "events": 9, "leases": 12, "replicasets": 11}
        self._watches: dict[tuple[str, str], str] = {}
        self._rewatching: set[str] = set()
        self._leases = itertools.cycle(self.nodes)
        self._cm = controller_manager()
        self._scheduler = scheduler()
        self._admin = person("admin", admin=True)
        self._student = person("student", admin=False)

    # -- the stream --------------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Payload]:
        yield from self._open_watches()
        running: list[Scenario] = [self._next_scenario() for _ in range(self.concurrency)]
        while True:
            i = self.rng.randrange(len(running))
            try:
                yield next(running[i])
            except StopIteration:
                running[i] = self._next_scenario()

    def _next_scenario(self) -> Scenario:
        kinds = list(SCENARIO_WEIGHTS)
        kind = self.rng.choices(kinds, weights=[SCENARIO_WEIGHTS[k] for k in kinds])[0]
        if kind == "pod":
            return self._pod_turnover()
        if kind == "lease":
            return self._lease_renewal(next(self._leases))
        if kind == "read":
            return self._read()
        if kind == "refusal":
            return self._refusal()
        return self._rewatch()

    # -- small parts ------------------------------------------------------------------------------------

    def _uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _suffix(self, n: int = 5) -> str:
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))

    def _next_revision(self) -> int:
        self.revision += 1
        return self.revision

    def _watchers(self, resource: str, node: str | None = None) -> list[str]:
        watchers = {
            "pods": ["scheduler", "controller-manager"],
            "leases": ["controller-manager"],
            "replicasets": ["controller-manager"],
            "events": [],
        }[resource]
        return [*watchers, f"kubelet:{node}"] if node is not None else watchers

    def _watch_id(self, watcher: str, resource: str) -> str:
        key = (watcher, resource)
        if key not in self._watches:
            self._watches[key] = self._uid()
        return self._watches[key]

    def _open_watches(self) -> Iterator[Payload]:
        """The standing watches (the page draws them as lines), as the components opened them."""
        wanted = [(w, r) for r in ("pods", "leases", "replicasets") for w in self._watchers(r)]
        wanted += [(f"kubelet:{node}", "pods") for node in self.nodes]
        for watcher, resource in wanted:
            yield self._watch_opened(watcher, resource, self._watch_id(watcher, resource))

    def _watch_opened(self, watcher: str, resource: str, watch: str) -> Payload:
        fields: dict[str, Any] = {
            "id": watch,
            "from": "apiserver",
            "to": watcher,
            "source": "apiserver",
            "watch": watch,
            "resource": resource,
            "namespace": "",
            "revision": max(self.revision, 1),
        }
        if watcher.startswith("kubelet:"):
            fields["field_selector"] = f"spec.nodeName={watcher.removeprefix('kubelet:')}"
        return ("watch.opened", fields)

    def _deliver(
        self,
        key: str,
        kind: str,
        revision: int,
        event: str,
        watchers: Sequence[str],
        *,
        removed: bool = False,
    ) -> Iterator[Payload]:
        """One change on the store's watch, then on each client watch that wants it."""
        resource = key.split("/")[2]
        yield (
            "watch.event",
            {
                "from": "etcd",
                "to": "apiserver",
                "source": "store",
                "watch": self._store_watches[resource],
                "event": "DELETE" if removed else "PUT",
                "key": key,
                "revision": revision,
            },
        )
        namespace, name = key.split("/")[3:5]
        for watcher in watchers:
            if watcher in self._rewatching:
                continue  # between two watches: its reflector lists what it missed (not traced)
            watch = self._watch_id(watcher, resource)
            yield (
                "watch.event",
                {
                    "id": watch,
                    "from": "apiserver",
                    "to": watcher,
                    "source": "apiserver",
                    "watch": watch,
                    "event": event,
                    "revision": revision,
                    "key": key,
                    "kind": kind,
                    "namespace": namespace,
                    "name": name,
                },
            )

    def _request(
        self,
        caller: Caller,
        method: str,
        path: str,
        *,
        verb: str,
        resource: str = "",
        name: str = "",
        subresource: str = "",
        mutating: Sequence[tuple[str, list[dict[str, Any]] | None]] = (),
        validating: Sequence[str] = (),
        write: Write | None = None,
        code: int | None = None,
        request_id: str | None = None,
    ) -> Generator[Payload, None, int | None]:
        """One API request through the pipeline, as the API server reports it; returns its revision."""
        rid = request_id or self._uid()
        me = {"id": rid, "from": caller.node, "to": "apiserver"}
        received: dict[str, Any] = {
            **me,
            "method": method,
            "path": path,
            "user": caller.user,
            "verb": verb,
            "user_agent": caller.user_agent,
        }
        if resource:
            received.update(resource=resource, namespace=NAMESPACE)
        if name:
            received["name"] = name
        if subresource:
            received["subresource"] = subresource
        yield ("request.received", received)
        level = "RequestResponse (rule 10)" if write else "Request (rule 9)"
        yield (
            "request.stage",
            {**me, "stage": "authentication", "outcome": "pass", "detail": caller.authentication},
        )
        yield ("request.stage", {**me, "stage": "audit", "outcome": "pass", "detail": f"level {level}"})
        yield (
            "request.stage",
            {**me, "stage": "impersonation", "outcome": "pass", "detail": "no impersonation requested"},
        )
        in_use = self.rng.randint(1, max(1, caller.concurrency_limit // 2))
        waited = round(self.rng.uniform(0.00002, 0.0002), 6)
        yield (
            "flowcontrol.decision",
            {
                **me,
                "outcome": "dispatched",
                "flowschema": caller.flowschema,
                "priority_level": caller.priority_level,
                "flow": caller.user if caller.authorizer == "Node" else "default",
                "seats": 1,
                "seats_in_use": in_use,
                "concurrency_limit": caller.concurrency_limit,
                "waiting": 0,
                "waited": waited,
            },
        )
        yield (
            "request.stage",
            {
                **me,
                "stage": "flowcontrol",
                "outcome": "pass",
                "detail": f"flowschema {caller.flowschema}, priority level {caller.priority_level}: "
                f"dispatched, {in_use}/{caller.concurrency_limit} seats in use, waited {waited:.3f}s",
            },
        )
        decision: dict[str, Any] = {
            **me,
            "user": caller.user,
            "groups": list(caller.groups),
            "verb": verb,
            "authorizer": caller.authorizer,
        }
        if resource:
            decision.update(resource=resource, namespace=NAMESPACE)
        if name:
            decision["name"] = name
        if caller is self._student:
            yield from self._refused(me, decision, verb, resource, name)
            return None
        yield ("rbac.decision", {**decision, "allowed": True, "reason": caller.allowed_by})
        yield (
            "request.stage",
            {**me, "stage": "authorization", "outcome": "pass", "detail": caller.allowed_by},
        )
        started = self.rng.uniform(0.0004, 0.004)
        if write is None:
            yield (
                "request.completed",
                {**me, "code": code or 200, "duration": round(started, 6), "audit": "Request"},
            )
            return None
        if write.how != "created":
            yield (
                "store.txn",
                {
                    **me,
                    "from": "apiserver",
                    "to": "etcd",
                    "op": "get",
                    "key": write.key,
                    "revision": self.revision,
                    "count": 1,
                },
            )
        for plugin, patch in mutating:
            step: dict[str, Any] = {
                "id": rid,
                "from": "apiserver",
                "to": "apiserver",
                "plugin": plugin,
                "phase": "mutating",
                "outcome": "pass",
            }
            if patch:
                step["patch"] = patch
            yield ("admission.step", step)
        plugins = ", ".join(plugin for plugin, _ in mutating) or "no plugin applies"
        yield ("request.stage", {**me, "stage": "mutating-admission", "outcome": "pass", "detail": plugins})
        if not write.removes:
            yield ("request.stage", {**me, "stage": "validation", "outcome": "pass", "detail": ""})
        for plugin in validating:
            yield (
                "admission.step",
                {
                    "id": rid,
                    "from": "apiserver",
                    "to": "apiserver",
                    "plugin": plugin,
                    "phase": "validating",
                    "outcome": "pass",
                },
            )
        yield (
            "request.stage",
            {
                **me,
                "stage": "validating-admission",
                "outcome": "pass",
                "detail": ", ".join(validating) or "no plugin applies",
            },
        )
        before = self.revision
        revision = self._next_revision()
        compare = "create_revision" if write.how == "created" else "mod_revision"
        yield (
            "store.txn",
            {
                **me,
                "from": "apiserver",
                "to": "etcd",
                "op": "txn",
                "revision": revision,
                "succeeded": True,
                "compares": [
                    {
                        "key": write.key,
                        "target": compare,
                        "op": "=",
                        "value": 0 if write.how == "created" else before,
                    }
                ],
                "ops": [{"op": "delete" if write.removes else "put", "key": write.key}],
                "writes": [{"type": "DELETE" if write.removes else "PUT", "key": write.key}],
            },
        )
        if not write.removes:
            yield (
                "request.stage",
                {
                    **me,
                    "stage": "storage",
                    "outcome": "pass",
                    "detail": f"{write.how} {write.key} at revision {revision}",
                },
            )
        done = code or (201 if method == "POST" else 200)
        yield (
            "request.completed",
            {
                **me,
                "code": done,
                "duration": round(started * 3, 6),
                "revision": revision,
                "audit": "RequestResponse",
            },
        )
        return revision

    def _refused(
        self, me: dict[str, Any], decision: dict[str, Any], verb: str, resource: str, name: str
    ) -> Iterator[Payload]:
        user = decision["user"]
        what = f'{resource} "{name}"' if name else resource
        message = (
            f'{what} is forbidden: User "{user}" cannot {verb} resource "{resource}" in API group "" '
            f'in the namespace "{NAMESPACE}"'
        )
        considered = [
            {
                "binding": f'ClusterRoleBinding "{binding}"',
                "role": f'ClusterRole "{binding}"',
                "subject": 'Group "system:authenticated"',
                "why": f'rule 1: verbs [{rule}] do not include "{verb}"',
            }
            for binding, rule in (("system:basic-user", "create"), ("system:discovery", "get"))
        ]
        reason = (
            f"no RBAC rule lets {user} {verb} {what} in namespace {NAMESPACE} "
            f"({len(considered)} bindings name the user or its groups; none of their rules fits)"
        )
        yield (
            "rbac.decision",
            {**decision, "allowed": False, "reason": reason, "considered": considered, "message": message},
        )
        yield ("request.stage", {**me, "stage": "authorization", "outcome": "deny", "detail": message})
        yield (
            "request.completed",
            {**me, "code": 403, "duration": round(self.rng.uniform(0.0003, 0.002), 6), "audit": "Metadata"},
        )

    def _reconcile(
        self, node: str, controller: str, key: str, revision: int | None, requests: list[str], **extra: Any
    ) -> Payload:
        fields: dict[str, Any] = {
            "from": node,
            "controller": controller,
            "key": key,
            "result": "success",
            "requeue": False,
            "requeue_after": None,
            "retries": 0,
            "error": None,
            "duration": round(self.rng.uniform(0.00005, 0.04), 6),
            "revision": revision,
            "requests": requests,
        }
        fields.update(extra)
        return ("reconcile", fields)

    # -- the scenarios ---------------------------------------------------------------------------------

    def _pod_turnover(self) -> Scenario:
        """The oldest pod goes (once the cluster is full), then the ReplicaSet makes a new one.

        Which pods go and come is settled now, as the scenario starts (not when its events are
        played), so that scenarios running at once never pick the same pod or overfill the cluster.
        """
        old = self.pods.popleft() if len(self.pods) >= self.max_pods else None
        counts = {node: 0 for node in self.nodes}
        for pod in self.pods:
            counts[pod.node] += 1
        node = min(self.nodes, key=lambda n: (counts[n], self.rng.random()))
        new = Pod(f"{REPLICASET}-{self._suffix()}", node)
        self.pods.append(new)
        return self._pod_replacement(old, new)

    def _pod_replacement(self, old: Pod | None, new: Pod) -> Scenario:
        cause = None if old is None else (yield from self._pod_end(old))
        return (yield from self._pod_life(new, cause))

    def _pod_life(self, pod: Pod, cause: int | None) -> Scenario:
        collection = f"/api/v1/namespaces/{NAMESPACE}/pods"
        item = f"{collection}/{pod.name}"
        create = self._uid()
        made = yield from self._request(
            self._cm,
            "POST",
            collection,
            verb="create",
            resource="pods",
            request_id=create,
            mutating=[
                ("LimitRanger", None),
                ("ServiceAccount", SERVICE_ACCOUNT_PATCH),
                ("DefaultTolerationSeconds", TOLERATIONS_PATCH),
            ],
            validating=["PodSecurity", "ResourceQuota"],
            write=Write(pod.key, "created"),
        )
        assert made is not None
        yield from self._deliver(pod.key, "Pod", made, "ADDED", self._watchers("pods"))
        yield self._reconcile(
            "controller-manager", "replicaset", f"{NAMESPACE}/{REPLICASET}", cause, [create]
        )
        yield self._reconcile(
            "controller-manager", "taint-eviction-controller", f"{NAMESPACE}/{pod.name}", made, []
        )
        bind = self._uid()
        yield self._decision(pod, made, bind)
        bound = yield from self._request(
            self._scheduler,
            "POST",
            f"{item}/binding",
            verb="create",
            resource="pods",
            name=pod.name,
            subresource="binding",
            mutating=[("NamespaceLifecycle", None)],
            write=Write(pod.key, "updated"),
            request_id=bind,
            code=201,
        )
        assert bound is not None
        yield from self._deliver(pod.key, "Pod", bound, "MODIFIED", self._watchers("pods"))
        yield from self._deliver(pod.key, "Pod", bound, "ADDED", [f"kubelet:{pod.node}"])
        yield from self._recorded_event(self._scheduler, f"{pod.name}.scheduled")
        node = kubelet(pod.node)
        token = self._uid()
        yield from self._request(
            node,
            "POST",
            f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default/token",
            verb="create",
            resource="serviceaccounts",
            name="default",
            subresource="token",
            request_id=token,
            code=201,
        )
        status = self._uid()
        running = yield from self._request(
            node,
            "PATCH",
            f"{item}/status",
            verb="patch",
            resource="pods",
            name=pod.name,
            subresource="status",
            mutating=[("NamespaceLifecycle", None), ("NodeRestriction", None)],
            write=Write(pod.key, "updated"),
            request_id=status,
        )
        assert running is not None
        yield from self._deliver(pod.key, "Pod", running, "MODIFIED", self._watchers("pods", pod.node))
        yield self._reconcile(node.node, "kubelet", f"{NAMESPACE}/{pod.name}", bound, [token, status])
        yield from self._recorded_event(node, f"{pod.name}.started")
        return running

    def _pod_end(self, pod: Pod) -> Scenario:
        item = f"/api/v1/namespaces/{NAMESPACE}/pods/{pod.name}"
        graceful = yield from self._request(
            self._cm,
            "DELETE",
            item,
            verb="delete",
            resource="pods",
            name=pod.name,
            write=Write(pod.key, "updated"),
        )
        assert graceful is not None
        yield from self._deliver(pod.key, "Pod", graceful, "MODIFIED", self._watchers("pods", pod.node))
        final = self._uid()
        gone = yield from self._request(
            kubelet(pod.node),
            "DELETE",
            item,
            verb="delete",
            resource="pods",
            name=pod.name,
            mutating=[("NodeRestriction", None)],
            write=Write(pod.key, "deleted"),
            request_id=final,
        )
        assert gone is not None
        yield from self._deliver(
            pod.key, "Pod", gone, "DELETED", self._watchers("pods", pod.node), removed=True
        )
        yield self._reconcile(f"kubelet:{pod.node}", "kubelet", f"{NAMESPACE}/{pod.name}", graceful, [final])
        return gone

    def _recorded_event(self, caller: Caller, name: str) -> Scenario:
        """A component records an Event (``kubectl get events``): one more write."""
        key = f"/registry/events/{NAMESPACE}/{name}.{self._suffix(8)}"
        revision = yield from self._request(
            caller,
            "POST",
            f"/api/v1/namespaces/{NAMESPACE}/events",
            verb="create",
            resource="events",
            mutating=[("NamespaceLifecycle", None)],
            write=Write(key, "created"),
        )
        assert revision is not None
        yield from self._deliver(key, "Event", revision, "ADDED", self._watchers("events"))
        return revision

    def _decision(self, pod: Pod, revision: int, binding: str) -> Payload:
        nodes: dict[str, Any] = {}
        for node in self.nodes:
            fit = self.rng.randint(80, 99)
            nodes[node] = {
                "filters": {
                    plugin: {"code": "Success", "reasons": []}
                    for plugin in ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeResourcesFit")
                },
                "scores": {
                    "TaintToleration": {"raw": 0, "normalized": 100, "weighted": 300},
                    "NodeResourcesFit": {"raw": fit, "normalized": fit, "weighted": fit},
                },
                "total": 300 + fit + (5 if node == pod.node else 0),
                "feasible": True,
            }
        return (
            "scheduler.decision",
            {
                "from": "scheduler",
                "pod": f"{NAMESPACE}/{pod.name}",
                "scheduler": "default-scheduler",
                "attempts": 1,
                "evaluated": len(self.nodes),
                "of": len(self.nodes),
                "nodes": nodes,
                "feasible": list(self.nodes),
                "chosen": pod.node,
                "message": None,
                "revision": revision,
                "requests": [binding],
            },
        )

    def _lease_renewal(self, node: str) -> Scenario:
        key = f"/registry/leases/kube-node-lease/{node}"
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}"
        renewed = yield from self._request(
            kubelet(node),
            "PUT",
            path,
            verb="update",
            resource="leases",
            name=node,
            mutating=[("NamespaceLifecycle", None), ("NodeRestriction", None)],
            write=Write(key, "updated"),
        )
        assert renewed is not None
        yield from self._deliver(key, "Lease", renewed, "MODIFIED", self._watchers("leases"))
        yield self._reconcile(
            "controller-manager",
            "node-lifecycle-controller",
            node,
            renewed,
            [],
            result="requeue_after",
            requeue=True,
            requeue_after=1.0,
        )
        return renewed

    def _read(self) -> Scenario:
        if self.rng.random() < 0.5:
            path = f"/apis/apps/v1/namespaces/{NAMESPACE}/replicasets/{REPLICASET}"
            yield from self._request(
                self._cm, "GET", path, verb="get", resource="replicasets", name=REPLICASET
            )
        else:
            yield from self._request(
                self._admin, "GET", f"/api/v1/namespaces/{NAMESPACE}/pods", verb="list", resource="pods"
            )
        return None

    def _refusal(self) -> Scenario:
        victim = self.pods[0].name if self.pods else "web"
        path = f"/api/v1/namespaces/{NAMESPACE}/pods/{victim}"
        yield from self._request(self._student, "DELETE", path, verb="delete", resource="pods", name=victim)
        return None

    def _rewatch(self) -> Scenario:
        """A client's watch times out; its reflector watches again from where it was."""
        watcher = self.rng.choice(["scheduler", "controller-manager", *(f"kubelet:{n}" for n in self.nodes)])
        if watcher in self._rewatching:
            return None
        self._rewatching.add(watcher)  # no deliveries to it until it watches again
        old = self._watch_id(watcher, "pods")
        yield (
            "request.completed",
            {
                "id": old,
                "from": watcher,
                "to": "apiserver",
                "code": 200,
                "duration": 300.0,
                "audit": "Metadata",
            },
        )
        yield (
            "watch.closed",
            {
                "id": old,
                "from": "apiserver",
                "to": watcher,
                "source": "apiserver",
                "watch": old,
                "reason": "timeout",
            },
        )
        new = self._watches[(watcher, "pods")] = self._uid()
        caller = {"scheduler": self._scheduler, "controller-manager": self._cm}.get(watcher) or kubelet(
            watcher.removeprefix("kubelet:")
        )
        path = f"/api/v1/pods?watch=true&resourceVersion={self.revision}"
        for payload in self._request(caller, "GET", path, verb="watch", resource="pods", request_id=new):
            if payload[0] == "request.completed":
                break  # a watch request is answered when it ends
            yield payload
        yield self._watch_opened(watcher, "pods", new)
        self._rewatching.discard(watcher)
        return None


SERVICE_ACCOUNT_PATCH: list[dict[str, Any]] = [
    {"op": "add", "path": "/spec/serviceAccountName", "value": "default"},
    {
        "op": "add",
        "path": "/spec/containers/0/volumeMounts",
        "value": [
            {
                "name": "kube-api-access",
                "readOnly": True,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            }
        ],
    },
]
TOLERATIONS_PATCH: list[dict[str, Any]] = [
    {
        "op": "add",
        "path": "/spec/tolerations",
        "value": [
            {
                "key": f"node.kubernetes.io/{taint}",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 60,
            }
            for taint in ("not-ready", "unreachable")
        ],
    }
]

# -- the driver ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DriverStats:
    """How a drive went: what was emitted, over how long, and how far behind the driver fell."""

    emitted: int
    seconds: float
    rate: float
    running: bool
    #: The most events that were due and still not emitted after a tick (0: the driver kept up).
    max_behind: int
    #: Seconds the emitting itself took (the driver's own CPU cost, roughly).
    busy: float

    @property
    def achieved(self) -> float:
        return self.emitted / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "emitted": self.emitted,
            "seconds": round(self.seconds, 3),
            "rate": self.rate,
            "achieved": round(self.achieved, 1),
            "running": self.running,
            "max_behind": self.max_behind,
            "busy": round(self.busy, 3),
        }


class Driver:
    """Emits a workload's events into a sink at ``rate`` a second (see the module's docstring)."""

    def __init__(
        self,
        sink: TraceSink,
        workload: Iterator[Payload] | Workload,
        *,
        rate: float,
        tick: float = 0.005,
        max_burst: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be positive, got {rate}")
        self.sink = sink
        self.events = iter(workload)
        self.rate = rate
        self.tick = tick
        self.max_burst = max_burst if max_burst is not None else max(1, int(rate * 0.25))
        self.clock = clock
        self.emitted = 0
        self.max_behind = 0
        self.busy = 0.0
        self._started: float | None = None
        self._stopped: float | None = None
        self._task: asyncio.Task[None] | None = None

    def emit_due(self, now: float, limit: int | None = None) -> int:
        """Emit the events due at ``now`` (at most ``max_burst``, and ``limit`` in all); how many."""
        if self._started is None:
            self._started = now
        due = int((now - self._started) * self.rate)
        if limit is not None:
            due = min(due, limit)
        count = max(0, min(due - self.emitted, self.max_burst))
        began = time.perf_counter()
        for _ in range(count):
            kind, fields = next(self.events)
            self.sink.emit(kind, **fields)
        self.busy += time.perf_counter() - began
        self.emitted += count
        self.max_behind = max(self.max_behind, due - self.emitted)
        return count

    async def run(self, seconds: float | None = None) -> None:
        """Emit until ``seconds`` have passed (None: until cancelled)."""
        limit = None if seconds is None else int(seconds * self.rate)
        try:
            while limit is None or self.emitted < limit:
                self.emit_due(self.clock(), limit)
                await asyncio.sleep(self.tick)
        finally:
            self._stopped = self.clock()

    def start(self, seconds: float | None = None) -> asyncio.Task[None]:
        """Run in a task of the running loop."""
        self._task = asyncio.get_running_loop().create_task(self.run(seconds), name="bench trace driver")
        return self._task

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def stats(self) -> DriverStats:
        end = self._stopped if self._stopped is not None else self.clock()
        seconds = end - self._started if self._started is not None else 0.0
        running = self._task is not None and not self._task.done()
        return DriverStats(self.emitted, seconds, self.rate, running, self.max_behind, self.busy)
