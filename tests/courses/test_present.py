"""Presenter mode: the page (``/lab/<name>/present/``) for whoever may see a cluster, its fault panel for
whoever may break it, and the presenter's fault endpoint (``/lab/<name>/faults/``).

Through Django's test client, against the views (courses/lab/views.py) and ``courses.lab.presenter``.
No lab runs in this process: what the gateway would do to a running cluster (the node count, applying
a fault, clearing them all) is replaced where a test needs it, and its absence answered where not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.staticfiles import finders
from django.test import Client
from pytest_django import Settings

from controlplane.faults import catalogue
from controlplane.faults.catalogue import CATALOGUE, FaultSpec
from controlplane.runtime import CLUSTER_LIST_FILE, activate
from courses import gateway
from courses.lab.presenter import parameter_values
from courses.models import Classroom, ClassroomLogEntry, Sandbox

pytestmark = pytest.mark.django_db

PANEL = 'data-present="faults"'


@pytest.fixture
def lab_dir(tmp_path: Path, settings: Settings) -> Iterator[Path]:
    settings.KUBELAB_DATA_DIR = tmp_path
    settings.KUBELAB_STORE = "sqlite"
    settings.KUBELAB_TIMING_PROFILE = "classroom"
    (tmp_path / CLUSTER_LIST_FILE).write_text(json.dumps({"clusters": ["demo", "team-a", "team-b"]}))
    activate(None)
    yield tmp_path
    activate(None)


def _instructor(username: str) -> User:
    user = User.objects.create_user(username)
    user.user_permissions.add(Permission.objects.get(codename="teach_classroom"))
    return User.objects.get(pk=user.pk)


@pytest.fixture
def people() -> dict[str, User]:
    """k8s-101 owns team-a: taught by bob, attended by alice (who has a sandbox); carol teaches k8s-102,
    which owns team-b; root is staff."""
    bob, carol = _instructor("bob"), _instructor("carol")
    alice = User.objects.create_user("alice")
    first = Classroom.objects.create(name="Kubernetes 101", slug="k8s-101")
    first.instructors.add(bob)
    first.students.add(alice)
    first.clusters.create(cluster="team-a")
    second = Classroom.objects.create(name="Kubernetes 102", slug="k8s-102")
    second.instructors.add(carol)
    second.clusters.create(cluster="team-b")
    Sandbox.objects.create(user=alice, cluster=f"sb-{alice.pk}")
    root = User.objects.create_user("root", is_staff=True)
    return {"alice": alice, "bob": bob, "carol": carol, "root": root}


def _as(user: User | None, **options: Any) -> Client:
    client = Client(**options)
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def three_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway answers as for a running cluster of three nodes."""
    monkeypatch.setattr(
        gateway,
        "cluster_facts",
        lambda *, cluster: gateway.ClusterFacts(cluster, "running", "classroom", 3, 1),
    )


@pytest.fixture
def lab_calls(monkeypatch: pytest.MonkeyPatch, three_nodes: None) -> list[tuple[str, str, Any]]:
    """The gateway applies and clears as a running lab would; each call is kept."""
    calls: list[tuple[str, str, Any]] = []

    async def apply_fault(
        *, cluster: str, fault: FaultSpec, reason: str, delay: float = 0.0, actor: str = ""
    ) -> gateway.FaultDone:
        assert actor, "the cluster's audit log is told who asked"
        calls.append(("apply", cluster, fault))
        return gateway.FaultDone(fault.kind, fault.target, "applied")

    async def clear_all_faults(*, cluster: str, reason: str, actor: str = "") -> int:
        assert actor, "the cluster's audit log is told who asked"
        calls.append(("clear-all", cluster, reason))
        return 1

    monkeypatch.setattr(gateway, "apply_fault", apply_fault)
    monkeypatch.setattr(gateway, "clear_all_faults", clear_all_faults)
    return calls


def _post(client: Client, cluster: str, **form: str) -> tuple[int, dict[str, Any]]:
    response = client.post(f"/lab/{cluster}/faults/", form)
    assert response["Content-Type"] == "application/json"
    answer: dict[str, Any] = response.json()
    assert set(answer) == {"ok", "message"} and answer["message"]
    return response.status_code, answer


# -- the page ----------------------------------------------------------------------------------------


def test_the_page_mounts_the_topology_with_the_presenter_s_keys(
    lab_dir: Path, people: dict[str, User]
) -> None:
    response = _as(people["root"]).get("/lab/team-a/present/")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'import { present } from "/static/topology/present.js";' in page
    assert "/static/topology/present.css" in page and "/static/topology/topology.css" in page
    assert '<svg class="topology' in page and 'data-topology="narration"' in page
    assert 'data-present="help"' in page and 'data-present="black"' in page
    assert '<header class="site-header">' not in page  # the diagram has the whole screen
    # Staff may break any cluster: the panel lists every kind of the catalogue, the first nine a digit each.
    assert PANEL in page and 'data-url="/lab/team-a/faults/"' in page
    for digit, kind in enumerate(CATALOGUE, start=1):
        key = str(digit) if digit <= 9 else ""  # past the ninth, a kind is picked by clicking it
        assert f'data-kind="{kind}" data-key="{key}"' in page


def test_the_page_is_for_those_who_may_see_the_cluster(
    lab_dir: Path, people: dict[str, User], settings: Settings
) -> None:
    settings.KUBELAB_DEMO_ANONYMOUS = True
    seen = {
        ("alice", "team-a"): 200,
        ("bob", "team-a"): 200,
        ("carol", "team-a"): 403,
        ("alice", "team-b"): 403,
        ("bob", "demo"): 200,
    }
    for (who, cluster), status in seen.items():
        response = _as(people[who]).get(f"/lab/{cluster}/present/")
        assert response.status_code == status, (who, cluster)
        if status == 403:
            assert "/ws/lab/" not in response.content.decode()
    assert _as(None).get("/lab/demo/present/").status_code == 200
    assert _as(None).get("/lab/team-a/present/").status_code == 403
    assert _as(people["root"]).get("/lab/nope/present/").status_code == 404


def test_the_fault_panel_is_rendered_for_those_who_may_break_the_cluster(
    lab_dir: Path, people: dict[str, User], three_nodes: None
) -> None:
    assert PANEL not in _as(people["alice"]).get("/lab/team-a/present/").content.decode()
    assert PANEL not in _as(people["bob"]).get("/lab/demo/present/").content.decode()
    assert PANEL not in _as(None).get("/lab/demo/present/").content.decode()
    page = _as(people["bob"]).get("/lab/team-a/present/").content.decode()
    assert PANEL in page
    assert 'data-template="Stop the kubelet on {node}"' in page
    # A parameter's values are those of the cluster that the catalogue accepts, a digit each.
    node = re.search(r'<div class="present-parameter" data-parameter="node" hidden>(.*?)</div>', page, re.S)
    assert node is not None
    assert re.findall(r'data-value="([^"]+)" data-key="(\d)"', node.group(1)) == [
        ("node-1", "1"),
        ("node-2", "2"),
        ("node-3", "3"),
    ]


def test_the_page_speaks_chinese(lab_dir: Path, people: dict[str, User], three_nodes: None) -> None:
    client = _as(people["bob"])
    client.cookies["django_language"] = "zh-hans"
    page = client.get("/lab/team-a/present/").content.decode()
    assert '<html lang="zh-hans"' in page
    assert "演示模式" in page and "停止 {node} 上的 kubelet" in page


def test_the_cluster_page_and_the_dashboard_link_to_presenter_mode(
    lab_dir: Path, people: dict[str, User]
) -> None:
    cluster_page = _as(people["bob"]).get("/lab/team-a/").content.decode()
    assert 'href="/lab/team-a/present/"' in cluster_page
    dashboard = _as(people["bob"]).get("/classrooms/k8s-101/").content.decode()
    assert f'href="/lab/sb-{people["alice"].pk}/present/"' in dashboard


def test_the_presenter_module_is_a_static_file() -> None:
    for name in ("present.js", "present.css"):
        assert isinstance(finders.find(f"topology/{name}"), str), name


# -- the fault endpoint ------------------------------------------------------------------------------


def test_who_may_not_break_a_cluster_is_refused_and_the_classroom_is_told(
    lab_dir: Path, people: dict[str, User], lab_calls: list[tuple[str, str, Any]]
) -> None:
    form = {"kind": "stop-kubelet", "node": "node-2"}
    for who in ("alice", "carol"):  # a student of its classroom, an instructor of another one
        status, answer = _post(_as(people[who]), "team-a", **form)
        assert status == 403 and answer == {"ok": False, "message": "You may not break cluster 'team-a'."}
    status, answer = _post(_as(None), "team-a", **form)
    assert status == 403 and not answer["ok"]
    assert lab_calls == []
    refused = ClassroomLogEntry.objects.filter(classroom__slug="k8s-101", action="refused")
    assert {entry.actor for entry in refused} == {people["alice"], people["carol"]}
    assert {entry.detail for entry in refused} == {"/lab/team-a/faults/"}
    # Someone else's sandbox belongs to no classroom's log: nothing is written for it.
    before = ClassroomLogEntry.objects.count()
    status, _ = _post(_as(people["carol"]), f"sb-{people['alice'].pk}", **form)
    assert status == 403 and ClassroomLogEntry.objects.count() == before


def test_a_fault_that_is_not_one_is_answered_400_with_what_is_wrong(
    lab_dir: Path, people: dict[str, User], lab_calls: list[tuple[str, str, Any]]
) -> None:
    client = _as(people["bob"])
    cases = [
        ({"kind": "unplug-everything"}, "'unplug-everything' is not a kind of fault (known: compact-store"),
        ({"kind": "stop-kubelet"}, "stop-kubelet needs a node: one of node-1, node-2, node-3."),
        (
            {"kind": "stop-kubelet", "node": "node-9"},
            "'node-9' is not a node of cluster team-a: one of node-1,",
        ),
        ({"kind": "stop-kubelet", "node": "node-2", "for": "soon"}, "The duration is a number of seconds"),
        ({"kind": "stop-kubelet", "node": "node-2", "for": "0"}, "from 1 to 1800."),
        ({"kind": "compact-store", "for": "60"}, "compact-store happens at once: it takes no duration."),
        ({"kind": "compact-store", "action": "explode"}, "'explode' is not an action: apply or clear-all."),
    ]
    for form, said in cases:
        status, answer = _post(client, "team-a", **form)
        assert status == 400 and not answer["ok"] and said in answer["message"], (form, answer)
    assert lab_calls == []
    assert not ClassroomLogEntry.objects.filter(action="fault-applied").exists()


def test_the_answer_is_in_the_user_s_language(
    lab_dir: Path, people: dict[str, User], lab_calls: list[tuple[str, str, Any]]
) -> None:
    client = _as(people["bob"])
    client.cookies["django_language"] = "zh-hans"
    status, answer = _post(client, "team-a", kind="stop-kubelet", node="node-7")
    assert status == 400 and answer["message"].startswith("'node-7' 不是集群 team-a 的 node")
    assert answer["message"].endswith("node-1, node-2, node-3。")
    status, answer = _post(client, "team-a", kind="stop-kubelet", node="node-2")
    assert status == 200 and answer["message"].startswith("停止 node-2 上的 kubelet")


def test_an_instructor_applies_a_fault_to_their_classroom_s_cluster_and_it_is_logged(
    lab_dir: Path, people: dict[str, User], lab_calls: list[tuple[str, str, Any]]
) -> None:
    status, answer = _post(_as(people["bob"]), "team-a", kind="stop-kubelet", node="node-2", **{"for": "90"})
    assert status == 200
    assert answer == {"ok": True, "message": "Stop the kubelet on node-2 for 90 s: done."}
    assert lab_calls == [("apply", "team-a", FaultSpec("stop-kubelet", (("node", "node-2"),), 90.0))]
    logged = ClassroomLogEntry.objects.get(action="fault-applied")
    assert logged.classroom.slug == "k8s-101" and logged.actor == people["bob"]
    assert logged.detail == "fault=stop-kubelet, node=node-2, for=90.0 -> team-a"


def test_clear_all_clears_every_fault_of_the_cluster(
    lab_dir: Path, people: dict[str, User], lab_calls: list[tuple[str, str, Any]]
) -> None:
    status, answer = _post(_as(people["bob"]), "team-a", action="clear-all")
    assert status == 200
    assert answer == {"ok": True, "message": "Cleared 1 fault of team-a; it runs as it should again."}
    assert [(what, cluster) for what, cluster, _ in lab_calls] == [("clear-all", "team-a")]
    assert ClassroomLogEntry.objects.get(action="faults-cleared").detail == "team-a"


def test_a_student_s_sandbox_is_broken_by_their_instructor_without_a_log(
    lab_dir: Path, people: dict[str, User], lab_calls: list[tuple[str, str, Any]]
) -> None:
    sandbox = f"sb-{people['alice'].pk}"
    client = _as(people["bob"])
    assert _post(client, sandbox, kind="compact-store")[0] == 200
    assert _post(client, sandbox, action="clear-all")[0] == 200
    assert [(what, cluster) for what, cluster, _ in lab_calls] == [("apply", sandbox), ("clear-all", sandbox)]
    assert not ClassroomLogEntry.objects.exists()


def test_without_a_lab_or_when_the_lab_refuses_the_answer_says_so(
    lab_dir: Path, people: dict[str, User], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = _as(people["root"])
    status, answer = _post(client, "team-a", kind="compact-store")  # no lab runs in this process
    assert status == 404 and answer == {"ok": False, "message": "Cluster team-a does not run here."}
    assert _post(client, "team-a", action="clear-all")[0] == 404

    async def refuse(
        *, cluster: str, fault: FaultSpec, reason: str, delay: float = 0.0, actor: str = ""
    ) -> gateway.FaultDone:
        raise gateway.FaultRefused("cluster 'team-a' is hibernated: faults apply to a running cluster")

    monkeypatch.setattr(gateway, "apply_fault", refuse)
    status, answer = _post(client, "team-a", kind="compact-store")
    assert status == 409 and "is hibernated" in answer["message"]


def test_the_endpoint_takes_posts_with_a_csrf_token_only(lab_dir: Path, people: dict[str, User]) -> None:
    assert _as(people["root"]).get("/lab/team-a/faults/").status_code == 405
    strict = _as(people["root"], enforce_csrf_checks=True)
    assert strict.post("/lab/team-a/faults/", {"action": "clear-all"}).status_code == 403


def test_a_parameter_s_values_are_those_of_the_cluster_its_check_accepts() -> None:
    assert parameter_values(catalogue.NODE, nodes=2) == ("node-1", "node-2")
    assert parameter_values(catalogue.NODE, nodes=None) == ()  # not running here: nothing to offer

    def proxies(value: Any, nodes: int | None) -> str:
        if not str(value).startswith("kube-proxy:"):
            raise catalogue.InvalidFault(f"{value!r} is no kube-proxy", parameter="component")
        return str(value)

    component = catalogue.Parameter("component", {"en": "a kube-proxy"}, proxies, "kube-proxy:node-N")
    assert parameter_values(component, nodes=2) == ("kube-proxy:node-1", "kube-proxy:node-2")
