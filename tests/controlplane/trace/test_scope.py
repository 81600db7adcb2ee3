"""A viewer's scope of the trace: ada, in a classroom's shared cluster, sees her namespace and the
cluster around it, never bob's namespace or requests, and always her own requests."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.trace.scope import ScopedView, TraceScope

ADA = TraceScope(
    namespace_prefix="student-",
    own_namespace="student-ada",
    user_prefix="user:student:",
    own_user="user:student:ada",
)


def event(event_type: str, /, **fields: Any) -> dict[str, Any]:
    return {"type": event_type, **fields}


# What one event alone names: hidden when it names bob's namespace or bob's box, in any of its fields.
HIDDEN_ALONE = [
    event("watch.event", event="ADDED", revision=5, watch=3, namespace="student-bob", name="web"),
    event("reconcile", controller="deployment", key="student-bob/web", result="ok"),
    event("scheduler.decision", pod="student-bob/web", chosen="node-1", feasible=3, nodes=3),
    event("store.txn", op="range", revision=9, key="/registry/pods/student-bob/"),
    event(
        "store.txn",
        op="txn",
        revision=9,
        ops=[{"op": "put", "key": "/registry/configmaps/student-bob/settings"}],
    ),
    event("store.txn", op="txn", revision=9, compares=[{"key": "/registry/pods/student-bob/web"}]),
    event("watch.opened", watch=4, prefix="/registry/pods/student-bob/"),
    event("watch.event", event="ADDED", revision=5, watch=3, kind="Namespace", name="student-bob"),
    event("rbac.decision", allowed=True, resource="namespaces", name="student-bob"),
    event("request.received", method="DELETE", path="/api/v1/namespaces/student-bob"),
    event(
        "store.txn", op="txn", revision=9, ops=[{"op": "delete", "key": "/registry/namespaces/student-bob"}]
    ),
    event("reconcile", controller="namespace", key="student-bob", result="ok"),
    event("request.received", method="GET", path="/api/v1/nodes", **{"from": "user:student:bob"}),
]

# What ada sees: her namespace, the system's, cluster-scoped objects, the components.
SHOWN_ALONE = [
    event("watch.event", event="ADDED", revision=5, watch=3, namespace="student-ada", name="web"),
    event("reconcile", controller="deployment", key="student-ada/web", result="ok"),
    event("reconcile", controller="endpointslice", key="kube-system/kube-dns", result="ok"),
    event(
        "store.txn",
        op="txn",
        revision=9,
        ops=[{"op": "put", "key": "/registry/leases/kube-node-lease/node-1"}],
    ),
    event("store.txn", op="range", revision=9, key="/registry/pods/"),
    event("watch.event", event="ADDED", revision=5, watch=3, kind="Namespace", name="student-ada"),
    event("watch.event", event="MODIFIED", revision=6, watch=3, kind="Node", name="node-1"),
    event("component.state", component="scheduler", state="running", **{"from": "scheduler"}),
    event("fault.applied", fault="stop-kubelet", target="kubelet:node-2"),
    event("request.received", method="GET", path="/api/v1/nodes", **{"from": "user:student:ada"}),
    event("request.received", method="GET", path="/api/v1/nodes", **{"from": "user:instructor:tess"}),
    # An object's own name that starts like a student's namespace is not a namespace.
    event("reconcile", controller="deployment", key="default/student-web", result="ok"),
    event(
        "store.txn", op="txn", revision=9, ops=[{"op": "put", "key": "/registry/pods/default/student-web"}]
    ),
    event("request.received", method="GET", path="/api/v1/namespaces/default/pods/student-web"),
]


@pytest.mark.parametrize("hidden", HIDDEN_ALONE, ids=lambda e: e["type"])
def test_an_event_naming_a_classmates_namespace_or_box_is_hidden(hidden: dict[str, Any]) -> None:
    assert ADA.names_hidden(hidden), f"ada would see {hidden}"
    assert not ADA.view().shows(hidden)


@pytest.mark.parametrize("shown", SHOWN_ALONE, ids=lambda e: e["type"])
def test_her_own_namespace_and_the_cluster_around_it_are_shown(shown: dict[str, Any]) -> None:
    assert not ADA.names_hidden(shown), f"ada would not see {shown}"
    assert ADA.view().shows(shown)


def bob_creates_a_pod(request_id: str) -> list[dict[str, Any]]:
    """A request's events: only the first ones name bob's namespace."""
    return [
        event(
            "request.received",
            id=request_id,
            method="POST",
            path="/api/v1/namespaces/student-bob/pods",
            **{"from": "user:student:bob", "to": "apiserver"},
        ),
        event("request.stage", id=request_id, stage="authentication", outcome="pass"),
        event(
            "admission.step",
            id=request_id,
            plugin="DefaultTolerationSeconds",
            phase="mutating",
            outcome="pass",
        ),
        event("store.txn", id=request_id, op="txn", revision=12),
        event("request.completed", id=request_id, code=201, duration=0.01),
    ]


def test_every_event_of_a_hidden_request_is_hidden_though_it_names_nothing_itself() -> None:
    view = ADA.view()
    assert view.events(bob_creates_a_pod("b1")) == []


def test_a_components_watch_streams_her_objects_after_hiding_a_classmates() -> None:
    """The kubelet's one watch on every pod: bob's pod hides that event only, not the watch."""
    view = ADA.view()
    watch = {"id": "kubelet-pods", "watch": "kubelet-pods", "from": "apiserver", "to": "kubelet:node-1"}
    opened = event("watch.opened", namespace="", resource="pods", **watch)
    bobs = event("watch.event", event="ADDED", revision=7, namespace="student-bob", name="db", **watch)
    hers = event("watch.event", event="ADDED", revision=8, namespace="student-ada", name="web", **watch)
    assert view.events([opened, bobs, hers]) == [opened, hers]


def test_her_own_request_is_shown_whole_even_when_it_names_a_classmates_namespace() -> None:
    """``kubectl get pods -n student-bob`` as ada: her request and RBAC's refusal are the lesson."""
    view = ADA.view()
    attempt = [
        event(
            "request.received",
            id="a1",
            method="GET",
            path="/api/v1/namespaces/student-bob/pods",
            namespace="student-bob",
            **{"from": "user:student:ada", "to": "apiserver"},
        ),
        event("rbac.decision", id="a1", allowed=False, namespace="student-bob", resource="pods"),
        event("request.completed", id="a1", code=403, duration=0.002, namespace="student-bob"),
    ]
    assert view.events(attempt) == attempt


def test_a_view_forgets_the_oldest_requests_beyond_its_memory() -> None:
    view = ScopedView(ADA, remembered=2)
    for request_id in ("b1", "b2", "b3"):
        assert not view.shows(bob_creates_a_pod(request_id)[0])
    assert not view.shows(event("request.stage", id="b3", stage="audit", outcome="pass"))
    # b1 was forgotten: its later events name nothing hidden, so they are no longer recognised.
    assert view.shows(event("request.stage", id="b1", stage="audit", outcome="pass"))


def test_the_state_leaves_out_classmates_pods_and_watches() -> None:
    pods = [
        {"namespace": "student-ada", "name": "web"},
        {"namespace": "student-bob", "name": "db"},
        {"namespace": "kube-system", "name": "coredns-1"},
    ]
    watches = [
        {
            "watch": "w1",
            "from": "apiserver",
            "to": "user:student:bob",
            "resource": "pods",
            "namespace": "student-bob",
        },
        {"watch": "w2", "from": "apiserver", "to": "scheduler", "resource": "pods", "namespace": ""},
    ]
    objects: dict[str, Any] = {"nodes": [{"name": "node-1"}], "pods": pods}
    state = {"revision": 7, "objects": objects, "watches": watches}
    scoped = ADA.state(state)
    assert [p["name"] for p in scoped["objects"]["pods"]] == ["web", "coredns-1"]
    assert scoped["objects"]["nodes"] == [{"name": "node-1"}]
    assert [w["watch"] for w in scoped["watches"]] == ["w2"]
    assert objects["pods"] == pods and len(pods) == 3, "the state it was given is left as it was"
