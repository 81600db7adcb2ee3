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


FLOWSCHEMAS = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
LEVELS = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"
MERGE = {"Content-Type": "application/merge-patch+json"}


def flow_schema(
    name: str, level: str, precedence: int, user: str = "hot-loop", **labels: str
) -> dict[str, Any]:
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "priorityLevelConfiguration": {"name": level},
            "matchingPrecedence": precedence,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [
                {
                    "subjects": [{"kind": "User", "user": {"name": user}}],
                    "resourceRules": [
                        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}
                    ],
                }
            ],
        },
    }


def priority_level(name: str, kind: str = "Limited", **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = (
        {"type": "Exempt", "exempt": {}}
        if kind == "Exempt"
        else {
            "type": "Limited",
            "limited": {"nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}},
        }
    )
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }


async def alice_is_throttled(api: AdmissionAPI) -> None:
    """What a sandbox gives its student: a FlowSchema at precedence 1000 to a level of their own."""
    await alice_is_admin(api)
    guarded = {GUARDRAIL_LABEL: "true"}
    assert (await api.create(LEVELS, priority_level("student", **guarded))).status_code == 201
    created = await api.create(FLOWSCHEMAS, flow_schema("student", "student", 1000, user="alice", **guarded))
    assert created.status_code == 201
    await api.synced()


def refusal(answer: Any) -> str:
    assert answer.status_code == 403, answer.text
    message: str = answer.json()["message"]
    assert message.endswith("(SandboxGuardrails)"), message
    return message


async def test_the_student_configures_flow_control(admission_api: Factory) -> None:
    # A chapter has the student throttle a hot client: a level that rejects, and a FlowSchema to it.
    async with admission_api(options()) as api:
        await alice_is_throttled(api)
        alice = api.as_("alice")
        assert (await api.create(LEVELS, priority_level("hot-loop"), user="alice")).status_code == 201
        answer = await api.create(FLOWSCHEMAS, flow_schema("hot-loop", "hot-loop", 1500), user="alice")
        assert answer.status_code == 201, answer.text
        await api.synced()
        changed = await alice.patch(
            f"{LEVELS}/hot-loop",
            json={"spec": {"limited": {"nominalConcurrencyShares": 2}}},
            headers=MERGE,
        )
        assert changed.status_code == 200, changed.text
        # A suggested object's labels and annotations are hers too (its spec stays as it matches).
        marked = await alice.patch(
            f"{FLOWSCHEMAS}/kube-scheduler",
            json={"metadata": {"annotations": {"apf.kubernetes.io/autoupdate-spec": "false"}}},
            headers=MERGE,
        )
        assert marked.status_code == 200, marked.text
        assert (await alice.delete(f"{FLOWSCHEMAS}/hot-loop")).status_code == 200
        assert (await alice.delete(f"{LEVELS}/hot-loop")).status_code == 200


async def test_the_student_cannot_step_out_of_their_throttle(admission_api: Factory) -> None:
    async with admission_api(options()) as api:
        await alice_is_throttled(api)
        alice = api.as_("alice")
        # Nothing may be exempt: no FlowSchema to an Exempt level, no level of that type.
        to_exempt = await api.create(
            FLOWSCHEMAS, flow_schema("mine", "exempt", 2000, user="alice"), user="alice"
        )
        assert "cannot send requests to the Exempt priority level exempt" in refusal(to_exempt)
        # (Validation refuses a second Exempt level before admission sees it: only ``exempt`` may be one.)
        exempt = await api.create(LEVELS, priority_level("free", kind="Exempt"), user="alice")
        assert exempt.status_code == 422, exempt.text
        assert exempt.json()["message"].endswith("must be 'Exempt' if and only if `name` is 'exempt'")
        # Nothing may match before her own FlowSchema, by a new FlowSchema or by changing one.
        early = await api.create(
            FLOWSCHEMAS, flow_schema("early", "global-default", 999, user="alice"), user="alice"
        )
        assert "needs a matchingPrecedence greater than 1000" in refusal(early)
        tie = await api.create(
            FLOWSCHEMAS, flow_schema("a-tie", "global-default", 1000, user="alice"), user="alice"
        )
        assert "greater than 1000" in refusal(tie)  # ties go by name: "a-tie" would come first
        rewritten = await alice.patch(
            f"{FLOWSCHEMAS}/kube-scheduler",
            json={"spec": {"rules": flow_schema("x", "workload-high", 800, user="alice")["spec"]["rules"]}},
            headers=MERGE,
        )
        assert "greater than 1000" in refusal(rewritten)
        # The mandatory objects and the guardrails' own stay as they are.
        assert "mandatory flow-control object" in refusal(await alice.delete(f"{FLOWSCHEMAS}/catch-all"))
        # Validation already fixes their specs but for the exempt level's shares, which an administrator
        # may tune (upstream's ValidateIfMandatoryPriorityLevelConfigurationObject): not here.
        widened = await alice.patch(
            f"{LEVELS}/catch-all",
            json={"spec": {"limited": {"nominalConcurrencyShares": 100}}},
            headers=MERGE,
        )
        assert widened.status_code == 422, widened.text
        assert widened.json()["message"].endswith("spec of 'catch-all' must equal the fixed value")
        tuned = await alice.patch(
            f"{LEVELS}/exempt", json={"spec": {"exempt": {"nominalConcurrencyShares": 100}}}, headers=MERGE
        )
        assert refusal(tuned) == (
            'prioritylevelconfigurations.flowcontrol.apiserver.k8s.io "exempt" is forbidden: '
            "exempt is a mandatory flow-control object, which the API server keeps as it made it, "
            "and it cannot be changed here (SandboxGuardrails)"
        )
        assert "guardrails (label" in refusal(await alice.delete(f"{FLOWSCHEMAS}/student"))
        loosened = await alice.patch(
            f"{LEVELS}/student", json={"spec": {"limited": {"nominalConcurrencyShares": 100}}}, headers=MERGE
        )
        assert "guardrails (label" in refusal(loosened)
        # She can still read all of it; system:masters may still do anything.
        assert (await alice.get(f"{FLOWSCHEMAS}/global-default")).status_code == 200
        assert (await api.create(FLOWSCHEMAS, flow_schema("ops", "exempt", 2, user="ops"))).status_code == 201
