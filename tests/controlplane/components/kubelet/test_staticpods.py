"""The pure parts of static pods: kubeadm's manifests as the kubelet reads them, the mirror pod it
creates, the container history a mirror pod's status comes from, and kubeadm's mark of the node."""

from __future__ import annotations

from controlplane.components.kubelet.lifecycle import Running, Terminated, Waiting
from controlplane.components.kubelet.staticpods import (
    CONFIG_HASH_ANNOTATION,
    CONFIG_MIRROR_ANNOTATION,
    ContainerRuns,
    is_mirror_pod,
    kubeadm_manifests,
    mark_control_plane_patch,
    mirror_pod,
    static_pod,
)


def test_a_manifest_becomes_a_static_pod_named_after_its_node_with_its_hash_as_uid() -> None:
    manifests = kubeadm_manifests("172.18.0.1")
    assert [m["metadata"]["name"] for m in manifests] == [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
    ]
    pod = static_pod(manifests[3], "control-plane", seen=0.0)
    meta = pod["metadata"]
    assert meta["name"] == "kube-scheduler-control-plane" and pod["spec"]["nodeName"] == "control-plane"
    assert meta["uid"] == meta["annotations"][CONFIG_HASH_ANNOTATION] and len(meta["uid"]) == 32
    assert meta["annotations"]["kubernetes.io/config.source"] == "file"
    # The same file gives the same pod whenever it is read; another file another hash.
    assert static_pod(manifests[3], "control-plane", seen=99.0)["metadata"]["uid"] == meta["uid"]
    assert static_pod(manifests[2], "control-plane", seen=0.0)["metadata"]["uid"] != meta["uid"]
    assert "--advertise-address=172.18.0.1" in manifests[1]["spec"]["containers"][0]["command"]


def test_the_mirror_pod_is_owned_by_the_node_and_carries_the_hash() -> None:
    pod = static_pod(kubeadm_manifests("172.18.0.1")[0], "control-plane", seen=0.0)
    mirror = mirror_pod(pod, "node-uid")
    assert is_mirror_pod(mirror) and not is_mirror_pod(pod)
    assert "uid" not in mirror["metadata"], "the API server gives the mirror pod a UID of its own"
    assert mirror["metadata"]["annotations"][CONFIG_MIRROR_ANNOTATION] == pod["metadata"]["uid"]
    assert mirror["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "control-plane", "uid": "node-uid", "controller": True}
    ]


def test_the_container_history_gives_running_stopped_restarted_and_crash_looping() -> None:
    runs = ContainerRuns("kube-scheduler", "seed")
    image = "registry.k8s.io/kube-scheduler:v1.37.0"
    assert runs.snapshot(image, "p").state == Waiting("ContainerCreating")
    runs.started(10.0, "172.18.0.1")
    running = runs.snapshot(image, "p")
    assert running.state == Running(10.0) and running.ready and running.restart_count == 0
    runs.stopped(20.0, crashed=False)
    stopped = runs.snapshot(image, "p")
    assert isinstance(stopped.state, Terminated) and stopped.state.exit_code == 0 and not stopped.ready
    runs.started(30.0, "172.18.0.1")
    again = runs.snapshot(image, "p")
    assert again.restart_count == 1 and again.ready and again.last_state == stopped.state
    runs.stopped(40.0, crashed=True, backoff="20s")
    crashed = runs.snapshot(image, "p")
    assert crashed.state == Waiting(
        "CrashLoopBackOff", "back-off 20s restarting failed container=kube-scheduler pod=p"
    )
    assert crashed.last_state is not None and crashed.last_state.exit_code == 1
    log = runs.log(previous=True)
    assert log is not None and "simulated crash" in log.lines[-1].text
    assert runs.snapshot(image, "p").restart_count == 1, "a restart is counted when it happens"
    assert runs.first_start == 10.0
    # The first crash is restarted at once: until then the container is terminated with its error.
    runs.started(50.0, "172.18.0.1")
    runs.stopped(55.0, crashed=True)
    at_once = runs.snapshot(image, "p")
    assert isinstance(at_once.state, Terminated) and at_once.state.reason == "Error"
    assert at_once.restart_count == 2


def test_kubeadm_marks_the_node_once() -> None:
    patch = mark_control_plane_patch({"metadata": {"labels": {}}, "spec": {}})
    assert patch == {
        "metadata": {
            "labels": {
                "node-role.kubernetes.io/control-plane": "",
                "node.kubernetes.io/exclude-from-external-load-balancers": "",
            }
        },
        "spec": {"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
    }
    marked = {"metadata": patch["metadata"], "spec": patch["spec"]}
    assert mark_control_plane_patch(marked) is None
