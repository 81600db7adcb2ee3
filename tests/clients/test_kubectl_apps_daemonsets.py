"""kubectl 1.37 and DaemonSets on the demo cluster of the session's lab (three nodes, no taints).

The daemon pods go through the whole path: the DaemonSet controller creates them pinned to a node by
node affinity, the scheduler binds them, the simulated kubelets run them. ``kubectl rollout`` reads
the DaemonSet's ControllerRevisions for ``history`` and ``undo`` and its status for ``status``.
"""

from __future__ import annotations

from tests.support.lab import LiveLab

MANIFEST = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: "fluentd:1"}]
"""


def images_by_node(lab: LiveLab, ns: tuple[str, str]) -> dict[str, str]:
    pods = lab.kubectl_json("get", "pods", "-l", "app=agent", *ns)["items"]
    return {
        p["spec"].get("nodeName", ""): p["spec"]["containers"][0]["image"]
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
    }


def test_a_daemonset_runs_a_pod_per_node_and_rolls_out_back_and_forth(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    assert lab.kubectl("apply", "-f", "-", *ns, input=MANIFEST).stdout == "daemonset.apps/agent created\n"
    status = lab.kubectl("rollout", "status", "ds/agent", "--timeout=60s", *ns, timeout=90).stdout
    assert status.endswith('daemon set "agent" successfully rolled out\n')
    header, row = lab.kubectl("get", "ds", *ns).stdout.splitlines()
    assert header.split() == [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "NODE",
        "SELECTOR",
        "AGE",
    ]
    assert row.split()[:7] == ["agent", "3", "3", "3", "3", "3", "<none>"]
    wide = lab.kubectl("get", "ds", "agent", "-o", "wide", *ns).stdout.splitlines()
    assert wide[0].split()[-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1].split()[-3:] == ["agent", "fluentd:1", "app=agent"]
    assert images_by_node(lab, ns) == {"node-1": "fluentd:1", "node-2": "fluentd:1", "node-3": "fluentd:1"}
    ds = lab.kubectl_json("get", "ds", "agent", *ns)
    assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "1"
    assert ds["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    described = lab.kubectl("describe", "ds", "agent", *ns).stdout
    assert "Desired Number of Nodes Scheduled: 3" in described
    assert "Number of Nodes Scheduled with Up-to-date Pods: 3" in described
    assert "Pods Status:  3 Running / 0 Waiting / 0 Succeeded / 0 Failed" in described
    assert "SuccessfulCreate" in described and "daemonset-controller" in described
    revisions = lab.kubectl("get", "controllerrevisions", *ns).stdout.splitlines()
    assert revisions[0].split() == ["NAME", "CONTROLLER", "REVISION", "AGE"]
    assert revisions[1].split()[1:3] == ["daemonset.apps/agent", "1"]

    lab.kubectl("set", "image", "ds/agent", "agent=fluentd:2", *ns)
    lab.kubectl("rollout", "status", "ds/agent", "--timeout=60s", *ns, timeout=90)
    assert set(images_by_node(lab, ns).values()) == {"fluentd:2"}
    history = lab.kubectl("rollout", "history", "ds/agent", *ns).stdout.splitlines()
    assert [line.split()[0] for line in history[2:] if line.strip()] == ["1", "2"]
    first = lab.kubectl("rollout", "history", "ds/agent", "--revision=1", *ns).stdout
    assert "daemonset.apps/agent with revision #1" in first and "fluentd:1" in first

    assert lab.kubectl("rollout", "undo", "ds/agent", *ns).stdout == "daemonset.apps/agent rolled back\n"
    lab.kubectl("rollout", "status", "ds/agent", "--timeout=60s", *ns, timeout=90)
    assert set(images_by_node(lab, ns).values()) == {"fluentd:1"}
    history = lab.kubectl("rollout", "history", "ds/agent", *ns).stdout.splitlines()
    assert [line.split()[0] for line in history[2:] if line.strip()] == ["2", "3"]
    same = lab.kubectl("rollout", "undo", "ds/agent", "--to-revision=3", *ns, check=False)
    assert "skipped rollback (current template already matches revision 3)" in same.stdout + same.stderr

    pods = [f"pod/{p['metadata']['name']}" for p in lab.kubectl_json("get", "pods", *ns)["items"]]
    owned = [
        f"controllerrevision/{r['metadata']['name']}"
        for r in lab.kubectl_json("get", "controllerrevisions", *ns)["items"]
    ]
    assert len(pods) >= 3 and len(owned) == 2
    assert 'daemonset.apps "agent" deleted' in lab.kubectl("delete", "ds", "agent", *ns).stdout
    # The garbage collector takes the pods and the revisions with it.
    lab.kubectl("wait", "--for=delete", *pods, *owned, "--timeout=60s", *ns, timeout=90)


def test_an_invalid_daemonset_is_refused_with_upstreams_message(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    refused = lab.kubectl(
        "apply",
        "-f",
        "-",
        *ns,
        check=False,
        input=MANIFEST.replace("{matchLabels: {app: agent}}", "{matchLabels: {app: x}}"),
    )
    assert refused.returncode != 0
    assert (
        'spec.template.metadata.labels: Invalid value: {"app":"agent"}: '
        "`selector` does not match template `labels`" in refused.stderr
    )
    lab.kubectl("apply", "-f", "-", *ns, input=MANIFEST)
    changed = lab.kubectl(
        "apply",
        "-f",
        "-",
        *ns,
        check=False,
        input=MANIFEST.replace(
            "{matchLabels: {app: agent}}", "{matchLabels: {app: agent, tier: node}}"
        ).replace("labels: {app: agent}}", "labels: {app: agent, tier: node}}"),
    )
    assert "spec.selector: Invalid value:" in changed.stderr and "field is immutable" in changed.stderr
