"""LimitRanger: defaults from LimitRanges (and the annotation saying so), then min and max."""

from __future__ import annotations

from typing import Any

from controlplane.apiserver.admission.limitranger import default_patch, violations
from controlplane.apiserver.admission.setup import AdmissionOptions
from tests.controlplane.apiserver.admission.conftest import Factory, pod

LIMITS: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "LimitRange",
    "metadata": {"name": "limits"},
    "spec": {
        "limits": [
            {
                "type": "Container",
                "default": {"cpu": "500m", "memory": "256Mi"},
                "defaultRequest": {"cpu": "100m"},
                "max": {"cpu": "1"},
                "min": {"cpu": "50m"},
            }
        ]
    },
}


def test_defaults_fill_only_what_the_container_left_out() -> None:
    patch = default_patch(pod(), [LIMITS])
    assert patch[0] == {
        "op": "add",
        "path": "/spec/containers/0/resources",
        "value": {
            "limits": {"cpu": "500m", "memory": "256Mi"},
            "requests": {"cpu": "100m", "memory": "256Mi"},
        },
    }
    assert patch[1]["value"] == {
        "kubernetes.io/limit-ranger": "LimitRanger plugin set: cpu, memory request for container app; "
        "cpu, memory limit for container app"
    }


def test_max_and_min_messages_are_upstreams() -> None:
    big = pod()
    big["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}, "requests": {"cpu": "10m"}}
    assert violations(big, [LIMITS]) == [
        "minimum cpu usage per Container is 50m, but request is 10m",
        "maximum cpu usage per Container is 1, but limit is 2",
    ]


async def test_the_stored_pod_carries_the_defaults_and_a_too_big_one_is_refused(
    admission_api: Factory,
) -> None:
    async with admission_api(AdmissionOptions(plugins=("LimitRanger",))) as api:
        assert (await api.create("/api/v1/namespaces/default/limitranges", LIMITS)).status_code == 201
        await api.synced()
        answer = await api.create("/api/v1/namespaces/default/pods", pod())
        assert answer.status_code == 201, answer.text
        assert answer.json()["spec"]["containers"][0]["resources"]["limits"] == {
            "cpu": "500m",
            "memory": "256Mi",
        }
        assert "kubernetes.io/limit-ranger" in answer.json()["metadata"]["annotations"]
        big = pod("big")
        big["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}}
        refused = await api.create("/api/v1/namespaces/default/pods", big)
        assert refused.status_code == 403
        assert refused.json()["message"] == (
            'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2'
        )
