"""NamespaceLifecycle: nothing new in a namespace that is missing or going away.

Deleting a namespace is not instant: the namespace is marked ``Terminating`` and the namespace
controller deletes everything in it, then the namespace itself. If new pods could still be created in
it meanwhile, the controller would never finish. So this plugin refuses every *create* in a
terminating namespace, and every write at all in a namespace that does not exist (404, as if the
namespace were part of the object's address, which it is). Deletes are always allowed (they help the
cleanup), and so are reads (they never reach admission).

Three namespaces are *immortal*: ``default``, ``kube-system`` and ``kube-public`` may not be deleted
(``kube-node-lease`` may, and the API server creates it again).

Upstream: apiserver ``pkg/admission/plugin/namespace/lifecycle/admission.go``. Like upstream, when the
namespace is not in the cache the plugin asks the store before answering 404 (the namespace may have
been created a moment ago).
"""

from __future__ import annotations

from typing import Final

from controlplane.apiserver import errors
from controlplane.apiserver.admission.attributes import (
    CREATE,
    DELETE,
    Attributes,
    PatchOp,
    forbidden,
    section,
)
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope

#: ``metav1.NamespaceDefault``, ``NamespaceSystem``, ``NamespacePublic``.
IMMORTAL_NAMESPACES: Final = frozenset({"default", "kube-system", "kube-public"})
#: ``v1.NamespaceTerminatingCause``: the cause type clients look for to stop retrying.
NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"


def terminating_error(a: Attributes) -> errors.StatusError:
    """403 with upstream's message and cause for a create in a terminating namespace."""
    error = forbidden(
        a, f"unable to create new content in namespace {a.namespace} because it is being terminated"
    )
    details = error.details if error.details is not None else {}
    details.setdefault("causes", []).append(
        {
            "type": NAMESPACE_TERMINATING_CAUSE,
            "message": f"namespace {a.namespace} is being terminated",
            "field": "metadata.namespace",
        }
    )
    error.details = details
    return error


class NamespaceLifecycle(Plugin):
    name = "NamespaceLifecycle"
    mutating = True  # upstream's Admit: it runs in the mutating phase, before anything is defaulted

    def handles(self, a: Attributes) -> bool:
        if a.group == "" and a.resource == "namespaces":
            return a.operation == DELETE  # only the immortal check
        # Non-namespaced resources and deletes are always allowed.
        return bool(a.namespace) and a.operation != DELETE

    async def admit(self, a: Attributes, cluster: ClusterView, scope: Scope) -> list[PatchOp]:
        if a.group == "" and a.resource == "namespaces":
            if a.name in IMMORTAL_NAMESPACES:
                raise errors.forbidden("namespaces", "", a.name, "this namespace may not be deleted")
            return []
        namespace = await cluster.get("", "namespaces", "", a.namespace)
        if namespace is None:
            raise errors.not_found("namespaces", "", a.namespace)
        if a.operation == CREATE and section(namespace, "status", "phase") == "Terminating":
            raise terminating_error(a)
        return []


__all__ = ["IMMORTAL_NAMESPACES", "NAMESPACE_TERMINATING_CAUSE", "NamespaceLifecycle", "terminating_error"]
