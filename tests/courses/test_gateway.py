"""The web application's one door into the running lab (courses/gateway.py).

What it answers without a lab in this process, with a running one, and with a stopped one; the etcd
panel's view over it answers 404 (not running here) and 503 (not running) before it looks at what it
was asked. That only this module reaches into the lab is import-linter's contract (pyproject.toml).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import AsyncRequestFactory
from pytest_django import Settings

from controlplane.client.config import Config
from controlplane.client.errors import APIError
from controlplane.client.rest import RESTClient
from controlplane.clusterhealth import node_ready, pod_pending
from controlplane.identity import SYSTEM_MASTERS
from controlplane.runtime import Lab, LabConfig, activate
from courses import gateway
from courses.lab.views import etcd_keys
from tests.support.inprocess import wait_for
from tests.support.lab import active_lab


@pytest.fixture
def no_lab() -> Iterator[None]:
    activate(None)
    yield
    activate(None)


@pytest.fixture
async def stopped_lab(tmp_path: Path, settings: Settings) -> AsyncIterator[Lab]:
    """A lab whose demo cluster ran and has stopped: it is this process's lab, but nothing runs."""
    settings.KUBELAB_DATA_DIR = tmp_path
    lab = Lab(LabConfig(data_dir=tmp_path, components=(), nodes=0))
    await lab.start()
    await lab.stop()
    activate(lab)
    try:
        yield lab
    finally:
        activate(None)


def test_without_a_lab_in_this_process_nothing_runs_here(no_lab: None, tmp_path: Path) -> None:
    assert gateway.running_lab(data_dir=tmp_path) is None
    with pytest.raises(gateway.NotServedHere, match="'demo' is not running in this process"):
        gateway.require_running(cluster="demo")


async def test_a_stopped_cluster_is_known_but_not_running(stopped_lab: Lab, tmp_path: Path) -> None:
    status = gateway.running_lab(data_dir=tmp_path)
    assert status == gateway.LabStatus(
        state="stopped", clusters=(gateway.ClusterStatus("demo", "stopped", None),)
    )
    assert not status.starting
    assert gateway.running_lab(data_dir=tmp_path / "elsewhere") is None  # another lab's directory
    assert gateway.cluster_names(data_dir=tmp_path, store_url="sqlite") == ["demo"]
    with pytest.raises(gateway.NotRunning) as stopped:
        await gateway.read_range(cluster="demo", prefix="/registry/", limit=10)
    assert stopped.value.state == "stopped"
    with pytest.raises(gateway.NotServedHere):
        await gateway.read_diagram(cluster="nope")


async def test_the_etcd_panel_says_a_cluster_is_not_running_before_reading_the_request(
    stopped_lab: Lab,
) -> None:
    for query in ({}, {"revision": "not-a-number"}):
        request = AsyncRequestFactory().get("/lab/demo/etcd/", query)
        staff = User(username="root", is_staff=True)

        async def auser(user: User = staff) -> User:
            return user

        request.user, request.auser = staff, auser
        response = await etcd_keys(request, "demo")
        assert response.status_code == 503
        assert json.loads(response.content) == {"error": "cluster 'demo' is stopped"}


def test_the_trace_socket_path_is_the_control_plane_s_named_route() -> None:
    assert gateway.trace_socket_path(cluster="team-a") == "/ws/lab/team-a/trace/"


def test_a_cluster_name_is_a_dns_label() -> None:
    gateway.check_cluster_name(name="team-a")
    with pytest.raises(gateway.InvalidClusterName):
        gateway.check_cluster_name(name="Team_A")


async def test_a_clusters_health_is_what_its_api_lists_and_its_failing_answers(tmp_path: Path) -> None:
    # Recording on, as when a page watches the cluster: failing answers are counted from the trace.
    async with active_lab(LabConfig(data_dir=tmp_path, nodes=2, trace_recording=True)) as lab:
        cluster = lab.cluster("demo")
        token = cluster.tokens.issue("admin", [SYSTEM_MASTERS])
        config = Config.for_in_process(
            cluster.endpoint, "demo", mount_prefix="/clusters/demo", bearer_token=token
        )
        async with RESTClient(config) as admin:
            nodes = admin.resource("", "v1", "nodes")
            listed = await wait_for(nodes, lambda items: sum(1 for n in items if node_ready(n)) >= 2)
            pods = admin.resource("", "v1", "pods", "default")
            stuck = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "stuck"},
                "spec": {
                    "nodeSelector": {"disk": "none-has-it"},
                    "containers": [{"name": "c", "image": "nginx"}],
                },
            }
            await pods.create(stuck)
            health = gateway.cluster_health(cluster="demo")
            assert health is not None
            assert (health["nodes_ready"], health["nodes"]) == (
                sum(1 for n in listed if node_ready(n)),
                len(listed),
            )
            pending = [p for p in (await admin.resource("", "v1", "pods").list())["items"] if pod_pending(p)]
            assert health["pods_pending"] == len(pending) >= 1
            assert health["failing_requests"] == 0 and health["healthy"]

            wrong = Config.for_in_process(
                cluster.endpoint, "demo", mount_prefix="/clusters/demo", bearer_token="x"
            )
            async with RESTClient(wrong) as stranger:
                with pytest.raises(APIError) as refused:
                    await stranger.resource("", "v1", "pods", "default").list()
            assert refused.value.code == 401
            health = gateway.cluster_health(cluster="demo")
            assert health is not None and health["failing_requests"] == 1 and not health["healthy"]
        assert gateway.cluster_health(cluster="elsewhere") is None
