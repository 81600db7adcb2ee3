"""Secret volumes: what a kubelet must read before it may start a pod's containers.

A pod that mounts a Secret (a ``secret`` volume, or a ``secret`` source of a ``projected`` volume)
cannot start until its kubelet has the Secret's data. The kubelet reads it from the API server with
**its own identity**, ``system:node:<node>``, not with the pod's ServiceAccount, and what allows the
read is the Node authorizer (``plugin/pkg/auth/authorizer/node/node_authorizer.go``): a node may read
a Secret only while a pod bound to it references that Secret. So a Secret reaches the nodes whose
pods use it, and no other.

Until every Secret can be read, the pod's containers wait (``ContainerCreating``), each failed
attempt is a ``FailedMount`` Warning worded as upstream's secret volume plugin words it
(``MountVolume.SetUp failed for volume "creds" : secret "db" not found``, ``pkg/volume/secret``),
and the kubelet tries again after its back-off (``backOffPeriod``, ``pkg/kubelet/kubelet.go``). A
volume marked ``optional: true`` whose Secret is missing mounts empty instead.

Upstream's secret manager (``pkg/kubelet/secret``) keeps a watch on each Secret its pods use; this
kubelet reads each one with a GET when the pod starts, as upstream's ``Get`` change-detection
strategy does. Simplification: the Secrets a pod names in ``env``, ``envFrom`` and
``imagePullSecrets`` are not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SecretVolume:
    """One Secret a pod's volume mounts: the volume's name, the Secret's, and whether it may be missing."""

    volume: str
    secret: str
    optional: bool


def secret_volumes(pod: Mapping[str, Any]) -> list[SecretVolume]:
    """The Secrets the pod's volumes mount, in the order the spec lists them."""
    spec = pod.get("spec")
    found: list[SecretVolume] = []
    for volume in (spec.get("volumes") or []) if isinstance(spec, Mapping) else []:
        if not isinstance(volume, Mapping):
            continue
        name = str(volume.get("name") or "")
        secret = volume.get("secret")
        if isinstance(secret, Mapping) and secret.get("secretName"):
            found.append(SecretVolume(name, str(secret["secretName"]), secret.get("optional") is True))
        projected = volume.get("projected")
        sources = projected.get("sources") if isinstance(projected, Mapping) else None
        for source in sources if isinstance(sources, list) else []:
            secret = source.get("secret") if isinstance(source, Mapping) else None
            if isinstance(secret, Mapping) and secret.get("name"):
                found.append(SecretVolume(name, str(secret["name"]), secret.get("optional") is True))
    return found
