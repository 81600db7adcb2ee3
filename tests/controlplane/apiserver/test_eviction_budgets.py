"""``pods/<name>/eviction`` with PodDisruptionBudgets (``pkg/registry/core/pod/storage/eviction_test.go``).

The budgets' status is written here by hand, as the disruption controller would have written it; the
requests go over HTTP to the API server's ASGI application (the ``api`` fixture), as kubectl's would.
"""

from __future__ import annotations

from typing import Any

import httpx

from controlplane.api.meta import Object
from tests.controlplane.apiserver.conftest import API

PODS = "/api/v1/namespaces/default/pods"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
MERGE = {"Content-Type": "application/merge-patch+json"}
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


def eviction(name: str, **delete_options: Any) -> Object:
    body: Object = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    if delete_options:
        body["deleteOptions"] = delete_options
    return body


async def make_pod(api: API, name: str = "web", *, phase: str = "Running", ready: bool = True) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "nginx"}]},
    }
    assert (await api.client.post(PODS, json=pod)).status_code == 201
    status = {
        "phase": phase,
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    patched = await api.client.patch(f"{PODS}/{name}/status", json={"status": status}, headers=MERGE)
    assert patched.status_code == 200, patched.text


async def make_pdb(api: API, name: str = "web", *, spec: Object | None = None, **status: Any) -> Object:
    """A budget whose status says ``status`` (observedGeneration 1 unless given)."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": spec
        if spec is not None
        else {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
    }
    created = await api.client.post(PDBS, json=body)
    assert created.status_code == 201, created.text
    obj: Object = created.json()
    obj["status"] = {"observedGeneration": 1, **obj["status"], **status}
    written = await api.client.put(f"{PDBS}/{name}/status", json=obj)
    assert written.status_code == 200, written.text
    result: Object = written.json()
    return result


async def pdb_status(api: API, name: str = "web") -> Object:
    status: Object = (await api.client.get(f"{PDBS}/{name}")).json()["status"]
    return status


async def is_deleting(api: API, name: str = "web") -> bool:
    response = await api.client.get(f"{PODS}/{name}")
    return response.status_code == 404 or bool(response.json()["metadata"].get("deletionTimestamp"))


def assert_refused(response: httpx.Response, cause: str, retry_after: int = 0) -> None:
    assert response.status_code == 429, response.text
    details: Object = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": VIOLATION,
        "reason": "TooManyRequests",
        "details": details,
        "code": 429,
    }
    assert response.headers.get("retry-after") == (str(retry_after) if retry_after else None)


async def test_a_budget_without_disruptions_left_refuses_with_429(api: API) -> None:
    await make_pod(api)
    await make_pdb(api, currentHealthy=2, desiredHealthy=2, expectedPods=2, disruptionsAllowed=0)

    response = await api.client.post(f"{PODS}/web/eviction", json=eviction("web"))

    assert_refused(response, "The disruption budget web needs 2 healthy pods and has 2 currently")
    assert not await is_deleting(api)


async def test_an_allowed_eviction_spends_the_budget_before_deleting(api: API) -> None:
    await make_pod(api)
    await make_pdb(api, currentHealthy=3, desiredHealthy=2, expectedPods=3, disruptionsAllowed=1)

    response = await api.client.post(f"{PODS}/web/eviction", json=eviction("web"))

    assert response.status_code == 201, response.text
    assert response.json()["status"] == "Success"
    assert await is_deleting(api)
    pod = (await api.client.get(f"{PODS}/web")).json()
    [target] = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"], target["message"]) == (
        "True",
        "EvictionByEvictionAPI",
        "Eviction API: evicting",
    )
    status = await pdb_status(api)
    assert status["disruptionsAllowed"] == 0
    assert list(status["disruptedPods"]) == ["web"]
    [condition] = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionAllowed",
        "False",
        "InsufficientPods",
    )


async def test_a_dry_run_checks_the_budget_but_writes_nothing(api: API) -> None:
    await make_pod(api)
    await make_pdb(api, currentHealthy=3, desiredHealthy=2, expectedPods=3, disruptionsAllowed=1)

    response = await api.client.post(f"{PODS}/web/eviction?dryRun=All", json=eviction("web"))

    assert response.status_code == 201
    assert not await is_deleting(api)
    pod = (await api.client.get(f"{PODS}/web")).json()
    assert [c["type"] for c in pod["status"]["conditions"]] == ["Ready"]
    status = await pdb_status(api)
    assert status["disruptionsAllowed"] == 1
    assert "disruptedPods" not in status


async def test_a_budget_not_yet_computed_for_its_spec_says_try_again_in_10s(api: API) -> None:
    await make_pod(api)
    await make_pdb(api, observedGeneration=0, currentHealthy=3, desiredHealthy=0, disruptionsAllowed=3)

    response = await api.client.post(f"{PODS}/web/eviction", json=eviction("web"))

    assert_refused(response, "The disruption budget web is still being processed by the server.", 10)
    assert not await is_deleting(api)


async def test_two_budgets_for_one_pod_are_a_500(api: API) -> None:
    await make_pod(api)
    await make_pdb(api, "one", disruptionsAllowed=5)
    await make_pdb(api, "two", disruptionsAllowed=5)

    response = await api.client.post(f"{PODS}/web/eviction", json=eviction("web"))

    assert response.status_code == 500
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
        "support.",
        "code": 500,
    }
    assert not await is_deleting(api)


async def test_pending_and_finished_pods_go_whatever_the_budget(api: API) -> None:
    await make_pdb(api, disruptionsAllowed=0)
    await make_pod(api, "pending", phase="Pending", ready=False)
    await make_pod(api, "done", phase="Succeeded", ready=False)

    for name in ("pending", "done"):
        response = await api.client.post(f"{PODS}/{name}/eviction", json=eviction(name))
        assert response.status_code == 201, response.text
        assert await is_deleting(api, name)
    assert "disruptedPods" not in await pdb_status(api)


async def test_an_empty_selector_guards_every_pod_a_missing_one_none(api: API) -> None:
    await make_pod(api)
    await make_pdb(api, "all", spec={"minAvailable": 5, "selector": {}}, currentHealthy=1, desiredHealthy=5)
    refused = await api.client.post(f"{PODS}/web/eviction", json=eviction("web"))
    assert_refused(refused, "The disruption budget all needs 5 healthy pods and has 1 currently")

    assert (await api.client.delete(f"{PDBS}/all")).status_code == 200
    await make_pdb(api, "none", spec={"minAvailable": 5}, disruptionsAllowed=0)
    response = await api.client.post(f"{PODS}/web/eviction", json=eviction("web"))
    assert response.status_code == 201
    assert await is_deleting(api)


async def test_an_unready_pod_goes_without_spending_while_the_budget_is_met(api: API) -> None:
    await make_pod(api, "sick", ready=False)
    await make_pdb(api, currentHealthy=2, desiredHealthy=2, expectedPods=3, disruptionsAllowed=0)

    response = await api.client.post(f"{PODS}/sick/eviction", json=eviction("sick"))

    assert response.status_code == 201, response.text
    assert await is_deleting(api, "sick")
    assert (await pdb_status(api))["disruptionsAllowed"] == 0
    assert "disruptedPods" not in await pdb_status(api)


async def test_unhealthy_pod_eviction_policy(api: API) -> None:
    await make_pod(api, "sick", ready=False)
    # IfHealthyBudget (the default): below the desired healthy count even an unready pod is guarded.
    await make_pdb(api, currentHealthy=1, desiredHealthy=2, expectedPods=3, disruptionsAllowed=0)
    refused = await api.client.post(f"{PODS}/sick/eviction", json=eviction("sick"))
    assert_refused(refused, "The disruption budget web needs 2 healthy pods and has 1 currently")

    # AlwaysAllow: an unready pod may always go, and spends nothing.
    current = (await api.client.get(f"{PDBS}/web")).json()
    current["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    assert (await api.client.put(f"{PDBS}/web", json=current)).status_code == 200
    await api.client.patch(f"{PDBS}/web/status", json={"status": {"observedGeneration": 2}}, headers=MERGE)
    allowed = await api.client.post(f"{PODS}/sick/eviction", json=eviction("sick"))
    assert allowed.status_code == 201, allowed.text
    assert await is_deleting(api, "sick")
    assert "disruptedPods" not in await pdb_status(api)
