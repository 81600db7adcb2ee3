"""Admission: plugins that may change (mutating) or refuse (validating) a write after authorization.

Authorization answers "may this user create pods in this namespace?"; admission answers "may *this*
pod be created, and does it need anything filled in?". It runs inside the handler, once the body is
decoded (apiserver ``pkg/admission``; the plugins are kube-apiserver's ``plugin/pkg/admission``)::

    decode -> mutating admission -> object validation -> validating admission -> storage

The built-in plugins, in upstream's order (``pkg/kubeapiserver/options/plugins.go``), one module each:

- ``namespacelifecycle``: no new objects in a missing or terminating namespace; ``default``,
  ``kube-system`` and ``kube-public`` cannot be deleted;
- ``limitranger``: default requests and limits from LimitRange objects, then their min and max;
- ``serviceaccount``: every pod runs as a ServiceAccount (``default`` unless it says otherwise) and
  gets the projected ``kube-api-access-*`` token volume mounted in each container;
- ``noderestriction``: a kubelet (``system:node:<n>``) may change only its own Node and its pods;
- ``podsecurity``: the Pod Security Standards, chosen per namespace by labels;
- ``priority``: a new pod's ``spec.priority`` from its PriorityClass (or the ``globalDefault`` one);
- ``defaulttolerationseconds``: pods tolerate ``not-ready`` and ``unreachable`` nodes for 300 s;
- ``defaultstorageclass``: a PersistentVolumeClaim without a class gets the default StorageClass;
- ``certificates``: approving or signing a CertificateSigningRequest needs ``approve`` or ``sign`` on
  its signer, and nobody asks the client signer for ``system:masters``;
- ``mutatingwebhook`` / ``validatingwebhook``: your own plugins, as HTTPS servers
  (``MutatingWebhookConfiguration``, ``ValidatingWebhookConfiguration``);
- ``resourcequota``: what a namespace may use in all, from ResourceQuota objects (last, after the
  webhooks, so that it counts the final object).

**How the request reaches the plugins.** The registry (``registry.py``) knows *when* to admit (after
defaulting, around validation), but not *who* asks: it is called with an object, not a request. The
request handler knows who asks. So the handler hands every registry write a ``RequestScope``
(``requestscope.py``) holding an ``Admission``: the cluster's chain, the request's attributes (user,
resource, subresource, namespace, name, dry run) and the state of its admission so far (warnings for
the client). The registry calls ``mutate``, ``validate`` and ``admit_delete`` on it with the
operation and the objects. A write the API server makes on its own (the system namespaces, the
``kubernetes`` Service, the bootstrap policy) has no request, and no admission, as upstream's internal
writes to storage have none: its scope says so in words (``RequestScope.unadmitted(reason=...)``), so
that a write path cannot skip admission by forgetting it. A handler's write *within* a request that
upstream does not admit again (the pod deleted by an eviction, which was admitted as
``pods/eviction``) takes ``scope.already_admitted(...)``, which says so too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from controlplane.apiserver.admission.attributes import (
    CREATE,
    DELETE,
    UPDATE,
    Attributes,
    Object,
)
from controlplane.apiserver.admission.chain import Chain, Scope


@dataclass(frozen=True, slots=True)
class Admission:
    """One request's admission: the chain, what the request is (``base``, its operation and objects
    filled in per write), and its state (``scope``: warnings, reinvocation, where steps are reported)."""

    chain: Chain
    base: Attributes
    scope: Scope

    async def mutate(self, operation: str, obj: Object, old: Object | None) -> Object:
        """The mutating phase for a CREATE or UPDATE: ``obj`` as the plugins and webhooks changed it."""
        patched = await self.chain.mutate(self.base.with_objects(obj, old, operation), self.scope)
        return obj if patched is None else patched

    async def validate(self, operation: str, obj: Object, old: Object | None) -> None:
        """The validating phase for a CREATE or UPDATE; raises a StatusError to refuse."""
        await self.chain.validate(self.base.with_objects(obj, old, operation), self.scope)

    async def admit_delete(self, old: Object) -> None:
        """Both phases for a DELETE of ``old`` (one item of a deletecollection names itself)."""
        base = self.base
        if not base.name:
            meta = old.get("metadata") or {}
            base = dataclasses.replace(base, name=str(meta.get("name") or ""))
        a = base.with_objects(None, old, DELETE)
        await self.chain.mutate(a, self.scope)
        await self.chain.validate(a, self.scope)


__all__ = [
    "CREATE",
    "DELETE",
    "UPDATE",
    "Admission",
    "Attributes",
    "Chain",
    "Scope",
]
