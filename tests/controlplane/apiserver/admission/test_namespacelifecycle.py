"""NamespaceLifecycle: no writes into missing namespaces, no creates into terminating ones, immortal ones."""

from __future__ import annotations

from controlplane.apiserver.admission.setup import AdmissionOptions
from tests.controlplane.apiserver.admission.conftest import Factory, namespace, pod

ONLY_LIFECYCLE = AdmissionOptions(plugins=("NamespaceLifecycle",))


async def test_a_create_in_a_missing_namespace_is_not_found(admission_api: Factory) -> None:
    async with admission_api(ONLY_LIFECYCLE) as api:
        answer = await api.create("/api/v1/namespaces/nowhere/configmaps", {"metadata": {"name": "c"}})
        assert answer.status_code == 404, answer.text
        assert answer.json()["message"] == 'namespaces "nowhere" not found'
        step = api.steps("NamespaceLifecycle")[-1]
        assert (step["phase"], step["outcome"]) == ("mutating", "deny")


async def test_a_create_in_a_terminating_namespace_is_forbidden_with_the_cause(
    admission_api: Factory,
) -> None:
    async with admission_api(ONLY_LIFECYCLE) as api:
        assert (await api.create("/api/v1/namespaces", namespace("going"))).status_code == 201
        # A finalizer keeps the namespace in Terminating after the delete.
        deleted = await api.admin.delete("/api/v1/namespaces/going")
        assert deleted.status_code in (200, 202), deleted.text
        await api.synced()
        answer = await api.create("/api/v1/namespaces/going/pods", pod())
        assert answer.status_code == 403, answer.text
        status = answer.json()
        assert status["message"] == (
            'pods "web" is forbidden: unable to create new content in namespace going '
            "because it is being terminated"
        )
        assert status["details"]["causes"] == [
            {
                "type": "NamespaceTerminating",
                "message": "namespace going is being terminated",
                "field": "metadata.namespace",
            }
        ]


async def test_default_kube_system_and_kube_public_may_not_be_deleted(admission_api: Factory) -> None:
    async with admission_api(ONLY_LIFECYCLE) as api:
        for name in ("default", "kube-system", "kube-public"):
            answer = await api.admin.delete(f"/api/v1/namespaces/{name}")
            assert answer.status_code == 403, answer.text
            assert (
                answer.json()["message"]
                == f'namespaces "{name}" is forbidden: this namespace may not be deleted'
            )
        assert (await api.admin.get("/api/v1/namespaces/default")).status_code == 200


async def test_writes_in_an_existing_namespace_pass_and_are_traced(admission_api: Factory) -> None:
    async with admission_api(ONLY_LIFECYCLE) as api:
        answer = await api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c"}})
        assert answer.status_code == 201, answer.text
        step = api.steps("NamespaceLifecycle")[-1]
        assert (step["phase"], step["outcome"], step["from"], step["to"]) == (
            "mutating",
            "pass",
            "apiserver",
            "apiserver",
        )
        stages = [e for e in api.trace.of_type("request.stage") if e["stage"] == "mutating-admission"]
        assert stages[-1]["detail"] == "NamespaceLifecycle"
