"""kubectl 1.37 and kube-system as kubeadm leaves it: kube-proxy on every node, two CoreDNS pods behind
``kube-dns``, the control plane's mirror pods on the ``control-plane`` node, and the deprecated
componentstatuses, on the demo cluster of the session's lab; the ConfigMaps kubeadm init uploads
(kubeadm-config, kubelet-config, cluster-info signed by the bootstrap signer) and the API server's
extension-apiserver-authentication, and who may read them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
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


# -- what kubeadm init uploads, and the ConfigMaps its control plane keeps ---------------------------


def test_get_cm_lists_kubeadms_uploads_and_the_control_planes_configmaps(lab: LiveLab) -> None:
    def listed() -> dict[tuple[str, str], str] | None:
        rows = [line.split() for line in lab.kubectl("get", "cm", "-A").stdout.splitlines()]
        found = {(r[0], r[1]): r[2] for r in rows[1:]}
        # cluster-info: its kubeconfig and a signature per bootstrap token (the joined nodes' one).
        return found if int(found.get(("kube-public", "cluster-info"), "0")) >= 2 else None

    found = lab.eventually(listed, "kube-public/cluster-info signed by the bootstrap signer")
    assert lab.kubectl("get", "cm", "-A").stdout.splitlines()[0].split() == [
        "NAMESPACE",
        "NAME",
        "DATA",
        "AGE",
    ]
    for key in [
        ("kube-system", "kubeadm-config"),
        ("kube-system", "kubelet-config"),
        ("kube-system", "extension-apiserver-authentication"),
    ]:
        assert found[key] == "1", (key, found)
    cluster_configuration = lab.kubectl(
        "get", "cm", "kubeadm-config", *KS, "-o", "jsonpath={.data.ClusterConfiguration}"
    ).stdout
    assert "apiVersion: kubeadm.k8s.io/v1beta4\n" in cluster_configuration
    assert "kubernetesVersion: v1.37.0\n" in cluster_configuration
    assert "  podSubnet: 10.244.0.0/14\n  serviceSubnet: 10.96.0.0/12\n" in cluster_configuration
    kubelet = lab.kubectl("get", "cm", "kubelet-config", *KS, "-o", "jsonpath={.data.kubelet}").stdout
    assert "clusterDNS:\n- 10.96.0.10\n" in kubelet
    # The lab's classroom timers, as its kubelets run them.
    assert "nodeStatusUpdateFrequency: 2s\n" in kubelet and "nodeLeaseDurationSeconds: 8\n" in kubelet
    client_ca = lab.kubectl(
        "get", "cm", "extension-apiserver-authentication", *KS, "-o", "jsonpath={.data.client-ca-file}"
    ).stdout
    assert client_ca == (lab.data_dir / "clusters" / "demo" / "pki" / "ca.crt").read_text()


def test_cluster_info_is_what_a_joining_node_verifies_with_its_token(lab: LiveLab) -> None:
    def signed() -> dict[str, str] | None:
        data: dict[str, str] = lab.kubectl_json("get", "cm", "cluster-info", "-n", "kube-public")["data"]
        return data if any(key.startswith("jws-kubeconfig-") for key in data) else None

    data = lab.eventually(signed, "cluster-info signed")
    kubeconfig = data["kubeconfig"]
    serving_ca = (lab.data_dir / "pki" / "serving-ca.crt").read_bytes()
    assert kubeconfig == (
        "apiVersion: v1\n"
        "clusters:\n"
        "- cluster:\n"
        f"    certificate-authority-data: {base64.b64encode(serving_ca).decode()}\n"
        f"    server: https://172.18.0.1:{lab.api}/clusters/demo\n"
        '  name: ""\n'
        "contexts: null\n"
        'current-context: ""\n'
        "kind: Config\n"
        "users: null\n"
    )
    # kubectl reads it as a kubeconfig, and writes it back the same (client-go's clientcmd.Write).
    path = lab.data_dir / "cluster-info.kubeconfig"
    path.write_text(kubeconfig)
    assert lab.kubectl("config", "view", "--raw", "--kubeconfig", str(path)).stdout == kubeconfig

    # Each signature is the token's detached JWS of the kubeconfig: check it as kubeadm join does.
    tokens = lab.kubectl_json(
        "get", "secrets", *KS, "--field-selector", "type=bootstrap.kubernetes.io/token"
    )["items"]
    secrets = {
        base64.b64decode(s["data"]["token-id"]).decode(): base64.b64decode(s["data"]["token-secret"]).decode()
        for s in tokens
        if base64.b64decode(s["data"].get("usage-bootstrap-signing", "")) == b"true"
    }
    signatures = {k.removeprefix("jws-kubeconfig-"): v for k, v in data.items() if k != "kubeconfig"}
    assert signatures and set(signatures) <= set(secrets), (signatures, secrets)
    for token_id, signature in signatures.items():
        header, empty, mac = signature.split(".")
        assert empty == "" and json.loads(base64.urlsafe_b64decode(header + "==")) == {
            "alg": "HS256",
            "kid": token_id,
        }
        payload = base64.urlsafe_b64encode(kubeconfig.encode()).rstrip(b"=")
        expected = hmac.new(secrets[token_id].encode(), header.encode() + b"." + payload, hashlib.sha256)
        assert mac == base64.urlsafe_b64encode(expected.digest()).rstrip(b"=").decode()


def test_cluster_info_is_for_anonymous_readers_and_nothing_else_is(lab: LiveLab) -> None:
    # The GETs kubeadm join makes (client-go, no discovery: system:anonymous may not discover the API).
    public = "/api/v1/namespaces/kube-public/configmaps"
    anonymous = ("--as", "system:anonymous", "--as-group", "system:unauthenticated")
    got = json.loads(lab.kubectl("get", "--raw", f"{public}/cluster-info", *anonymous).stdout)
    assert got["metadata"]["name"] == "cluster-info" and "kubeconfig" in got["data"]
    refused = lab.kubectl("get", "--raw", public, *anonymous, check=False)
    assert refused.returncode != 0
    assert (
        'configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" '
        'in the namespace "kube-public"' in refused.stderr
    ), refused.stderr
    joining = (
        "--as",
        "system:bootstrap:abcdef",
        "--as-group",
        "system:bootstrappers:kubeadm:default-node-token",
    )
    system = "/api/v1/namespaces/kube-system/configmaps"
    for name in ("kubeadm-config", "kubelet-config"):
        assert json.loads(lab.kubectl("get", "--raw", f"{system}/{name}", *joining).stdout)["data"]
    assert lab.kubectl("get", "--raw", f"{system}/coredns", *joining, check=False).returncode != 0
    # The lab's API server refuses requests without credentials (kube-apiserver's --anonymous-auth=false):
    # a client with none, as a joining node is, gets 401 rather than cluster-info. It does trust the server
    # with the CA cluster-info gave it: the TLS handshake succeeds, the request is refused.
    ca = base64.b64decode(
        lab.kubectl("get", "cm", "cluster-info", "-n", "kube-public", "-o", "jsonpath={.data.kubeconfig}")
        .stdout.split("certificate-authority-data: ")[1]
        .split()[0]
    )
    (lab.data_dir / "cluster-info-ca.crt").write_bytes(ca)
    empty = lab.data_dir / "no-credentials.kubeconfig"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    # (Over TLS kubectl asks a user with no credential for a name and password on the terminal; a Basic
    # one is no credential to kube-apiserver, which dropped basic authentication in 1.19.)
    nobody = lab.kubectl(
        "--kubeconfig", str(empty), "--server", lab.server,
        "--certificate-authority", str(lab.data_dir / "cluster-info-ca.crt"),
        "--username", "joining-node", "--password", "none",
        "get", "--raw", "/api/v1/namespaces/kube-public/configmaps/cluster-info", check=False,
    )  # fmt: skip
    assert nobody.returncode != 0
    assert "error: You must be logged in to the server (Unauthorized)" in nobody.stderr, nobody.stderr
