"""ServiceAccount: the default account, its existence, the kube-api-access volume and mounts, and
the Secrets an enforcing account lets its pods reference."""

from __future__ import annotations

from controlplane.api.meta import Object
from controlplane.apiserver.admission.serviceaccount import (
    ENFORCE_MOUNTABLE_SECRETS as ENFORCING_KEY,
)
from controlplane.apiserver.admission.serviceaccount import (
    MOUNT_PATH,
    admit_pod,
    enforces_mountable_secrets,
    secret_reference_problem,
    token_volume_source,
)
from tests.controlplane.apiserver.admission.conftest import Factory, pod, service_account


def test_the_patch_names_the_default_account_and_mounts_the_token_in_every_container() -> None:
    patch = admit_pod(pod(), {"metadata": {"name": "default"}}, "kube-api-access-abcde")
    assert patch == [
        {"op": "add", "path": "/spec/serviceAccountName", "value": "default"},
        {
            "op": "add",
            "path": "/spec/containers/0/volumeMounts",
            "value": [{"name": "kube-api-access-abcde", "readOnly": True, "mountPath": MOUNT_PATH}],
        },
        {
            "op": "add",
            "path": "/spec/volumes",
            "value": [{"name": "kube-api-access-abcde", "projected": token_volume_source()}],
        },
    ]


def test_automount_false_on_the_account_or_the_pod_mounts_nothing() -> None:
    assert admit_pod(pod(serviceAccountName="x"), {"automountServiceAccountToken": False}, "v") == []
    assert admit_pod(pod(serviceAccountName="x", automountServiceAccountToken=False), {}, "v") == []


async def test_a_pod_without_its_service_account_is_refused(admission_api: Factory) -> None:
    async with admission_api() as api:
        answer = await api.create("/api/v1/namespaces/default/pods", pod())
        assert answer.status_code == 403, answer.text
        assert answer.json()["message"] == (
            'pods "web" is forbidden: error looking up service account default/default: '
            'serviceaccounts "default" not found'
        )


async def test_a_stored_pod_runs_as_default_with_the_projected_token_volume(admission_api: Factory) -> None:
    async with admission_api() as api:
        assert (
            await api.create("/api/v1/namespaces/default/serviceaccounts", service_account())
        ).status_code == 201
        await api.synced()
        answer = await api.create("/api/v1/namespaces/default/pods", pod())
        assert answer.status_code == 201, answer.text
        spec = answer.json()["spec"]
        assert spec["serviceAccountName"] == "default"
        (volume,) = spec["volumes"]
        assert (
            volume["name"].startswith("kube-api-access-")
            and len(volume["name"]) == len("kube-api-access-") + 5
        )
        assert volume["projected"]["sources"][0] == {
            "serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}
        }
        assert spec["containers"][0]["volumeMounts"] == [
            {"name": volume["name"], "readOnly": True, "mountPath": MOUNT_PATH}
        ]


ENFORCING = {"kubernetes.io/enforce-mountable-secrets": "true"}


def _account(*secrets: str, pull: tuple[str, ...] = (), annotations: dict[str, str] | None = None) -> Object:
    return {
        "metadata": {"name": "app", "annotations": ENFORCING if annotations is None else annotations},
        "secrets": [{"name": s} for s in secrets],
        "imagePullSecrets": [{"name": p} for p in pull],
    }


def test_only_a_true_annotation_as_go_reads_it_enforces_the_list() -> None:
    for value in ("true", "True", "TRUE", "t", "1"):
        assert enforces_mountable_secrets(_account(annotations={**ENFORCING, ENFORCING_KEY: value}))
    for value in ("false", "yes", "on", "", " true"):
        assert not enforces_mountable_secrets(_account(annotations={ENFORCING_KEY: value}))
    assert not enforces_mountable_secrets(_account(annotations={}))


def test_each_kind_of_reference_is_refused_in_upstream_words() -> None:
    volume = pod(volumes=[{"name": "key", "secret": {"secretName": "api-key"}}])
    assert secret_reference_problem(_account("db"), volume) == (
        'volume with secret.secretName="api-key" is not allowed because service account app does not '
        "reference that secret"
    )
    env = pod(
        containers=[
            {
                "name": "app",
                "image": "nginx:1.27",
                "env": [{"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "api-key", "key": "k"}}}],
            }
        ]
    )
    assert secret_reference_problem(_account("db"), env) == (
        'container app with envVar KEY referencing secret.secretName="api-key" is not allowed because '
        "service account app does not reference that secret"
    )
    env_from = pod(
        initContainers=[{"name": "init", "image": "busybox", "envFrom": [{"secretRef": {"name": "x"}}]}]
    )
    assert secret_reference_problem(_account("db"), env_from) == (
        'init container init with envFrom referencing secret.secretName="x" is not allowed because '
        "service account app does not reference that secret"
    )
    pulls = pod(imagePullSecrets=[{"name": "registry"}])
    assert secret_reference_problem(_account("registry"), pulls) == (
        'imagePullSecrets[0].name="registry" is not allowed because service account app does not '
        "reference that imagePullSecret"
    )
    assert secret_reference_problem(_account("api-key", "x", pull=("registry",)), volume) is None
    # Projected volumes are not checked upstream either.
    projected = pod(volumes=[{"name": "p", "projected": {"sources": [{"secret": {"name": "api-key"}}]}}])
    assert secret_reference_problem(_account("db"), projected) is None


async def test_an_enforcing_account_limits_its_pods_and_its_annotation_is_warned_about(
    admission_api: Factory,
) -> None:
    async with admission_api() as api:
        account = service_account("app", metadata={"name": "app", "annotations": ENFORCING})
        account["secrets"] = [{"name": "db"}]
        created = await api.create("/api/v1/namespaces/default/serviceaccounts", account)
        assert created.status_code == 201, created.text
        assert created.headers["warning"] == (
            '299 - "metadata.annotations[kubernetes.io/enforce-mountable-secrets]: deprecated in v1.32+; '
            'prefer separate namespaces to isolate access to mounted secrets"'
        )
        await api.synced()
        mounts = [{"name": "key", "secret": {"secretName": "api-key"}}]
        refused = await api.create(
            "/api/v1/namespaces/default/pods", pod("peek", serviceAccountName="app", volumes=mounts)
        )
        assert refused.status_code == 403, refused.text
        assert refused.json()["message"] == (
            'pods "peek" is forbidden: volume with secret.secretName="api-key" is not allowed because '
            "service account app does not reference that secret"
        )
        listed = [{"name": "key", "secret": {"secretName": "db"}}]
        allowed = await api.create(
            "/api/v1/namespaces/default/pods", pod("db-reader", serviceAccountName="app", volumes=listed)
        )
        assert allowed.status_code == 201, allowed.text
        assert "warning" not in allowed.headers
        # An update of the account still carrying the annotation is warned about too; one without
        # it is not.
        stored = created.json()
        updated = await api.admin.put("/api/v1/namespaces/default/serviceaccounts/app", json=stored)
        assert updated.status_code == 200, updated.text
        assert "deprecated in v1.32+" in updated.headers["warning"]
        plain = updated.json()
        del plain["metadata"]["annotations"]
        quiet = await api.admin.put("/api/v1/namespaces/default/serviceaccounts/app", json=plain)
        assert quiet.status_code == 200, quiet.text
        assert "warning" not in quiet.headers
