"""The lab runtime: the demo cluster on first start, the same clusters (and data) on every later start."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from controlplane.apiserver.audit.config import CLUSTER_POLICY_FILE, AuditSettings
from controlplane.client.config import Config
from controlplane.client.rest import RESTClient
from controlplane.components.controllermanager import ControllerManager
from controlplane.components.scheduler.scheduler import Scheduler
from controlplane.identity import SYSTEM_MASTERS
from controlplane.runtime import (
    CLUSTER_LIST_FILE,
    Cluster,
    ClusterExists,
    ClusterState,
    InvalidClusterName,
    Lab,
    LabConfig,
    LabState,
    check_cluster_name,
    known_clusters,
    read_cluster_list,
)
from controlplane.store import UnknownCluster
from controlplane.store.factory import store_path
from controlplane.timing import CLASSROOM
from controlplane.trace import nodes
from tests.support.inprocess import WAIT_TIMEOUT, wait_for


def lab(data_dir: Path, *, demo: str = "demo") -> Lab:
    return Lab(LabConfig(data_dir=data_dir, store_url="sqlite", demo_cluster=demo))


def states(lab: Lab) -> tuple[LabState, list[ClusterState]]:
    """The lab's state and its clusters' (a function call, so mypy does not keep an earlier narrowing)."""
    return lab.state, [c.state for c in lab.clusters()]


async def test_first_start_creates_the_demo_cluster(tmp_path: Path) -> None:
    first = lab(tmp_path)
    await first.start()
    try:
        assert first.state is LabState.RUNNING
        assert first.names() == ["demo"]
        demo = first.cluster("demo")
        assert demo.state is ClusterState.RUNNING
        assert demo.data_dir == tmp_path / "clusters" / "demo"
        assert store_path(tmp_path, "demo").exists()
        assert read_cluster_list(tmp_path) == ["demo"]
    finally:
        await first.stop()
    assert states(first) == (LabState.STOPPED, [ClusterState.STOPPED])


async def test_second_start_resumes_the_same_clusters_with_their_data(tmp_path: Path) -> None:
    first = lab(tmp_path)
    await first.start()
    try:
        written = await first.cluster("demo").store.put("/registry/kubelab-test/kept", b'{"kept":true}')
    finally:
        await first.stop()

    second = lab(tmp_path)
    await second.start()
    try:
        assert second.names() == ["demo"]
        kv = await second.cluster("demo").store.get("/registry/kubelab-test/kept")
        assert kv is not None
        assert kv.value == b'{"kept":true}'
        assert kv.mod_revision == written.mod_revision
    finally:
        await second.stop()


async def test_the_demo_cluster_is_created_on_the_first_start_only(tmp_path: Path) -> None:
    without_demo = lab(tmp_path, demo="")
    await without_demo.start()
    await without_demo.stop()
    assert without_demo.names() == []
    assert read_cluster_list(tmp_path) == []

    # The data directory has seen a lab: a later start with a demo name does not add it.
    later = lab(tmp_path, demo="demo")
    await later.start()
    try:
        assert later.names() == []
    finally:
        await later.stop()


async def test_unknown_cluster(tmp_path: Path) -> None:
    running = lab(tmp_path)
    await running.start()
    try:
        with pytest.raises(UnknownCluster) as caught:
            running.cluster("nope")
        assert caught.value.cluster == "nope"
    finally:
        await running.stop()


async def test_created_clusters_are_resumed_too(tmp_path: Path) -> None:
    first = lab(tmp_path)
    await first.start()
    try:
        team = await first.create_cluster("team-a")
        assert team.state is ClusterState.RUNNING
        assert first.names() == ["demo", "team-a"]
        with pytest.raises(ClusterExists):
            await first.create_cluster("team-a")
        with pytest.raises(InvalidClusterName):
            await first.create_cluster("Team_A")
    finally:
        await first.stop()

    second = lab(tmp_path)
    await second.start()
    try:
        assert second.names() == ["demo", "team-a"]
        assert all(c.state is ClusterState.RUNNING for c in second.clusters())
    finally:
        await second.stop()


async def test_sqlite_clusters_are_found_without_the_cluster_list(tmp_path: Path) -> None:
    first = lab(tmp_path)
    await first.start()
    await first.create_cluster("extra")
    await first.stop()
    (tmp_path / CLUSTER_LIST_FILE).unlink()

    assert known_clusters(tmp_path, store_url="sqlite") == ["demo", "extra"]
    second = lab(tmp_path)
    await second.start()
    try:
        assert second.names() == ["demo", "extra"]
        assert json.loads((tmp_path / CLUSTER_LIST_FILE).read_text())["clusters"] == ["demo", "extra"]
    finally:
        await second.stop()


async def test_a_cluster_that_fails_to_start_does_not_stop_the_others(tmp_path: Path) -> None:
    # A directory where the store file should be: SQLite cannot open it.
    store_path(tmp_path, "broken").mkdir(parents=True)
    (tmp_path / CLUSTER_LIST_FILE).write_text(json.dumps({"clusters": ["broken", "demo"]}))
    running = lab(tmp_path)
    await running.start()
    try:
        assert running.cluster("demo").state is ClusterState.RUNNING
        broken = running.cluster("broken")
        assert broken.state is ClusterState.FAILED
        assert broken.error
    finally:
        await running.stop()
    assert running.cluster("demo").state is ClusterState.STOPPED


async def test_stop_is_idempotent_and_a_lab_starts_once(tmp_path: Path) -> None:
    running = lab(tmp_path)
    await running.start()
    with pytest.raises(RuntimeError):
        await running.start()
    await running.stop()
    await running.stop()
    assert running.state is LabState.STOPPED


async def test_stopping_a_lab_that_never_started(tmp_path: Path) -> None:
    never = lab(tmp_path)
    await never.stop()
    assert never.state is LabState.STOPPED
    assert not (tmp_path / CLUSTER_LIST_FILE).exists()


@pytest.mark.parametrize("name", ["demo", "a", "team-1", "x" * 63])
def test_valid_cluster_names(name: str) -> None:
    assert check_cluster_name(name) == name


@pytest.mark.parametrize("name", ["", "Demo", "-a", "a-", "a_b", "a.b", "x" * 64, "../etc"])
def test_invalid_cluster_names(name: str) -> None:
    with pytest.raises(InvalidClusterName):
        check_cluster_name(name)


def test_a_damaged_cluster_list_is_an_error_not_an_empty_lab(tmp_path: Path) -> None:
    (tmp_path / CLUSTER_LIST_FILE).write_text("{not json")
    with pytest.raises(RuntimeError, match="cannot read the cluster list"):
        read_cluster_list(tmp_path)


async def test_a_running_cluster_serves_its_api_and_runs_its_scheduler(tmp_path: Path) -> None:
    running = lab(tmp_path)
    await running.start()
    try:
        demo = running.cluster("demo")
        assert demo.apiserver is not None and demo.apiserver.started
        assert demo.scheduler is not None
        # The scheduler authenticates as itself, with a client certificate of the cluster's CA (no token).
        certificate = demo.component_certificates["scheduler"].certificate
        assert certificate.subject.rfc4514_string() == "CN=system:kube-scheduler"
        assert certificate.issuer == demo.pki.ca.certificate.subject
        assert "system:kube-scheduler" not in {e.user.username for e in demo.tokens.entries()}
    finally:
        await running.stop()
    assert demo.apiserver is None and demo.scheduler is None


async def _get(cluster: Any, path: str) -> httpx.Response:
    """``path`` of ``cluster``'s API server, as an admin."""
    token = await asyncio.to_thread(cluster.tokens.issue, "test-admin", [SYSTEM_MASTERS])
    transport = httpx.ASGITransport(app=cluster.apiserver)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.get(path, headers={"Authorization": f"Bearer {token}"})


async def leaders(cluster: Cluster) -> tuple[Scheduler, ControllerManager]:
    """The cluster's scheduler and controller manager, once each leads (they stand for election)."""
    scheduler = cluster.components_running[nodes.SCHEDULER]
    manager = cluster.components_running[nodes.CONTROLLER_MANAGER]
    assert isinstance(scheduler, Scheduler) and isinstance(manager, ControllerManager)
    await asyncio.wait_for(asyncio.gather(scheduler.leading.wait(), manager.leading.wait()), WAIT_TIMEOUT)
    return scheduler, manager


async def test_a_started_cluster_shows_who_leads_in_the_leases_of_kube_system(tmp_path: Path) -> None:
    running = lab(tmp_path)
    await running.start()
    try:
        demo = running.cluster("demo")
        await leaders(demo)
        response = await _get(demo, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases")
        leases = {lease["metadata"]["name"]: lease["spec"] for lease in response.json()["items"]}
        for name in ("kube-scheduler", "kube-controller-manager"):
            assert leases[name]["holderIdentity"], f"{name} has no holder"
            # The timing profile's duration (classroom: upstream's 15 s divided by five).
            assert leases[name]["leaseDurationSeconds"] == int(CLASSROOM.leader_lease_duration)
    finally:
        await running.stop()


async def test_a_clusters_metrics_include_its_components(tmp_path: Path) -> None:
    running = lab(tmp_path)
    await running.start()
    try:
        demo = running.cluster("demo")
        await leaders(demo)  # the controllers' workqueues exist once the controller manager leads
        response = await _get(demo, "/metrics")
        families = {f.name: f for f in text_string_to_metric_families(response.text)}
        queues = {s.labels["name"] for s in families["workqueue_adds"].samples}
        assert {"replicaset", "deployment", "namespace"} <= queues
        hosts = {s.labels["host"] for s in families["rest_client_requests"].samples}
        assert hosts == {"inprocess"}
        kubelet_reads = [
            s
            for s in families["apiserver_request"].samples
            if s.labels["resource"] == "nodes" and s.labels["verb"] in ("LIST", "WATCH", "GET")
        ]
        assert kubelet_reads
    finally:
        await running.stop()


async def test_each_cluster_writes_its_own_audit_log_under_its_own_policy(tmp_path: Path) -> None:
    own = tmp_path / "clusters" / "quiet" / CLUSTER_POLICY_FILE
    own.parent.mkdir(parents=True)
    own.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n")
    running = lab(tmp_path)
    await running.start()
    try:
        quiet = await running.create_cluster("quiet")
        demo = running.cluster("demo")
        for cluster in (demo, quiet):
            await _get(cluster, "/api/v1/namespaces/default/pods")
            assert cluster.apiserver is not None and cluster.apiserver.auditor is not None
            await cluster.apiserver.auditor.log.flush()
    finally:
        await running.stop()
    demo_log = tmp_path / "clusters" / "demo" / "audit" / "audit.log"
    users = {json.loads(line)["user"].get("username") for line in demo_log.read_text().splitlines()}
    assert "test-admin" in users and "system:kube-scheduler" in users
    assert not (tmp_path / "clusters" / "quiet" / "audit" / "audit.log").exists()


async def test_a_cluster_with_an_invalid_audit_policy_does_not_start(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n")
    running = Lab(LabConfig(data_dir=tmp_path, store_url="sqlite", audit=AuditSettings(policy_file=policy)))
    await running.start()
    try:
        demo = running.cluster("demo")
        assert demo.state is ClusterState.FAILED
        assert (
            demo.error is not None and "invalid audit policy" in demo.error and "rules[0].level" in demo.error
        )
    finally:
        await running.stop()


@pytest.mark.parametrize("serving_ca", [None, b"lab's serving CA"], ids=["no HTTPS port", "runlab"])
async def test_every_namespace_gets_the_ca_that_verifies_the_api_server(
    tmp_path: Path, serving_ca: bytes | None
) -> None:
    """``kube-root-ca.crt`` holds the lab's serving CA (what signed the API port's certificate); a lab
    serving no HTTPS port publishes the cluster's own CA instead."""
    running = Lab(
        LabConfig(data_dir=tmp_path, components=("controller-manager",), nodes=0, serving_ca=serving_ca)
    )
    await running.start()
    try:
        demo = running.cluster("demo")
        assert demo.apiserver is not None
        token = await asyncio.to_thread(demo.tokens.issue, "test-admin", [SYSTEM_MASTERS])
        config = Config.for_in_process(
            demo.apiserver, "demo", mount_prefix="/clusters/demo", bearer_token=token, qps=-1
        )
        async with RESTClient(config) as client:
            items = await wait_for(
                client.resource("", "v1", "configmaps", "kube-system"),
                lambda items: any(cm["metadata"]["name"] == "kube-root-ca.crt" for cm in items),
            )
        [configmap] = [cm for cm in items if cm["metadata"]["name"] == "kube-root-ca.crt"]
        expected = serving_ca if serving_ca is not None else demo.pki.ca.certificate_pem
        assert configmap["data"] == {"ca.crt": expected.decode()}
    finally:
        await running.stop()
