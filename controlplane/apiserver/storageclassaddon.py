"""The default StorageClass a Kubelab cluster starts with, as a cluster installer provides it.

Kubernetes itself has no StorageClass: whoever installs a cluster adds one. kube-up's addon manager
creates ``cluster/addons/storage-class/<provider>/default.yaml`` with the label
``addonmanager.kubernetes.io/mode: EnsureExists`` (created when missing, never overwritten), and kind
installs a class named ``standard``. Kubelab does the same when its API server starts: a class
``standard``, annotated ``storageclass.kubernetes.io/is-default-class: "true"`` (so the
DefaultStorageClass admission plugin gives it to claims that name no class), served by the simulated
provisioner of the controller manager (``kubelab.io/simulated``, see
``components/controllers/persistentvolume.py``). An existing ``standard`` class is left as it is; one a
student deleted comes back at the next start, as an EnsureExists addon does.

Like the system namespaces, this is the server's own write to storage: no request, no admission.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from controlplane.api.strategies.storage import default_storage_class
from controlplane.apiserver import errors
from controlplane.apiserver.requestscope import RequestScope

if TYPE_CHECKING:
    from controlplane.apiserver.registry import Registry

ADDON_SCOPE: Final = RequestScope.unadmitted(reason="the cluster's default StorageClass addon (EnsureExists)")


async def ensure_default_storage_class(registries: Mapping[tuple[str, str, str], Registry]) -> None:
    """Create the ``standard`` StorageClass unless it exists."""
    registry = registries.get(("storage.k8s.io", "v1", "storageclasses"))
    if registry is None:
        return
    with contextlib.suppress(errors.StatusError):  # already there
        await registry.create(default_storage_class(), "", scope=ADDON_SCOPE)


__all__ = ["ensure_default_storage_class"]
