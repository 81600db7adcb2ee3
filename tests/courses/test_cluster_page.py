"""The cluster page: the live topology's markup, its script and the trace stream it connects to.

The page is for those who may see the cluster (courses/classrooms/access.py): the demo cluster for
anyone while ``KUBELAB_DEMO_ANONYMOUS`` is on, a classroom's cluster for its people and staff.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.test import Client
from pytest_django import Settings

from controlplane.runtime import CLUSTER_LIST_FILE, activate
from courses.models import Classroom


@pytest.fixture
def demo(tmp_path: Path, settings: Settings) -> Iterator[Path]:
    settings.KUBELAB_DATA_DIR = tmp_path
    settings.KUBELAB_STORE = "sqlite"
    settings.KUBELAB_TIMING_PROFILE = "classroom"
    (tmp_path / CLUSTER_LIST_FILE).write_text(json.dumps({"clusters": ["demo", "team-a"]}))
    activate(None)
    yield tmp_path
    activate(None)


def _config(page: str) -> dict[str, str]:
    match = re.search(r'<script id="topology-config" type="application/json">(.*?)</script>', page)
    assert match, "the page carries its topology configuration as JSON"
    config: dict[str, str] = json.loads(match.group(1))
    return config


def test_the_demo_cluster_page_loads_the_topology(client: Client, demo: Path) -> None:
    response = client.get("/lab/demo/")
    assert response.status_code == 200
    page = response.content.decode()
    # The page loads the topology's modules and mounts it itself (topology.js starts nothing on import).
    assert '<script type="module" src="/static/topology/topology.js"></script>' in page
    assert 'import { start } from "/static/topology/topology.js";' in page
    assert 'start(document.querySelector("[data-topology=root]"));' in page
    assert "/static/topology/topology.css" in page
    assert _config(page) == {
        "cluster": "demo",
        "socket": "/ws/lab/demo/trace/",
        "timing": "classroom",
        "etcd": "/lab/demo/etcd/",
    }
    assert '<svg class="topology' in page
    assert 'aria-live="polite"' in page  # the narration log
    assert 'data-control="animate"' in page  # the animation-off switch
    assert ">slower<" in page and ">faster<" in page  # the speed slider says which way is which
    assert "Timing profile:" in page


@pytest.fixture
def staff_client(client: Client, db: None) -> Client:
    client.force_login(User.objects.create_user("root", is_staff=True))
    return client


def test_each_cluster_streams_its_own_trace(staff_client: Client, demo: Path) -> None:
    page = staff_client.get("/lab/team-a/").content.decode()
    assert _config(page)["socket"] == "/ws/lab/team-a/trace/"


def test_a_classroom_s_cluster_is_shown_to_its_people_only(client: Client, demo: Path, db: None) -> None:
    alice, dave = User.objects.create_user("alice"), User.objects.create_user("dave")
    classroom = Classroom.objects.create(name="Kubernetes 101", slug="k8s-101")
    classroom.students.add(alice)
    classroom.clusters.create(cluster="team-a")
    client.force_login(alice)
    assert client.get("/lab/team-a/").status_code == 200
    client.force_login(dave)
    refused = client.get("/lab/team-a/")
    assert refused.status_code == 403
    assert "You may not watch cluster &#x27;team-a&#x27;." in refused.content.decode()
    assert "/ws/lab/team-a/trace/" not in refused.content.decode()
    assert client.get("/lab/demo/").status_code == 200  # the demo cluster is everyone's


def test_anonymous_visitors_see_the_demo_page_only(client: Client, demo: Path, settings: Settings) -> None:
    for name in ("team-a", "nope"):  # whether the cluster exists or not
        refused = client.get(f"/lab/{name}/")
        assert refused.status_code == 403
        assert f"Sign in to watch cluster &#x27;{name}&#x27;." in refused.content.decode()
    settings.KUBELAB_DEMO_ANONYMOUS = False
    assert client.get("/lab/demo/").status_code == 403


def test_the_timing_profile_of_the_settings_is_shown_before_the_stream_says(
    client: Client, demo: Path, settings: Settings
) -> None:
    settings.KUBELAB_TIMING_PROFILE = "upstream"
    page = client.get("/lab/demo/").content.decode()
    assert 'data-profile="upstream">upstream</strong>' in page


def test_an_unknown_cluster_has_no_page(staff_client: Client, demo: Path) -> None:
    assert staff_client.get("/lab/nope/").status_code == 404


MODULES = [
    "topology.js",
    "stream.js",
    "model.js",
    "view.js",
    "narration.js",
    "controls.js",
    "timeline.js",
    "rewind.js",
]


@pytest.mark.parametrize("module", MODULES)
def test_the_topology_modules_are_static_files(module: str) -> None:
    found = finders.find(f"topology/{module}")
    assert isinstance(found, str), f"static/topology/{module} is missing"
    assert "export " in Path(found).read_text() or "import " in Path(found).read_text()
