"""NodeRestriction: a kubelet may change its own Node and its own pods' status, nothing of others'."""

from __future__ import annotations

from typing import Any

from controlplane.apiserver.admission.setup import AdmissionOptions
from tests.controlplane.apiserver.admission.conftest import AdmissionAPI, Factory, pod

OPTIONS = AdmissionOptions(plugins=("NamespaceLifecycle", "NodeRestriction"))
MERGE = {"Content-Type": "application/merge-patch+json"}


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
    }


async def _bound_pods(api: AdmissionAPI) -> None:
    for name, where in (("on-1", "node-1"), ("on-2", "node-2")):
        created = await api.create("/api/v1/namespaces/default/pods", pod(name, nodeName=where))
        assert created.status_code == 201, created.text


async def test_a_kubelet_registers_and_patches_its_own_node_only(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        assert (await api.create("/api/v1/nodes", node("node-1"), user="node-1")).status_code == 201
        assert (await api.create("/api/v1/nodes", node("node-2"), user="node-2")).status_code == 201
        own = await api.as_("node-1").patch(
            "/api/v1/nodes/node-1/status", json={"status": {"phase": "Running"}}, headers=MERGE
        )
        assert own.status_code == 200, own.text
        other = await api.as_("node-1").patch(
            "/api/v1/nodes/node-2", json={"spec": {"unschedulable": True}}, headers=MERGE
        )
        assert other.status_code == 403, other.text
        assert (
            other.json()["message"]
            == 'nodes "node-2" is forbidden: node "node-1" is not allowed to modify node "node-2"'
        )
        assert (await api.admin.get("/api/v1/nodes/node-2")).json().get("spec", {}).get(
            "unschedulable"
        ) is None
        taint = await api.as_("node-1").patch(
            "/api/v1/nodes/node-1",
            json={"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}},
            headers=MERGE,
        )
        assert taint.status_code == 403
        assert taint.json()["message"].endswith('node "node-1" is not allowed to modify taints')


async def test_a_kubelet_may_not_register_with_a_role_label(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        body = node("node-1")
        body["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
        answer = await api.create("/api/v1/nodes", body, user="node-1")
        assert answer.status_code == 403
        assert answer.json()["message"] == (
            'nodes "node-1" is forbidden: node "node-1" is not allowed to set the following labels: '
            "node-role.kubernetes.io/control-plane"
        )


async def test_a_kubelet_updates_the_status_of_its_own_pods_only(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        await _bound_pods(api)
        status = {"status": {"phase": "Running"}}
        own = await api.as_("node-1").patch(
            "/api/v1/namespaces/default/pods/on-1/status", json=status, headers=MERGE
        )
        assert own.status_code == 200, own.text
        other = await api.as_("node-1").patch(
            "/api/v1/namespaces/default/pods/on-2/status", json=status, headers=MERGE
        )
        assert other.status_code == 403, other.text
        assert other.json()["message"] == (
            'pods "on-2" is forbidden: node "node-1" can only update pod status '
            "for pods with spec.nodeName set to itself"
        )
        relabel = await api.as_("node-1").patch(
            "/api/v1/namespaces/default/pods/on-1/status",
            json={"metadata": {"labels": {"x": "y"}}},
            headers=MERGE,
        )
        assert relabel.status_code == 403
        assert relabel.json()["message"].endswith('node "node-1" cannot update labels through pod status')


async def test_a_kubelet_deletes_its_own_pods_only_and_creates_no_ordinary_pods(
    admission_api: Factory,
) -> None:
    async with admission_api(OPTIONS) as api:
        await _bound_pods(api)
        other = await api.as_("node-1").delete("/api/v1/namespaces/default/pods/on-2")
        assert other.status_code == 403
        assert other.json()["message"] == (
            'pods "on-2" is forbidden: node "node-1" can only delete pods with spec.nodeName set to itself'
        )
        assert (await api.as_("node-1").delete("/api/v1/namespaces/default/pods/on-1")).status_code in (
            200,
            202,
        )
        created = await api.create(
            "/api/v1/namespaces/default/pods", pod("sneaky", nodeName="node-1"), user="node-1"
        )
        assert created.status_code == 403
        assert created.json()["message"] == (
            'pods "sneaky" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, '
            'node "node-1" can only create mirror pods'
        )
        edited = await api.as_("node-1").patch(
            "/api/v1/namespaces/default/pods/on-2", json={"metadata": {"labels": {"a": "b"}}}, headers=MERGE
        )
        assert edited.status_code == 403
        # The Node authorizer refuses first: system:node may create and delete pods, not patch them
        # (upstream's NodeRules); NodeRestriction is the second line (tested without RBAC elsewhere).
        assert 'cannot patch resource "pods"' in edited.json()["message"]
