"""kubectl 1.37 and the remaining everyday kinds: ReplicationControllers (with ``kubectl scale``),
PersistentVolumeClaims bound by the simulated provisioner of the default ``standard`` StorageClass,
PersistentVolumes, Ingresses, IngressClasses, NetworkPolicies and PodTemplates, on the demo cluster
of the session's lab. kubectl's own ``wait`` does the waiting."""

from __future__ import annotations

from tests.support.lab import LiveLab

RC = """
apiVersion: v1
kind: ReplicationController
metadata: {name: web}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx}]
"""


def test_a_replication_controller_runs_scales_and_goes(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    assert lab.kubectl("apply", "-f", "-", *ns, input=RC).stdout == "replicationcontroller/web created\n"
    lab.kubectl(
        "wait", "--for=jsonpath={.status.readyReplicas}=2", "rc/web", "--timeout=60s", *ns, timeout=90
    )
    header, row = lab.kubectl("get", "rc", *ns).stdout.splitlines()
    assert header.split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert row.split()[:4] == ["web", "2", "2", "2"]
    wide = lab.kubectl("get", "rc", "web", "-o", "wide", *ns).stdout.splitlines()
    assert wide[0].split()[5:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1].split()[5:] == ["nginx", "nginx", "app=web"]
    described = lab.kubectl("describe", "rc", "web", *ns).stdout
    assert "Selector:     app=web" in described
    assert "Replicas:     2 current / 2 desired" in described
    assert "SuccessfulCreate" in described and "replication-controller" in described

    assert lab.kubectl("scale", "rc", "web", "--replicas=3", *ns).stdout == (
        "replicationcontroller/web scaled\n"
    )
    lab.kubectl(
        "wait", "--for=jsonpath={.status.readyReplicas}=3", "rc/web", "--timeout=60s", *ns, timeout=90
    )
    pods = lab.kubectl_json("get", "pods", "-l", "app=web", *ns)["items"]
    assert len(pods) == 3
    assert {p["metadata"]["ownerReferences"][0]["kind"] for p in pods} == {"ReplicationController"}

    invalid = lab.kubectl(
        "apply",
        "-f",
        "-",
        *ns,
        check=False,
        input=RC.replace("name: web}", "name: bad}").replace(
            "replicas: 2", "replicas: 2\n  selector: {app: other}"
        ),
    )
    assert "spec.template.metadata.labels: Invalid value" in invalid.stderr
    assert "`selector` does not match template `labels`" in invalid.stderr

    assert 'replicationcontroller "web" deleted' in lab.kubectl("delete", "rc", "web", *ns).stdout
    for pod in pods:
        lab.kubectl(
            "wait", "--for=delete", f"pod/{pod['metadata']['name']}", "--timeout=60s", *ns, timeout=90
        )


PVC = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
"""


def test_a_claim_is_bound_by_the_default_class_provisioner(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    header, row = lab.kubectl("get", "storageclass").stdout.splitlines()[:2]
    assert header.split() == [
        "NAME",
        "PROVISIONER",
        "RECLAIMPOLICY",
        "VOLUMEBINDINGMODE",
        "ALLOWVOLUMEEXPANSION",
        "AGE",
    ]
    assert row.split()[:6] == [
        "standard",
        "(default)",
        "kubelab.io/simulated",
        "Delete",
        "Immediate",
        "false",
    ]

    lab.kubectl("apply", "-f", "-", *ns, input=PVC)
    lab.kubectl("wait", "--for=jsonpath={.status.phase}=Bound", "pvc/data", "--timeout=60s", *ns, timeout=90)
    claim = lab.kubectl_json("get", "pvc", "data", *ns)
    volume = claim["spec"]["volumeName"]
    assert claim["spec"]["storageClassName"] == "standard"
    assert volume == f"pvc-{claim['metadata']['uid']}"
    header, row = lab.kubectl("get", "pvc", *ns).stdout.splitlines()
    assert header.split() == [
        "NAME",
        "STATUS",
        "VOLUME",
        "CAPACITY",
        "ACCESS",
        "MODES",
        "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS",
        "AGE",
    ]
    assert row.split()[:7] == ["data", "Bound", volume, "1Gi", "RWO", "standard", "<unset>"]
    pv_header, pv_row = lab.kubectl("get", "pv", volume).stdout.splitlines()
    assert pv_header.split()[:9] == [
        "NAME",
        "CAPACITY",
        "ACCESS",
        "MODES",
        "RECLAIM",
        "POLICY",
        "STATUS",
        "CLAIM",
        "STORAGECLASS",
    ]
    assert pv_row.split()[:7] == [volume, "1Gi", "RWO", "Delete", "Bound", f"{namespace}/data", "standard"]
    described = lab.kubectl("describe", "pvc", "data", *ns).stdout
    assert "ProvisioningSucceeded" in described and f"Successfully provisioned volume {volume}" in described
    described_pv = lab.kubectl("describe", "pv", volume).stdout
    assert f"Claim:           {namespace}/data" in described_pv
    assert "Reclaim Policy:  Delete" in described_pv
    assert "IsDefaultClass:        Yes" in lab.kubectl("describe", "storageclass", "standard").stdout

    invalid = lab.kubectl(
        "apply", "-f", "-", *ns, check=False, input=PVC.replace("accessModes: [ReadWriteOnce]\n", "")
    )
    assert "spec.accessModes: Required value: at least 1 access mode is required" in invalid.stderr

    lab.kubectl("delete", "pvc", "data", *ns)
    lab.kubectl("wait", "--for=delete", f"pv/{volume}", "--timeout=60s", timeout=90)


INGRESS = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop}
spec:
  ingressClassName: nginx
  tls: [{hosts: [shop.example.com]}]
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: only-web}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: web}}}]
    ports: [{port: 5432}]
"""


def test_ingresses_and_network_policies_are_stored_and_listed(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    created = lab.kubectl("apply", "-f", "-", *ns, input=INGRESS).stdout
    assert created == (
        "ingress.networking.k8s.io/shop created\nnetworkpolicy.networking.k8s.io/only-web created\n"
    )
    header, row = lab.kubectl("get", "ingress", *ns).stdout.splitlines()
    assert header.split() == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert row.split()[:4] == ["shop", "nginx", "shop.example.com", "80,"]
    header, row = lab.kubectl("get", "netpol", *ns).stdout.splitlines()
    assert header.split() == ["NAME", "POD-SELECTOR", "AGE"]
    assert row.split()[:2] == ["only-web", "app=db"]
    assert "shop.example.com" in lab.kubectl("describe", "ingress", "shop", *ns).stdout
    assert "PodSelector:     app=db" in lab.kubectl("describe", "netpol", "only-web", *ns).stdout
    assert "ingressClassName" in lab.kubectl("explain", "ingress.spec").stdout
    policy = lab.kubectl_json("get", "networkpolicy", "only-web", *ns)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"][0]["ports"] == [{"port": 5432, "protocol": "TCP"}]

    lab.kubectl(
        "apply",
        "-f",
        "-",
        input="apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: nginx}\n"
        "spec: {controller: k8s.io/ingress-nginx}\n",
    )
    header, row = lab.kubectl("get", "ingressclass", "nginx").stdout.splitlines()
    assert header.split() == ["NAME", "CONTROLLER", "PARAMETERS", "AGE"]
    assert row.split()[:3] == ["nginx", "k8s.io/ingress-nginx", "<none>"]
    lab.kubectl("delete", "ingressclass", "nginx")

    bad = lab.kubectl(
        "apply",
        "-f",
        "-",
        *ns,
        check=False,
        input=INGRESS.split("---")[0].replace("pathType: Prefix", "pathType: Regex"),
    )
    assert 'spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex"' in bad.stderr
    # kubectl's typed ``create ingress`` sends the Ingress as protobuf.
    assert (
        lab.kubectl(
            "create", "ingress", "simple", "--rule=foo.com/bar=svc1:8080,tls=my-cert", "--class=nginx", *ns
        ).stdout
        == "ingress.networking.k8s.io/simple created\n"
    )
    simple = lab.kubectl_json("get", "ingress", "simple", *ns)["spec"]
    assert simple["ingressClassName"] == "nginx"
    assert simple["tls"] == [{"hosts": ["foo.com"], "secretName": "my-cert"}]
    assert simple["rules"][0]["http"]["paths"] == [
        {
            "path": "/bar",
            "pathType": "Exact",
            "backend": {"service": {"name": "svc1", "port": {"number": 8080}}},
        }
    ]
    lab.kubectl("delete", "ingress", "shop", "simple", *ns)
    lab.kubectl("delete", "networkpolicy", "only-web", *ns)
    assert lab.kubectl("get", "ingress,netpol", *ns).stderr.startswith("No resources found")


def test_a_pod_template_is_stored_with_its_columns(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    manifest = """
apiVersion: v1
kind: PodTemplate
metadata: {name: base}
template:
  metadata: {labels: {app: base}}
  spec:
    containers: [{name: main, image: busybox}]
"""
    lab.kubectl("apply", "-f", "-", *ns, input=manifest)
    header, row = lab.kubectl("get", "podtemplates", *ns).stdout.splitlines()
    assert header.split() == ["NAME", "CONTAINERS", "IMAGES", "POD", "LABELS"]
    assert row.split() == ["base", "main", "busybox", "app=base"]
    stored = lab.kubectl_json("get", "podtemplate", "base", *ns)
    assert stored["template"]["spec"]["restartPolicy"] == "Always"
    assert stored["metadata"]["generation"] == 1


def test_a_pod_waits_for_its_claim(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    pod = """
apiVersion: v1
kind: Pod
metadata: {name: uses-data}
spec:
  containers: [{name: main, image: nginx, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
"""
    lab.kubectl("apply", "-f", "-", *ns, input=pod)
    lab.kubectl(
        "wait", "--for=condition=PodScheduled=false", "pod/uses-data", "--timeout=60s", *ns, timeout=90
    )
    scheduled = next(
        c
        for c in lab.kubectl_json("get", "pod", "uses-data", *ns)["status"]["conditions"]
        if c["type"] == "PodScheduled"
    )
    assert 'persistentvolumeclaim "data" not found' in scheduled["message"]
    lab.kubectl("apply", "-f", "-", *ns, input=PVC)
    lab.kubectl("wait", "--for=condition=Ready", "pod/uses-data", "--timeout=60s", *ns, timeout=90)
    assert lab.kubectl_json("get", "pvc", "data", *ns)["status"]["phase"] == "Bound"
