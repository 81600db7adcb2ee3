"""The endpoints controller: subsets and ports (pure), then Endpoints following pod readiness and the
Service's selector against an in-process API server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controlplane.api.meta import Object, format_time
from controlplane.client.manager import Manager
from controlplane.client.rest import PatchType, ResourceClient
from controlplane.components.controllers import endpoints
from controlplane.components.controllers.endpoints import compute_subsets, endpoints_up_to_date
from controlplane.components.controllers.endpointutil import (
    TriggerTimeTracker,
    find_port,
    should_pod_be_in_endpoints,
)
from tests.support.inprocess import in_process_cluster, wait_for

T0 = 1_790_000_000.0


def service(name: str = "web", selector: dict[str, str] | None = None, **spec: Any) -> Object:
    body: Object = {
        "metadata": {"name": name, "namespace": "default", "labels": {"tier": "front"}},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": "http"}], **spec},
    }
    if selector is not None:
        body["spec"]["selector"] = selector
    return body


def pod(
    name: str,
    ip: str | None,
    *,
    ready: bool = True,
    labels: dict[str, str] | None = None,
    port: int = 8080,
    node: str = "n1",
    **meta: Any,
) -> Object:
    status: Object = {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": format_time(T0)}
        ],
    }
    if ip:
        status["podIP"] = ip
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "labels": labels or {"app": "web"},
            **meta,
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "app", "image": "nginx", "ports": [{"name": "http", "containerPort": port}]}
            ],
        },
        "status": status,
    }


# -- pure ----------------------------------------------------------------------------------------


def test_find_port_by_number_and_by_container_port_name() -> None:
    p = pod("a", "10.0.0.1", port=8080)
    assert find_port(p, {"port": 80, "targetPort": 9090}) == 9090
    assert find_port(p, {"port": 80, "targetPort": "http"}) == 8080
    assert find_port(p, {"port": 80, "targetPort": "http", "protocol": "UDP"}) is None
    assert find_port(p, {"port": 80, "targetPort": "metrics"}) is None
    assert find_port(p, {"port": 80}) == 80


def test_which_pods_are_endpoints() -> None:
    assert should_pod_be_in_endpoints(pod("a", "10.0.0.1"), include_terminating=False)
    assert not should_pod_be_in_endpoints(pod("a", None), include_terminating=False)
    done = pod("a", "10.0.0.1")
    done["status"]["phase"] = "Succeeded"
    assert not should_pod_be_in_endpoints(done, include_terminating=True)
    leaving = pod("a", "10.0.0.1", deletionTimestamp=format_time(T0))
    assert not should_pod_be_in_endpoints(leaving, include_terminating=False)
    assert should_pod_be_in_endpoints(leaving, include_terminating=True)


def test_subsets_group_addresses_by_ports_and_readiness() -> None:
    svc = service(selector={"app": "web"})
    pods = [
        pod("b", "10.0.0.2", ready=False),
        pod("a", "10.0.0.1"),
        pod("c", "10.0.0.3", port=9090),  # another version, another port number
        pod("d", None),  # no IP yet
    ]
    subsets, ready, not_ready = compute_subsets(svc, pods)
    assert (ready, not_ready) == (2, 1)
    assert subsets == [
        {
            "addresses": [
                {
                    "ip": "10.0.0.1",
                    "nodeName": "n1",
                    "targetRef": {"kind": "Pod", "namespace": "default", "name": "a", "uid": "uid-a"},
                }
            ],
            "notReadyAddresses": [
                {
                    "ip": "10.0.0.2",
                    "nodeName": "n1",
                    "targetRef": {"kind": "Pod", "namespace": "default", "name": "b", "uid": "uid-b"},
                }
            ],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        },
        {
            "addresses": [
                {
                    "ip": "10.0.0.3",
                    "nodeName": "n1",
                    "targetRef": {"kind": "Pod", "namespace": "default", "name": "c", "uid": "uid-c"},
                }
            ],
            "ports": [{"name": "http", "port": 9090, "protocol": "TCP"}],
        },
    ]
    # publishNotReadyAddresses: everyone is an address.
    published, ready, not_ready = compute_subsets(
        service(selector={"app": "web"}, publishNotReadyAddresses=True), pods[:2]
    )
    assert (ready, not_ready) == (2, 0)
    assert [a["ip"] for a in published[0]["addresses"]] == ["10.0.0.1", "10.0.0.2"]


def test_an_endpoints_object_is_up_to_date_regardless_of_the_headless_label() -> None:
    svc = service(selector={"app": "web"})
    subsets, _, _ = compute_subsets(svc, [pod("a", "10.0.0.1")])
    current = {
        "metadata": {"labels": {"tier": "front", "service.kubernetes.io/headless": ""}},
        "subsets": subsets,
    }
    assert endpoints_up_to_date(current, svc, subsets)
    assert not endpoints_up_to_date(current, svc, [])
    assert not endpoints_up_to_date({**current, "metadata": {"labels": {}}}, svc, subsets)


def test_the_trigger_time_is_the_earliest_change_since_the_last_sync() -> None:
    tracker = TriggerTimeTracker()
    svc = service(selector={"app": "web"})
    svc["metadata"]["creationTimestamp"] = format_time(T0 - 100)
    a = pod("a", "10.0.0.1")
    assert tracker.compute(svc, [a]) == T0 - 100  # the Service's creation came first
    assert tracker.compute(svc, [a]) == 0.0  # nothing changed since
    b = pod("b", "10.0.0.2")
    b["status"]["conditions"][0]["lastTransitionTime"] = format_time(T0 + 7)
    assert tracker.compute(svc, [a, b]) == T0 + 7


# -- the controller ----------------------------------------------------------------------------


async def create_pod(pods: ResourceClient, body: Object) -> None:
    status = body.pop("status")
    body["metadata"].pop("uid", None)
    created = await pods.create(body)
    created["status"] = status
    await pods.update_status(created)


def addresses(ep: Object, field: str = "addresses") -> list[str]:
    return sorted(a["ip"] for s in ep.get("subsets") or [] for a in s.get(field) or [])


def named(items: list[Object], name: str) -> Object | None:
    return next((i for i in items if i["metadata"]["name"] == name), None)


async def test_endpoints_follow_pod_readiness_and_the_services_selector(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        services = cluster.resource("", "v1", "services", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        eps = cluster.resource("", "v1", "endpoints", "default")
        await create_pod(pods, pod("web-a", "10.244.1.5"))
        await create_pod(pods, pod("web-b", "10.244.2.7", ready=False, node="n2"))
        await create_pod(pods, pod("web-c", None))
        await create_pod(pods, pod("api-a", "10.244.1.9", labels={"app": "api"}, port=9000))
        await services.create(service("manual"))  # no selector: the user's Endpoints
        await services.create(service(selector={"app": "web"}))

        manager = Manager(cluster.client)
        endpoints.add_to_manager(manager)
        async with manager:

            def web_is(ready: list[str], not_ready: list[str]) -> Any:
                def check(items: list[Object]) -> bool:
                    ep = named(items, "web")
                    return (
                        ep is not None
                        and addresses(ep) == ready
                        and addresses(ep, "notReadyAddresses") == not_ready
                    )

                return check

            items = await wait_for(eps, web_is(["10.244.1.5"], ["10.244.2.7"]))
            web = named(items, "web")
            assert web is not None
            assert web["subsets"][0]["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
            a = next(x for x in web["subsets"][0]["addresses"] if x["ip"] == "10.244.1.5")
            assert a["nodeName"] == "n1"
            assert a["targetRef"]["kind"] == "Pod" and a["targetRef"]["name"] == "web-a"
            assert web["metadata"]["labels"] == {"tier": "front"}
            assert "endpoints.kubernetes.io/last-change-trigger-time" in web["metadata"]["annotations"]
            assert named(items, "manual") is None

            # web-b passes its readiness probe.
            b = await pods.get("web-b")
            b["status"]["conditions"][0]["status"] = "True"
            await pods.update_status(b)
            await wait_for(eps, web_is(["10.244.1.5", "10.244.2.7"], []))

            # The Service now selects the api pods, and targets their port by number.
            await services.patch(
                "web",
                {
                    "spec": {
                        "selector": {"app": "api"},
                        "ports": [{"name": "http", "port": 80, "targetPort": 9000}],
                    }
                },
                patch_type=PatchType.MERGE,
            )
            items = await wait_for(eps, web_is(["10.244.1.9"], []))
            web = named(items, "web")
            assert web is not None and web["subsets"][0]["ports"][0]["port"] == 9000

            # A pod that stops matching leaves; the Service deleted takes its Endpoints along.
            await pods.patch("api-a", {"metadata": {"labels": {"app": "other"}}}, patch_type=PatchType.MERGE)
            await wait_for(
                eps, lambda items: (ep := named(items, "web")) is not None and not ep.get("subsets")
            )
            await services.delete("web")
            await wait_for(eps, lambda items: named(items, "web") is None)
            assert named((await eps.list())["items"], "manual") is None
