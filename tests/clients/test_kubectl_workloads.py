"""kubectl 1.37 against a living cluster: the scheduler, controllers and kubelets at work.

The demo cluster of the session's lab runs every component in-process (three nodes, the classroom
timing profile), so these are the commands of a course's workload chapters, end to end. kubectl's own
waiting commands (``rollout status``, ``wait``, ``delete --wait``, ``logs -f``) do the waiting.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.support.lab import KUBECTL, LiveLab


def pods_of(lab: LiveLab, namespace: str, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = lab.kubectl_json("get", "pods", "-n", namespace, "-l", selector)["items"]
    return items


def test_a_deployment_of_three_rolls_out_scales_updates_and_rolls_back(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    lab.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3", *ns)
    out = lab.kubectl("rollout", "status", "deployment/web", "--timeout=60s", *ns, timeout=90).stdout
    assert 'deployment "web" successfully rolled out' in out
    pods = pods_of(lab, namespace, "app=web")
    assert len(pods) == 3
    assert all(p["status"]["phase"] == "Running" for p in pods)
    assert {p["spec"]["nodeName"] for p in pods} <= {"node-1", "node-2", "node-3"}

    lab.kubectl("scale", "deployment/web", "--replicas=5", *ns)
    lab.kubectl("rollout", "status", "deployment/web", "--timeout=60s", *ns, timeout=90)
    assert lab.kubectl_json("get", "deployment", "web", *ns)["status"]["availableReplicas"] == 5
    lab.kubectl("scale", "deployment/web", "--replicas=2", *ns)
    # rollout status may finish before the extra pods have gone (upstream's too: the status still
    # counts them until the ReplicaSet reports); wait for the status to say 2.
    lab.kubectl(
        "wait", "--for=jsonpath={.status.replicas}=2", "deployment/web", "--timeout=60s", *ns, timeout=90
    )

    lab.kubectl("set", "image", "deployment/web", "nginx=nginx:1.28", *ns)
    lab.kubectl("rollout", "status", "deployment/web", "--timeout=60s", *ns, timeout=90)
    images = {p["spec"]["containers"][0]["image"] for p in pods_of(lab, namespace, "app=web")}
    assert images == {"nginx:1.28"}
    history = lab.kubectl("rollout", "history", "deployment/web", *ns).stdout
    assert "1 " in history and "2 " in history

    lab.kubectl("rollout", "undo", "deployment/web", *ns)
    lab.kubectl("rollout", "status", "deployment/web", "--timeout=60s", *ns, timeout=90)
    deployment = lab.kubectl_json("get", "deployment", "web", *ns)
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    replicasets = lab.kubectl_json("get", "replicasets", "-l", "app=web", *ns)["items"]
    assert len(replicasets) == 2, "the rollback reuses the first ReplicaSet"


def test_logs_and_wait(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    lab.kubectl(
        "run", "printer", "--image=busybox", "--restart=Never", *ns, "--",
        "sh", "-c", "echo start; sleep 2; echo done",
    )  # fmt: skip
    lab.kubectl(
        "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/printer", "--timeout=60s", *ns, timeout=90
    )
    assert lab.kubectl("logs", "printer", *ns).stdout.splitlines() == ["start", "done"]
    assert lab.kubectl("logs", "printer", "--tail=1", *ns).stdout.splitlines() == ["done"]

    lab.kubectl(
        "run", "ticker", "--image=busybox", *ns, "--",
        "sh", "-c", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 1; done",
    )  # fmt: skip
    lab.kubectl("wait", "--for=condition=Ready", "pod/ticker", "--timeout=60s", *ns, timeout=90)
    follow = subprocess.Popen(
        [str(KUBECTL), "--kubeconfig", str(lab.kubeconfig), "logs", "-f", "ticker", *ns],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follow.stdout is not None
        lines = [follow.stdout.readline().strip() for _ in range(3)]
    finally:
        follow.kill()
        follow.wait()
    assert all(line.startswith("tick ") for line in lines), lines
    numbers = [int(line.split()[1]) for line in lines]
    assert numbers == sorted(numbers) and len(set(numbers)) == 3, "logs -f streams new lines as they come"


def test_cordon_and_drain_move_the_pods_to_other_nodes(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    lab.kubectl("create", "deployment", "spread", "--image=nginx", "--replicas=3", *ns)
    lab.kubectl("rollout", "status", "deployment/spread", "--timeout=60s", *ns, timeout=90)
    node = str(pods_of(lab, namespace, "app=spread")[0]["spec"]["nodeName"])
    try:
        assert f"node/{node} cordoned" in lab.kubectl("cordon", node).stdout
        assert lab.kubectl_json("get", "node", node)["spec"]["unschedulable"] is True
        # Only this test's pods: other tests' pods may share the node.
        out = lab.kubectl(
            "drain", node, "--pod-selector=app=spread", "--ignore-daemonsets", "--delete-emptydir-data",
            "--timeout=60s", timeout=90,
        ).stdout  # fmt: skip
        assert f"node/{node} drained" in out

        def replaced() -> list[dict[str, Any]]:
            pods = pods_of(lab, namespace, "app=spread")
            alive = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
            running = [p for p in alive if p["status"].get("phase") == "Running"]
            return running if len(running) == 3 and len(alive) == 3 else []

        running = lab.eventually(replaced, "three Running replicas after the drain")
        assert all(p["spec"]["nodeName"] != node for p in running)
    finally:
        lab.kubectl("uncordon", node)
    assert "unschedulable" not in lab.kubectl_json("get", "node", node)["spec"]


def test_deleting_a_namespace_removes_everything_in_it(lab: LiveLab) -> None:
    lab.kubectl("create", "namespace", "doomed-ns")
    lab.kubectl("create", "configmap", "settings", "--from-literal=a=1", "-n", "doomed-ns")
    lab.kubectl("create", "deployment", "app", "--image=nginx", "--replicas=2", "-n", "doomed-ns")
    lab.kubectl("rollout", "status", "deployment/app", "--timeout=60s", "-n", "doomed-ns", timeout=90)
    assert (
        lab.kubectl_json("get", "serviceaccount", "default", "-n", "doomed-ns")["metadata"]["name"]
        == "default"
    )

    lab.kubectl("delete", "namespace", "doomed-ns", "--timeout=90s", timeout=120)
    gone = lab.kubectl("get", "namespace", "doomed-ns", check=False)
    assert gone.returncode == 1 and "NotFound" in gone.stderr
    leftover = json.loads(lab.kubectl("get", "pods,configmaps", "-n", "doomed-ns", "-o", "json").stdout)
    assert leftover["items"] == []


def test_a_pod_too_big_for_every_node_stays_pending_with_upstreams_message(
    lab: LiveLab, namespace: str
) -> None:
    ns = ("-n", namespace)
    lab.kubectl("run", "huge", "--image=nginx", "--overrides",
                '{"spec":{"containers":[{"name":"huge","image":"nginx","resources":{"requests":{"cpu":"64"}}}]}}',
                *ns)  # fmt: skip
    lab.kubectl("wait", "--for=condition=PodScheduled=False", "pod/huge", "--timeout=60s", *ns, timeout=90)
    described = lab.kubectl("describe", "pod", "huge", *ns).stdout
    assert "FailedScheduling" in described
    assert (
        "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "3 Insufficient cpu." in described
    )


def test_cordon_and_uncordon_are_events_of_the_node(lab: LiveLab) -> None:
    node = "node-2"

    def reasons() -> list[str]:
        listed = lab.kubectl_json("get", "events", "--field-selector", f"involvedObject.name={node}")
        return [
            e["reason"] for e in listed["items"] if e["reason"] in ("NodeNotSchedulable", "NodeSchedulable")
        ]

    lab.kubectl("cordon", node)
    try:
        lab.eventually(lambda: "NodeNotSchedulable" in reasons(), "the kubelet's NodeNotSchedulable event")
    finally:
        lab.kubectl("uncordon", node)
    lab.eventually(lambda: reasons()[-1:] == ["NodeSchedulable"], "the kubelet's NodeSchedulable event")
    listed = lab.kubectl_json(
        "get", "events", "--field-selector", f"involvedObject.name={node},reason=NodeSchedulable"
    )
    assert listed["items"][0]["message"] == f"Node {node} status is now: NodeSchedulable"
    assert listed["items"][0]["source"]["component"] == "kubelet"


def test_pods_say_which_generation_their_status_saw(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    lab.kubectl("run", "observed", "--image=nginx", *ns)
    lab.kubectl("wait", "--for=condition=Ready", "pod/observed", "--timeout=60s", *ns, timeout=90)
    pod = lab.kubectl_json("get", "pod", "observed", *ns)
    generation = pod["metadata"]["generation"]
    assert pod["status"]["observedGeneration"] == generation
    conditions = {c["type"]: c.get("observedGeneration") for c in pod["status"]["conditions"]}
    assert conditions == dict.fromkeys(
        ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"), generation
    )
