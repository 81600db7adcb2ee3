"""Table printers: the cells kube-apiserver computes for ``kubectl get``.

Expectations come from kubernetes ``pkg/printers/internalversion/printers_test.go`` (TestPrintPod,
TestPrintPodWithRestartableInitContainer, TestPrintServiceLoadBalancer) translated to the v1 JSON
form, from apimachinery ``pkg/util/duration/duration_test.go``, and, where upstream has no table,
from the row functions in ``printers.go`` (cited per test). Upstream's tests print without
``Wide``; the server always prints wide, so each expected row here also carries the wide cells.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controlplane.api.printers import (
    DEFAULT_PRINTER,
    Column,
    format_endpoints,
    human_duration,
    printer_for,
    translate_timestamp_since,
)

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def ago(delta: timedelta) -> str:
    return (NOW - delta).strftime("%Y-%m-%dT%H:%M:%SZ")


SECONDS, MINUTES, HOURS, DAYS = (
    timedelta(seconds=1),
    timedelta(minutes=1),
    timedelta(hours=1),
    timedelta(days=1),
)

# -- duration.HumanDuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        # duration_test.go TestHumanDuration
        (SECONDS, "1s"),
        (70 * SECONDS, "70s"),
        (190 * SECONDS, "3m10s"),
        (70 * MINUTES, "70m"),
        (47 * HOURS, "47h"),
        (49 * HOURS, "2d1h"),
        ((8 * 24 + 2) * HOURS, "8d"),
        (367 * 24 * HOURS, "367d"),
        ((365 * 2 * 24 + 25) * HOURS, "2y1d"),
        ((365 * 8 * 24 + 2) * HOURS, "8y"),
        # TestHumanDurationBoundaries
        (-2 * SECONDS, "<invalid>"),
        (-2 * SECONDS + timedelta(microseconds=1), "0s"),
        (timedelta(0), "0s"),
        (SECONDS - timedelta(milliseconds=1), "0s"),
        (2 * MINUTES - timedelta(milliseconds=1), "119s"),
        (2 * MINUTES, "2m"),
        (2 * MINUTES + SECONDS, "2m1s"),
        (10 * MINUTES - timedelta(milliseconds=1), "9m59s"),
        (10 * MINUTES, "10m"),
        (10 * MINUTES + SECONDS, "10m"),
        (3 * HOURS - timedelta(milliseconds=1), "179m"),
        (3 * HOURS, "3h"),
        (3 * HOURS + MINUTES, "3h1m"),
        (8 * HOURS - timedelta(milliseconds=1), "7h59m"),
        (8 * HOURS, "8h"),
        (8 * HOURS + 59 * MINUTES, "8h"),
        (2 * DAYS - timedelta(milliseconds=1), "47h"),
        (2 * DAYS, "2d"),
        (2 * DAYS + HOURS, "2d1h"),
        (8 * DAYS - timedelta(milliseconds=1), "7d23h"),
        (8 * DAYS, "8d"),
        (8 * DAYS + 23 * HOURS, "8d"),
        (2 * 365 * DAYS - timedelta(milliseconds=1), "729d"),
        (2 * 365 * DAYS, "2y"),
        (2 * 365 * DAYS + 23 * HOURS + 59 * MINUTES, "2y"),
        (2 * 365 * DAYS + DAYS, "2y1d"),
        (8 * 365 * DAYS - timedelta(milliseconds=1), "7y364d"),
        (8 * 365 * DAYS, "8y"),
        (8 * 365 * DAYS + 364 * DAYS, "8y"),
        (9 * 365 * DAYS, "9y"),
    ],
)
def test_human_duration(delta: timedelta, expected: str) -> None:
    assert human_duration(delta) == expected


def test_translate_timestamp_since() -> None:
    assert translate_timestamp_since(None, NOW) == "<unknown>"
    assert translate_timestamp_since("", NOW) == "<unknown>"
    assert translate_timestamp_since(ago(5 * MINUTES), NOW) == "5m"
    assert translate_timestamp_since("2025-06-01T11:59:00.123456Z", NOW) == "59s"  # MicroTime
    assert translate_timestamp_since(ago(5 * MINUTES), NOW.replace(tzinfo=None)) == "5m"  # naive now is UTC


# -- columns ------------------------------------------------------------------------------------------


def test_column_json_has_every_field() -> None:
    assert Column("Name", "string", "name", "the name").to_json() == {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": "the name",
        "priority": 0,
    }


@pytest.mark.parametrize(
    ("group", "resource", "names", "wide"),
    [
        (
            "",
            "pods",
            ["Name", "Ready", "Status", "Restarts", "Age"],
            ["IP", "Node", "Nominated Node", "Readiness Gates"],
        ),
        (
            "",
            "nodes",
            ["Name", "Status", "Roles", "Age", "Version"],
            ["Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"],
        ),
        ("", "services", ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"], ["Selector"]),
        (
            "apps",
            "deployments",
            ["Name", "Ready", "Up-to-date", "Available", "Age"],
            ["Containers", "Images", "Selector"],
        ),
        (
            "apps",
            "replicasets",
            ["Name", "Desired", "Current", "Ready", "Age"],
            ["Containers", "Images", "Selector"],
        ),
        (
            "",
            "events",
            ["Last Seen", "Type", "Reason", "Object", "Message"],
            ["Subobject", "Source", "First Seen", "Count", "Name"],
        ),
        (
            "rbac.authorization.k8s.io",
            "rolebindings",
            ["Name", "Role", "Age"],
            ["Users", "Groups", "ServiceAccounts"],
        ),
        ("", "configmaps", ["Name", "Data", "Age"], []),
        ("discovery.k8s.io", "endpointslices", ["Name", "AddressType", "Ports", "Endpoints", "Age"], []),
        ("", "secrets", ["Name", "Type", "Data", "Age"], []),
        ("coordination.k8s.io", "leases", ["Name", "Holder", "Age"], []),
        (
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
            ["Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit", "Age"],
            [],
        ),
        ("rbac.authorization.k8s.io", "roles", ["Name", "Created At"], []),
        ("example.com", "widgets", ["Name", "Created At"], []),
    ],
)
def test_columns_and_wide_columns(group: str, resource: str, names: list[str], wide: list[str]) -> None:
    columns = printer_for(group, resource).columns
    assert [c.name for c in columns if c.priority == 0] == names
    assert [c.name for c in columns if c.priority == 1] == wide


def test_column_types_and_name_format() -> None:
    pods = {c.name: c for c in printer_for("", "pods").columns}
    assert pods["Name"].format == "name"
    assert pods["Restarts"].type == "string"  # "3 (5m ago)" since 1.22
    assert pods["Name"].description.startswith("Name must be unique within a namespace.")
    assert {c.type for c in printer_for("apps", "replicasets").columns if c.name in ("Desired", "Ready")} == {
        "integer"
    }
    assert {c.name: c.type for c in DEFAULT_PRINTER.columns} == {"Name": "string", "Created At": "date"}


# -- pods ---------------------------------------------------------------------------------------------


def pod(
    name: str, containers: int = 1, init: list[dict[str, Any]] | None = None, **status: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}"} for i in range(containers)]}
    if init is not None:
        spec["initContainers"] = init
    return {"metadata": {"name": name}, "spec": spec, "status": status}


def running(**extra: Any) -> dict[str, Any]:
    return {"state": {"running": {}}, **extra}


def last_terminated(delta: timedelta) -> dict[str, Any]:
    return {"terminated": {"finishedAt": ago(delta)}}


NO_WIDE = ["<none>", "<none>", "<none>", "<none>"]

POD_CASES = [
    # printers_test.go TestPrintPod (cells: Name, Ready, Status, Restarts, Age)
    (
        pod(
            "test1",
            2,
            phase="podPhase",
            containerStatuses=[running(ready=True, restartCount=3), {"restartCount": 3}],
        ),
        ["test1", "1/2", "podPhase", "6", "<unknown>"],
    ),
    (
        pod(
            "test2",
            2,
            phase="podPhase",
            containerStatuses=[
                running(ready=True, restartCount=3),
                {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3},
            ],
        ),
        ["test2", "1/2", "ContainerWaitingReason", "6", "<unknown>"],
    ),
    (
        pod(
            "test3",
            2,
            phase="podPhase",
            containerStatuses=[
                {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3},
                {"state": {"terminated": {"reason": "ContainerTerminatedReason"}}, "restartCount": 3},
            ],
        ),
        ["test3", "0/2", "ContainerWaitingReason", "6", "<unknown>"],
    ),
    (
        pod(
            "test4",
            2,
            phase="podPhase",
            containerStatuses=[running(ready=True, restartCount=3), {"ready": True, "restartCount": 3}],
        ),
        ["test4", "1/2", "podPhase", "6", "<unknown>"],
    ),
    (
        pod(
            "test5",
            2,
            phase="podPhase",
            reason="podReason",
            containerStatuses=[running(ready=True, restartCount=3), {"ready": True, "restartCount": 3}],
        ),
        ["test5", "1/2", "podReason", "6", "<unknown>"],
    ),
    (
        pod(
            "test6",
            2,
            phase="Running",
            containerStatuses=[
                {
                    "ready": True,
                    "restartCount": 3,
                    "state": {"terminated": {"reason": "Completed", "exitCode": 0}},
                },
                running(ready=True, restartCount=3),
            ],
        ),
        ["test6", "1/2", "NotReady", "6", "<unknown>"],
    ),
    (
        pod(
            "test6",
            2,
            phase="Running",
            conditions=[{"type": "Ready", "status": "True"}],
            containerStatuses=[
                {
                    "ready": True,
                    "restartCount": 3,
                    "state": {"terminated": {"reason": "Completed", "exitCode": 0}},
                },
                running(ready=True, restartCount=3),
            ],
        ),
        ["test6", "1/2", "Running", "6", "<unknown>"],
    ),
    (
        pod(
            "test7",
            1,
            init=[{"name": ""}],
            phase="podPhase",
            initContainerStatuses=[running(restartCount=3, lastState=last_terminated(10 * SECONDS))],
            containerStatuses=[{"state": {"waiting": {}}}],
        ),
        ["test7", "0/1", "Init:0/1", "3 (10s ago)", "<unknown>"],
    ),
    (
        pod(
            "test9",
            1,
            init=[{"name": ""}, {"name": ""}],
            phase="podPhase",
            initContainerStatuses=[
                {"state": {"terminated": {}}},
                running(restartCount=3, lastState=last_terminated(10 * SECONDS)),
            ],
            containerStatuses=[{"state": {"waiting": {}}}],
        ),
        ["test9", "0/1", "Init:1/2", "3 (10s ago)", "<unknown>"],
    ),
    (
        pod(
            "test10",
            1,
            init=[{"name": ""}, {"name": ""}],
            phase="podPhase",
            initContainerStatuses=[
                {"restartCount": 2, "state": {"terminated": {}}, "lastState": last_terminated(2 * MINUTES)},
                running(restartCount=3, lastState=last_terminated(10 * SECONDS)),
            ],
            containerStatuses=[{"state": {"waiting": {}}}],
        ),
        ["test10", "0/1", "Init:1/2", "5 (10s ago)", "<unknown>"],
    ),
    (
        pod(
            "test11",
            1,
            init=[{"name": ""}],
            phase="Running",
            initContainerStatuses=[
                {"restartCount": 2, "state": {"terminated": {}}, "lastState": last_terminated(2 * MINUTES)}
            ],
            containerStatuses=[running(restartCount=4, lastState=last_terminated(20 * SECONDS))],
        ),
        ["test11", "0/1", "Running", "4 (20s ago)", "<unknown>"],
    ),
    (
        pod(
            "test12",
            1,
            phase="Running",
            containerStatuses=[running(ready=True, restartCount=3, lastState=last_terminated(5 * DAYS))],
        ),
        ["test12", "1/1", "Running", "3 (5d ago)", "<unknown>"],
    ),
    (
        pod(
            "test14",
            2,
            phase="Running",
            containerStatuses=[
                running(ready=True, restartCount=6, lastState=last_terminated(5 * DAYS)),
                running(ready=True, restartCount=3, lastState=last_terminated(20 * DAYS)),
            ],
        ),
        ["test14", "2/2", "Running", "9 (5d ago)", "<unknown>"],
    ),
    (
        pod(
            "test15",
            2,
            phase="podPhase",
            conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
        ),
        ["test15", "0/2", "SchedulingGated", "0", "<unknown>"],
    ),
    (
        pod(
            "test17",
            1,
            phase="Failed",
            containerStatuses=[{"state": {"terminated": {"reason": "Error", "exitCode": 1}}}],
        ),
        ["test17", "0/1", "Error", "0", "<unknown>"],
    ),
    # TestPrintPodWithRestartableInitContainer: sidecars count as containers
    (
        pod(
            "sidecar-starting",
            1,
            init=[{"name": "r1", "restartPolicy": "Always"}, {"name": "r2", "restartPolicy": "Always"}],
            phase="Pending",
            initContainerStatuses=[
                running(name="r1", restartCount=3, started=True, lastState=last_terminated(10 * SECONDS)),
                running(name="r2", started=False),
            ],
            containerStatuses=[{"state": {"waiting": {}}}],
            conditions=[{"type": "Initialized", "status": "False"}],
        ),
        ["sidecar-starting", "0/3", "Init:1/2", "3 (10s ago)", "<unknown>"],
    ),
    (
        pod(
            "sidecars-up",
            1,
            init=[{"name": "r1", "restartPolicy": "Always"}, {"name": "r2", "restartPolicy": "Always"}],
            phase="Running",
            initContainerStatuses=[
                running(name="r1", restartCount=3, started=True, lastState=last_terminated(10 * SECONDS)),
                running(name="r2", started=True),
            ],
            containerStatuses=[running(ready=True, restartCount=4, lastState=last_terminated(20 * SECONDS))],
            conditions=[{"type": "Initialized", "status": "True"}],
        ),
        ["sidecars-up", "1/3", "Running", "7 (10s ago)", "<unknown>"],
    ),
    (
        pod(
            "sidecars-done",
            1,
            init=[{"name": "r1", "restartPolicy": "Always"}, {"name": "r2", "restartPolicy": "Always"}],
            phase="Succeeded",
            initContainerStatuses=[
                {
                    "name": "r1",
                    "restartCount": 3,
                    "started": False,
                    "state": {"terminated": {"reason": "Error", "exitCode": 137}},
                    "lastState": last_terminated(10 * SECONDS),
                },
                {
                    "name": "r2",
                    "started": False,
                    "state": {"terminated": {"reason": "Error", "exitCode": 137}},
                },
            ],
            containerStatuses=[
                {
                    "restartCount": 4,
                    "state": {"terminated": {"reason": "Completed", "exitCode": 0}},
                    "lastState": last_terminated(20 * SECONDS),
                }
            ],
            conditions=[{"type": "Initialized", "status": "True"}],
        ),
        ["sidecars-done", "0/3", "Completed", "7 (10s ago)", "<unknown>"],
    ),
    # From printPod's other branches (printers.go): failed init containers, signals, exit codes.
    (
        pod(
            "init-crash",
            1,
            init=[{"name": "i"}],
            phase="Pending",
            initContainerStatuses=[{"name": "i", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
        ),
        ["init-crash", "0/1", "Init:CrashLoopBackOff", "0", "<unknown>"],
    ),
    (
        pod(
            "init-error",
            1,
            init=[{"name": "i"}],
            phase="Pending",
            initContainerStatuses=[{"name": "i", "state": {"terminated": {"exitCode": 2}}}],
        ),
        ["init-error", "0/1", "Init:ExitCode:2", "0", "<unknown>"],
    ),
    (
        pod(
            "init-waiting",
            1,
            init=[{"name": "i"}],
            phase="Pending",
            initContainerStatuses=[{"name": "i", "state": {"waiting": {"reason": "PodInitializing"}}}],
        ),
        ["init-waiting", "0/1", "Init:0/1", "0", "<unknown>"],
    ),
    (
        pod(
            "killed",
            1,
            phase="Failed",
            containerStatuses=[{"state": {"terminated": {"signal": 9, "exitCode": 137}}}],
        ),
        ["killed", "0/1", "Signal:9", "0", "<unknown>"],
    ),
    (
        pod(
            "creating",
            1,
            phase="Pending",
            containerStatuses=[{"state": {"waiting": {"reason": "ContainerCreating"}}}],
        ),
        ["creating", "0/1", "ContainerCreating", "0", "<unknown>"],
    ),
]


@pytest.mark.parametrize(("obj", "cells"), POD_CASES, ids=[cells[0] for _, cells in POD_CASES])
def test_pod_rows(obj: dict[str, Any], cells: list[Any]) -> None:
    assert printer_for("", "pods").row(obj, NOW) == cells + NO_WIDE


def test_pod_deletion_states() -> None:
    # TestPrintPod test18-test20, and printPod's NodeLost branch
    printer = printer_for("", "pods")
    deleting = {"name": "p", "deletionTimestamp": ago(10 * SECONDS)}
    succeeded = {
        "metadata": deleting,
        "spec": {"containers": [{}]},
        "status": {
            "phase": "Succeeded",
            "containerStatuses": [{"state": {"terminated": {"reason": "Completed"}}}],
        },
    }
    assert printer.row(succeeded, NOW)[2] == "Completed"
    assert (
        printer.row(
            {"metadata": deleting, "spec": {"containers": [{}]}, "status": {"phase": "Running"}}, NOW
        )[2]
        == "Terminating"
    )
    assert (
        printer.row(
            {"metadata": deleting, "spec": {"containers": [{}]}, "status": {"phase": "Pending"}}, NOW
        )[2]
        == "Terminating"
    )
    lost = {
        "metadata": deleting,
        "spec": {"containers": [{}]},
        "status": {"phase": "Running", "reason": "NodeLost"},
    }
    assert printer.row(lost, NOW)[2] == "Unknown"


def test_pod_row_conditions() -> None:
    printer = printer_for("", "pods")
    assert printer.conditions({"status": {"phase": "Succeeded"}}) == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ]
    assert printer.conditions({"status": {"phase": "Failed"}})[0]["message"] == "The pod failed."
    assert printer.conditions({"status": {"phase": "Running"}}) == []


def test_pod_wide_cells() -> None:
    obj = {
        "metadata": {"name": "web", "creationTimestamp": ago(3 * HOURS + 20 * MINUTES)},
        "spec": {
            "containers": [{"name": "c"}],
            "nodeName": "node-1",
            "readinessGates": [{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}],
        },
        "status": {
            "phase": "Running",
            "podIPs": [{"ip": "10.244.1.5"}, {"ip": "fd00::5"}],
            "nominatedNodeName": "node-2",
            "conditions": [
                {"type": "example.com/lb", "status": "True"},
                {"type": "example.com/dns", "status": "False"},
            ],
            "containerStatuses": [running(ready=True)],
        },
    }
    assert printer_for("", "pods").row(obj, NOW) == [
        "web",
        "1/1",
        "Running",
        "0",
        "3h20m",
        "10.244.1.5",
        "node-1",
        "node-2",
        "1/2",
    ]


# -- nodes --------------------------------------------------------------------------------------------


def node(
    conditions: list[dict[str, str]], unschedulable: bool = False, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"name": "n1", "labels": labels or {}, "creationTimestamp": ago(30 * DAYS)},
        "spec": {"unschedulable": unschedulable},
        "status": {
            "conditions": conditions,
            "nodeInfo": {
                "kubeletVersion": "v1.37.0",
                "osImage": "Debian GNU/Linux 13",
                "kernelVersion": "6.12.0",
                "containerRuntimeVersion": "containerd://2.1.0",
            },
            "addresses": [
                {"type": "Hostname", "address": "n1"},
                {"type": "InternalIP", "address": "172.18.0.2"},
            ],
        },
    }


@pytest.mark.parametrize(
    ("obj", "status"),
    [
        # printNode: only the Ready condition is shown; "Not" + type when it is not True
        (node([{"type": "Ready", "status": "True"}]), "Ready"),
        (node([{"type": "Ready", "status": "False"}]), "NotReady"),
        (node([{"type": "Ready", "status": "Unknown"}]), "NotReady"),
        (node([]), "Unknown"),
        (node([{"type": "MemoryPressure", "status": "True"}]), "Unknown"),
        (node([{"type": "Ready", "status": "True"}], unschedulable=True), "Ready,SchedulingDisabled"),
    ],
)
def test_node_status(obj: dict[str, Any], status: str) -> None:
    assert printer_for("", "nodes").row(obj, NOW)[1] == status


def test_node_row_with_roles_and_wide_cells() -> None:
    labeled = node(
        [{"type": "Ready", "status": "True"}],
        labels={
            "node-role.kubernetes.io/control-plane": "",
            "node-role.kubernetes.io/": "",
            "kubernetes.io/role": "etcd",
        },
    )
    assert printer_for("", "nodes").row(labeled, NOW) == [
        "n1", "Ready", "control-plane,etcd", "30d", "v1.37.0",
        "172.18.0.2", "<none>", "Debian GNU/Linux 13", "6.12.0", "containerd://2.1.0",
    ]  # fmt: skip
    bare = {"metadata": {"name": "n2"}, "status": {}}
    assert printer_for("", "nodes").row(bare, NOW) == [
        "n2", "Unknown", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>",
    ]  # fmt: skip


# -- services and endpoints ----------------------------------------------------------------------------


def service(type_: str, ports: list[dict[str, Any]], **rest: Any) -> dict[str, Any]:
    spec = {
        "type": type_,
        "clusterIPs": rest.pop("clusterIPs", ["10.96.0.10"]),
        "ports": ports,
        **rest.pop("spec", {}),
    }
    return {"metadata": {"name": "svc"}, "spec": spec, **rest}


TCP80 = {"port": 80, "protocol": "TCP"}


@pytest.mark.parametrize(
    ("obj", "external_ip", "ports"),
    [
        # TestPrintServiceLoadBalancer; wide (as the server prints), so long lists are not clipped
        (
            service(
                "LoadBalancer",
                [TCP80],
                status={"loadBalancer": {"ingress": [{"ip": "3.4.5.6"}, {"ip": "2.3.4.5"}]}},
            ),
            "2.3.4.5,3.4.5.6",
            "80/TCP",
        ),
        (
            service(
                "LoadBalancer", [TCP80, {"port": 8090, "protocol": "UDP"}, {"port": 7777, "protocol": "SCTP"}]
            ),
            "<pending>",
            "80/TCP,8090/UDP,7777/SCTP",
        ),
        (
            service(
                "LoadBalancer",
                [TCP80],
                status={
                    "loadBalancer": {
                        "ingress": [
                            {"ip": "2.3.4.5"},
                            {"ip": "3.4.5.6"},
                            {"ip": "5.6.7.8", "hostname": "host5678"},
                        ]
                    }
                },
            ),
            "2.3.4.5,3.4.5.6,5.6.7.8",
            "80/TCP",
        ),
        (
            service(
                "LoadBalancer",
                [TCP80],
                spec={"externalIPs": ["9.9.9.9"]},
                status={"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}},
            ),
            "lb.example.com,9.9.9.9",
            "80/TCP",
        ),
        (service("ClusterIP", [TCP80]), "<none>", "80/TCP"),
        (
            service("ClusterIP", [TCP80], spec={"externalIPs": ["1.1.1.1", "2.2.2.2"]}),
            "1.1.1.1,2.2.2.2",
            "80/TCP",
        ),
        (
            service("NodePort", [TCP80, {"port": 443, "nodePort": 30443, "protocol": "TCP"}]),
            "<none>",
            "80/TCP,443:30443/TCP",
        ),
        (service("ExternalName", [], spec={"externalName": "db.example.com"}), "db.example.com", "<none>"),
    ],
)
def test_service_external_ip_and_ports(obj: dict[str, Any], external_ip: str, ports: str) -> None:
    cells = printer_for("", "services").row(obj, NOW)
    assert cells[3:5] == [external_ip, ports]


def test_service_row() -> None:
    obj = service("ClusterIP", [TCP80], spec={"selector": {"tier": "web", "app": "shop"}})
    obj["metadata"]["creationTimestamp"] = ago(2 * DAYS + 3 * HOURS)
    assert printer_for("", "services").row(obj, NOW) == [
        "svc",
        "ClusterIP",
        "10.96.0.10",
        "<none>",
        "80/TCP",
        "2d3h",
        "app=shop,tier=web",
    ]
    headless = service("ClusterIP", [], clusterIPs=["None"])
    assert printer_for("", "services").row(headless, NOW)[2:5] == ["None", "<none>", "<none>"]
    assert printer_for("", "services").row(service("ClusterIP", [], clusterIPs=[]), NOW)[2] == "<none>"


@pytest.mark.parametrize(
    ("subsets", "expected"),
    [
        # formatEndpoints (printers.go): up to three host:port, then "+ N more..."
        ([], "<none>"),
        ([{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 8080}]}], "10.0.0.1:8080"),
        ([{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}], "[fd00::1]:80"),
        (
            [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]}],
            "10.0.0.1,10.0.0.2",
        ),  # headless, no ports
        ([{"notReadyAddresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}], ""),
        (
            [
                {
                    "addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 4)],
                    "ports": [{"port": 80}, {"port": 443}],
                }
            ],
            "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 3 more...",
        ),
    ],
)
def test_endpoints(subsets: list[dict[str, Any]], expected: str) -> None:
    obj = {"metadata": {"name": "e"}, "subsets": subsets}
    assert format_endpoints(obj) == expected
    assert printer_for("", "endpoints").row(obj, NOW) == ["e", expected, "<unknown>"]


@pytest.mark.parametrize(
    ("ports", "endpoints", "cells"),
    [
        # formatDiscoveryPorts / formatDiscoveryEndpoints (printers.go): three, then "+ N more...",
        # "<unset>" when empty; a port without a number shows its name, then "*"
        ([], [], ["<unset>", "<unset>"]),
        ([{"port": 80, "name": "http"}], [{"addresses": ["10.0.0.1"]}], ["80", "10.0.0.1"]),
        (
            [{"name": "http"}, {}],
            [{"addresses": ["10.0.0.1"], "conditions": {"ready": False}}],
            ["http,*", "10.0.0.1"],
        ),
        (
            [{"port": p} for p in (1, 2, 3, 4, 5)],
            [{"addresses": [f"10.0.0.{i}"]} for i in range(1, 5)],
            ["1,2,3 + 2 more...", "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."],
        ),
    ],
)
def test_endpoint_slices(
    ports: list[dict[str, Any]], endpoints: list[dict[str, Any]], cells: list[str]
) -> None:
    obj = {"metadata": {"name": "web-abc"}, "addressType": "IPv4", "ports": ports, "endpoints": endpoints}
    assert printer_for("discovery.k8s.io", "endpointslices").row(obj, NOW) == [
        "web-abc",
        "IPv4",
        *cells,
        "<unknown>",
    ]


# -- events -------------------------------------------------------------------------------------------


def test_core_event_row() -> None:
    event = {
        "metadata": {"name": "web.17a", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{c}"},
        "reason": "BackOff",
        "type": "Warning",
        "message": "  Back-off restarting failed container\n",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": ago(10 * MINUTES),
        "lastTimestamp": ago(30 * SECONDS),
        "count": 7,
    }
    assert printer_for("", "events").row(event, NOW) == [
        "30s", "Warning", "BackOff", "pod/web", "spec.containers{c}", "kubelet, node-1",
        "Back-off restarting failed container", "10m", 7, "web.17a",
    ]  # fmt: skip


def test_events_k8s_io_event_row_uses_series_and_event_time() -> None:
    event = {
        "metadata": {"name": "web.17b", "namespace": "default"},
        "regarding": {"kind": "Deployment"},
        "reason": "ScalingReplicaSet",
        "type": "Normal",
        "note": "Scaled up",
        "eventTime": "2025-06-01T11:55:00.000000Z",
        "reportingController": "deployment-controller",
        "reportingInstance": "",
        "series": {"count": 4, "lastObservedTime": "2025-06-01T11:59:30.000000Z"},
    }
    assert printer_for("events.k8s.io", "events").row(event, NOW) == [
        "30s", "Normal", "ScalingReplicaSet", "deployment", "", "deployment-controller", "Scaled up",
        "5m", 4, "web.17b",
    ]  # fmt: skip
    single = {**event, "series": None}
    cells = printer_for("events.k8s.io", "events").row(single, NOW)
    assert (cells[0], cells[8]) == ("5m", 1)  # last seen falls back to first seen; singleton count 1


# -- workloads ----------------------------------------------------------------------------------------

TEMPLATE = {
    "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}, {"name": "log", "image": "busybox"}]}
}


def test_deployment_row() -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "web", "creationTimestamp": ago(90 * SECONDS)},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE},
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
    }
    assert printer_for("apps", "deployments").row(obj, NOW) == [
        "web", "2/3", 3, 2, "90s", "web,log", "nginx:1.27,busybox", "app=web",
    ]  # fmt: skip
    bad = {
        **obj,
        "spec": {**obj["spec"], "selector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}},
    }
    assert printer_for("apps", "deployments").row(bad, NOW)[-1] == "<invalid>"
    assert printer_for("apps", "deployments").row({"metadata": {"name": "x"}}, NOW)[1:4] == ["0/0", 0, 0]


def test_replica_set_row() -> None:
    obj = {
        "metadata": {"name": "web-5d4f", "creationTimestamp": ago(12 * MINUTES)},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d4f"}},
            "template": TEMPLATE,
        },
        "status": {"replicas": 3, "readyReplicas": 1},
    }
    assert printer_for("apps", "replicasets").row(obj, NOW) == [
        "web-5d4f", 3, 3, 1, "12m", "web,log", "nginx:1.27,busybox", "app=web,pod-template-hash=5d4f",
    ]  # fmt: skip
    assert (
        printer_for("apps", "replicasets").row({"metadata": {"name": "x"}, "spec": {}}, NOW)[-1] == "<none>"
    )


# -- everything else -------------------------------------------------------------------------------


def test_simple_rows() -> None:
    created = {"creationTimestamp": ago(4 * DAYS)}
    assert printer_for("", "namespaces").row(
        {"metadata": {"name": "ns", **created}, "status": {"phase": "Active"}}, NOW
    ) == [
        "ns",
        "Active",
        "4d",
    ]
    configmap = {
        "metadata": {"name": "cm", **created},
        "data": {"a": "1", "b": "2"},
        "binaryData": {"c": "AA=="},
    }
    assert printer_for("", "configmaps").row(configmap, NOW) == ["cm", 3, "4d"]
    secret = {
        "metadata": {"name": "s", **created},
        "type": "Opaque",
        "data": {"a": "MQ=="},
        "stringData": {"a": "1", "b": "2"},
    }
    assert printer_for("", "secrets").row(secret, NOW) == ["s", "Opaque", 2, "4d"]
    account = {"metadata": {"name": "default", **created}}
    assert printer_for("", "serviceaccounts").row(account, NOW) == ["default", 0, "4d"]
    lease = {"metadata": {"name": "kube-scheduler", **created}, "spec": {"holderIdentity": "cp_1234"}}
    assert printer_for("coordination.k8s.io", "leases").row(lease, NOW) == ["kube-scheduler", "cp_1234", "4d"]
    assert (
        printer_for("coordination.k8s.io", "leases").row({"metadata": {"name": "l"}, "spec": {}}, NOW)[1]
        == ""
    )
    webhooks = {"metadata": {"name": "w", **created}, "webhooks": [{"name": "a"}, {"name": "b"}]}
    assert printer_for("admissionregistration.k8s.io", "validatingwebhookconfigurations").row(
        webhooks, NOW
    ) == ["w", 2, "4d"]
    assert printer_for("admissionregistration.k8s.io", "mutatingwebhookconfigurations").row(
        webhooks, NOW
    ) == ["w", 2, "4d"]


def test_role_binding_rows() -> None:
    binding = {
        "metadata": {"name": "read-pods"},
        "roleRef": {"kind": "ClusterRole", "name": "view", "apiGroup": "rbac.authorization.k8s.io"},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "ServiceAccount", "name": "ci", "namespace": "tools"},
            {"kind": "Group", "name": "devs"},
            {"kind": "User", "name": "bob"},
        ],
    }
    expected = ["read-pods", "ClusterRole/view", "<unknown>", "alice, bob", "devs", "tools/ci"]
    assert printer_for("rbac.authorization.k8s.io", "rolebindings").row(binding, NOW) == expected
    assert printer_for("rbac.authorization.k8s.io", "clusterrolebindings").row(binding, NOW) == expected


def test_flow_control_rows() -> None:
    schema = {
        "metadata": {"name": "system-nodes"},
        "spec": {
            "priorityLevelConfiguration": {"name": "system"},
            "matchingPrecedence": 500,
            "distinguisherMethod": {"type": "ByUser"},
        },
        "status": {"conditions": [{"type": "Dangling", "status": "False"}]},
    }
    printer = printer_for("flowcontrol.apiserver.k8s.io", "flowschemas")
    assert printer.row(schema, NOW) == ["system-nodes", "system", 500, "ByUser", "<unknown>", "False"]
    exempt = {
        "metadata": {"name": "exempt"},
        "spec": {"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 1},
    }
    assert printer.row(exempt, NOW) == ["exempt", "exempt", 1, "<none>", "<unknown>", "?"]
    catch_all = {"metadata": {"name": "catch-all"}, "spec": {"matchingPrecedence": 10000}}
    also_500 = {"metadata": {"name": "probes"}, "spec": {"matchingPrecedence": 500}}
    ordered = printer.ordered([catch_all, schema, exempt, also_500])
    assert [o["metadata"]["name"] for o in ordered] == ["exempt", "probes", "system-nodes", "catch-all"]

    levels = printer_for("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations")
    limited = {
        "metadata": {"name": "workload-low"},
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": 100,
                "limitResponse": {
                    "type": "Queue",
                    "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50},
                },
            },
        },
    }
    assert levels.row(limited, NOW) == ["workload-low", "Limited", 100, 128, 6, 50, "<unknown>"]
    reject = {
        "metadata": {"name": "catch-all"},
        "spec": {
            "type": "Limited",
            "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}},
        },
    }
    assert levels.row(reject, NOW) == ["catch-all", "Limited", 5, "<none>", "<none>", "<none>", "<unknown>"]
    assert (
        levels.row({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt"}}, NOW)[2:6] == ["<none>"] * 4
    )
    assert levels.ordered([reject, limited]) == [reject, limited]  # only FlowSchemas are re-sorted


def test_default_printer_prints_the_creation_time() -> None:
    # DefaultTableConvertor: Time.UTC().Format(time.RFC3339); Go's zero time when unset
    role = {"metadata": {"name": "pod-reader", "creationTimestamp": "2025-05-31T10:20:30+02:00"}}
    assert printer_for("rbac.authorization.k8s.io", "roles").row(role, NOW) == [
        "pod-reader",
        "2025-05-31T08:20:30Z",
    ]
    assert printer_for("rbac.authorization.k8s.io", "clusterroles").row({"metadata": {"name": "x"}}, NOW) == [
        "x",
        "0001-01-01T00:00:00Z",
    ]
    assert printer_for("example.com", "widgets") is DEFAULT_PRINTER
