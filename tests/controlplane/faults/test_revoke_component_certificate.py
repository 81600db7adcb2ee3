"""revoke-component-certificate: the API server refuses a component's certificate (401), the component
fails while it runs; clearing issues it a new certificate and restarts it, and it recovers.

Upstream: a client certificate the x509 authenticator does not trust authenticates no one, and the
request is answered 401 Unauthorized (k8s.io/apiserver pkg/authentication/request/x509/x509.go,
pkg/endpoints/filters/authentication.go). A kubelet that cannot renew its Lease loses its node to the
node lifecycle controller; a scheduler that cannot renew its leader Lease stops leading.
"""

from __future__ import annotations

import pytest

from controlplane.api.meta import Object
from controlplane.faults.book import Outcome
from controlplane.faults.catalogue import InvalidFault, check
from controlplane.faults.certificates import RevokeComponentCertificate
from controlplane.faults.service import EffectFailed
from tests.controlplane.faults.conftest import Event, Running
from tests.controlplane.faults.test_stop_components import pod_on
from tests.controlplane.faults.test_stop_kubelet import UNREACHABLE, node_named, taints
from tests.support.inprocess import condition, wait_for


def test_the_component_is_any_that_has_a_client_certificate() -> None:
    for component in ("scheduler", "controller-manager", "kubelet:node-2", "kube-proxy:node-3"):
        spec = check("revoke-component-certificate", {"component": component}, nodes=3)
        assert spec.target == component
    with pytest.raises(InvalidFault, match="node-1 to node-3") as refused:
        check("revoke-component-certificate", {"component": "kubelet:node-4"}, nodes=3)
    assert refused.value.parameter == "component"
    with pytest.raises(InvalidFault, match="client certificate"):
        check("revoke-component-certificate", {"component": "apiserver"})


async def test_a_kubelet_with_a_revoked_certificate_loses_its_node_until_it_gets_a_new_one(
    running: Running,
) -> None:
    cluster, trace = running.cluster, running.trace
    nodes = running.admin.resource("", "v1", "nodes")
    leases = running.admin.resource("coordination.k8s.io", "v1", "leases", "kube-node-lease")
    await wait_for(nodes, lambda items: len(items) == 4)  # 3 workers + control-plane
    old = cluster.component_certificates["kubelet:node-2"]
    start = len(trace.events)

    applied = await running.faults.apply(
        cluster.name, "revoke-component-certificate", {"component": "kubelet:node-2"}, reason="test"
    )

    assert applied.outcome is Outcome.APPLIED
    assert cluster.revocations.is_revoked(old.serial)
    effect = running.faults.effects["revoke-component-certificate"]
    assert isinstance(effect, RevokeComponentCertificate) and effect.revoked[applied.fault.id] == old.serial
    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (on["target"], on["params"]) == ("kubelet:node-2", {"component": "kubelet:node-2"})

    def refused(e: Event) -> bool:
        return e["type"] == "request.completed" and e.get("code") == 401 and e.get("resource") == "leases"

    # Its next Lease renewal (every 0.4 s here) is refused: the certificate authenticates no one.
    denied = await trace.until(refused, after=start)
    assert (denied["verb"], denied["name"], denied["reason"]) == ("update", "node-2", "Unauthorized")
    assert denied["from"] == "user:anonymous", "no user: the request is refused before authorization"
    lease_at_revocation = (await leases.get("node-2"))["spec"]["renewTime"]
    # The kubelet still runs: it is its requests that fail.
    assert "kubelet:node-2" in cluster.components_running

    def unreachable(items: list[Object]) -> bool:
        node = node_named(items, "node-2")
        ready = condition(node, "Ready")
        return ready is not None and ready["status"] == "Unknown" and UNREACHABLE in taints(node)

    await wait_for(nodes, unreachable, seconds=30)
    assert (await leases.get("node-2"))["spec"]["renewTime"] == lease_at_revocation
    assert "kubelet:node-2" in cluster.components_running
    start = len(trace.events)

    cleared = await running.faults.clear(
        cluster.name, "revoke-component-certificate", {"component": "kubelet:node-2"}, reason="test"
    )

    assert [f.id for f in cleared] == [applied.fault.id]
    new = cluster.component_certificates["kubelet:node-2"]
    assert new.serial != old.serial and not cluster.revocations.is_revoked(new.serial)
    assert cluster.revocations.is_revoked(old.serial), "a revoked certificate stays revoked"
    off = await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    assert (off["target"], off["reason"]) == ("kubelet:node-2", "test")
    states = [
        e["state"]
        for e in trace.events[start : trace.index(off)]
        if e["type"] == "component.state" and e.get("from") == "kubelet:node-2"
    ]
    assert states == ["stopped", "running"], "restarted to load its new certificate"

    def ready_again(items: list[Object]) -> bool:
        node = node_named(items, "node-2")
        ready = condition(node, "Ready")
        return ready is not None and ready["status"] == "True" and UNREACHABLE not in taints(node)

    await wait_for(nodes, ready_again, seconds=30)
    assert (await leases.get("node-2"))["spec"]["renewTime"] != lease_at_revocation


async def test_a_scheduler_with_a_revoked_certificate_binds_nothing_until_it_is_restarted(
    quick_leases: Running,
) -> None:
    running = quick_leases
    cluster, trace = running.cluster, running.trace
    pods = running.admin.resource("", "v1", "pods", "default")
    await wait_for(running.admin.resource("", "v1", "nodes"), lambda items: len(items) == 4)
    start = len(trace.events)

    await running.faults.apply(cluster.name, "revoke-component-certificate", {"component": "scheduler"})

    # It cannot renew its leader Lease, so it stops leading once its renew deadline passes.
    lost = await trace.until(
        lambda e: (
            e["type"] == "component.state"
            and e.get("from") == "scheduler"
            and e.get("state") == "stopped-leading"
        ),
        after=start,
    )
    assert "no longer holds" in lost["reason"]
    pod = {**pod_on("waiting", "node-1"), "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
    await pods.create(pod)
    assert not (await pods.get("waiting"))["spec"].get("nodeName"), "no scheduler leads"
    start = len(trace.events)

    await running.faults.clear(cluster.name, "revoke-component-certificate", {"component": "scheduler"})

    # The new scheduler, with its new certificate, leads once the old Lease expires and binds the pod.
    bound = await wait_for(pods, lambda items: bool(items) and bool(items[0]["spec"].get("nodeName")))
    assert bound[0]["metadata"]["name"] == "waiting"
    decisions = [e for e in trace.events[start:] if e["type"] == "scheduler.decision"]
    assert decisions, "bound by the restarted scheduler"


async def test_a_component_that_does_not_run_has_no_certificate_to_revoke(running: Running) -> None:
    cluster = running.cluster
    await running.faults.apply(cluster.name, "stop-kube-proxy", {"node": "node-1"})

    with pytest.raises(EffectFailed, match="does not run"):
        await running.faults.apply(
            cluster.name, "revoke-component-certificate", {"component": "kube-proxy:node-1"}
        )

    assert [f.kind for f in running.faults.in_force(cluster.name)] == ["stop-kube-proxy"]
