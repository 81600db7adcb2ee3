"""PodSecurity: levels from namespace labels, upstream's violation messages, warnings."""

from __future__ import annotations

from controlplane.apiserver.admission.podsecurity import BASELINE, RESTRICTED, describe, evaluate
from controlplane.apiserver.admission.setup import AdmissionOptions
from tests.controlplane.apiserver.admission.conftest import Factory, namespace

OPTIONS = AdmissionOptions(plugins=("NamespaceLifecycle", "PodSecurity"))
PRIVILEGED_SPEC = {
    "containers": [{"name": "c", "image": "busybox:1.36", "securityContext": {"privileged": True}}]
}
RESTRICTED_OK = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [
        {
            "name": "c",
            "image": "busybox:1.36",
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }
    ],
}
RESTRICTED_MESSAGE = (
    'violates PodSecurity "restricted:latest": privileged (container "c" must not set '
    'securityContext.privileged=true), allowPrivilegeEscalation != false (container "c" must set '
    'securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set '
    'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set '
    'securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set '
    'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
)


def test_baseline_refuses_privileged_and_host_namespaces() -> None:
    spec = {**PRIVILEGED_SPEC, "hostNetwork": True, "hostPID": True}
    assert describe(evaluate(BASELINE, spec)) == (
        "host namespaces (hostNetwork=true, hostPID=true), "
        'privileged (container "c" must not set securityContext.privileged=true)'
    )


def test_restricted_accepts_a_hardened_pod() -> None:
    assert evaluate(RESTRICTED, RESTRICTED_OK) == []
    assert evaluate(BASELINE, PRIVILEGED_SPEC) != []


def test_host_ports_and_volumes_are_pluralised_like_upstream() -> None:
    spec = {
        "containers": [
            {"name": "a", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80}]},
            {"name": "b", "image": "x", "ports": [{"containerPort": 443, "hostPort": 443}]},
        ],
        "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
    }
    assert describe(evaluate(BASELINE, spec)) == (
        'hostPath volumes (volume "root"), hostPort (containers "a", "b" use hostPorts 443, 80)'
    )


async def test_restricted_namespace_refuses_a_privileged_pod(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        labels = {"pod-security.kubernetes.io/enforce": "restricted"}
        assert (await api.create("/api/v1/namespaces", namespace("secure", **labels))).status_code == 201
        await api.synced()
        answer = await api.create(
            "/api/v1/namespaces/secure/pods", {"metadata": {"name": "p"}, "spec": PRIVILEGED_SPEC}
        )
        assert answer.status_code == 403, answer.text
        assert answer.json()["message"] == f'pods "p" is forbidden: {RESTRICTED_MESSAGE}'
        ok = await api.create(
            "/api/v1/namespaces/secure/pods", {"metadata": {"name": "q"}, "spec": RESTRICTED_OK}
        )
        assert ok.status_code == 201, ok.text


async def test_warn_mode_accepts_with_a_warning_header(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        labels = {"pod-security.kubernetes.io/warn": "baseline"}
        assert (await api.create("/api/v1/namespaces", namespace("lax", **labels))).status_code == 201
        await api.synced()
        answer = await api.create(
            "/api/v1/namespaces/lax/pods", {"metadata": {"name": "p"}, "spec": PRIVILEGED_SPEC}
        )
        assert answer.status_code == 201, answer.text
        assert answer.headers["warning"] == (
            '299 - "would violate PodSecurity \\"baseline:latest\\": privileged '
            '(container \\"c\\" must not set securityContext.privileged=true)"'
        )


async def test_a_deployment_in_an_enforcing_namespace_gets_warnings_only(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        labels = {"pod-security.kubernetes.io/enforce": "baseline"}
        assert (await api.create("/api/v1/namespaces", namespace("apps", **labels))).status_code == 201
        await api.synced()
        deployment = {
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": PRIVILEGED_SPEC},
            },
        }
        answer = await api.create("/apis/apps/v1/namespaces/apps/deployments", deployment)
        assert answer.status_code == 201, answer.text
        assert "would violate PodSecurity" in answer.headers["warning"]


async def test_an_unknown_level_label_is_invalid(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        answer = await api.create(
            "/api/v1/namespaces", namespace("typo", **{"pod-security.kubernetes.io/enforce": "strict"})
        )
        assert answer.status_code == 422, answer.text
        assert "pod-security.kubernetes.io/enforce" in answer.json()["message"]
