"""kubectl 1.37, unmodified, against the lab's API server over HTTPS."""

from __future__ import annotations

import json
import textwrap

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


def test_delete(lab: LiveLab) -> None:
    manifest = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"doomed"}}'
    lab.kubectl("create", "-f", "-", "--validate=false", input=manifest)
    out = lab.kubectl("delete", "configmap", "doomed").stdout
    assert 'configmap "doomed" deleted' in out
    assert lab.kubectl("get", "configmap", "doomed", check=False).returncode == 1
