"""KubeProxy against an in-process API server on a ``ManualClock``: its table follows Services and
EndpointSlices, syncs are batched by ``min_sync_period``, and every sync is traced."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from controlplane.client.rest import PatchType, RESTClient
from controlplane.clock import ManualClock
from controlplane.components.proxy import KubeProxy, RuleTable, changed_destinations
from controlplane.components.proxy.rules import Endpoint, Rule
from controlplane.trace import ListSink
from tests.support.inprocess import ADMIN, InProcessCluster, in_process_cluster

T0 = 1_790_000_000.0


def test_changed_destinations_name_what_moved() -> None:
    a = Rule("10.96.0.10", 80, "TCP", "ClusterIP", "default/web:http", (Endpoint("10.244.1.5", 8080),))
    b = Rule("10.96.0.11", 80, "TCP", "ClusterIP", "default/db:", ())
    old = RuleTable("n1", (a, b))
    moved = Rule("10.96.0.10", 80, "TCP", "ClusterIP", "default/web:http", (Endpoint("10.244.2.7", 8080),))
    assert changed_destinations(old, RuleTable("n1", (moved, b))) == ["10.96.0.10:80/TCP"]
    assert changed_destinations(old, RuleTable("n1", (a,))) == ["10.96.0.11:80/TCP"]
    assert changed_destinations(old, old) == []


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with in_process_cluster(tmp_path) as running:
        yield running


async def settle() -> None:
    """Let the proxy's tasks run up to their next wait (no time passes)."""
    for _ in range(20):
        await asyncio.sleep(0)


def synced(proxy: KubeProxy, count: int) -> Callable[[RuleTable], bool]:
    """A ``wait_for_sync`` predicate: the proxy has synced at least ``count`` times."""
    return lambda _: proxy.syncs >= count


async def synced_until(proxy: KubeProxy, clock: ManualClock, done: Callable[[RuleTable], bool]) -> RuleTable:
    """Let changes arrive, advance the clock past ``min_sync_period`` and sync, until ``done``."""
    async with asyncio.timeout(10):
        while not done(proxy.rules()):
            await proxy.wait_for_change()
            target = proxy.syncs + 1
            await clock.advance(proxy.min_sync_period)
            await proxy.wait_for_sync(synced(proxy, target))
    return proxy.rules()


def endpoints_of(table: RuleTable, ip: str, port: int) -> list[str] | None:
    rule = table.lookup(ip, port)
    return None if rule is None else [e.address for e in rule.endpoints]


async def test_the_table_follows_services_and_slices_in_batched_syncs(cluster: InProcessCluster) -> None:
    services = cluster.resource("", "v1", "services", "default")
    slices = cluster.resource("discovery.k8s.io", "v1", "endpointslices", "default")
    clock, sink = ManualClock(T0), ListSink()
    proxy = KubeProxy(cluster.client, "n1", clock=clock, trace=sink, cluster="test")
    assert proxy.node_id == "kube-proxy:n1"
    await proxy.start()
    try:
        # Every cluster starts with the ``kubernetes`` Service, to the API server, and kubeadm's
        # ``kube-dns`` (53/UDP, 53/TCP, 9153/TCP): four rules.
        assert proxy.syncs == 1 and len(proxy.rules()) == 4
        assert endpoints_of(proxy.rules(), "10.96.0.1", 443) == ["172.18.0.1:6443"]
        assert {r.service for r in proxy.rules().rules if r.ip == "10.96.0.10"} == {
            "kube-system/kube-dns:dns",
            "kube-system/kube-dns:dns-tcp",
            "kube-system/kube-dns:metrics",
        }
        svc = await services.create(
            {
                "metadata": {"name": "web"},
                "spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
            }
        )
        cluster_ip, node_port = svc["spec"]["clusterIP"], svc["spec"]["ports"][0]["nodePort"]
        await proxy.wait_for_change()
        await settle()
        assert proxy.syncs == 1  # batched: nothing before min_sync_period has passed

        table = await synced_until(proxy, clock, lambda t: endpoints_of(t, cluster_ip, 80) == [])
        rule = table.lookup(cluster_ip, 80)
        assert rule is not None and rule.action == "REJECT"  # no endpoints yet

        await slices.create(
            {
                "metadata": {"name": "web-1", "labels": {"kubernetes.io/service-name": "web"}},
                "addressType": "IPv4",
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                "endpoints": [
                    {"addresses": ["10.244.1.5"], "nodeName": "n1", "conditions": {"ready": True}},
                    {"addresses": ["10.244.2.7"], "nodeName": "n2", "conditions": {"ready": False}},
                ],
            }
        )
        table = await synced_until(
            proxy, clock, lambda t: endpoints_of(t, cluster_ip, 80) == ["10.244.1.5:8080"]
        )
        assert endpoints_of(table, "192.168.0.10", node_port) == ["10.244.1.5:8080"]

        # The Service's port changes: the old destination goes, the new one appears.
        await services.patch(
            "web",
            {"spec": {"ports": [{"name": "http", "port": 8081, "targetPort": 8080, "nodePort": node_port}]}},
            patch_type=PatchType.MERGE,
        )
        table = await synced_until(proxy, clock, lambda t: t.lookup(cluster_ip, 8081) is not None)
        assert table.lookup(cluster_ip, 80) is None
        assert endpoints_of(table, cluster_ip, 8081) == ["10.244.1.5:8080"]

        syncs = sink.of_type("proxy.sync")
        assert [e["sync"] for e in syncs] == list(range(1, proxy.syncs + 1))
        assert all(
            e["from"] == "kube-proxy:n1" and e["node"] == "n1" and e["cluster"] == "test" for e in syncs
        )
        assert syncs[0]["reason"] == "initial"
        assert any(f"{cluster_ip}:8081/TCP" in e["changed"] for e in syncs)
        assert syncs[-1]["rules"] == len(table)

        # Quiet: the table is still rebuilt every sync_period.
        await settle()
        target = proxy.syncs + 1
        await clock.advance(proxy.sync_period)
        await proxy.wait_for_sync(synced(proxy, target))
        assert sink.of_type("proxy.sync")[-1]["reason"] == "periodic"
        assert sink.of_type("proxy.sync")[-1]["changed"] == []
    finally:
        await proxy.stop()
    assert not proxy.started


async def test_a_proxy_made_from_a_factory_makes_its_client_at_start(cluster: InProcessCluster) -> None:
    made: list[RESTClient] = []

    def factory() -> RESTClient:
        made.append(cluster.client_for(ADMIN))
        return made[-1]

    proxy = KubeProxy(factory, "n2", clock=ManualClock(T0))
    assert not made
    await proxy.start()
    assert len(made) == 1 and proxy.syncs == 1 and proxy.rules().node_name == "n2"
    await proxy.stop()
    assert not proxy.started
