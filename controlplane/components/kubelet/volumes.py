"""Secret volumes and variables: what a kubelet must read before it may start a pod's containers.

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

A container whose ``env`` (``valueFrom.secretKeyRef``) or ``envFrom`` (``secretRef``) names a
Secret is created only once that Secret (and the key) can be read: until then it waits as
``CreateContainerConfigError`` with the reason as its message (``secret "db" not found``,
``couldn't find key password in Secret default/db``), and a ``Failed`` Warning ``Error: ...``
(``pkg/kubelet/kubelet_pods.go`` ``makeEnvironmentVariables``). ``optional: true`` skips a missing
one.

Upstream's secret manager (``pkg/kubelet/secret``) keeps a watch on each Secret its pods use; this
kubelet reads each one with a GET when it needs it, as upstream's ``Get`` change-detection strategy
does. Simplification: ConfigMaps (volumes, ``env``) and ``imagePullSecrets`` are not read.
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


@dataclass(frozen=True, slots=True)
class SecretEnv:
    """A Secret a container's environment takes: all of it (``envFrom``) or one ``key`` of it."""

    secret: str
    key: str | None
    optional: bool


def secret_env(pod: Mapping[str, Any]) -> dict[str, list[SecretEnv]]:
    """The Secrets each container's ``envFrom`` and ``env`` name, by container (init containers too)."""
    spec = pod.get("spec")
    found: dict[str, list[SecretEnv]] = {}
    for field in ("initContainers", "containers"):
        for container in (spec.get(field) or []) if isinstance(spec, Mapping) else []:
            if not isinstance(container, Mapping):
                continue
            refs: list[SecretEnv] = []
            for source in container.get("envFrom") or []:
                ref = source.get("secretRef") if isinstance(source, Mapping) else None
                if isinstance(ref, Mapping) and ref.get("name"):
                    refs.append(SecretEnv(str(ref["name"]), None, ref.get("optional") is True))
            for variable in container.get("env") or []:
                value_from = variable.get("valueFrom") if isinstance(variable, Mapping) else None
                ref = value_from.get("secretKeyRef") if isinstance(value_from, Mapping) else None
                if isinstance(ref, Mapping) and ref.get("name"):
                    refs.append(
                        SecretEnv(str(ref["name"]), str(ref.get("key") or ""), ref.get("optional") is True)
                    )
            if refs:
                found[str(container.get("name") or "")] = refs
    return found


def env_problem(
    refs: list[SecretEnv], namespace: str, secrets: Mapping[str, Mapping[str, Any] | None]
) -> str | None:
    """Why a container with ``refs`` cannot be created, given the Secrets read (None: not found);
    None when it can."""
    for ref in refs:
        secret = secrets.get(ref.secret)
        if secret is None:
            if ref.optional:
                continue
            return f'secret "{ref.secret}" not found'
        data = secret.get("data")
        if ref.key is not None and not (isinstance(data, Mapping) and ref.key in data):
            if ref.optional:
                continue
            return f"couldn't find key {ref.key} in Secret {namespace}/{ref.secret}"
    return None
