"""kubectl 1.37 and kube-system as kubeadm leaves it: kube-proxy on every node, two CoreDNS pods behind
``kube-dns``, the control plane's mirror pods on the ``control-plane`` node, and the deprecated
componentstatuses, on the demo cluster of the session's lab."""

from __future__ import annotations

import re

from tests.support.lab import LiveLab

KS = ("-n", "kube-system")


MIRRORS = [
    "etcd-control-plane",
    "kube-apiserver-control-plane",
    "kube-controller-manager-control-plane",
    "kube-scheduler-control-plane",
]


def test_kube_system_lists_kube_proxy_on_every_node_and_two_coredns_pods(lab: LiveLab) -> None:
    def running() -> list[list[str]] | None:
        rows = [line.split() for line in lab.kubectl("get", "pods", *KS).stdout.splitlines()[1:]]
        ready = [r for r in rows if r[1] == "1/1" and r[2] == "Running"]
        return rows if len(ready) == 10 == len(rows) else None

    # As on a fresh kubeadm cluster: CoreDNS, the control plane's static pods, kube-proxy on 4 nodes.
    rows = lab.eventually(running, "kube-system's ten pods Running and Ready")
    names = sorted(r[0] for r in rows)
    assert [n for n in names if re.fullmatch(r"coredns-[a-z0-9]{8,10}-[a-z0-9]{5}", n)] == names[:2]
    assert [n for n in names if n.endswith("-control-plane")] == MIRRORS
    proxies = [n for n in names if n.startswith("kube-proxy-")]
    assert len(proxies) == 4 and all(re.fullmatch(r"kube-proxy-[a-z0-9]{5}", n) for n in proxies), names
    wide = lab.kubectl("get", "pods", "-l", "k8s-app=kube-proxy", "-o", "wide", *KS).stdout.splitlines()[1:]
    assert sorted(line.split()[6] for line in wide) == ["control-plane", "node-1", "node-2", "node-3"]


def test_get_nodes_shows_the_control_plane_node_with_its_role(lab: LiveLab) -> None:
    def ready() -> list[list[str]] | None:
        rows = [line.split() for line in lab.kubectl("get", "nodes").stdout.splitlines()[1:]]
        done = len(rows) == 4 and all(r[1] == "Ready" for r in rows) and rows[0][2] == "control-plane"
        return rows if done else None

    rows = lab.eventually(ready, "four Ready nodes, control-plane with its role")
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
        ("control-plane", "Ready", "control-plane", "v1.37.0"),
        ("node-1", "Ready", "<none>", "v1.37.0"),
        ("node-2", "Ready", "<none>", "v1.37.0"),
        ("node-3", "Ready", "<none>", "v1.37.0"),
    ]
    taints = lab.kubectl("get", "node", "control-plane", "-o", "jsonpath={.spec.taints}").stdout
    assert '"key":"node-role.kubernetes.io/control-plane"' in taints and '"effect":"NoSchedule"' in taints


def test_the_scheduler_mirror_pod_and_its_logs(lab: LiveLab) -> None:
    def described() -> str | None:
        out = lab.kubectl("get", "pod", "kube-scheduler-control-plane", *KS, "-o", "wide").stdout
        return out if " 1/1 " in out and "Running" in out else None

    wide = lab.eventually(described, "the scheduler's mirror pod Running and Ready").splitlines()
    assert wide[1].split()[6] == "control-plane"
    labels = lab.kubectl("get", "pods", *KS, "-l", "tier=control-plane", "-o", "name").stdout.split()
    assert labels == [f"pod/{name}" for name in MIRRORS]
    path = (
        "jsonpath={.metadata.annotations.kubernetes\\.io/config\\.source} {.metadata.ownerReferences[0].kind}"
    )
    mirror = lab.kubectl("get", "pod", "kube-scheduler-control-plane", *KS, "-o", path).stdout
    assert mirror == "file Node"
    logs = lab.kubectl("logs", *KS, "kube-scheduler-control-plane").stdout
    assert '"Starting Kubernetes Scheduler" version="v1.37.0"' in logs
    assert re.search(r"^I\d{4} \d\d:\d\d:\d\d\.\d{6} +1 server\.go:\d+\] ", logs, re.MULTILINE), logs


def test_kube_system_has_the_kube_proxy_daemonset_coredns_and_kube_dns(lab: LiveLab) -> None:
    def settled() -> str | None:
        out = lab.kubectl("get", "ds,deploy,svc", *KS).stdout
        return (
            out if "daemonset.apps/kube-proxy   4         4         4       4            4" in out else None
        )

    out = lab.eventually(settled, "the kube-proxy DaemonSet with 4 pods ready (the control-plane node too)")
    lines = out.splitlines()
    assert lines[0].split() == [
        "NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE", "SELECTOR", "AGE",
    ]  # fmt: skip
    assert lines[1].split()[:7] == [
        "daemonset.apps/kube-proxy",
        "4",
        "4",
        "4",
        "4",
        "4",
        "kubernetes.io/os=linux",
    ]
    deploy = next(line.split() for line in lines if line.startswith("deployment.apps/coredns"))
    assert deploy[:4] == ["deployment.apps/coredns", "2/2", "2", "2"]
    svc = next(line.split() for line in lines if line.startswith("service/kube-dns"))
    assert svc[:5] == ["service/kube-dns", "ClusterIP", "10.96.0.10", "<none>", "53/UDP,53/TCP,9153/TCP"]
    corefile = lab.kubectl("get", "configmap", "coredns", *KS, "-o", "jsonpath={.data.Corefile}").stdout
    assert "kubernetes cluster.local in-addr.arpa ip6.arpa {" in corefile
    everything = lab.kubectl("get", "all", "-A").stdout
    for kind in ("pod/kube-proxy-", "pod/coredns-", "service/kube-dns", "daemonset.apps/kube-proxy"):
        assert kind in everything, kind
    assert "deployment.apps/coredns" in everything and "replicaset.apps/coredns-" in everything


def test_componentstatuses_are_served_deprecated_with_their_health(lab: LiveLab) -> None:
    result = lab.kubectl("get", "componentstatuses")
    assert result.stderr == "Warning: v1 ComponentStatus is deprecated in v1.19+\n"
    lines = [line.split() for line in result.stdout.splitlines()]
    assert lines == [
        ["NAME", "STATUS", "MESSAGE", "ERROR"],
        ["controller-manager", "Healthy", "ok"],
        ["etcd-0", "Healthy", "ok"],
        ["scheduler", "Healthy", "ok"],
    ]
    one = lab.kubectl("get", "cs", "scheduler", "-o", "json")
    assert "deprecated" in one.stderr
    assert '"type": "Healthy"' in one.stdout and '"status": "True"' in one.stdout
    refused = lab.kubectl("delete", "cs", "scheduler", check=False)
    assert refused.returncode != 0
    assert "(MethodNotAllowed): delete is not supported" in refused.stderr, "read-only: get and list"


def test_endpoints_are_served_deprecated(lab: LiveLab) -> None:
    result = lab.kubectl("get", "endpoints", "kubernetes")
    assert (
        result.stderr
        == "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\n"
    )
    assert result.stdout.splitlines()[0].split() == ["NAME", "ENDPOINTS", "AGE"]
    assert lab.kubectl("get", "endpointslices").stderr == ""
