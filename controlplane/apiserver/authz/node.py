"""The Node authorizer: what a kubelet may do depends on the pods bound to its node.

RBAC cannot say "a kubelet may read a Secret only if a pod on its node uses it": a rule names
resources, not relationships. So kube-apiserver runs a special authorizer first (``--authorization-
mode=Node,RBAC``). It recognises a kubelet by its user, ``system:node:<node>`` in the group
``system:nodes``, and keeps a **graph** of who needs what::

    secret/configmap/pvc/serviceaccount  ->  pod  ->  node

built from the pods bound to nodes (``spec.nodeName``). A kubelet may then:

- ``get``/``list``/``watch`` a Secret or ConfigMap, ``get`` a PersistentVolumeClaim, ``create`` a
  ServiceAccount token, ``get`` a pod, only if the graph links that object to its node;
- read its own Node (only: ``cannot read all nodes, only its own Node object``), create and update
  Nodes and their status, and ``list``/``watch`` only the pods with ``fieldSelector=spec.nodeName=
  <its node>``; create, delete and evict pods and update pod status (the NodeRestriction admission
  plugin narrows these writes to its own node; it is not part of this module);
- get, create, update, patch or delete the Lease named after its node in ``kube-node-lease``;
- anything else the ``system:node`` ClusterRole's rules allow (services, events, reviews ...),
  evaluated here with RBAC's rule matching but without any binding.

Everything else gets *no opinion* (and RBAC is asked next), with upstream's reason, e.g. ``no
relationship found between node 'node-1' and this object``.

**Kubelab simplification:** upstream's graph also follows PVC -> PV -> Secret, ResourceClaims,
VolumeAttachments and ResourceSlices; Kubelab has none of those kinds, so its graph
(:class:`NodeGraph`) only holds pods and what their specs name, kept in step with the pod watch
cache by :mod:`.policy`. Upstream: ``plugin/pkg/auth/authorizer/node/node_authorizer.go``,
``graph.go``, ``graph_populator.go``; ``pkg/api/v1/pod/util.go`` (``VisitPodSecretNames``,
``VisitPodConfigmapNames``). The AuthorizeNodeWithSelectors behaviour (default since 1.32) is the one
implemented.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from controlplane.api import selectors
from controlplane.apiserver.authz.authorizer import Attributes, Decision, Verdict
from controlplane.apiserver.authz.rbac import rules_allow
from controlplane.identity import NODE_USER_PREFIX, NODES

Object = Mapping[str, Any]
#: A vertex of the graph: (kind, namespace, name); kinds are "pod", "secret", "configmap", "pvc",
#: "serviceaccount".
Vertex = tuple[str, str, str]

NODE_LEASE_NAMESPACE = "kube-node-lease"

#: The answer to anyone who is not a kubelet (decisions are immutable: one serves every request).
NOT_A_NODE = Decision(Verdict.NO_OPINION)


def node_identity(attrs: Attributes) -> tuple[str, bool]:
    """Upstream's ``NodeIdentity``: (node name, is a node). A node is ``system:node:<name>`` in
    ``system:nodes``; a user in the group with another name is a node of unknown name."""
    user = attrs.user
    if NODES not in user.groups:
        return "", False
    if not user.username.startswith(NODE_USER_PREFIX):
        return "", False
    return user.username[len(NODE_USER_PREFIX) :], True


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, Mapping):
                yield container


def pod_references(pod: Object) -> set[Vertex]:
    """Every Secret, ConfigMap, PVC and ServiceAccount the pod's spec names (its graph edges)."""
    meta = pod.get("metadata") or {}
    namespace, pod_name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    spec = pod.get("spec") or {}
    found: set[Vertex] = set()

    def add(kind: str, name: Any) -> None:
        if isinstance(name, str) and name:
            found.add((kind, namespace, name))

    add("serviceaccount", spec.get("serviceAccountName"))
    for secret in spec.get("imagePullSecrets") or []:
        if isinstance(secret, Mapping):
            add("secret", secret.get("name"))
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, Mapping):
            continue
        add("secret", (volume.get("secret") or {}).get("secretName"))
        add("configmap", (volume.get("configMap") or {}).get("name"))
        add("pvc", (volume.get("persistentVolumeClaim") or {}).get("claimName"))
        if volume.get("ephemeral") is not None:  # a generic ephemeral volume's claim is <pod>-<volume>
            add("pvc", f"{pod_name}-{volume.get('name')}")
        for source in (volume.get("projected") or {}).get("sources") or []:
            if isinstance(source, Mapping):
                add("secret", (source.get("secret") or {}).get("name"))
                add("configmap", (source.get("configMap") or {}).get("name"))
    for container in _containers(spec):
        for env_from in container.get("envFrom") or []:
            if isinstance(env_from, Mapping):
                add("secret", (env_from.get("secretRef") or {}).get("name"))
                add("configmap", (env_from.get("configMapRef") or {}).get("name"))
        for env in container.get("env") or []:
            source = env.get("valueFrom") if isinstance(env, Mapping) else None
            if isinstance(source, Mapping):
                add("secret", (source.get("secretKeyRef") or {}).get("name"))
                add("configmap", (source.get("configMapKeyRef") or {}).get("name"))
    return found


class NodeGraph:
    """Which node needs which object: each bound pod links itself and what it names to its node."""

    def __init__(self) -> None:
        #: pod (namespace, name) -> (node, its vertices)
        self._pods: dict[tuple[str, str], tuple[str, frozenset[Vertex]]] = {}
        #: vertex -> how many pods on each node link it
        self._edges: dict[Vertex, collections.Counter[str]] = {}

    def set_pod(self, pod: Object) -> None:
        """Add or replace a pod (a pod not bound to a node links nothing)."""
        meta = pod.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        self.delete_pod(*key)
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if not node:
            return
        vertices = frozenset({("pod", *key), *pod_references(pod)})
        self._pods[key] = (node, vertices)
        for vertex in vertices:
            self._edges.setdefault(vertex, collections.Counter())[node] += 1

    def delete_pod(self, namespace: str, name: str) -> None:
        entry = self._pods.pop((namespace, name), None)
        if entry is None:
            return
        node, vertices = entry
        for vertex in vertices:
            counter = self._edges[vertex]
            counter[node] -= 1
            if counter[node] <= 0:
                del counter[node]
            if not counter:
                del self._edges[vertex]

    def related(self, kind: str, namespace: str, name: str, node: str) -> bool:
        """Whether a pod bound to ``node`` is, or names, this object."""
        return node in self._edges.get((kind, namespace, name), ())

    def __len__(self) -> int:
        return len(self._pods)


class NodeAuthorizer:
    """Upstream's ``NodeAuthorizer`` over a :class:`NodeGraph` and the ``system:node`` rules."""

    name = "Node"

    def __init__(
        self, graph: NodeGraph | Callable[[], NodeGraph], node_rules: Sequence[Mapping[str, Any]]
    ) -> None:
        #: The graph, or a function returning it up to date (:class:`~.policy.PodGraphFeed`).
        self._graph = graph
        self.node_rules = list(node_rules)

    @property
    def graph(self) -> NodeGraph:
        return self._graph if isinstance(self._graph, NodeGraph) else self._graph()

    def authorize(self, attrs: Attributes) -> Decision:
        node, is_node = node_identity(attrs)
        if not is_node:
            return NOT_A_NODE
        if not node:
            return self._no(f'unknown node for user "{attrs.user.username}"')
        if attrs.resource_request:
            group, resource = attrs.api_group, attrs.resource
            if group == "" and resource in ("secrets", "configmaps"):
                return self._read_namespaced(node, resource[:-1], attrs)
            if group == "" and resource == "persistentvolumeclaims":
                if attrs.subresource == "status":
                    if attrs.verb not in ("update", "patch"):
                        return self._no("can only get/update/patch this type")
                    return self._related(node, "pvc", attrs)
                return self._get(node, "pvc", attrs)
            if group == "" and resource == "serviceaccounts":
                return self._create_token(node, attrs)
            if group == "coordination.k8s.io" and resource == "leases":
                return self._lease(node, attrs)
            if group == "" and resource == "nodes":
                decision = self._node(node, attrs)
                if decision is not None:
                    return decision
            if group == "" and resource == "pods":
                decision = self._pod(node, attrs)
                if decision is not None:
                    return decision
        if rules_allow(attrs, self.node_rules):
            return self._yes(f"the ClusterRole system:node's rules allow every kubelet to {attrs.describe()}")
        return Decision(Verdict.NO_OPINION, "", self.name, "no rule for kubelets allows it")

    # -- the cases (upstream's authorizeX methods) -----------------------------------------------

    def _yes(self, why: str) -> Decision:
        return Decision(Verdict.ALLOW, "", self.name, why)

    def _no(self, reason: str) -> Decision:
        return Decision(Verdict.NO_OPINION, reason, self.name, reason)

    def _related(self, node: str, kind: str, attrs: Attributes) -> Decision:
        if not attrs.name:
            return self._no("No Object name found")
        if not self.graph.related(kind, attrs.namespace, attrs.name, node):
            return self._no(f"no relationship found between node '{node}' and this object")
        return self._yes(f"a pod bound to node {node} uses {kind} {attrs.namespace}/{attrs.name}")

    def _read_namespaced(self, node: str, kind: str, attrs: Attributes) -> Decision:
        if attrs.verb not in ("get", "list", "watch"):
            return self._no("can only read resources of this type")
        if attrs.subresource:
            return self._no("cannot read subresource")
        if not attrs.namespace:
            return self._no("can only read namespaced object of this type")
        return self._related(node, kind, attrs)

    def _get(self, node: str, kind: str, attrs: Attributes) -> Decision:
        if attrs.verb != "get":
            return self._no("can only get individual resources of this type")
        if attrs.subresource:
            return self._no("cannot get subresource")
        return self._related(node, kind, attrs)

    def _create_token(self, node: str, attrs: Attributes) -> Decision:
        if attrs.verb != "create" or not attrs.name:
            return self._no("can only create tokens for individual service accounts")
        if attrs.subresource != "token":
            return self._no("can only create token subresource of serviceaccount")
        return self._related(node, "serviceaccount", attrs)

    def _lease(self, node: str, attrs: Attributes) -> Decision:
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return self._no("can only get, create, update, patch, or delete a node lease")
        if attrs.namespace != NODE_LEASE_NAMESPACE:
            return self._no(f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
        # Create carries no name in its attributes: NodeRestriction admission checks it upstream.
        if attrs.verb != "create" and attrs.name != node:
            return self._no("can only access node lease with the same name as the requesting node")
        return self._yes(f"a kubelet may {attrs.verb} its node's Lease")

    def _node(self, node: str, attrs: Attributes) -> Decision | None:
        verb = attrs.verb
        if not attrs.subresource:
            if verb in ("create", "update", "patch"):
                return self._yes(f"a kubelet may {verb} Node objects (NodeRestriction limits it to its own)")
            if verb in ("get", "list", "watch"):
                if attrs.name == node:
                    return self._yes("a kubelet may read its own Node")
                if not attrs.name:
                    return self._no(f"node '{node}' cannot read all nodes, only its own Node object")
                return self._no(f"node '{node}' cannot read '{attrs.name}', only its own Node object")
        elif attrs.subresource == "status" and verb in ("update", "patch"):
            return self._yes("a kubelet may update Node status (NodeRestriction limits it to its own)")
        return self._no("")

    def _pod(self, node: str, attrs: Attributes) -> Decision | None:
        verb, sub = attrs.verb, attrs.subresource
        if not sub:
            if verb == "get":
                return self._get(node, "pod", attrs)
            if verb in ("list", "watch"):
                if _selects_node(attrs.field_selector, node):
                    return self._yes(f"a kubelet may {verb} the pods with spec.nodeName={node}")
                if attrs.name:
                    return self._related(node, "pod", attrs)
                return self._no("can only list/watch pods with spec.nodeName field selector")
            if verb in ("create", "delete"):
                return self._yes(f"a kubelet may {verb} (mirror) pods")
        elif sub == "status" and verb in ("update", "patch"):
            return self._yes("a kubelet may report the status of pods (NodeRestriction: its own)")
        elif sub == "eviction" and verb == "create":
            return self._yes("a kubelet may evict pods (NodeRestriction: its own)")
        return self._no("")


def _selects_node(field_selector: str, node: str) -> bool:
    if not field_selector:
        return False
    try:
        parsed = selectors.parse_field_selector(field_selector)
    except selectors.SelectorError:
        return False
    return any(
        field == "spec.nodeName" and op == selectors.EQUALS and value == node
        for field, op, value in parsed.requirements
    )


__all__ = ["NodeAuthorizer", "NodeGraph", "node_identity", "pod_references"]
