"""The kubelet against a real API server (in process): its Node, its Lease, its pods' lives.

The kubelet runs on a ``ManualClock``: Lease renewals, back-offs and grace periods happen when the test
moves the clock. Waiting is done on the API itself (``wait_for``: list, and watch until something
changes), never by sleeping.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
from typing import Any

from controlplane.api.meta import Object
from controlplane.client.informer import ResourceEventHandlerFuncs
from controlplane.client.rest import ResourceClient
from controlplane.clock import ManualClock
from controlplane.components.kubelet.kubelet import (
    Kubelet,
    PodIPAllocator,
    node_conditions,
    node_status_changed,
)
from controlplane.timing import UPSTREAM
from controlplane.trace import ListSink
from tests.controlplane.components.kubelet.conftest import NODE, StartKubelet
from tests.support.inprocess import CLUSTER, InProcessCluster, condition, wait_for


def pods(cluster: InProcessCluster) -> ResourceClient:
    return cluster.resource("", "v1", "pods", "default")


def pod(name: str, *, image: str = "nginx", **spec: Any) -> Object:
    container: Object = {"name": "app", "image": image}
    for key in ("command", "args", "env"):
        if key in spec:
            container[key] = spec.pop(key)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": NODE, "containers": [container], **spec},
    }


def container_state(p: Object) -> Object:
    statuses = p.get("status", {}).get("containerStatuses") or [{}]
    state: Object = statuses[0].get("state") or {}
    return state


def both_running_and_ready(items: list[Object]) -> bool:
    return len(items) == 2 and all(running_and_ready([item]) for item in items)


def running_and_ready(items: list[Object]) -> bool:
    ready = condition(items[0], "Ready") if items else None
    return (
        bool(items)
        and items[0]["status"].get("phase") == "Running"
        and ready is not None
        and (ready["status"] == "True")
    )


# -- pure helpers -----------------------------------------------------------------------------------


def test_pod_ips_come_from_the_cidr_lowest_free_first_and_are_reused_after_release() -> None:
    ips = PodIPAllocator("10.244.1.0/24")
    assert ips.allocate("a") == "10.244.1.2"  # .1 is the gateway
    assert ips.allocate("b") == "10.244.1.3"
    assert ips.allocate("a") == "10.244.1.2"  # the same pod keeps its address
    ips.release("a")
    assert ips.allocate("c") == "10.244.1.2"
    assert ips.allocate("d", preferred="10.244.1.77") == "10.244.1.77"
    assert ips.allocate("e", preferred="192.168.0.9") == "10.244.1.4"  # not in the CIDR


def test_node_conditions_keep_their_transition_time_and_the_heartbeat_is_not_a_change() -> None:
    first = node_conditions([], 1000.0)
    later = node_conditions(first, 1010.0)
    assert [c["lastTransitionTime"] for c in later] == [c["lastTransitionTime"] for c in first]
    assert [c["lastHeartbeatTime"] for c in later] != [c["lastHeartbeatTime"] for c in first]
    assert not node_status_changed({"conditions": first}, {"conditions": later})
    assert node_status_changed({"conditions": first, "capacity": {"cpu": "4"}}, {"conditions": later})


# -- the Node and its Lease -------------------------------------------------------------------------


async def test_the_kubelet_registers_its_node_ready_with_upstream_conditions(
    cluster: InProcessCluster, start_kubelet: StartKubelet, trace: ListSink
) -> None:
    await start_kubelet()

    node = await cluster.resource("", "v1", "nodes").get(NODE)
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == NODE
    assert labels["kubernetes.io/os"] == "linux" and labels["kubernetes.io/arch"] == "amd64"
    status = node["status"]
    by_type = {c["type"]: c for c in status["conditions"]}
    assert by_type["Ready"]["status"] == "True"
    assert by_type["Ready"]["reason"] == "KubeletReady"
    assert by_type["Ready"]["message"] == "kubelet is posting ready status"
    assert by_type["MemoryPressure"]["status"] == "False"
    assert by_type["MemoryPressure"]["reason"] == "KubeletHasSufficientMemory"
    assert by_type["DiskPressure"]["reason"] == "KubeletHasNoDiskPressure"
    assert by_type["PIDPressure"]["message"] == "kubelet has sufficient PID available"
    assert status["capacity"]["cpu"] == "4" and status["allocatable"]["pods"] == "110"
    assert {"type": "InternalIP", "address": "10.0.0.11"} in status["addresses"]
    assert {"type": "Hostname", "address": NODE} in status["addresses"]
    assert status["nodeInfo"]["kubeletVersion"] == "v1.37.0"
    assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] == 10250
    assert node["spec"]["podCIDR"] == "10.244.1.0/24"

    lease = await cluster.resource("coordination.k8s.io", "v1", "leases", "kube-node-lease").get(NODE)
    assert lease["spec"]["holderIdentity"] == NODE
    assert lease["spec"]["leaseDurationSeconds"] == 40
    (owner,) = lease["metadata"]["ownerReferences"]
    assert owner == {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": node["metadata"]["uid"]}

    (state,) = trace.of_type("component.state")
    assert state["from"] == f"kubelet:{NODE}" and state["state"] == "running"
    assert state["cluster"] == CLUSTER


async def test_the_lease_is_renewed_every_ten_seconds_of_cluster_time(
    cluster: InProcessCluster, start_kubelet: StartKubelet, clock: ManualClock
) -> None:
    await start_kubelet()
    leases = cluster.resource("coordination.k8s.io", "v1", "leases", "kube-node-lease")
    first = (await leases.get(NODE))["spec"]["renewTime"]

    await clock.advance(10)
    (renewed,) = await wait_for(leases, lambda items: items[0]["spec"]["renewTime"] != first)

    assert renewed["spec"]["renewTime"].startswith("2023-11-14T22:13:30")  # ManualClock start + 10 s
    assert renewed["spec"]["holderIdentity"] == NODE


async def test_node_status_is_patched_only_when_changed_or_after_the_report_frequency(
    cluster: InProcessCluster, start_kubelet: StartKubelet, clock: ManualClock
) -> None:
    await start_kubelet(timing=dataclasses.replace(UPSTREAM, node_status_report_frequency=60.0))
    nodes = cluster.resource("", "v1", "nodes")
    first = await nodes.get(NODE)
    leases = cluster.resource("coordination.k8s.io", "v1", "leases", "kube-node-lease")

    await clock.advance(10)  # a status update tick with nothing new: no write (the lease is renewed)
    await wait_for(leases, lambda items: items[0]["spec"]["renewTime"].startswith("2023-11-14T22:13:30"))
    assert (await nodes.get(NODE))["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]

    for _ in range(5):  # 60 s later the status is reported anyway, with a new heartbeat
        await clock.advance(10)
    (reported,) = await wait_for(
        nodes, lambda items: items[0]["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    )
    ready = next(c for c in reported["status"]["conditions"] if c["type"] == "Ready")
    assert ready["lastHeartbeatTime"] == "2023-11-14T22:14:20Z"
    assert ready["lastTransitionTime"] == "2023-11-14T22:13:20Z"


async def test_a_ready_condition_someone_else_changed_is_set_right_at_the_next_status_update(
    cluster: InProcessCluster, start_kubelet: StartKubelet, clock: ManualClock
) -> None:
    # What the node lifecycle controller does when it stops hearing from the kubelet: Ready Unknown.
    kubelet = await start_kubelet(timing=dataclasses.replace(UPSTREAM, node_status_report_frequency=300.0))
    nodes = cluster.resource("", "v1", "nodes")
    node = await nodes.get(NODE)
    unknown = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}
    node["status"]["conditions"] = [
        {**c, **unknown} if c["type"] == "Ready" else c for c in node["status"]["conditions"]
    ]
    marked = await nodes.update_status(node)
    seen = marked["metadata"]["resourceVersion"]
    delivered = asyncio.Event()  # the kubelet's watch of its Node delivers the change

    def arrived(obj: Object) -> None:
        if obj["metadata"]["resourceVersion"] == seen:
            delivered.set()

    assert kubelet.node_informer is not None
    kubelet.node_informer.add_event_handler(
        ResourceEventHandlerFuncs(arrived, lambda _old, new: arrived(new))
    )
    await asyncio.wait_for(delivered.wait(), 10)

    await clock.advance(10)  # one nodeStatusUpdateFrequency, far less than the report frequency

    (fixed,) = await wait_for(
        nodes, lambda items: (condition(items[0], "Ready") or {}).get("status") == "True"
    )
    ready = condition(fixed, "Ready")
    assert ready is not None and ready["reason"] == "KubeletReady"
    assert ready["lastTransitionTime"] == "2023-11-14T22:13:30Z", "the transition is the kubelet's, now"


# -- pods -------------------------------------------------------------------------------------------


async def test_a_pod_bound_to_the_node_runs_ready_with_an_ip_and_events(
    cluster: InProcessCluster, start_kubelet: StartKubelet
) -> None:
    kubelet = await start_kubelet()
    await pods(cluster).create(pod("web"))

    (web,) = await wait_for(pods(cluster), running_and_ready)

    status = web["status"]
    assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network("10.244.1.0/24")
    assert status["podIPs"] == [{"ip": status["podIP"]}]
    assert status["hostIP"] == "10.0.0.11"
    assert status["startTime"] == "2023-11-14T22:13:20Z"
    assert "running" in container_state(web)
    assert status["containerStatuses"][0]["containerID"].startswith("containerd://")

    await kubelet.flush_events()
    events = (await cluster.resource("", "v1", "events", "default").list())["items"]
    reasons = [e["reason"] for e in events if e["involvedObject"]["name"] == "web"]
    assert reasons == ["Pulling", "Pulled", "Created", "Started"]
    started = next(e for e in events if e["reason"] == "Started")
    assert started["source"] == {"component": "kubelet", "host": NODE}
    assert started["message"] == "Started container app"


async def test_each_pod_sync_that_writes_is_traced_as_a_kubelet_reconcile(
    cluster: InProcessCluster, start_kubelet: StartKubelet, trace: ListSink
) -> None:
    await start_kubelet()
    created = await pods(cluster).create(pod("web"))
    (web,) = await wait_for(pods(cluster), running_and_ready)

    syncs = trace.of_type("reconcile")
    assert syncs, "the status patches show as the kubelet's reconciles"
    assert all(e["from"] == f"kubelet:{NODE}" and e["controller"] == "kubelet" for e in syncs)
    assert all(e["key"] == "default/web" and e["result"] == "success" for e in syncs)
    # the first sync is caused by the create the kubelet's watch delivered; each names its request
    assert syncs[0]["revision"] == int(created["metadata"]["resourceVersion"])
    assert all(len(e["requests"]) == 1 for e in syncs)
    assert len({e["requests"][0] for e in syncs}) == len(syncs)
    assert [e["revision"] for e in syncs] == sorted(e["revision"] for e in syncs)
    assert syncs[-1]["revision"] < int(web["metadata"]["resourceVersion"])  # the last patch wrote web's


async def caught_up(cluster: InProcessCluster, kubelet: Kubelet) -> None:
    """Wait until the kubelet has seen and synced every pod at its stored version.

    Its own last status writes come back to it through its watch, each as a change of that pod to
    sync; a test that looks at which pods a later change syncs must let those pass first.
    """
    informer = kubelet._pod_informer
    assert informer is not None
    async with asyncio.timeout(10):
        while True:
            passed = kubelet.next_change()  # taken before looking, so no pass is missed
            stored = {
                p["metadata"]["uid"]: p["metadata"]["resourceVersion"]
                for p in (await pods(cluster).list())["items"]
            }
            seen = {p["metadata"]["uid"]: p["metadata"]["resourceVersion"] for p in informer.indexer.list()}
            if seen == stored and not kubelet._changed_pods:
                return
            await passed.wait()


async def test_a_changed_pod_is_synced_and_its_quiet_neighbours_are_not(
    cluster: InProcessCluster, start_kubelet: StartKubelet, clock: ManualClock
) -> None:
    """The sync loop hands work to one pod at a time (upstream's pod workers): a pod that changed is
    synced, the quiet ones on the node are left alone until their timers or the full sync."""
    kubelet = await start_kubelet()
    web = await pods(cluster).create(pod("web"))
    db = await pods(cluster).create(pod("db"))
    await wait_for(pods(cluster), both_running_and_ready)
    await caught_up(cluster, kubelet)
    synced: list[str] = []
    arrived = asyncio.Event()
    sync_pod = kubelet._sync_pod

    async def recording(uid: str, obj: Object, now: float, *, full: bool) -> None:
        synced.append(obj["metadata"]["name"])
        await sync_pod(uid, obj, now, full=full)
        arrived.set()

    kubelet._sync_pod = recording  # type: ignore[method-assign,assignment]
    await pods(cluster).patch("db", {"metadata": {"labels": {"tier": "data"}}})
    async with asyncio.timeout(10):
        while "db" not in synced:
            arrived.clear()
            await arrived.wait()
    assert synced == ["db"], f"only the changed pod is synced, not {synced}"
    assert {web["metadata"]["uid"], db["metadata"]["uid"]} <= kubelet.workers.keys()

    synced.clear()
    await kubelet.sync_pods(clock.now(), full=True)
    assert sorted(synced) == ["db", "web"], "a full sync takes every pod"


async def test_a_crashing_container_ends_in_crash_loop_back_off_and_restarts_after_it(
    cluster: InProcessCluster, start_kubelet: StartKubelet, clock: ManualClock
) -> None:
    kubelet = await start_kubelet()
    await pods(cluster).create(pod("crash", image="busybox"))  # `sh` without a terminal exits 0

    def backing_off(items: list[Object]) -> bool:
        return (
            bool(items) and container_state(items[0]).get("waiting", {}).get("reason") == "CrashLoopBackOff"
        )

    (crash,) = await wait_for(pods(cluster), backing_off)
    assert crash["status"]["containerStatuses"][0]["restartCount"] == 1
    assert crash["status"]["containerStatuses"][0]["lastState"]["terminated"]["reason"] == "Completed"
    assert crash["status"]["phase"] == "Running"

    await clock.advance(10)  # the back-off (10 s) is over: started again, crashed again, 20 s now
    (crash,) = await wait_for(
        pods(cluster), lambda items: items[0]["status"]["containerStatuses"][0]["restartCount"] == 2
    )
    assert "back-off 20s" in container_state(crash)["waiting"]["message"]
    await kubelet.flush_events()
    events = (await cluster.resource("", "v1", "events", "default").list())["items"]
    backoff = next(e for e in events if e["reason"] == "BackOff")
    assert backoff["type"] == "Warning"
    assert backoff["message"].startswith("Back-off restarting failed container app in pod crash_default(")


async def test_a_deleted_pod_is_stopped_within_its_grace_period_then_removed(
    cluster: InProcessCluster, start_kubelet: StartKubelet, clock: ManualClock
) -> None:
    kubelet = await start_kubelet()
    # A shell script runs as PID 1 and ignores SIGTERM: it is killed when the grace period ends.
    await pods(cluster).create(pod("sleeper", image="busybox", command=["sh", "-c", "sleep 3600"]))
    await wait_for(pods(cluster), running_and_ready)

    await pods(cluster).delete("sleeper", grace_period_seconds=5)
    (terminating,) = await wait_for(
        pods(cluster), lambda items: bool(items) and items[0]["metadata"].get("deletionTimestamp") is not None
    )
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 5
    events = cluster.resource("", "v1", "events", "default")
    await wait_for(events, lambda items: any(e["reason"] == "Killing" for e in items))  # SIGTERM sent

    await clock.advance(4)  # still inside the grace period: the pod is still there
    assert [p["metadata"]["name"] for p in (await pods(cluster).list())["items"]] == ["sleeper"]
    await clock.advance(1)
    assert await wait_for(pods(cluster), lambda items: not items) == []
    async with asyncio.timeout(10):  # the kubelet hears of the deletion, and frees the pod's address
        while kubelet.ips.by_uid:
            await kubelet.next_change().wait()
    assert kubelet.pod_view("default", "sleeper") is None

    killing = next(e for e in (await events.list())["items"] if e["reason"] == "Killing")
    assert killing["message"] == "Stopping container app"
    assert killing["source"] == {"component": "kubelet", "host": NODE}


async def test_a_restarted_kubelet_adopts_its_node_and_resumes_running_pods(
    cluster: InProcessCluster, start_kubelet: StartKubelet, clock: ManualClock
) -> None:
    first = await start_kubelet()
    await pods(cluster).create(pod("web"))
    (before,) = await wait_for(pods(cluster), running_and_ready)
    node_before = await cluster.resource("", "v1", "nodes").get(NODE)
    await first.flush_events()
    await first.stop()

    await clock.advance(30)
    second = await start_kubelet()
    synced = second.next_change()
    await asyncio.wait_for(synced.wait(), 10)

    node_after = await cluster.resource("", "v1", "nodes").get(NODE)
    assert node_after["metadata"]["uid"] == node_before["metadata"]["uid"]
    (after,) = (await pods(cluster).list())["items"]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]  # nothing to write
    assert second.pod_view("default", "web") is not None
    assert second.ips.by_uid == {before["metadata"]["uid"]: before["status"]["podIP"]}
    status = after["status"]["containerStatuses"][0]
    assert status["restartCount"] == 0
    assert status["containerID"] == before["status"]["containerStatuses"][0]["containerID"]
    await second.flush_events()
    events = (await cluster.resource("", "v1", "events", "default").list())["items"]
    assert [e["reason"] for e in events if e["involvedObject"]["name"] == "web"].count("Started") == 1
