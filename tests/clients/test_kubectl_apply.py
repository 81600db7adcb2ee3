"""kubectl 1.37 apply, server-side apply, diff, explain and strict validation against the lab.

No ``--validate=false`` anywhere: kubectl reads the lab's /openapi/v3, finds ``fieldValidation`` on
the PATCH operations and sends ``fieldValidation=Strict``, as against a real cluster.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.lab import LiveLab


def manifest(name: str, *, image: str = "nginx:1.25", env: tuple[str, ...] = ("A", "B"), **spec: Any) -> str:
    """A Deployment as kubectl reads it from a file (JSON is YAML)."""
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "web", "image": image, "env": [{"name": e, "value": f"v{e}"} for e in env]}
                    ]
                },
            },
            **spec,
        },
    }
    return json.dumps(body, indent=2)


def deployment(lab: LiveLab, name: str) -> dict[str, Any]:
    result = lab.kubectl("get", "deployment", name, "-o", "json", "--show-managed-fields")
    obj: dict[str, Any] = json.loads(result.stdout)
    return obj


def managers(obj: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """The field managers of ``obj`` other than the controllers' status writers."""
    return sorted(
        (e["manager"], e["operation"], e.get("subresource"))
        for e in obj["metadata"]["managedFields"]
        if e.get("subresource") != "status"
    )


def test_client_side_apply_creates_then_configures(lab: LiveLab) -> None:
    first = lab.kubectl("apply", "-f", "-", input=manifest("csa"))
    assert first.stdout.strip() == "deployment.apps/csa created"
    second = lab.kubectl("apply", "-f", "-", input=manifest("csa", image="nginx:1.26", env=("A",)))
    assert second.stdout.strip() == "deployment.apps/csa configured"
    obj = deployment(lab, "csa")
    [container] = obj["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "nginx:1.26"
    assert container["env"] == [{"name": "A", "value": "vA"}]  # the removed variable is gone
    assert ("kubectl-client-side-apply", "Update", None) in managers(obj)
    unchanged = lab.kubectl("apply", "-f", "-", input=manifest("csa", image="nginx:1.26", env=("A",)))
    assert unchanged.stdout.strip() == "deployment.apps/csa unchanged"


def test_server_side_apply_creates_and_updates(lab: LiveLab) -> None:
    created = lab.kubectl("apply", "--server-side", "-f", "-", input=manifest("ssa"))
    assert created.stdout.strip() == "deployment.apps/ssa serverside-applied"
    obj = deployment(lab, "ssa")
    assert managers(obj) == [("kubectl", "Apply", None)]
    owned = obj["metadata"]["managedFields"][0]["fieldsV1"]
    container = owned["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert set(container["f:env"]) == {'k:{"name":"A"}', 'k:{"name":"B"}'}
    lab.kubectl("apply", "--server-side", "-f", "-", input=manifest("ssa", image="nginx:1.26", env=("A",)))
    [live] = deployment(lab, "ssa")["spec"]["template"]["spec"]["containers"]
    assert live["image"] == "nginx:1.26"
    assert live["env"] == [{"name": "A", "value": "vA"}]


def test_scale_then_apply_conflicts_until_forced(lab: LiveLab) -> None:
    lab.kubectl("apply", "--server-side", "-f", "-", input=manifest("contested"))
    assert lab.kubectl("scale", "deployment", "contested", "--replicas=5").stdout.strip() == (
        "deployment.apps/contested scaled"
    )
    assert ("kubectl", "Update", "scale") in managers(deployment(lab, "contested"))
    refused = lab.kubectl("apply", "--server-side", "-f", "-", input=manifest("contested"), check=False)
    assert refused.returncode == 1
    assert (
        'error: Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
        "using apps/v1: .spec.replicas"
    ) in refused.stderr
    assert "--force-conflicts" in refused.stderr
    assert deployment(lab, "contested")["spec"]["replicas"] == 5
    forced = lab.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", input=manifest("contested")
    )
    assert forced.stdout.strip() == "deployment.apps/contested serverside-applied"
    obj = deployment(lab, "contested")
    assert obj["spec"]["replicas"] == 2
    assert managers(obj) == [("kubectl", "Apply", None)]


def test_diff_shows_what_apply_would_change(lab: LiveLab) -> None:
    lab.kubectl("apply", "-f", "-", input=manifest("diffed"))
    same = lab.kubectl("diff", "-f", "-", input=manifest("diffed"), check=False)
    assert same.returncode == 0 and same.stdout == ""
    changed = lab.kubectl("diff", "-f", "-", input=manifest("diffed", image="nginx:1.27"), check=False)
    assert changed.returncode == 1, changed.stderr
    assert "-        image: nginx:1.25" in changed.stdout
    assert "+        image: nginx:1.27" in changed.stdout
    assert "managedFields" not in changed.stdout
    assert deployment(lab, "diffed")["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"


def test_explain_prints_upstreams_descriptions(lab: LiveLab) -> None:
    replicas = lab.kubectl("explain", "deployment.spec.replicas").stdout
    assert "KIND:       Deployment" in replicas
    assert "FIELD: replicas <integer>" in replicas
    assert "Number of desired pods. This is a pointer to distinguish between explicit" in replicas
    strategy = lab.kubectl("explain", "deployment.spec.strategy").stdout
    assert "FIELD: strategy <DeploymentStrategy>" in strategy
    assert "rollingUpdate\t<RollingUpdateDeployment>" in strategy
    surge = lab.kubectl("explain", "deployment.spec.strategy.rollingUpdate.maxSurge").stdout
    assert "FIELD: maxSurge <IntOrString>" in surge
    recursive = lab.kubectl("explain", "pods", "--recursive").stdout.splitlines()
    assert "KIND:       Pod" in recursive[:3]
    assert any(line.strip() == "containers\t<[]Container> -required-" for line in recursive)


def test_strict_validation_rejects_unknown_fields(lab: LiveLab) -> None:
    bad = manifest("strict", replicaz=3)
    refused = lab.kubectl("apply", "-f", "-", input=bad, check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'Error from server (BadRequest): error when creating "STDIN": Deployment in version "v1" cannot be '
        'handled as a Deployment: strict decoding error: unknown field "spec.replicaz"'
    )
    assert lab.kubectl("get", "deployment", "strict", check=False).returncode == 1
    warned = lab.kubectl("apply", "--validate=warn", "-f", "-", input=bad)
    assert 'Warning: unknown field "spec.replicaz"' in warned.stderr
    assert "replicaz" not in json.dumps(deployment(lab, "strict")["spec"])
    server_side = lab.kubectl("apply", "--server-side", "-f", "-", input=bad, check=False)
    assert server_side.returncode == 1
    assert ".spec.replicaz: field not declared in schema" in server_side.stderr


def settled(lab: LiveLab, name: str) -> dict[str, Any]:
    """The Deployment once its rollout is over and the controller has nothing more to write."""
    lab.kubectl("rollout", "status", f"deployment/{name}", "--timeout=60s", timeout=90)

    def done() -> dict[str, Any] | None:
        obj = deployment(lab, name)
        conditions = {c["type"]: c.get("reason") for c in obj.get("status", {}).get("conditions", [])}
        return obj if conditions.get("Progressing") == "NewReplicaSetAvailable" else None

    obj: dict[str, Any] = lab.eventually(done, f"deployment {name} to settle")
    return obj


def version(obj: dict[str, Any]) -> tuple[str, int]:
    return obj["metadata"]["resourceVersion"], obj["metadata"]["generation"]


def test_reapplying_a_rolling_update_strategy_is_unchanged(lab: LiveLab) -> None:
    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}}
    config = manifest("rolling", strategy=rolling)
    assert lab.kubectl("apply", "-f", "-", input=config).stdout.strip() == "deployment.apps/rolling created"
    before = settled(lab, "rolling")
    assert before["spec"]["strategy"] == rolling
    # kubectl's three-way patch is {}: it sends nothing and says so.
    again = lab.kubectl("apply", "-f", "-", input=config)
    assert again.stdout.strip() == "deployment.apps/rolling unchanged"
    assert version(deployment(lab, "rolling")) == version(before)

    # Switching to Recreate sends {"$retainKeys": ["type"], "rollingUpdate": null, "type": "Recreate"}.
    recreate = manifest("rolling", strategy={"type": "Recreate"})
    switched = lab.kubectl("apply", "-f", "-", input=recreate)
    assert switched.stdout.strip() == "deployment.apps/rolling configured"
    after = settled(lab, "rolling")
    assert after["spec"]["strategy"] == {"type": "Recreate"}
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1
    unchanged = lab.kubectl("apply", "-f", "-", input=recreate)
    assert unchanged.stdout.strip() == "deployment.apps/rolling unchanged"
    assert version(deployment(lab, "rolling")) == version(after)


def test_reapplying_a_strategy_without_type_writes_nothing(lab: LiveLab) -> None:
    # The server defaults `type: RollingUpdate`, which the file does not set, so kubectl's diffMaps puts
    # {"spec":{"strategy":{"$retainKeys":["rollingUpdate"]}}} in the three-way patch (apimachinery
    # strategicpatch: hasAdditionalNewField) and says "configured", against kube-apiserver as here.
    # Applied and defaulted again, the object is what it was: no new resourceVersion or generation.
    config = manifest("rolling-untyped", strategy={"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
    lab.kubectl("apply", "-f", "-", input=config)
    before = settled(lab, "rolling-untyped")
    assert before["spec"]["strategy"]["type"] == "RollingUpdate"
    again = lab.kubectl("apply", "-f", "-", "-v=8", input=config)
    assert again.stdout.strip() == "deployment.apps/rolling-untyped configured"
    assert r'"Request Body" body="{\"spec\":{\"strategy\":{\"$retainKeys\":[\"rollingUpdate\"]}}}"' in (
        again.stderr
    )
    after = deployment(lab, "rolling-untyped")
    assert version(after) == version(before)
    assert after["metadata"]["managedFields"] == before["metadata"]["managedFields"]
