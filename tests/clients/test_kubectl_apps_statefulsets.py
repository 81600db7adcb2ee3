"""kubectl 1.37 and StatefulSets on the demo cluster of the session's lab.

The pods come up one by one (``OrderedReady``) under stable names; ``kubectl rollout`` reads the
StatefulSet's status for ``status`` and its ControllerRevisions for ``history`` and ``undo``;
``kubectl scale`` goes through the ``scale`` subresource and removes the highest ordinals.
"""

from __future__ import annotations

from tests.support.lab import LiveLab

MANIFEST = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  replicas: 3
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1"}]
"""


def images(lab: LiveLab, ns: tuple[str, str]) -> dict[str, str]:
    pods = lab.kubectl_json("get", "pods", "-l", "app=web", *ns)["items"]
    return {
        p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
    }


def test_a_statefulset_starts_in_order_rolls_out_and_back_and_scales(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    assert lab.kubectl("apply", "-f", "-", *ns, input=MANIFEST).stdout == "statefulset.apps/web created\n"
    status = lab.kubectl("rollout", "status", "sts/web", "--timeout=60s", *ns, timeout=90).stdout
    assert status.endswith("partitioned roll out complete: 3 new pods have been updated...\n")
    header, row = lab.kubectl("get", "sts", *ns).stdout.splitlines()
    assert header.split() == ["NAME", "READY", "AGE"]
    assert row.split()[:2] == ["web", "3/3"]
    assert images(lab, ns) == {"web-0": "nginx:1", "web-1": "nginx:1", "web-2": "nginx:1"}
    pods = {p["metadata"]["name"]: p for p in lab.kubectl_json("get", "pods", "-l", "app=web", *ns)["items"]}
    created = [pods[f"web-{i}"]["metadata"]["creationTimestamp"] for i in range(3)]
    assert created == sorted(created), "ordinal order"
    assert pods["web-1"]["spec"]["hostname"] == "web-1" and pods["web-1"]["spec"]["subdomain"] == "web"
    described = lab.kubectl("describe", "sts", "web", *ns).stdout
    assert "Pod Management Policy:  OrderedReady" in described
    assert "Pods Status:    3 Running / 0 Waiting / 0 Succeeded / 0 Failed" in described
    assert "create Pod web-0 in StatefulSet web successful" in described

    lab.kubectl("set", "image", "sts/web", "web=nginx:2", *ns)
    lab.kubectl("rollout", "status", "sts/web", "--timeout=60s", *ns, timeout=90)
    assert set(images(lab, ns).values()) == {"nginx:2"}
    history = lab.kubectl("rollout", "history", "sts/web", *ns).stdout.splitlines()
    assert [line.split()[0] for line in history[2:] if line.strip()] == ["1", "2"]
    assert lab.kubectl("rollout", "undo", "sts/web", *ns).stdout == "statefulset.apps/web rolled back\n"
    lab.kubectl("rollout", "status", "sts/web", "--timeout=60s", *ns, timeout=90)
    assert set(images(lab, ns).values()) == {"nginx:1"}
    history = lab.kubectl("rollout", "history", "sts/web", *ns).stdout.splitlines()
    assert [line.split()[0] for line in history[2:] if line.strip()] == ["2", "3"]
    same = lab.kubectl("rollout", "undo", "sts/web", "--to-revision=3", *ns, check=False)
    assert "skipped rollback (current template already matches revision 3)" in same.stdout

    assert lab.kubectl("scale", "sts/web", "--replicas=1", *ns).stdout == "statefulset.apps/web scaled\n"
    lab.kubectl("wait", "--for=delete", "pod/web-2", "pod/web-1", "--timeout=60s", *ns, timeout=90)
    assert list(images(lab, ns)) == ["web-0"]
    refused = lab.kubectl("patch", "sts", "web", "-p", '{"spec":{"serviceName":"other"}}', *ns, check=False)
    assert "updates to statefulset spec for fields other than 'replicas'" in refused.stderr
    assert 'statefulset.apps "web" deleted' in lab.kubectl("delete", "sts", "web", *ns).stdout
    lab.kubectl("wait", "--for=delete", "pod/web-0", "--timeout=60s", *ns, timeout=90)


def test_volume_claim_templates_give_each_pod_its_own_bound_claim(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    manifest = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - {name: db, image: "postgres:16", volumeMounts: [{name: data, mountPath: /var/lib/postgresql}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"""
    lab.kubectl("apply", "-f", "-", *ns, input=manifest)
    lab.kubectl("rollout", "status", "sts/db", "--timeout=60s", *ns, timeout=90)
    claims = {c["metadata"]["name"]: c for c in lab.kubectl_json("get", "pvc", *ns)["items"]}
    assert sorted(claims) == ["data-db-0", "data-db-1"]
    assert {c["status"]["phase"] for c in claims.values()} == {"Bound"}
    pod = lab.kubectl_json("get", "pod", "db-1", *ns)
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}} in pod["spec"]["volumes"]
    described = lab.kubectl("describe", "sts", "db", *ns).stdout
    assert "create Claim data-db-0 Pod db-0 in StatefulSet db success" in described
    # Deleting the set keeps the claims (whenDeleted: Retain).
    lab.kubectl("delete", "sts", "db", *ns)
    lab.kubectl("wait", "--for=delete", "pod/db-0", "pod/db-1", "--timeout=60s", *ns, timeout=90)
    assert sorted(c["metadata"]["name"] for c in lab.kubectl_json("get", "pvc", *ns)["items"]) == [
        "data-db-0",
        "data-db-1",
    ]
