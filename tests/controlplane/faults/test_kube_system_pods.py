"""kube-system as kubeadm leaves it, on a running cluster: the kube-proxy DaemonSet's pod on each node
(Ready only while that node's in-process kube-proxy runs), CoreDNS's two pods and the control plane's
four mirror pods; componentstatuses that follow the real scheduler.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from controlplane.api.meta import Object
from tests.controlplane.faults.conftest import NAME, Running
from tests.support.inprocess import wait_for


def ready(pod: Object) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def app(pod: Object) -> str:
    return str(pod["metadata"].get("labels", {}).get("k8s-app", ""))


def on(node: str) -> Any:
    return lambda pod: pod["spec"].get("nodeName") == node and app(pod) == "kube-proxy"


async def test_kube_system_runs_kube_proxy_on_every_node_and_two_coredns(running: Running) -> None:
    pods = running.admin.resource("", "v1", "pods", "kube-system")
    items = await wait_for(
        pods,
        lambda items: sum(ready(p) for p in items) == 10 and all(p["spec"].get("nodeName") for p in items),
    )
    # kube-proxy on every node, the control-plane node too (it tolerates every taint); the control
    # plane's static pods there, as mirror pods (labelled ``component``, not ``k8s-app``).
    assert Counter(app(p) for p in items) == {"kube-proxy": 4, "kube-dns": 2, "": 4}
    proxies = [p for p in items if app(p) == "kube-proxy"]
    assert sorted(p["spec"]["nodeName"] for p in proxies) == ["control-plane", "node-1", "node-2", "node-3"]
    assert all(p["metadata"]["name"].startswith("kube-proxy-") for p in proxies)
    # Host network: the pod's IP is its node's.
    assert all(p["status"]["podIP"] == p["status"]["hostIP"] for p in proxies)
    assert {p["spec"]["priorityClassName"] for p in items} == {
        "system-node-critical",
        "system-cluster-critical",
    }
    assert all(p["status"]["phase"] == "Running" for p in items)


async def test_a_stopped_kube_proxy_makes_its_pod_not_ready_until_it_runs_again(running: Running) -> None:
    pods = running.admin.resource("", "v1", "pods", "kube-system")
    await wait_for(pods, lambda items: sum(ready(p) for p in items if app(p) == "kube-proxy") == 4)

    await running.faults.apply(NAME, "stop-kube-proxy", {"node": "node-2"}, reason="test")

    items = await wait_for(pods, lambda items: any(on("node-2")(p) and not ready(p) for p in items))
    stopped = next(p for p in items if on("node-2")(p))
    condition = next(c for c in stopped["status"]["conditions"] if c["type"] == "Ready")
    assert condition["reason"] == "ContainersNotReady"
    assert condition["message"] == "containers with unready status: [kube-proxy]"
    assert stopped["status"]["phase"] == "Running", "the pod stays, only its readiness follows the process"
    others = [p for p in items if app(p) == "kube-proxy" and not on("node-2")(p)]
    assert len(others) == 3 and all(ready(p) for p in others), "the other nodes' kube-proxies run on"

    await running.faults.clear(NAME, "stop-kube-proxy", {"node": "node-2"}, reason="test")

    items = await wait_for(pods, lambda items: any(on("node-2")(p) and ready(p) for p in items))
    assert next(p for p in items if on("node-2")(p))["metadata"]["uid"] == stopped["metadata"]["uid"]


def healthy(status: Object) -> tuple[str, str, str]:
    [condition] = status["conditions"]
    return condition["status"], condition["message"], condition.get("error", "")


async def test_componentstatuses_follow_the_scheduler(running: Running) -> None:
    statuses = running.admin.resource("", "v1", "componentstatuses")
    items = (await statuses.list())["items"]
    assert {s["metadata"]["name"]: healthy(s) for s in items} == {
        "controller-manager": ("True", "ok", ""),
        "etcd-0": ("True", "ok", ""),
        "scheduler": ("True", "ok", ""),
    }

    await running.faults.apply(NAME, "stop-scheduler", {}, reason="test")

    assert healthy(await statuses.get("scheduler")) == (
        "False",
        'Get "https://127.0.0.1:10259/healthz": dial tcp 127.0.0.1:10259: connect: connection refused',
        "",
    )
    assert healthy(await statuses.get("controller-manager")) == ("True", "ok", "")

    await running.faults.clear(NAME, "stop-scheduler", {}, reason="test")

    assert healthy(await statuses.get("scheduler")) == ("True", "ok", "")
