"""NodeRestriction: a kubelet may change only its own Node, and only the pods bound to it.

Every kubelet authenticates as ``system:node:<node>`` in the group ``system:nodes``. Authorization
(RBAC's ``system:node`` role and the Node authorizer) decides *which kinds* of objects a kubelet may
write: Nodes, pods' status, Leases, Events. It cannot say *which ones*: "this kubelet may patch
Node ``node-1`` and no other Node" depends on the object, and that is admission's job. Without this
plugin a single compromised node could mark every other node unschedulable, or rewrite the status of
any pod in the cluster. With it, a kubelet may:

- create and modify only its own Node (``node "node-1" is not allowed to modify node "node-2"``), and
  neither change its taints nor give itself labels that would steer privileged workloads to it;
- update the status of pods bound to it (``spec.nodeName`` is itself), and not their labels;
- delete and evict pods bound to it;
- create only *mirror pods* (its static pods) bound to itself and owned by its Node;
- use only its own Lease in ``kube-node-lease``.

Other users are not this plugin's business. Upstream: ``plugin/pkg/admission/noderestriction/admission.go``.
"""

from __future__ import annotations

from typing import Any, Final

from controlplane.apiserver import errors
from controlplane.apiserver.admission.attributes import (
    CREATE,
    DELETE,
    UPDATE,
    Attributes,
    Object,
    PatchOp,
    forbidden,
    labels_of,
    section,
)
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope
from controlplane.apiserver.admission.serviceaccount import MIRROR_POD_ANNOTATION, secret_names
from controlplane.identity import NODE_USER_PREFIX, NODES, UserInfo

NODE_LEASE_NAMESPACE: Final = "kube-node-lease"

#: ``kubeletapis.KubeletLabels``: labels in kubernetes.io namespaces a kubelet may set on its Node.
KUBELET_LABELS: Final = frozenset(
    {
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
    }
)
#: ``kubeletapis.KubeletLabelNamespaces``: whole label namespaces a kubelet may use.
KUBELET_LABEL_NAMESPACES: Final = ("kubelet.kubernetes.io", "node.kubernetes.io")


def node_identity(user: UserInfo) -> tuple[str, bool]:
    """``nodeidentifier.NodeIdentity``: (node name, is a node). A node user must be in system:nodes."""
    if NODES not in user.groups or not user.username.startswith(NODE_USER_PREFIX):
        return "", False
    return user.username[len(NODE_USER_PREFIX) :], True


def is_forbidden_label(key: str) -> bool:
    """``getForbiddenLabels``: a kubernetes.io / k8s.io label a kubelet may not set on itself."""
    namespace = key.partition("/")[0] if "/" in key else ""
    in_k8s = namespace in ("kubernetes.io", "k8s.io") or namespace.endswith((".kubernetes.io", ".k8s.io"))
    if not in_k8s or key in KUBELET_LABELS:
        return False
    return not any(namespace == ns or namespace.endswith("." + ns) for ns in KUBELET_LABEL_NAMESPACES)


def _modified_labels(new: dict[str, Any], old: dict[str, Any]) -> set[str]:
    return {k for k in set(new) | set(old) if new.get(k) != old.get(k)}


def check(a: Attributes, node: str, existing_pod: Object | None, node_uid: str | None) -> str | None:
    """Why the kubelet of ``node`` may not make this request, in upstream's words; None if it may.

    Pure: the adapter looks up the pod being deleted or evicted and the node's uid beforehand.
    """
    if a.group == "" and a.resource == "pods":
        if a.subresource == "":
            if a.operation == CREATE:
                return _pod_create(a.object or {}, node, node_uid)
            if a.operation == DELETE:
                if existing_pod is not None and section(existing_pod, "spec", "nodeName") != node:
                    return f'node "{node}" can only delete pods with spec.nodeName set to itself'
                return None
            return (
                f'unexpected operation "{a.operation}", node "{node}" can only create and delete mirror pods'
            )
        if a.subresource == "status":
            if a.operation != UPDATE:
                return f'unexpected operation "{a.operation}"'
            if section(a.old_object, "spec", "nodeName") != node:
                return f'node "{node}" can only update pod status for pods with spec.nodeName set to itself'
            if labels_of(a.old_object) != labels_of(a.object):
                return f'node "{node}" cannot update labels through pod status'
            return None
        if a.subresource == "eviction":
            if a.operation != CREATE:
                return f"unexpected operation {a.operation}"
            if existing_pod is not None and section(existing_pod, "spec", "nodeName") != node:
                return f"node {node} can only evict pods with spec.nodeName set to itself"
            return None
        return f"unexpected pod subresource \"{a.subresource}\", only 'status' and 'eviction' are allowed"
    if a.group == "" and a.resource == "nodes":
        return _node(a, node)
    if a.group == "coordination.k8s.io" and a.resource == "leases":
        if a.namespace != NODE_LEASE_NAMESPACE:
            return f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace'
        if a.object_name() != node:
            return "can only access node lease with the same name as the requesting node"
    return None


def _pod_create(pod: Object, node: str, node_uid: str | None) -> str | None:
    annotations = section(pod, "metadata", "annotations")
    if not isinstance(annotations, dict) or MIRROR_POD_ANNOTATION not in annotations:
        return (
            f'pod does not have "{MIRROR_POD_ANNOTATION}" annotation, '
            f'node "{node}" can only create mirror pods'
        )
    if section(pod, "spec", "nodeName") != node:
        return f'node "{node}" can only create pods with spec.nodeName set to itself'
    owners = section(pod, "metadata", "ownerReferences")
    owners = owners if isinstance(owners, list) else []
    if len(owners) > 1:
        return f'node "{node}" can only create pods with a single owner reference set to itself'
    if not owners:
        return f'node "{node}" can only create pods with an owner reference set to itself'
    owner = owners[0] if isinstance(owners[0], dict) else {}
    if owner.get("apiVersion") != "v1" or owner.get("kind") != "Node" or owner.get("name") != node:
        return f'node "{node}" can only create pods with an owner reference set to itself'
    if owner.get("controller") is not True:
        return f'node "{node}" can only create pods with a controller owner reference set to itself'
    if owner.get("blockOwnerDeletion") is True:
        return f'node "{node}" must not set blockOwnerDeletion on an owner reference'
    if node_uid is not None and owner.get("uid") != node_uid:
        return f"node {node} UID mismatch: expected {owner.get('uid')} got {node_uid}"
    if section(pod, "spec", "serviceAccountName"):
        return f'node "{node}" can not create pods that reference a service account'
    if secret_names(pod):
        return f'node "{node}" can not create pods that reference secrets'
    return None


def _node(a: Attributes, node: str) -> str | None:
    requested = a.object_name()
    if requested != node:
        return f'node "{node}" is not allowed to modify node "{requested}"'
    new_labels = labels_of(a.object)
    if a.operation == CREATE:
        if section(a.object, "spec", "configSource") is not None:
            return f'node "{node}" is not allowed to create pods with a non-nil configSource'
        bad = sorted(k for k in new_labels if is_forbidden_label(k))
        if bad:
            return f'node "{node}" is not allowed to set the following labels: {", ".join(bad)}'
    elif a.operation == UPDATE and a.object is not None and a.old_object is not None:
        if section(a.object, "spec", "taints") != section(a.old_object, "spec", "taints"):
            return f'node "{node}" is not allowed to modify taints'
        changed = _modified_labels(new_labels, labels_of(a.old_object))
        bad = sorted(k for k in changed if is_forbidden_label(k))
        if bad:
            return f'node "{node}" is not allowed to modify labels: {", ".join(bad)}'
    return None


class NodeRestriction(Plugin):
    name = "NodeRestriction"
    mutating = True  # upstream's Admit (it only refuses)

    def handles(self, a: Attributes) -> bool:
        return a.user.username.startswith(NODE_USER_PREFIX) and (
            (a.group == "" and a.resource in ("pods", "nodes"))
            or (a.group == "coordination.k8s.io" and a.resource == "leases")
        )

    async def admit(self, a: Attributes, cluster: ClusterView, scope: Scope) -> list[PatchOp]:
        node, is_node = node_identity(a.user)
        if not is_node:
            return []
        if not node:
            raise forbidden(a, f'could not determine node from user "{a.user.username}"')
        existing: Object | None = None
        node_uid: str | None = None
        if a.is_pod() and (a.operation == DELETE or a.subresource == "eviction"):
            existing = a.old_object if a.operation == DELETE else None
            if existing is None:
                pod_name = a.name or str(section(a.object, "metadata", "name") or "")
                if not pod_name:
                    raise forbidden(a, "could not determine pod from request data")
                existing = await cluster.get("", "pods", a.namespace, pod_name)
                if existing is None:
                    raise errors.not_found("pods", "", pod_name)
        elif a.is_pod() and a.operation == CREATE and not a.subresource:
            # A mirror pod's owner must be this very Node: its uid is checked once the rest passes.
            why = check(a, node, None, None)
            if why is not None:
                raise forbidden(a, why)
            found = await cluster.get("", "nodes", "", node)
            if found is None:
                raise errors.not_found("nodes", "", node)
            node_uid = str(section(found, "metadata", "uid") or "")
        why = check(a, node, existing, node_uid)
        if why is not None:
            raise forbidden(a, why)
        return []


__all__ = ["NODE_LEASE_NAMESPACE", "NodeRestriction", "check", "is_forbidden_label", "node_identity"]
