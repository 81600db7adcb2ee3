"""Admission through the real kubectl 1.37 against a live lab: PodSecurity and the built-in defaults."""

from __future__ import annotations

import json

from tests.support.lab import LiveLab

PRIVILEGED_POD = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "priv"},
        "spec": {
            "containers": [{"name": "c", "image": "busybox:1.36", "securityContext": {"privileged": True}}]
        },
    }
)


def _namespace(lab: LiveLab, name: str, *labels: str) -> None:
    lab.kubectl("create", "namespace", name)
    lab.kubectl("wait", "--for=create", "serviceaccount/default", "-n", name, "--timeout=60s", timeout=90)
    if labels:
        lab.kubectl("label", "namespace", name, *labels)


def test_podsecurity_restricted_refuses_a_privileged_pod_via_kubectl_apply(lab: LiveLab) -> None:
    _namespace(lab, "psa-restricted", "pod-security.kubernetes.io/enforce=restricted")
    result = lab.kubectl("apply", "-n", "psa-restricted", "-f", "-", input=PRIVILEGED_POD, check=False)
    assert result.returncode != 0
    assert (
        'Error from server (Forbidden): error when creating "STDIN": pods "priv" is forbidden: '
        'violates PodSecurity "restricted:latest": privileged (container "c" must not set '
        "securityContext.privileged=true), allowPrivilegeEscalation != false"
    ) in result.stderr
    missing = lab.kubectl("get", "pod", "priv", "-n", "psa-restricted", check=False)
    assert "NotFound" in missing.stderr


def test_podsecurity_warn_prints_kubectls_warning_and_creates_the_pod(lab: LiveLab) -> None:
    _namespace(lab, "psa-warn", "pod-security.kubernetes.io/warn=baseline")
    result = lab.kubectl("apply", "-n", "psa-warn", "-f", "-", input=PRIVILEGED_POD)
    assert (
        'Warning: would violate PodSecurity "baseline:latest": privileged (container "c" must not set '
        "securityContext.privileged=true)"
    ) in result.stderr
    assert "pod/priv created" in result.stdout


def test_a_pod_gets_its_service_account_token_volume_and_default_tolerations(lab: LiveLab) -> None:
    lab.kubectl("run", "plain", "--image=nginx:1.27", "--restart=Never")
    pod = lab.kubectl_json("get", "pod", "plain")
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "default"
    assert [v["name"].startswith("kube-api-access-") for v in spec["volumes"]] == [True]
    assert (
        spec["containers"][0]["volumeMounts"][0]["mountPath"]
        == "/var/run/secrets/kubernetes.io/serviceaccount"
    )
    keys = {t["key"]: t["tolerationSeconds"] for t in spec["tolerations"]}
    assert set(keys) == {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    assert len(set(keys.values())) == 1  # the timing profile's default toleration, the same for both


def test_the_default_namespace_may_not_be_deleted(lab: LiveLab) -> None:
    result = lab.kubectl("delete", "namespace", "default", check=False)
    assert 'namespaces "default" is forbidden: this namespace may not be deleted' in result.stderr


OWNER_POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: secrets-have-an-owner
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [secrets]
  validations:
    - expression: "has(object.metadata.labels) && 'owner' in object.metadata.labels"
      message: every Secret needs an owner label
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: secrets-have-an-owner
spec:
  policyName: secrets-have-an-owner
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: vap}
"""


def test_a_validating_admission_policy_refuses_a_secret_via_kubectl(lab: LiveLab) -> None:
    _namespace(lab, "vap")
    applied = lab.kubectl("apply", "-f", "-", input=OWNER_POLICY)
    assert (
        "validatingadmissionpolicy.admissionregistration.k8s.io/secrets-have-an-owner created"
        in applied.stdout
    )
    listed = lab.kubectl("get", "validatingadmissionpolicies").stdout.split("\n")
    assert listed[0].split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
    assert listed[1].split()[:3] == ["secrets-have-an-owner", "1", "<unset>"]
    refused = lab.kubectl("create", "secret", "generic", "db", "-n", "vap", "--from-literal=k=v", check=False)
    assert refused.returncode != 0
    assert (
        "secrets \"db\" is forbidden: ValidatingAdmissionPolicy 'secrets-have-an-owner' with binding "
        "'secrets-have-an-owner' denied request: every Secret needs an owner label"
    ) in refused.stderr
    # The binding is scoped to the namespace vap: elsewhere the same Secret is accepted.
    lab.kubectl("create", "secret", "generic", "db", "-n", "default", "--from-literal=k=v")
    lab.kubectl("delete", "validatingadmissionpolicybinding", "secrets-have-an-owner")


LIMITED_ACCOUNT = """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: app
  annotations:
    kubernetes.io/enforce-mountable-secrets: "true"
secrets:
  - name: db-password
"""

PEEK = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "peek"},
        "spec": {
            "serviceAccountName": "app",
            "containers": [{"name": "c", "image": "busybox:1.36"}],
            "volumes": [{"name": "key", "secret": {"secretName": "api-key"}}],
        },
    }
)


def test_an_enforcing_service_account_is_warned_about_and_limits_its_pods_secrets(lab: LiveLab) -> None:
    _namespace(lab, "mountable")
    applied = lab.kubectl("apply", "-n", "mountable", "-f", "-", input=LIMITED_ACCOUNT)
    assert (
        "Warning: metadata.annotations[kubernetes.io/enforce-mountable-secrets]: deprecated in v1.32+; "
        "prefer separate namespaces to isolate access to mounted secrets"
    ) in applied.stderr
    assert "serviceaccount/app created" in applied.stdout
    refused = lab.kubectl("apply", "-n", "mountable", "-f", "-", input=PEEK, check=False)
    assert refused.returncode != 0
    assert (
        'pods "peek" is forbidden: volume with secret.secretName="api-key" is not allowed because '
        "service account app does not reference that secret"
    ) in refused.stderr
