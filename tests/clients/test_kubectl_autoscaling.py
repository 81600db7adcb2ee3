"""kubectl 1.37 and HorizontalPodAutoscalers: ``kubectl autoscale``, ``get hpa``, ``describe hpa``.

The lab runs no metrics-server, so an HPA with a CPU target can never compute a replica count: its
TARGETS read ``cpu: <unknown>/80%`` and ``describe`` shows why (ScalingActive False,
FailedGetResourceMetric), as on a real cluster without metrics.
"""

from __future__ import annotations

from typing import Any

from tests.support.lab import LiveLab


def test_kubectl_autoscale_creates_an_hpa_that_reports_missing_metrics(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    lab.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=1", *ns)
    created = lab.kubectl("autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu=80%", *ns)
    assert created.stdout == "horizontalpodautoscaler.autoscaling/web autoscaled\n"
    hpa = lab.kubectl_json("get", "hpa", "web", *ns)
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }
    ]
    # Below minReplicas: the controller scales the Deployment up to 2 without any metrics.
    lab.kubectl(
        "wait", "--for=jsonpath={.spec.replicas}=2", "deployment/web", "--timeout=60s", *ns, timeout=90
    )
    lab.kubectl(
        "wait",
        "--for=jsonpath={.status.conditions[?(@.type=='ScalingActive')].reason}=FailedGetResourceMetric",
        "hpa/web",
        "--timeout=60s",
        *ns,
        timeout=90,
    )
    header, row = lab.kubectl("get", "hpa", *ns).stdout.splitlines()
    assert header.split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert row.split()[:7] == ["web", "Deployment/web", "cpu:", "<unknown>/80%", "2", "5", "2"]
    # The controller's Events are posted by its recorder after the status it wrote: wait for them.
    for reason in ("SuccessfulRescale", "FailedComputeMetricsReplicas"):
        selector = f"--field-selector=reason={reason}"

        def posted(selector: str = selector) -> list[Any] | None:
            return lab.kubectl_json("get", "events", selector, *ns)["items"] or None

        lab.eventually(posted, f"the HPA's {reason} Event")
    described = lab.kubectl("describe", "hpa", "web", *ns).stdout
    assert "Reference:                                             Deployment/web" in described
    lines = [line.split(None, 3) for line in described.splitlines()]
    assert ["AbleToScale", "True", "SucceededGetScale"] in [line[:3] for line in lines]
    assert [
        "ScalingActive",
        "False",
        "FailedGetResourceMetric",
        "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get "
        "metrics for resource cpu: no metrics returned from resource metrics API",
    ] in lines
    assert "resource cpu on pods  (as a percentage of request):  <unknown> / 80%" in described
    assert "Deployment pods:                                       2 current / 2 desired" in described
    assert (
        "SuccessfulRescale" in described
        and "New size: 2; reason: Current number of replicas below Spec.MinReplicas" in described
    )
    assert "FailedComputeMetricsReplicas" in described
    assert (
        "invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: "
        in described
    )
    v1 = lab.kubectl_json("get", "horizontalpodautoscalers.v1.autoscaling", "web", *ns)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 80
    assert v1["status"]["currentReplicas"] == 2


def test_an_hpa_for_a_missing_target_cannot_scale(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    manifest = """
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: ghost}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: ghost}
  maxReplicas: 3
  targetCPUUtilizationPercentage: 50
"""
    lab.kubectl("apply", "-f", "-", *ns, input=manifest)
    lab.kubectl(
        "wait",
        "--for=jsonpath={.status.conditions[?(@.type=='AbleToScale')].reason}=FailedGetScale",
        "hpa/ghost",
        "--timeout=60s",
        *ns,
        timeout=90,
    )
    hpa = lab.kubectl_json("get", "hpa", "ghost", *ns)
    served = lab.kubectl("api-resources", "--api-group=autoscaling").stdout.splitlines()
    assert served[1].split() == [
        "horizontalpodautoscalers",
        "hpa",
        "autoscaling/v2",
        "true",
        "HorizontalPodAutoscaler",
    ]
    assert hpa["spec"]["minReplicas"] == 1
    [condition] = hpa["status"]["conditions"]
    assert condition["message"] == (
        'the HPA controller was unable to get the target\'s current scale: deployments.apps "ghost" not found'
    )
    invalid = lab.kubectl(
        "apply",
        "-f",
        "-",
        *ns,
        check=False,
        input=manifest.replace("maxReplicas: 3", "maxReplicas: 3\n  minReplicas: 4"),
    )
    assert (
        "spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`" in invalid.stderr
    )
