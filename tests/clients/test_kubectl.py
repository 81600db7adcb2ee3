"""kubectl 1.37, unmodified, against the lab's API server over HTTPS."""

from __future__ import annotations

import base64
import json
import textwrap

from prometheus_client.parser import text_string_to_metric_families

from tests.support.lab import LiveLab


def test_version_and_discovery(lab: LiveLab) -> None:
    version = json.loads(lab.kubectl("version", "-o", "json").stdout)
    assert version["serverVersion"]["minor"] == "37"
    resources = lab.kubectl("api-resources").stdout
    assert "deployments" in resources and "deploy" in resources and "apps/v1" in resources


def test_get_prints_upstreams_columns(lab: LiveLab) -> None:
    manifest = textwrap.dedent(
        """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: columns}
        data: {a: "1", b: "2"}
        """
    )
    lab.kubectl("create", "-f", "-", "--validate=false", input=manifest)
    out = lab.kubectl("get", "configmaps").stdout.splitlines()
    assert out[0].split() == ["NAME", "DATA", "AGE"]
    assert any(line.split()[:2] == ["columns", "2"] for line in out[1:])
    assert lab.kubectl_json("get", "configmap", "columns")["data"] == {"a": "1", "b": "2"}


def test_get_of_a_missing_object_prints_upstreams_error(lab: LiveLab) -> None:
    result = lab.kubectl("get", "configmap", "nope", check=False)
    assert result.returncode == 1
    assert 'Error from server (NotFound): configmaps "nope" not found' in result.stderr


def test_status_lines_carry_gos_reason_phrases(lab: LiveLab) -> None:
    # kubectl -v=6 prints each response's status line as the server wrote it: Go's http.StatusText,
    # not Twisted's "422 Unknown Status" (controlplane/management/httpstatus.py)
    manifest = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Not_A_Name"}}'
    invalid = lab.kubectl("create", "-f", "-", "--validate=false", "-v=6", input=manifest, check=False)
    assert invalid.returncode == 1
    assert 'status="422 Unprocessable Entity"' in invalid.stderr, invalid.stderr
    missing = lab.kubectl("get", "configmap", "nope", "-v=6", check=False)
    assert 'status="404 Not Found"' in missing.stderr, missing.stderr


def test_delete(lab: LiveLab) -> None:
    manifest = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"doomed"}}'
    lab.kubectl("create", "-f", "-", "--validate=false", input=manifest)
    out = lab.kubectl("delete", "configmap", "doomed").stdout
    assert 'configmap "doomed" deleted' in out
    assert lab.kubectl("get", "configmap", "doomed", check=False).returncode == 1


def test_get_raw_health_endpoints_list_their_checks(lab: LiveLab) -> None:
    assert lab.kubectl("get", "--raw", "/livez").stdout == "ok"
    readyz = lab.kubectl("get", "--raw", "/readyz?verbose").stdout.splitlines()
    assert readyz[:3] == ["[+]ping ok", "[+]log ok", "[+]etcd ok"]
    assert "[+]informer-sync ok" in readyz and "[+]poststarthook/rbac/bootstrap-roles ok" in readyz
    assert readyz[-2:] == ["[+]shutdown ok", "readyz check passed"]
    assert lab.kubectl("get", "--raw", "/livez/ping").stdout == "ok"
    missing = lab.kubectl("get", "--raw", "/readyz/nope", check=False)
    assert missing.returncode == 1
    assert "the server could not find the requested resource" in missing.stderr


def test_get_raw_metrics_prints_prometheus_text(lab: LiveLab) -> None:
    text = lab.kubectl("get", "--raw", "/metrics").stdout
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["apiserver_request"].type == "counter"
    assert families["apiserver_request_duration_seconds"].type == "histogram"
    assert any(s.labels.get("name") == "replicaset" for s in families["workqueue_depth"].samples)


def test_kubectls_requests_are_in_the_audit_log(lab: LiveLab) -> None:
    lab.kubectl("create", "configmap", "audited", "--from-literal=k=v")
    log = lab.data_dir / "clusters" / "demo" / "audit" / "audit.log"

    def created() -> list[dict[str, object]]:
        lines = log.read_text().splitlines() if log.exists() else []
        events = [json.loads(line) for line in lines]
        return [
            e for e in events if e["verb"] == "create" and e.get("objectRef", {}).get("name") == "audited"
        ]

    (event,) = lab.eventually(created, "the create in the audit log")  # written within 50 ms
    assert event["level"] == "Metadata" and event["stage"] == "ResponseComplete"
    assert str(event["userAgent"]).startswith("kubectl/v1.37")
    assert isinstance(event["user"], dict) and event["user"]["username"] == "admin"
    assert "requestObject" not in event  # ConfigMaps are recorded at Metadata: their data is not


def test_every_namespace_has_the_ca_that_verifies_the_api_server(lab: LiveLab) -> None:
    """``kube-root-ca.crt`` (the root CA certificate publisher's) holds the CA that kubectl itself
    trusts: the one in its kubeconfig, the lab's serving CA."""

    def listed() -> list[str]:
        lines = lab.kubectl("get", "cm", "-n", "default").stdout.splitlines()
        return [line for line in lines[1:] if line.split()[0] == "kube-root-ca.crt"]

    [line] = lab.eventually(listed, "kube-root-ca.crt in kubectl get cm -n default")
    assert line.split()[:2] == ["kube-root-ca.crt", "1"]  # NAME DATA
    configmap = lab.kubectl_json("get", "configmap", "kube-root-ca.crt", "-n", "kube-public")
    trusted = lab.kubectl(
        "config", "view", "--raw", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}"
    )
    assert configmap["data"] == {"ca.crt": base64.b64decode(trusted.stdout).decode()}
    assert configmap["data"]["ca.crt"] == (lab.data_dir / "pki" / "serving-ca.crt").read_text()
    assert configmap["metadata"]["annotations"]["kubernetes.io/description"].startswith(
        "Contains a CA bundle that can be used to verify the kube-apiserver"
    )


def test_debug_says_the_cluster_has_no_ephemeral_containers(lab: LiveLab) -> None:
    # kubectl debug reads the 404's details to tell this case apart; without them it panicked.
    manifest = (
        '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"debugged"},'
        '"spec":{"containers":[{"name":"c","image":"nginx"}]}}'
    )
    lab.kubectl("create", "-f", "-", "--validate=false", input=manifest)
    result = lab.kubectl("debug", "debugged", "--image=busybox", "-c", "dbg", check=False)
    assert result.returncode == 1
    assert "panic" not in result.stderr, result.stderr
    assert "ephemeral containers are disabled for this cluster" in result.stderr, result.stderr
