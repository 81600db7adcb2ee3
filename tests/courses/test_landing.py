"""The landing page: what Kubelab is, and the lab's clusters with their state."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import AsyncClient, Client
from pytest_django import Settings

from controlplane.runtime import CLUSTER_LIST_FILE, Lab, LabConfig, activate
from tests.support.classrooms import make_classrooms


@pytest.fixture
def data_dir(tmp_path: Path, settings: Settings) -> Path:
    settings.KUBELAB_DATA_DIR = tmp_path
    settings.KUBELAB_STORE = "sqlite"
    return tmp_path


@pytest.fixture(autouse=True)
def no_active_lab() -> Iterator[None]:
    activate(None)
    yield
    activate(None)


def test_landing_page_explains_kubelab(client: Client, data_dir: Path) -> None:
    response = client.get("/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "<title>Kubelab</title>" in page
    assert "Learn Kubernetes by watching it work" in page
    assert "vendor/htmx/htmx.min.js" in page
    assert "No clusters yet" in page


def test_landing_page_lists_the_clusters_of_the_data_dir(client: Client, data_dir: Path, db: None) -> None:
    (data_dir / CLUSTER_LIST_FILE).write_text(json.dumps({"clusters": ["demo", "team-a"]}))
    client.force_login(User.objects.create_user("teacher", is_staff=True))
    page = client.get("/").content.decode()
    assert '<a href="/lab/demo/">demo</a>' in page
    assert '<a href="/lab/team-a/">team-a</a>' in page
    assert "not running here" in page


def test_htmx_requests_get_only_the_cluster_list(client: Client, data_dir: Path) -> None:
    (data_dir / CLUSTER_LIST_FILE).write_text(json.dumps({"clusters": ["demo"]}))
    response = client.get("/", headers={"HX-Request": "true"})
    fragment = response.content.decode()
    assert response.status_code == 200
    assert 'id="cluster-list"' in fragment
    assert "<html" not in fragment
    assert "/lab/demo/" in fragment


def test_a_starting_lab_polls_until_its_clusters_run(client: Client, data_dir: Path) -> None:
    activate(Lab(LabConfig(data_dir=data_dir)))  # not started yet
    page = client.get("/").content.decode()
    assert "The lab is starting" in page
    assert 'hx-trigger="load delay:1s"' in page


async def test_a_running_lab_shows_its_clusters_running(async_client: AsyncClient, data_dir: Path) -> None:
    lab = Lab(LabConfig(data_dir=data_dir))
    await lab.start()
    activate(lab)
    try:
        response = await async_client.get("/")
        page = response.content.decode()
        assert response.status_code == 200
        assert '<a href="/lab/demo/">demo</a>' in page
        assert "state-running" in page
        assert "hx-trigger" not in page  # settled: no more polling
        cluster_page = await async_client.get("/lab/demo/")
        assert cluster_page.status_code == 200
        assert "running" in cluster_page.content.decode()
    finally:
        await lab.stop()


def test_cluster_pages(client: Client, data_dir: Path, db: None) -> None:
    (data_dir / CLUSTER_LIST_FILE).write_text(json.dumps({"clusters": ["demo"]}))
    assert client.get("/lab/demo/").status_code == 200
    assert client.get("/lab/nope/").status_code == 403  # anonymous visitors cannot probe for names
    client.force_login(User.objects.create_user("root", is_staff=True))
    assert client.get("/lab/nope/").status_code == 404


def test_the_list_shows_only_the_clusters_the_visitor_may_watch(
    client: Client, data_dir: Path, db: None
) -> None:
    (data_dir / CLUSTER_LIST_FILE).write_text(json.dumps({"clusters": ["demo", "team-a", "team-b", "loose"]}))
    users = make_classrooms()
    anonymous = client.get("/").content.decode()
    assert "/lab/demo/" in anonymous
    assert "/lab/team-a/" not in anonymous, "an anonymous visitor learnt that a classroom's cluster exists"
    client.force_login(users["alice"])  # attends the classroom owning team-a
    student = client.get("/").content.decode()
    assert "/lab/demo/" in student and "/lab/team-a/" in student
    assert "/lab/team-b/" not in student, "a student was shown another classroom's cluster"
    assert "/lab/loose/" not in student, "a student was shown a cluster of no classroom"
