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

from controlplane.runtime import Lab, LabConfig, activate
from courses import gateway
from courses.lab.views import etcd_keys


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
