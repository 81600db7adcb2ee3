"""The root CA certificate publisher: every namespace has a ConfigMap ``kube-root-ca.crt``.

A pod that talks to the API server (``https://kubernetes.default.svc``) must know which CA signed the
server's certificate, or it cannot tell the real API server from an impostor. Every pod's projected
ServiceAccount volume therefore mounts ``ca.crt`` from the ConfigMap ``kube-root-ca.crt`` of its
namespace (``apiserver/admission/serviceaccount.py``), next to its token. This controller makes sure
that ConfigMap exists in every namespace, holds exactly ``{"ca.crt": <the CA bundle>}``, and carries
the annotation ``kubernetes.io/description`` saying what it is for. Try it::

    kubectl get configmap -A | grep kube-root-ca.crt       # one per namespace
    kubectl delete configmap kube-root-ca.crt              # ... and it is back at once
    kubectl edit configmap kube-root-ca.crt                # change ca.crt: the edit is reverted

The controller is for **namespaces** (a new namespace, or any change to one, is a look at it) and
also watches **configmaps**, mapping a ConfigMap called ``kube-root-ca.crt`` to its namespace
(``configmap_namespace``): deleting or editing it is noticed at once. Every other ConfigMap, and every
pod, causes nothing at all. (Upstream's handlers are narrower: namespaces on add and on an update to
``Active``, ConfigMaps on update and delete. Kubelab's ``Controller.watch`` maps adds, updates and
deletes alike; the few extra looks find nothing to do.)

``reconcile`` (upstream's ``syncNamespace``) reads the namespace and the ConfigMap from the shared
caches:

- a namespace that is gone or not ``Active`` is left alone, as ``serviceaccount_controller.py`` does: a
  ``Terminating`` namespace is being emptied by the namespace controller, and creating in it would
  fight that. (Upstream tries the create and lets the API server refuse it; Kubelab saves the doomed
  request, and keeps upstream's handling for when the cache is behind, below.)
- ConfigMap missing: create it. ``NotFound`` (the namespace is gone) and a refusal with the cause
  ``NamespaceTerminating`` end the reconcile without error, as upstream; ``AlreadyExists`` too
  (someone was quicker: its add event queues the namespace again, and the next look checks it);
- ConfigMap present: if its ``data`` is not exactly ``{"ca.crt": <bundle>}``, or the description
  annotation is empty, update it (a PUT of a copy with that ``data`` and the annotation; other keys of
  ``data`` are dropped, other annotations and labels kept). A ``Conflict`` is an error, retried with
  backoff.

Which CA bundle. Upstream publishes ``--root-ca-file``, else the CA its own kubeconfig trusts
(``ClientConfig.CAData``). ``ControllerManager(root_ca=...)`` is that flag; without it the controller
manager publishes the CA its client trusts (``Config.ca_data``): for a controller manager run by
``manage.py runcomponent`` over HTTPS, the lab's serving CA. In-process components reach the API server
without TLS, so the runtime passes the bundle explicitly: the lab's serving CA
(``<data dir>/pki/serving-ca.crt``, ``LabConfig.serving_ca``), which signed the API port's serving
certificate. A cluster with no HTTPS port (tests, the benchmark) has no serving CA; it publishes its
own cluster CA (``ClusterPKI.ca``) instead, so that the ConfigMap always holds a real CA certificate.
The controller itself only gets the bundle as text: it reads no file.

Upstream: ``pkg/controller/certificates/rootcacertpublisher/publisher.go`` (``syncNamespace``, the
constants ``RootCACertConfigMapName``, ``DescriptionAnnotation``, ``Description``) and
``cmd/kube-controller-manager/app/certificates.go`` (``startRootCACertificatePublisherController``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.client.errors import AlreadyExists, APIError, NotFound
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.components.controllers.kinds import CONFIGMAPS, NAMESPACES

#: The ConfigMap every namespace gets (``RootCACertConfigMapName``).
ROOT_CA_CONFIGMAP_NAME: Final = "kube-root-ca.crt"
#: Its one data key, which the projected ServiceAccount volume mounts as ``ca.crt``.
CA_KEY: Final = "ca.crt"
#: The annotation describing the ConfigMap, and its text (``DescriptionAnnotation``, ``Description``).
DESCRIPTION_ANNOTATION: Final = "kubernetes.io/description"
DESCRIPTION: Final = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
    "such as the internal service IP or kubernetes.default.svc. "
    "No other usage is guaranteed across distributions of Kubernetes clusters."
)
#: The Status cause of a create refused in a terminating namespace (``v1.NamespaceTerminatingCause``).
NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"


def configmap_namespace(obj: Mapping[str, Any]) -> list[Request]:
    """A ``kube-root-ca.crt`` ConfigMap's namespace, as a request; nothing for any other ConfigMap."""
    meta = obj.get("metadata") or {}
    if meta.get("name") != ROOT_CA_CONFIGMAP_NAME or not meta.get("namespace"):
        return []
    return [Request("", str(meta["namespace"]))]


def wanted_data(root_ca: str) -> dict[str, str]:
    """The ConfigMap's whole ``data``."""
    return {CA_KEY: root_ca}


def root_ca_configmap(namespace: str, root_ca: str) -> dict[str, Any]:
    """The ConfigMap to create in ``namespace``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ROOT_CA_CONFIGMAP_NAME,
            "namespace": namespace,
            "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
        },
        "data": wanted_data(root_ca),
    }


def needs_update(configmap: Mapping[str, Any], root_ca: str) -> bool:
    """Whether the ConfigMap's ``data`` differs from the wanted one or its description is empty."""
    annotations = (configmap.get("metadata") or {}).get("annotations") or {}
    return (configmap.get("data") or {}) != wanted_data(root_ca) or not annotations.get(
        DESCRIPTION_ANNOTATION
    )


def corrected(configmap: Mapping[str, Any], root_ca: str) -> dict[str, Any]:
    """A copy of the cached ConfigMap with the wanted ``data`` and description (the rest kept)."""
    updated: dict[str, Any] = deep_copy(dict(configmap))
    updated["data"] = wanted_data(root_ca)
    meta = updated["metadata"]
    meta["annotations"] = {**(meta.get("annotations") or {}), DESCRIPTION_ANNOTATION: DESCRIPTION}
    return updated


class RootCACertPublisher:
    """The reconciler: ``kube-root-ca.crt`` with ``root_ca`` (PEM text) in the requested namespace."""

    def __init__(self, manager: Manager, *, root_ca: str) -> None:
        self.namespaces = manager.cache(NAMESPACES)
        self.configmaps = manager.cache(CONFIGMAPS)
        self.client = manager.client
        self.root_ca = root_ca

    async def reconcile(self, request: Request) -> Result:
        namespace = request.name
        cached = self.namespaces.get_by_key(namespace)
        if cached is None or (cached.get("status") or {}).get("phase") != "Active":
            return Result()
        resource = self.client.resource("", "v1", "configmaps", namespace)
        configmap = self.configmaps.get_by_key(f"{namespace}/{ROOT_CA_CONFIGMAP_NAME}")
        if configmap is None:
            try:
                await resource.create(root_ca_configmap(namespace, self.root_ca))
            except (NotFound, AlreadyExists):
                return Result()
            except APIError as error:
                # Don't retry a create in a namespace that is terminating (upstream's HasStatusCause).
                if any(cause.type == NAMESPACE_TERMINATING_CAUSE for cause in error.causes):
                    return Result()
                raise
            return Result()
        if needs_update(configmap, self.root_ca):
            await resource.update(corrected(configmap, self.root_ca))
        return Result()


def add_to_manager(manager: Manager, *, root_ca: str, workers: int = 1) -> Controller:
    """Add the root CA certificate publisher (for namespaces, watching configmaps) to ``manager``."""
    controller = manager.new_controller(
        "root_ca_cert_publisher",  # upstream's workqueue name
        RootCACertPublisher(manager, root_ca=root_ca),
        for_=NAMESPACES,
        workers=workers,
    )
    controller.watch(manager.informer_for(CONFIGMAPS), configmap_namespace)
    return controller


__all__ = [
    "CA_KEY",
    "DESCRIPTION",
    "DESCRIPTION_ANNOTATION",
    "ROOT_CA_CONFIGMAP_NAME",
    "RootCACertPublisher",
    "add_to_manager",
    "configmap_namespace",
    "corrected",
    "needs_update",
    "root_ca_configmap",
]
