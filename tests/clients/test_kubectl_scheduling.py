"""kubectl 1.37 and scheduling.k8s.io/v1: PriorityClasses, the Priority admission plugin, and preemption.

The demo cluster's simulated nodes advertise their CPU in ``status.allocatable`` (4 CPUs each unless
configured otherwise). The preemption test reads that, fills every node to the last milli-CPU with
one pod of a low class pinned to it, then asks for room with a pod of a high class: the scheduler
evicts one low pod (the node whose pod started last) and the high pod runs there. Waiting is
kubectl's own ``wait``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.api.quantity import parse_json_quantity
from tests.support.lab import LiveLab

LOW, HIGH = "kubelab-test-low", "kubelab-test-high"


@pytest.fixture
def classes(lab: LiveLab) -> Iterator[None]:
    created = lab.kubectl("create", "priorityclass", LOW, "--value=-10", "--description=may be preempted")
    assert created.stdout == f"priorityclass.scheduling.k8s.io/{LOW} created\n"
    lab.kubectl("create", "priorityclass", HIGH, "--value=1000")
    yield
    lab.kubectl("delete", "priorityclass", LOW, HIGH, check=False)


def milli_cpu(value: Any) -> int:
    return parse_json_quantity(value).milli_value()


def free_cpu(lab: LiveLab) -> dict[str, int]:
    """Each worker node's allocatable CPU less what its running pods request, in milli-CPU (the
    control-plane node's taint keeps these pods off it)."""
    free = {
        n["metadata"]["name"]: milli_cpu(n["status"]["allocatable"]["cpu"])
        for n in lab.kubectl_json("get", "nodes")["items"]
        if "node-role.kubernetes.io/control-plane" not in n["metadata"].get("labels", {})
    }
    for pod in lab.kubectl_json("get", "pods", "-A")["items"]:
        node = pod["spec"].get("nodeName")
        if node in free and pod["status"].get("phase") not in ("Succeeded", "Failed"):
            for container in pod["spec"]["containers"]:
                free[node] -= milli_cpu(
                    (container.get("resources") or {}).get("requests", {}).get("cpu", "0")
                )
    return free


def pod_manifest(name: str, priority_class: str, cpu: int, node: str | None = None) -> str:
    selector = f"\n  nodeSelector: {{kubernetes.io/hostname: {node}}}" if node else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  priorityClassName: {priority_class}
  terminationGracePeriodSeconds: 1{selector}
  containers:
  - name: main
    image: busybox
    command: [sleep, "3600"]
    resources: {{requests: {{cpu: {cpu}m}}}}
"""


@pytest.mark.usefixtures("classes")
def test_priority_classes_are_listed_with_the_two_system_classes(lab: LiveLab) -> None:
    lines = lab.kubectl("get", "priorityclasses").stdout.splitlines()
    assert lines[0].split() == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["system-cluster-critical"][1:3] == ["2000000000", "false"]
    assert rows["system-node-critical"][1:3] == ["2000001000", "false"]
    assert rows[LOW][1:3] == ["-10", "false"] and rows[LOW][4] == "PreemptLowerPriority"
    assert lab.kubectl("get", "pc", HIGH, "-o", "jsonpath={.value}").stdout == "1000"
    reserved = lab.kubectl("create", "priorityclass", "system-mine", "--value=5", check=False)
    assert (
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use "
        "only. error: system-mine is not a known system priority class" in reserved.stderr
    )
    too_high = lab.kubectl("create", "priorityclass", "too-high", "--value=1000000001", check=False)
    assert (
        "value: Forbidden: maximum allowed value of a user defined priority is 1000000000" in too_high.stderr
    )
    frozen = lab.kubectl("patch", "priorityclass", HIGH, "-p", '{"value": 5}', check=False)
    assert "value: Forbidden: may not be changed in an update." in frozen.stderr
    kept = lab.kubectl("delete", "priorityclass", "system-node-critical", check=False)
    assert kept.stderr == (
        'Error from server (Forbidden): priorityclasses.scheduling.k8s.io "system-node-critical" is '
        "forbidden: this is a system priority class and cannot be deleted\n"
    )


@pytest.mark.usefixtures("classes")
def test_a_pod_gets_its_class_value_and_an_unknown_class_is_refused(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    lab.kubectl("apply", "-f", "-", *ns, input=pod_manifest("valued", HIGH, 10))
    spec = lab.kubectl_json("get", "pod", "valued", *ns)["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "PreemptLowerPriority")
    refused = lab.kubectl("apply", "-f", "-", *ns, input=pod_manifest("lost", "gold", 10), check=False)
    assert 'pods "lost" is forbidden: no PriorityClass with name gold was found' in refused.stderr


@pytest.mark.usefixtures("classes")
def test_a_high_priority_pod_preempts_a_low_one_when_the_nodes_are_full(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    free = free_cpu(lab)
    assert free and all(cpu > 0 for cpu in free.values()), free
    fillers = {f"filler-{i}": (node, cpu) for i, (node, cpu) in enumerate(sorted(free.items()))}
    for name, (node, cpu) in fillers.items():
        lab.kubectl("apply", "-f", "-", *ns, input=pod_manifest(name, LOW, cpu, node))
    lab.kubectl("wait", "--for=condition=Ready", "pod", *fillers, "--timeout=60s", *ns, timeout=90)
    # The smallest filler's room is enough: one victim on any node would do, and none has it free
    # (a pod of an earlier test, still going away, may leave a few milli-CPU).
    need = min(free.values())
    assert all(cpu < need for cpu in free_cpu(lab).values()), "every node is full"
    lab.kubectl("apply", "-f", "-", *ns, input=pod_manifest("urgent", HIGH, need))
    lab.kubectl("wait", "--for=condition=Ready", "pod/urgent", "--timeout=90s", *ns, timeout=120)

    urgent = lab.kubectl_json("get", "pod", "urgent", *ns)
    node = urgent["spec"]["nodeName"]
    assert urgent["status"]["nominatedNodeName"] == node
    left = {p["metadata"]["name"] for p in lab.kubectl_json("get", "pods", *ns)["items"]}
    victims = set(fillers) - left
    assert len(victims) == 1, left
    [victim] = victims
    assert fillers[victim][0] == node, "the victim was on the node the preemptor now runs on"
    events = lab.kubectl_json("get", "events", *ns, "--field-selector", "reason=Preempted")["items"]
    assert [(e["involvedObject"]["name"], e["message"]) for e in events] == [
        (victim, f"Preempted by pod {urgent['metadata']['uid']} on node {node}")
    ]
    described = lab.kubectl("describe", "pod", "urgent", *ns).stdout
    assert "Insufficient cpu" in described and "Successfully assigned" in described
