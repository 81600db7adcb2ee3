"""kubectl 1.37 and the policy/v1 API: PodDisruptionBudgets and a drain they hold up.

The demo cluster of the session's lab runs the disruption controller, so a budget's status follows
its pods; ``kubectl drain`` evicts through ``pods/<name>/eviction`` and, refused with 429, says so and
tries again every 5 s until its ``--timeout``.
"""

from __future__ import annotations

from typing import Any

from tests.support.lab import LiveLab

VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


def budget_status(lab: LiveLab, namespace: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = lab.kubectl_json("get", "pdb", name, "-n", namespace).get("status") or {}
    return status


def test_create_pdb_and_get_pdb_columns(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    lab.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=3", *ns)
    lab.kubectl("rollout", "status", "deployment/web", "--timeout=60s", *ns, timeout=90)
    out = lab.kubectl("create", "pdb", "web", "--selector=app=web", "--min-available=2", *ns).stdout
    assert out == "poddisruptionbudget.policy/web created\n"
    lab.kubectl("create", "pdb", "half", "--selector=app=nothing", "--max-unavailable=50%", *ns)

    lab.eventually(
        lambda: budget_status(lab, namespace, "web").get("disruptionsAllowed") == 1,
        "the controller to allow one disruption of three pods with minAvailable 2",
    )
    status = budget_status(lab, namespace, "web")
    assert (status["currentHealthy"], status["desiredHealthy"], status["expectedPods"]) == (3, 2, 3)
    [allowed] = status["conditions"]
    assert (allowed["type"], allowed["status"], allowed["reason"]) == (
        "DisruptionAllowed",
        "True",
        "SufficientPods",
    )

    header, *rows = lab.kubectl("get", "pdb", *ns).stdout.splitlines()
    assert header.split() == [
        "NAME",
        "MIN",
        "AVAILABLE",
        "MAX",
        "UNAVAILABLE",
        "ALLOWED",
        "DISRUPTIONS",
        "AGE",
    ]
    cells = {row.split()[0]: row.split()[1:4] for row in rows}
    assert cells == {"half": ["N/A", "50%", "0"], "web": ["2", "N/A", "1"]}
    described = lab.kubectl("describe", "pdb", "web", *ns).stdout
    assert "Min available:  2" in described
    assert "Allowed disruptions:  1" in described

    served = lab.kubectl("api-resources", "--api-group=policy").stdout.splitlines()
    assert ["poddisruptionbudgets", "pdb", "policy/v1", "true", "PodDisruptionBudget"] in [
        line.split() for line in served
    ]
    both = (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: both}\n"
        "spec: {minAvailable: 1, maxUnavailable: 1, selector: {matchLabels: {app: web}}}\n"
    )
    refused = lab.kubectl("create", "-f", "-", *ns, input=both, check=False)
    assert refused.returncode == 1
    assert 'The PodDisruptionBudget "both" is invalid: spec: Invalid value: ' in refused.stderr
    assert "minAvailable and maxUnavailable cannot be both set" in refused.stderr


def test_drain_waits_for_the_disruption_budget(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    lab.kubectl("create", "deployment", "guarded", "--image=nginx", "--replicas=2", *ns)
    lab.kubectl("rollout", "status", "deployment/guarded", "--timeout=60s", *ns, timeout=90)
    lab.kubectl("create", "pdb", "guarded", "--selector=app=guarded", "--min-available=2", *ns)
    lab.eventually(
        lambda: budget_status(lab, namespace, "guarded").get("currentHealthy") == 2,
        "the budget's status to count the two pods",
    )
    assert budget_status(lab, namespace, "guarded")["disruptionsAllowed"] == 0
    pods = lab.kubectl_json("get", "pods", "-l", "app=guarded", *ns)["items"]
    node = str(pods[0]["spec"]["nodeName"])
    on_node = sorted(p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == node)
    drain = ("drain", node, "--pod-selector=app=guarded", "--ignore-daemonsets", "--delete-emptydir-data")
    try:
        blocked = lab.kubectl(*drain, "--timeout=8s", check=False, timeout=60)
        assert blocked.returncode != 0
        assert f"node/{node} cordoned" in blocked.stdout
        for pod in on_node:
            assert (
                f'error when evicting pods/"{pod}" -n "{namespace}" (will retry after 5s): {VIOLATION}'
                in blocked.stderr
            ), blocked.stderr
        assert "global timeout reached: 8s" in blocked.stderr
        for pod in on_node:  # nothing was evicted
            assert not lab.kubectl_json("get", "pod", pod, *ns)["metadata"].get("deletionTimestamp")

        # A third replica (on another node: this one is cordoned) makes room for one disruption at a
        # time; each evicted pod's replacement becomes ready, and the drain gets through.
        lab.kubectl("scale", "deployment/guarded", "--replicas=3", *ns)
        out = lab.kubectl(*drain, "--timeout=90s", timeout=120).stdout
        assert f"node/{node} drained" in out
        for pod in on_node:
            assert f"pod/{pod} evicted" in out

        def replaced() -> list[dict[str, Any]]:
            items = lab.kubectl_json("get", "pods", "-l", "app=guarded", *ns)["items"]
            alive = [p for p in items if not p["metadata"].get("deletionTimestamp")]
            running = [p for p in alive if p["status"].get("phase") == "Running"]
            return running if len(running) == 3 and len(alive) == 3 else []

        running = lab.eventually(replaced, "three Running replicas after the drain")
        assert all(p["spec"]["nodeName"] != node for p in running)
    finally:
        lab.kubectl("uncordon", node)
    assert "unschedulable" not in lab.kubectl_json("get", "node", node)["spec"]
