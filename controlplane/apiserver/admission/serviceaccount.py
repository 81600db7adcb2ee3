"""ServiceAccount: every pod runs as a ServiceAccount, and gets its token to talk to the API server.

A process in a pod that calls the API server needs credentials. Kubernetes gives each pod the
identity of a **ServiceAccount** (``system:serviceaccount:<namespace>:<name>``): ``default`` unless
the pod names another in ``spec.serviceAccountName``. This plugin, on every pod create:

1. fills in ``serviceAccountName: default`` if the pod names none;
2. checks that the ServiceAccount exists (403 ``error looking up service account ...`` if not; for
   ``default``, which the serviceaccount controller creates in every new namespace, it retries for
   a moment first, as upstream does);
3. unless the pod or its ServiceAccount says ``automountServiceAccountToken: false``, adds a
   projected volume ``kube-api-access-<random>`` holding three files, and mounts it read-only at
   ``/var/run/secrets/kubernetes.io/serviceaccount`` in every container that has nothing there yet:

   - ``token``: a short-lived, pod-bound ServiceAccount token the kubelet requests (TokenRequest)
     and refreshes (``expirationSeconds: 3607``);
   - ``ca.crt``: the cluster CA, from the ``kube-root-ca.crt`` ConfigMap, to verify the API server;
   - ``namespace``: the pod's namespace, from the downward API.

   Client libraries (``rest.InClusterConfig``) read exactly these files. In Kubelab the kubelets
   simulate containers and do not write the files; the volume is there to be seen.
4. copies the ServiceAccount's ``imagePullSecrets`` to a pod that has none;
5. if the ServiceAccount carries the annotation ``kubernetes.io/enforce-mountable-secrets: "true"``,
   refuses (403) a pod that references a Secret the ServiceAccount's ``secrets`` list does not
   name (a ``secret`` volume, an ``env`` ``secretKeyRef`` or an ``envFrom`` ``secretRef`` of a
   container or init container), or an image pull secret its ``imagePullSecrets`` does not name.

Why step 5 exists: RBAC decides what a *user* may read through the API, but a pod's Secrets are
read by the kubelet of its node, with the node's own credentials (the Node authorizer lets it read
what its pods reference). So whoever may create pods in a namespace may mount, and so read, any
Secret there, whatever the pod's ServiceAccount may ``get``. The annotation closes that gap for the
pods of one ServiceAccount. Upstream deprecated it in 1.32 (it still works, and the API server
warns on every ServiceAccount that carries it, ``pkg/registry/core/serviceaccount/strategy.go``):
the list has to be kept in step with the Secrets by hand, where a namespace of its own keeps itself.

Mirror pods (static pods the kubelet mirrors into the API) may not reference ServiceAccounts,
Secrets or tokens at all: the kubelet, not the API server, owns them.

Upstream: ``plugin/pkg/admission/serviceaccount/admission.go``.
"""

from __future__ import annotations

import random
from typing import Any, Final

from controlplane.api.gotypes import go_parse_bool
from controlplane.api.meta import Object
from controlplane.api.strategies.serviceaccounts import ENFORCE_MOUNTABLE_SECRETS
from controlplane.apiserver.admission.attributes import CREATE, Attributes, PatchOp, forbidden, section
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope
from controlplane.clock import SYSTEM_CLOCK, Clock
from controlplane.uids import random_string

DEFAULT_SERVICE_ACCOUNT: Final = "default"
#: ``ServiceAccountVolumeName``: the prefix of the projected token volume's name.
VOLUME_PREFIX: Final = "kube-api-access-"
#: ``DefaultAPITokenMountPath``.
MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
#: ``serviceaccount.WarnOnlyBoundTokenExpirationSeconds``: one hour and 7 seconds.
TOKEN_EXPIRATION_SECONDS: Final = 3607
#: ``api.MirrorPodAnnotationKey``.
MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"
#: How many times a missing ``default`` ServiceAccount is looked up before the pod is refused.
DEFAULT_LOOKUP_ATTEMPTS: Final = 10


def token_volume_source() -> Object:
    """``TokenVolumeSource()``: the projected source of the ``kube-api-access-*`` volume."""
    return {
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {
                "downwardAPI": {
                    "items": [
                        {
                            "path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                        }
                    ]
                }
            },
        ],
        "defaultMode": 420,
    }


def random_volume_name() -> str:
    return VOLUME_PREFIX + random_string(5)


def is_mirror_pod(pod: Object) -> bool:
    annotations = section(pod, "metadata", "annotations")
    return isinstance(annotations, dict) and MIRROR_POD_ANNOTATION in annotations


def should_automount(service_account: Object, pod: Object) -> bool:
    """``shouldAutomount``: the pod's own setting wins, then the ServiceAccount's, else yes."""
    pod_says = section(pod, "spec", "automountServiceAccountToken")
    if isinstance(pod_says, bool):
        return pod_says
    account_says = service_account.get("automountServiceAccountToken")
    return account_says if isinstance(account_says, bool) else True


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def mount_token_patch(pod: Object, volume_name: str) -> list[PatchOp]:
    """``mountServiceAccountToken``: the volume and the mounts, as a patch (pure; name chosen by caller)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return []
    patch: list[PatchOp] = []
    volumes = _list(spec.get("volumes"))
    existing = next(
        (
            v["name"]
            for v in volumes
            if isinstance(v, dict) and isinstance(v.get("name"), str) and v["name"].startswith(VOLUME_PREFIX)
        ),
        None,
    )
    name = existing or volume_name
    mount = {"name": name, "readOnly": True, "mountPath": MOUNT_PATH}
    needs_volume = False
    for field in ("initContainers", "containers"):
        for i, container in enumerate(_list(spec.get(field))):
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts")
            if any(isinstance(m, dict) and m.get("mountPath") == MOUNT_PATH for m in _list(mounts)):
                continue
            needs_volume = True
            if isinstance(mounts, list):
                patch.append({"op": "add", "path": f"/spec/{field}/{i}/volumeMounts/-", "value": dict(mount)})
            else:
                patch.append({"op": "add", "path": f"/spec/{field}/{i}/volumeMounts", "value": [dict(mount)]})
    if needs_volume and existing is None:
        volume = {"name": name, "projected": token_volume_source()}
        if isinstance(spec.get("volumes"), list):
            patch.append({"op": "add", "path": "/spec/volumes/-", "value": volume})
        else:
            patch.append({"op": "add", "path": "/spec/volumes", "value": [volume]})
    return patch


def admit_pod(pod: Object, service_account: Object | None, volume_name: str) -> list[PatchOp]:
    """Steps 1, 3 and 4 of the module docstring for a found ServiceAccount (pure)."""
    patch: list[PatchOp] = []
    if not section(pod, "spec", "serviceAccountName"):
        patch.append({"op": "add", "path": "/spec/serviceAccountName", "value": DEFAULT_SERVICE_ACCOUNT})
    if service_account is None:
        return patch
    if should_automount(service_account, pod):
        patch += mount_token_patch(pod, volume_name)
    pull_secrets = [
        {"name": s["name"]}
        for s in _list(service_account.get("imagePullSecrets"))
        if isinstance(s, dict) and isinstance(s.get("name"), str)
    ]
    if pull_secrets and not _list(section(pod, "spec", "imagePullSecrets")):
        patch.append({"op": "add", "path": "/spec/imagePullSecrets", "value": pull_secrets})
    return patch


def enforces_mountable_secrets(service_account: Object) -> bool:
    """``enforceMountableSecrets``: the annotation is there and Go's ``ParseBool`` reads it true."""
    annotations = section(service_account, "metadata", "annotations")
    value = annotations.get(ENFORCE_MOUNTABLE_SECRETS) if isinstance(annotations, dict) else None
    return isinstance(value, str) and go_parse_bool(value) is True


def _names(references: Any) -> set[str]:
    return {str(r["name"]) for r in _list(references) if isinstance(r, dict) and r.get("name")}


def secret_reference_problem(service_account: Object, pod: Object) -> str | None:
    """``limitSecretReferences``: the first Secret ``pod`` references that ``service_account`` does
    not list, in upstream's words; None if it lists them all (pure).

    Upstream checks ``secret`` volumes (not projected ones), then each init container's and each
    container's ``env`` and ``envFrom``, then the image pull secrets, and says the first it finds
    (plugin/pkg/admission/serviceaccount/admission.go).
    """
    account = str(section(service_account, "metadata", "name") or "")
    mountable = _names(service_account.get("secrets"))
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    not_listed = f"is not allowed because service account {account} does not reference that secret"
    for volume in _list(spec.get("volumes")):
        secret = section(volume, "secret")
        if not isinstance(secret, dict):
            continue
        name = str(secret.get("secretName") or "")
        if name not in mountable:
            return f'volume with secret.secretName="{name}" {not_listed}'
    for field, what in (("initContainers", "init container"), ("containers", "container")):
        for container in _list(spec.get(field)):
            if not isinstance(container, dict):
                continue
            for env in _list(container.get("env")):
                name = section(env, "valueFrom", "secretKeyRef", "name")
                if isinstance(section(env, "valueFrom", "secretKeyRef"), dict) and name not in mountable:
                    variable = section(env, "name") or ""
                    return (
                        f"{what} {container.get('name') or ''} with envVar {variable} referencing "
                        f'secret.secretName="{name or ""}" {not_listed}'
                    )
            for env_from in _list(container.get("envFrom")):
                name = section(env_from, "secretRef", "name")
                if isinstance(section(env_from, "secretRef"), dict) and name not in mountable:
                    return (
                        f"{what} {container.get('name') or ''} with envFrom referencing "
                        f'secret.secretName="{name or ""}" {not_listed}'
                    )
    pull_secrets = _names(service_account.get("imagePullSecrets"))
    for index, reference in enumerate(_list(spec.get("imagePullSecrets"))):
        name = section(reference, "name")
        if name not in pull_secrets:
            return (
                f'imagePullSecrets[{index}].name="{name or ""}" is not allowed because service account '
                f"{account} does not reference that imagePullSecret"
            )
    return None


def mirror_pod_problem(pod: Object) -> str | None:
    """What a mirror pod references that it may not, in upstream's words; None if nothing."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    if spec.get("serviceAccountName"):
        return "a mirror pod may not reference service accounts"
    if secret_names(pod):
        return "a mirror pod may not reference secrets"
    for volume in _list(spec.get("volumes")):
        for source in _list(section(volume, "projected", "sources")):
            if isinstance(source, dict) and source.get("serviceAccountToken") is not None:
                return "a mirror pod may not use ServiceAccountToken volume projections"
    return None


def secret_names(pod: Object) -> list[str]:
    """``podutil.VisitPodSecretNames`` for the common sources: volumes, env, envFrom, pull secrets."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    names: list[str] = []
    for ref in _list(spec.get("imagePullSecrets")):
        names.append(str(section(ref, "name") or ""))
    for volume in _list(spec.get("volumes")):
        names.append(str(section(volume, "secret", "secretName") or ""))
        for source in _list(section(volume, "projected", "sources")):
            names.append(str(section(source, "secret", "name") or ""))
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in _list(spec.get(field)):
            for env_from in _list(section(container, "envFrom")):
                names.append(str(section(env_from, "secretRef", "name") or ""))
            for env in _list(section(container, "env")):
                names.append(str(section(env, "valueFrom", "secretKeyRef", "name") or ""))
    return list(dict.fromkeys(n for n in names if n))


class ServiceAccount(Plugin):
    name = "ServiceAccount"
    mutating = True
    validating = True

    def __init__(
        self,
        *,
        retry_interval: float | None = None,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        #: Upstream waits 100-200 ms between lookups of a missing ``default`` ServiceAccount: a
        #: fixed interval if given, else drawn from ``rng``, and waited on the cluster ``clock``.
        self.retry_interval = retry_interval
        self.clock = clock
        self.rng = rng if rng is not None else random.Random()

    def handles(self, a: Attributes) -> bool:
        return a.is_pod() and not a.subresource and a.operation == CREATE and isinstance(a.object, dict)

    async def _service_account(self, a: Attributes, cluster: ClusterView, name: str) -> Object:
        attempts = DEFAULT_LOOKUP_ATTEMPTS if name == DEFAULT_SERVICE_ACCOUNT else 1
        interval = self.retry_interval if self.retry_interval is not None else self.rng.uniform(0.1, 0.2)
        for attempt in range(attempts):
            if attempt:
                await self.clock.sleep(interval)
            found = await cluster.get("", "serviceaccounts", a.namespace, name)
            if found is not None:
                return found
        raise forbidden(
            a, f'error looking up service account {a.namespace}/{name}: serviceaccounts "{name}" not found'
        )

    async def admit(self, a: Attributes, cluster: ClusterView, scope: Scope) -> list[PatchOp]:
        pod = a.object
        assert pod is not None
        if is_mirror_pod(pod):
            return []  # checked in validate
        name = section(pod, "spec", "serviceAccountName") or DEFAULT_SERVICE_ACCOUNT
        if not isinstance(name, str):
            return []  # the pod's validation reports the wrong type
        service_account = await self._service_account(a, cluster, name)
        return admit_pod(pod, service_account, random_volume_name())

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        pod = a.object
        assert pod is not None
        if is_mirror_pod(pod):
            problem = mirror_pod_problem(pod)
            if problem:
                raise forbidden(a, problem)
            return
        name = section(pod, "spec", "serviceAccountName")
        if not name:
            raise forbidden(a, f"no service account specified for pod {a.namespace}/{a.object_name()}")
        if not isinstance(name, str):
            return
        service_account = await cluster.get("", "serviceaccounts", a.namespace, name)
        if service_account is None:
            raise forbidden(
                a,
                f'error looking up service account {a.namespace}/{name}: serviceaccounts "{name}" not found',
            )
        if enforces_mountable_secrets(service_account):
            problem = secret_reference_problem(service_account, pod)
            if problem:
                raise forbidden(a, problem)


__all__ = [
    "ENFORCE_MOUNTABLE_SECRETS",
    "MOUNT_PATH",
    "VOLUME_PREFIX",
    "ServiceAccount",
    "admit_pod",
    "enforces_mountable_secrets",
    "mount_token_patch",
    "secret_names",
    "secret_reference_problem",
    "token_volume_source",
]
