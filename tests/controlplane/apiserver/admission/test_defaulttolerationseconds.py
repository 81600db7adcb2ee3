"""DefaultTolerationSeconds: 300 s tolerations of not-ready and unreachable, unless the pod has its own."""

from __future__ import annotations

from controlplane.apiserver.admission.defaulttolerationseconds import default_tolerations
from controlplane.apiserver.admission.setup import AdmissionOptions
from tests.controlplane.apiserver.admission.conftest import Factory, pod

EXPECTED = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]


def test_a_pod_without_tolerations_gets_both() -> None:
    assert default_tolerations(pod()) == [{"op": "add", "path": "/spec/tolerations", "value": EXPECTED}]


def test_a_pod_tolerating_everything_gets_none() -> None:
    assert default_tolerations(pod(tolerations=[{"operator": "Exists"}])) == []


def test_a_pod_with_its_own_not_ready_toleration_keeps_it_and_gets_unreachable() -> None:
    own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    assert default_tolerations(pod(tolerations=[own])) == [
        {"op": "add", "path": "/spec/tolerations/-", "value": EXPECTED[1]}
    ]


async def test_the_stored_pod_has_the_tolerations_and_the_trace_shows_the_patch(
    admission_api: Factory,
) -> None:
    async with admission_api(AdmissionOptions(plugins=("DefaultTolerationSeconds",))) as api:
        answer = await api.create("/api/v1/namespaces/default/pods", pod())
        assert answer.status_code == 201, answer.text
        stored = (await api.admin.get("/api/v1/namespaces/default/pods/web")).json()
        assert stored["spec"]["tolerations"] == EXPECTED
        step = api.steps("DefaultTolerationSeconds")[-1]
        assert step["patch"] == [{"op": "add", "path": "/spec/tolerations", "value": EXPECTED}]
