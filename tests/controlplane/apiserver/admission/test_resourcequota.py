"""ResourceQuota: the namespace's usage plus the request stays within ``hard``."""

from __future__ import annotations

from controlplane.api.quota import usage_of
from controlplane.apiserver.admission.resourcequota import check_quota
from controlplane.apiserver.admission.setup import AdmissionOptions
from tests.controlplane.apiserver.admission.conftest import Factory, pod

QUOTA = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": {"name": "team"},
    "spec": {"hard": {"pods": "1", "count/configmaps": "5"}},
}


def test_a_pod_counts_itself_and_its_requests() -> None:
    p = pod()
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "250m"}, "limits": {"cpu": "500m"}}
    usage = {k: str(v) for k, v in usage_of("", "pods", p).items()}
    assert usage == {
        "count/pods": "1",
        "pods": "1",
        "requests.cpu": "250m",
        "cpu": "250m",
        "limits.cpu": "500m",
    }


def test_the_message_lists_requested_used_and_limited() -> None:
    requested = usage_of("", "pods", pod())
    used = usage_of("", "pods", pod("other"))
    assert (
        check_quota(QUOTA, requested, used)
        == "exceeded quota: team, requested: pods=1, used: pods=1, limited: pods=1"
    )


async def test_a_create_over_quota_is_refused(admission_api: Factory) -> None:
    async with admission_api(AdmissionOptions(plugins=("ResourceQuota",))) as api:
        assert (await api.create("/api/v1/namespaces/default/resourcequotas", QUOTA)).status_code == 201
        await api.synced()
        assert (await api.create("/api/v1/namespaces/default/pods", pod("one"))).status_code == 201
        await api.synced()
        answer = await api.create("/api/v1/namespaces/default/pods", pod("two"))
        assert answer.status_code == 403, answer.text
        assert answer.json()["message"] == (
            'pods "two" is forbidden: exceeded quota: team, requested: pods=1, used: pods=1, limited: pods=1'
        )


async def test_a_cpu_quota_makes_containers_state_their_requests(admission_api: Factory) -> None:
    async with admission_api(AdmissionOptions(plugins=("ResourceQuota",))) as api:
        quota = {**QUOTA, "spec": {"hard": {"requests.cpu": "1"}}}
        assert (await api.create("/api/v1/namespaces/default/resourcequotas", quota)).status_code == 201
        await api.synced()
        answer = await api.create("/api/v1/namespaces/default/pods", pod())
        assert answer.status_code == 403
        assert (
            answer.json()["message"]
            == 'pods "web" is forbidden: failed quota: team: must specify requests.cpu for: app'
        )
