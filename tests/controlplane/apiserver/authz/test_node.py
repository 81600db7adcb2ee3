"""The Node authorizer without a server: a kubelet's rights follow the pods bound to its node."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from controlplane.api import selectors
from controlplane.apiserver.authz.authorizer import Attributes, Verdict
from controlplane.apiserver.authz.node import NodeAuthorizer, NodeGraph, node_identity, pod_references
from controlplane.apiserver.authz.policy import PodGraphFeed, node_rules
from controlplane.apiserver.watchcache import Cached, CacheEvent
from controlplane.identity import AUTHENTICATED, NODES, UserInfo, node_user
from tests.controlplane.apiserver.authz.conftest import Lab

KUBELET = UserInfo.create(node_user("node-1"), groups=[NODES, "system:authenticated"])


def pod(name: str, node: str = "", namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"nodeName": node, **spec}}


WEB = pod(
    "web",
    "node-1",
    serviceAccountName="web-sa",
    imagePullSecrets=[{"name": "registry"}],
    volumes=[
        {"name": "tls", "secret": {"secretName": "tls"}},
        {"name": "conf", "configMap": {"name": "conf"}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "proj", "projected": {"sources": [{"configMap": {"name": "kube-root-ca.crt"}}]}},
    ],
    containers=[
        {
            "name": "app",
            "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}],
            "envFrom": [{"configMapRef": {"name": "settings"}}],
        }
    ],
)


def ask(verb: str, resource: str, namespace: str = "", name: str = "", **more: Any) -> Attributes:
    resource, _, sub = resource.partition("/")
    group = ""
    if "." in resource:
        resource, group = resource.split(".", 1)
    return Attributes(
        KUBELET,
        verb,
        api_group=group,
        resource=resource,
        subresource=sub,
        namespace=namespace,
        name=name,
        **more,
    )


def authorizer(*pods: dict[str, Any]) -> NodeAuthorizer:
    graph = NodeGraph()
    for p in pods:
        graph.set_pod(p)
    return NodeAuthorizer(graph, node_rules())


def test_a_pods_spec_names_its_secrets_configmaps_claims_and_service_account() -> None:
    assert pod_references(WEB) == {
        ("serviceaccount", "default", "web-sa"),
        ("secret", "default", "registry"),
        ("secret", "default", "tls"),
        ("secret", "default", "db"),
        ("configmap", "default", "conf"),
        ("configmap", "default", "kube-root-ca.crt"),
        ("configmap", "default", "settings"),
        ("pvc", "default", "data"),
    }


def test_only_system_node_users_in_system_nodes_are_nodes() -> None:
    assert node_identity(ask("get", "pods")) == ("node-1", True)
    assert node_identity(Attributes(UserInfo.create("system:node:node-1"), "get")) == ("", False)
    impostor = UserInfo.create("alice", groups=[NODES])
    assert node_identity(Attributes(impostor, "get")) == ("", False)
    assert authorizer().authorize(
        Attributes(UserInfo.create("alice"), "get", resource="secrets")
    ).verdict is (Verdict.NO_OPINION)


def test_a_kubelet_reads_the_secrets_of_its_pods_and_no_others() -> None:
    nodes = authorizer(
        WEB, pod("other", "node-2", volumes=[{"name": "s", "secret": {"secretName": "theirs"}}])
    )
    assert nodes.authorize(ask("get", "secrets", "default", "tls")).allowed
    assert nodes.authorize(ask("watch", "configmaps", "default", "kube-root-ca.crt")).allowed
    refused = nodes.authorize(ask("get", "secrets", "default", "theirs"))
    assert refused.verdict is Verdict.NO_OPINION
    assert refused.reason == "no relationship found between node 'node-1' and this object"
    assert nodes.authorize(ask("list", "secrets", "default")).reason == "No Object name found"
    assert (
        nodes.authorize(ask("delete", "secrets", "default", "tls")).reason
        == "can only read resources of this type"
    )
    assert nodes.authorize(ask("get", "persistentvolumeclaims", "default", "data")).allowed
    assert nodes.authorize(ask("create", "serviceaccounts/token", "default", "web-sa")).allowed
    assert not nodes.authorize(ask("create", "serviceaccounts/token", "default", "default")).allowed


def test_the_graph_forgets_a_pod_that_leaves_the_node() -> None:
    graph = NodeGraph()
    graph.set_pod(WEB)
    assert graph.related("secret", "default", "tls", "node-1")
    graph.set_pod(dict(WEB, spec=dict(WEB["spec"], nodeName="node-2")))
    assert not graph.related("secret", "default", "tls", "node-1")
    assert graph.related("secret", "default", "tls", "node-2")
    graph.delete_pod("default", "web")
    assert not graph.related("secret", "default", "tls", "node-2") and len(graph) == 0


def test_a_kubelet_reads_its_own_node_and_lease_only() -> None:
    nodes = authorizer()
    assert nodes.authorize(ask("get", "nodes", name="node-1")).allowed
    assert nodes.authorize(ask("watch", "nodes", name="node-1")).allowed
    assert nodes.authorize(ask("list", "nodes")).reason == (
        "node 'node-1' cannot read all nodes, only its own Node object"
    )
    assert nodes.authorize(ask("get", "nodes", name="node-2")).reason == (
        "node 'node-1' cannot read 'node-2', only its own Node object"
    )
    assert nodes.authorize(ask("patch", "nodes/status", name="node-1")).allowed
    lease = "leases.coordination.k8s.io"
    assert nodes.authorize(ask("update", lease, "kube-node-lease", "node-1")).allowed
    assert nodes.authorize(ask("create", lease, "kube-node-lease")).allowed
    assert nodes.authorize(ask("update", lease, "kube-node-lease", "node-2")).reason == (
        "can only access node lease with the same name as the requesting node"
    )
    assert not nodes.authorize(ask("get", lease, "default", "node-1")).allowed


def test_a_kubelet_lists_pods_only_with_its_node_selector() -> None:
    nodes = authorizer(WEB)
    assert nodes.authorize(ask("watch", "pods", field_selector="spec.nodeName=node-1")).allowed
    assert nodes.authorize(ask("list", "pods", field_selector="spec.nodeName=node-2")).reason == (
        "can only list/watch pods with spec.nodeName field selector"
    )
    assert nodes.authorize(ask("get", "pods", "default", "web")).allowed
    assert nodes.authorize(ask("patch", "pods/status", "default", "anything")).allowed
    assert nodes.authorize(ask("create", "pods/eviction", "default", "web")).allowed


def test_everything_else_follows_the_systemnode_rules() -> None:
    nodes = authorizer()
    assert nodes.authorize(ask("create", "events", "default")).allowed
    assert nodes.authorize(ask("list", "services")).allowed
    assert not nodes.authorize(ask("create", "deployments.apps", "default")).allowed
    assert not nodes.authorize(ask("delete", "namespaces", name="default")).allowed


async def test_the_graph_follows_the_pod_cache(lab: Lab) -> None:
    """Through the API server: a kubelet may read a Secret while a pod on its node uses it."""

    def kubelet(node: str) -> UserInfo:
        return UserInfo.create(node_user(node), groups=[NODES, AUTHENTICATED])

    admin, node_1, node_2 = lab.as_(), lab.as_(kubelet("node-1")), lab.as_(kubelet("node-2"))
    secret = "/api/v1/namespaces/default/secrets/db"
    await lab.create(
        "/api/v1/namespaces/default/secrets",
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "stringData": {"password": "x"}},
    )
    assert (await node_1.get(secret)).status_code == 403
    body = pod("web", "node-1", volumes=[{"name": "s", "secret": {"secretName": "db"}}])
    body["spec"]["containers"] = [{"name": "c", "image": "nginx"}]
    await lab.create("/api/v1/namespaces/default/pods", {"apiVersion": "v1", "kind": "Pod", **body})
    assert (await node_1.get(secret)).status_code == 200
    refused = await node_2.get(secret)
    assert refused.status_code == 403
    assert refused.json()["message"] == (
        'secrets "db" is forbidden: User "system:node:node-2" cannot get resource "secrets" in API group "" '
        "in the namespace \"default\": no relationship found between node 'node-2' and this object"
    )
    deleted = await admin.delete("/api/v1/namespaces/default/pods/web", params={"gracePeriodSeconds": "0"})
    assert deleted.status_code == 200
    assert (await node_1.get(secret)).status_code == 403


def test_the_graph_feed_applies_new_events_or_rebuilds_when_the_window_moved_on() -> None:
    first = Cached(WEB, 5)
    cache = SimpleNamespace(
        ready=True, revision=5, oldest=0, events=[], objects={"/registry/pods/default/web": first}
    )
    feed = PodGraphFeed(cache)  # type: ignore[arg-type]
    assert feed.graph().related("secret", "default", "tls", "node-1")  # built from the objects
    moved = Cached(dict(WEB, spec=dict(WEB["spec"], nodeName="node-2")), 6)
    cache.events = [CacheEvent("MODIFIED", "/registry/pods/default/web", 6, moved, first)]
    cache.revision = 6
    graph = feed.graph()  # applied from the event window
    assert graph.related("secret", "default", "tls", "node-2") and not graph.related(
        "secret", "default", "tls", "node-1"
    )
    # the window no longer reaches back to what the feed has seen: rebuilt from the objects
    cache.events, cache.oldest, cache.revision, cache.objects = [], 9, 9, {}
    assert len(feed.graph()) == 0


def test_the_graph_feed_decodes_only_pods_whose_node_changed() -> None:
    """graph_populator.go: an unbound pod links nothing, and a change that leaves the node alone
    leaves the edges alone; the feed tells both from the pods' kept fields, without decoding them."""
    reads: list[int] = []

    class Counted(Cached):
        __slots__ = ()

        @property
        def obj(self) -> dict[str, Any]:
            reads.append(self.revision)
            return super().obj

    def kept(pod: dict[str, Any], revision: int) -> Cached:
        return Counted(pod, revision, labels={}, fields=selectors.field_set("/pods", pod, namespaced=True))

    key = "/registry/pods/default/web"
    unbound = kept(dict(WEB, spec={k: v for k, v in WEB["spec"].items() if k != "nodeName"}), 5)
    bound = kept(WEB, 6)
    running = kept(dict(WEB, status={"phase": "Running"}), 7)
    cache = SimpleNamespace(ready=True, revision=4, oldest=0, events=[], objects={})
    feed = PodGraphFeed(cache)  # type: ignore[arg-type]
    assert len(feed.graph()) == 0
    cache.events = [
        CacheEvent("ADDED", key, 5, unbound, None),
        CacheEvent("MODIFIED", key, 6, bound, unbound),
        CacheEvent("MODIFIED", key, 7, running, bound),
    ]
    cache.revision = 7
    assert feed.graph().related("secret", "default", "tls", "node-1")
    assert reads == [6], f"pods read for the graph: revisions {reads}, only the binding (6) changes it"
