"""SandboxGuardrails: what even a sandbox's cluster-admin may not do, each refusal saying why."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.apiserver.admission.sandboxguardrails import (
    GUARDRAIL_LABEL,
    GuardrailsConfig,
    object_limit_message,
)
from controlplane.apiserver.admission.setup import AdmissionOptions
from tests.controlplane.apiserver.admission.conftest import AdmissionAPI, Factory

RBAC = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def options(max_objects: int = 2000) -> AdmissionOptions:
    return AdmissionOptions(plugins=("NamespaceLifecycle",)).with_guardrails(GuardrailsConfig(max_objects))


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


async def alice_is_admin(api: AdmissionAPI) -> None:
    """What a sandbox gives its student: cluster-admin, through a binding the guardrails keep."""
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "owner", "labels": {GUARDRAIL_LABEL: "true"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}],
    }
    assert (await api.create(RBAC, binding)).status_code == 201
    await api.synced()


def held(api: AdmissionAPI) -> int:
    return sum(len(c.objects) for c in api.server.caches.values() if c.rtype.conversion is None)


async def test_creates_past_the_object_limit_are_refused_for_everyone_but_masters(
    admission_api: Factory,
) -> None:
    # The fixture's servers share one store: the first counts what a started server holds.
    async with admission_api(options(max_objects=10_000)) as probe:
        await alice_is_admin(probe)
        start = held(probe)
    async with admission_api(options(max_objects=start + 2)) as api:
        await api.synced()
        assert held(api) == start
        for name in ("one", "two"):
            assert (await api.create(CONFIGMAPS, configmap(name), user="alice")).status_code == 201
            await api.synced()
        refused = await api.create(CONFIGMAPS, configmap("three"), user="alice")
        assert refused.status_code == 403
        assert refused.json()["reason"] == "Forbidden"
        assert refused.json()["message"] == 'configmaps "three" is forbidden: ' + object_limit_message(
            held=start + 2, limit=start + 2
        )
        assert [s["outcome"] for s in api.steps("SandboxGuardrails")][-1] == "deny"
        # Updates and deletes are not creates: the student can always make room.
        assert (await api.as_("alice").delete(f"{CONFIGMAPS}/one")).status_code == 200
        await api.synced()
        assert (await api.create(CONFIGMAPS, configmap("three"), user="alice")).status_code == 201
        await api.synced()
        # system:masters (the lab itself, staff's admin kubeconfig) is not limited.
        assert (await api.create(CONFIGMAPS, configmap("four"))).status_code == 201


async def test_the_nodes_are_fixed(admission_api: Factory) -> None:
    async with admission_api(options()) as api:
        await alice_is_admin(api)
        assert (await api.create("/api/v1/nodes", node("node-1"), user="node-1")).status_code == 201
        other = await api.create("/api/v1/nodes", node("node-3"), user="node-2")
        assert other.status_code == 403  # a kubelet registers its own Node only
        extra = await api.create("/api/v1/nodes", node("extra"), user="alice")
        assert extra.status_code == 403
        assert "the nodes of a sandbox are fixed" in extra.json()["message"]
        await api.synced()
        deleted = await api.as_("alice").delete("/api/v1/nodes/node-1")
        assert deleted.status_code == 403
        assert deleted.json()["message"] == (
            'nodes "node-1" is forbidden: the nodes of a sandbox are fixed: a Node cannot be deleted '
            "(SandboxGuardrails)"
        )
        cordon = await api.as_("alice").patch(
            "/api/v1/nodes/node-1",
            json={"spec": {"unschedulable": True}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert cordon.status_code == 200  # cordoning and draining stay the student's


@pytest.mark.parametrize("verb", ["delete", "update"])
async def test_the_guardrails_own_objects_stay(admission_api: Factory, verb: str) -> None:
    async with admission_api(options()) as api:
        await alice_is_admin(api)
        if verb == "delete":
            answer = await api.as_("alice").delete(f"{RBAC}/owner")
        else:
            answer = await api.as_("alice").patch(
                f"{RBAC}/owner",
                json={"metadata": {"labels": {GUARDRAIL_LABEL: None}}},
                headers={"Content-Type": "application/merge-patch+json"},
            )
        assert answer.status_code == 403
        done = "deleted" if verb == "delete" else "changed"
        assert answer.json()["message"] == (
            f'clusterrolebindings.rbac.authorization.k8s.io "owner" is forbidden: it keeps this sandbox\'s '
            f"guardrails (label {GUARDRAIL_LABEL}) and cannot be {done} (SandboxGuardrails)"
        )
        # Her own objects are hers, labelled or not; and masters may still change the guardrails.
        assert (await api.create(CONFIGMAPS, configmap("mine"), user="alice")).status_code == 201
        assert (await api.admin.delete(f"{RBAC}/owner")).status_code == 200


async def test_without_guardrails_nothing_is_limited(admission_api: Factory) -> None:
    plain = AdmissionOptions(plugins=("NamespaceLifecycle", "SandboxGuardrails"))  # listed, not configured
    async with admission_api(plain) as api:
        await alice_is_admin(api)
        assert "SandboxGuardrails" not in api.server.admission.names
        assert (await api.create("/api/v1/nodes", node("extra"), user="alice")).status_code == 201


def test_a_limit_is_at_least_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        GuardrailsConfig(max_objects=0)


async def test_a_sandbox_admin_cannot_impersonate_system_masters(admission_api: Factory) -> None:
    # cluster-admin may impersonate anyone by RBAC; in a sandbox, system:masters would step around
    # every guardrail, so only its own members may act as it.
    async with admission_api(options()) as api:
        await alice_is_admin(api)
        headers = {"Impersonate-User": "mallory", "Impersonate-Group": "system:masters"}
        refused = await api.as_("alice").post(CONFIGMAPS, json=configmap("sneaky"), headers=headers)
        assert refused.status_code == 403
        assert "impersonating the group system:masters is not allowed" in refused.json()["message"]
        # Impersonating other users and groups is still RBAC's call, as upstream.
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        allowed = await api.as_("alice").post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json=review,
            headers={"Impersonate-User": "bob", "Impersonate-Group": "devs"},
        )
        assert allowed.status_code == 201, allowed.text
        assert allowed.json()["status"]["userInfo"]["username"] == "bob"


async def test_the_sandbox_flow_control_is_read_only(admission_api: Factory) -> None:
    async with admission_api(options()) as api:
        await alice_is_admin(api)
        schema = {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": "mine"},
            "spec": {
                "priorityLevelConfiguration": {"name": "exempt"},
                "matchingPrecedence": 1,
                "rules": [
                    {
                        "subjects": [{"kind": "User", "user": {"name": "alice"}}],
                        "resourceRules": [
                            {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}
                        ],
                    }
                ],
            },
        }
        path = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
        refused = await api.create(path, schema, user="alice")
        assert refused.status_code == 403
        assert "read-only here" in refused.json()["message"]
        assert (await api.as_("alice").delete(f"{path}/global-default")).status_code == 403
        assert (await api.as_("alice").get(f"{path}/global-default")).status_code == 200
