"""ServiceAccount: the default account, its existence, the kube-api-access volume and mounts."""

from __future__ import annotations

from controlplane.apiserver.admission.serviceaccount import MOUNT_PATH, admit_pod, token_volume_source
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
