"""kubectl 1.37 where it falls back to /openapi/v2: a ``kind: List``, and a kind OpenAPI v3 lacks.

With ``--validate=strict`` (the default) kubectl validates a List on its side against the v2
document (kubectl ``pkg/validation/validation.go``), and asks the legacy v2 verifier about a kind
the v3 document of its group-version has no PATCH operation for (cli-runtime
``fallback_query_param_verifier.go``). kubectl downloads the document as gnostic protobuf; before
the lab served it, both failed with "the server could not find the requested resource".
"""

from __future__ import annotations

from tests.support.lab import LiveLab

CONFIGMAPS = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: l1}, data: {a: "1"}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: l2}}
"""


def test_a_list_applies_with_strict_validation(lab: LiveLab, namespace: str) -> None:
    applied = lab.kubectl("apply", "-n", namespace, "-f", "-", input=CONFIGMAPS)
    assert applied.stdout.splitlines() == ["configmap/l1 created", "configmap/l2 created"]
    listed = lab.kubectl_json("get", "configmaps", "l1", "l2", "-n", namespace)
    assert [(i["metadata"]["name"], i.get("data")) for i in listed["items"]] == [
        ("l1", {"a": "1"}),
        ("l2", None),
    ]
    again = lab.kubectl("apply", "-n", namespace, "-f", "-", input=CONFIGMAPS)
    assert again.stdout.splitlines() == ["configmap/l1 unchanged", "configmap/l2 unchanged"]


def test_an_unknown_kind_gets_upstreams_mapping_error(lab: LiveLab) -> None:
    refused = lab.kubectl(
        "apply", "-f", "-", input="apiVersion: v1\nkind: Widget\nmetadata: {name: w}\n", check=False
    )
    assert refused.returncode == 1
    assert "openapi" not in refused.stderr
    assert refused.stderr.strip() == (
        'error: resource mapping not found for name: "w" namespace: "" from "STDIN": '
        'no matches for kind "Widget" in version "v1"\nensure CRDs are installed first'
    )


def test_a_list_is_validated_on_the_client_as_upstream_does(lab: LiveLab, namespace: str) -> None:
    bad = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: b1}, bogus: 1}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: d1}
  spec:
    replicas: "two"
    selector: {matchLabels: {app: d1}}
    template:
      metadata: {labels: {app: d1}}
      spec:
        containers: [{name: c, image: nginx, ports: [{containerPort: 80, nope: true}]}]
"""
    refused = lab.kubectl("apply", "-n", namespace, "-f", "-", input=bad, check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'error: error validating "STDIN": error validating data: ['
        'ValidationError(ConfigMap): unknown field "bogus" in io.k8s.api.core.v1.ConfigMap, '
        "ValidationError(Deployment.spec.replicas): invalid type for "
        'io.k8s.api.apps.v1.DeploymentSpec.replicas: got "string", expected "integer", '
        "ValidationError(Deployment.spec.template.spec.containers[0].ports[0]): "
        'unknown field "nope" in io.k8s.api.core.v1.ContainerPort]; '
        "if you choose to ignore these errors, turn validation off with --validate=false"
    )
    assert lab.kubectl("get", "configmap", "b1", "-n", namespace, check=False).returncode == 1
    # IntOrString and Quantity are strings in v2: any value passes kubectl's check, as upstream.
    good = """
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: d2}
  spec:
    strategy: {rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}}
    selector: {matchLabels: {app: d2}}
    template:
      metadata: {labels: {app: d2}}
      spec:
        containers: [{name: c, image: nginx, resources: {limits: {cpu: 100m, memory: 1Gi}}}]
- apiVersion: v1
  kind: Service
  metadata: {name: s2}
  spec: {selector: {app: d2}, ports: [{port: 80, targetPort: 80}]}
"""
    applied = lab.kubectl("apply", "-n", namespace, "-f", "-", input=good)
    assert applied.stdout.splitlines() == ["deployment.apps/d2 created", "service/s2 created"]


def _crd(group: str) -> str:
    return f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: crontabs.{group}}}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: crontabs, singular: crontab, kind: CronTab}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [cronSpec]
            properties:
              cronSpec: {{type: string}}
              replicas: {{type: integer, minimum: 1, default: 1}}
              port: {{x-kubernetes-int-or-string: true, anyOf: [{{type: integer}}, {{type: string}}]}}
              extra: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
              note: {{type: string, nullable: true}}
"""


def test_custom_resources_in_a_list_are_checked_against_their_schema(lab: LiveLab, namespace: str) -> None:
    group = "v2list.example.com"
    lab.kubectl("apply", "-f", "-", input=_crd(group))
    lab.kubectl("wait", "--for", "condition=established", f"crd/crontabs.{group}", "--timeout=60s")
    good = f"""
apiVersion: v1
kind: List
items:
- apiVersion: {group}/v1
  kind: CronTab
  metadata: {{name: ct1}}
  spec: {{cronSpec: "* * * * */5", port: web, extra: {{anything: [1, 2]}}, note: null}}
"""
    applied = lab.kubectl("apply", "-n", namespace, "-f", "-", input=good)
    assert applied.stdout.strip() == f"crontab.{group}/ct1 created"
    bad = f"""
apiVersion: v1
kind: List
items:
- apiVersion: {group}/v1
  kind: CronTab
  metadata: {{name: ct2}}
  spec: {{cronSpec: "* * * * */5", replicas: "two", colour: red}}
"""
    refused = lab.kubectl("apply", "-n", namespace, "-f", "-", input=bad, check=False)
    assert refused.returncode == 1
    definition = "com.example.v2list.v1.CronTab"
    assert refused.stderr.strip() == (
        'error: error validating "STDIN": error validating data: ['
        f'ValidationError(CronTab.spec): unknown field "colour" in {definition}.spec, '
        f"ValidationError(CronTab.spec.replicas): invalid type for {definition}.spec.replicas: "
        'got "string", expected "integer"]; '
        "if you choose to ignore these errors, turn validation off with --validate=false"
    )
    created = lab.kubectl_json("get", f"crontabs.{group}", "ct1", "-n", namespace)
    assert created["spec"]["replicas"] == 1  # the server still defaults: v2 only drops the default


def test_explain_reads_the_v2_document_when_asked(lab: LiveLab) -> None:
    explained = lab.kubectl("explain", "configmap.data", "--output=plaintext-openapiv2").stdout
    assert "FIELD:    data <map[string]string>" in explained
    assert "Data contains the configuration data." in explained
    replicas = lab.kubectl("explain", "deployment.spec.replicas", "--output=plaintext-openapiv2").stdout
    assert "FIELD:    replicas <integer>" in replicas
    assert "Number of desired pods." in replicas
