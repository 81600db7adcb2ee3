"""Rewinding the topology page: the diagram as the cluster was at an earlier store revision.

The first tests play the server's side (the trace websocket through ``fake_socket``, and the etcd
endpoint's ``?objects=diagram`` reads through a routed answer) so that what the page asks and draws
can be checked exactly; the last one runs a real lab and kubectl: a pod created and deleted, the page
rewound to a revision where it existed, its history replayed a step at a time, then back to live.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser.conftest import FakeServer
from tests.browser.test_topology import (
    PODS,
    SUBSCRIBE_STATE,
    Trace,
    hello,
    lab_page,
    narration,
    open_page,
    pods_drawn,
    put_pod,
    state,
)

pytestmark = pytest.mark.browser

__all__ = ["lab_page"]  # the fixture, shared with test_topology

WEB_KEY = "/registry/pods/default/web"
NODE = {"name": "node-1", "ready": "True", "unschedulable": False, "mod_revision": 2}


def web(revision: int, **fields: Any) -> dict[str, Any]:
    pod = {"namespace": "default", "name": "web", "node": "node-1", "phase": "Running", "deleting": False}
    return {**pod, "mod_revision": revision, **fields}


#: What the store holds at each revision: the pod is created (10), bound (11), running (12), deleted (13).
STORE: dict[int, list[dict[str, Any]]] = {
    10: [web(10, node="", phase="Pending")],
    11: [web(11, phase="Pending")],
    12: [web(12)],
    13: [],
}
CURRENT, COMPACTED = 13, 4


class EtcdEndpoint:
    """The server's side of /lab/demo/etcd/: the revisions above, 410 below the compaction mark."""

    def __init__(self, page: Any) -> None:
        self.asked: list[dict[str, list[str]]] = []
        page.route("**/lab/demo/etcd/**", self.answer)

    def answer(self, route: Any) -> None:
        query = parse_qs(urlsplit(route.request.url).query)
        self.asked.append(query)
        revision = int(query["revision"][0]) if "revision" in query else CURRENT
        marks = {"cluster": "demo", "revision": revision, "current_revision": CURRENT, "compacted": COMPACTED}
        if revision < COMPACTED:
            message = (
                f"revision {revision} is compacted: the store keeps history from revision {COMPACTED} on"
            )
            route.fulfill(status=410, json={"error": message, "compacted": COMPACTED})
        elif query.get("objects") == ["diagram"]:
            objects = {"nodes": [NODE], "pods": STORE.get(revision, []), "unreadable": 0, "more": False}
            route.fulfill(status=200, json={**marks, "objects": objects})
        else:
            route.fulfill(status=200, json={**marks, "keys": [], "more": False, "count": 0})

    def objects_asked(self) -> list[int]:
        return [int(q["revision"][0]) for q in self.asked if q.get("objects") == ["diagram"]]


def initial_state(seq: int = 0, revision: int = 9, **fields: Any) -> dict[str, Any]:
    """The state the live page starts from: node-1 as stored at ``revision``, and no pod."""
    stored = {k: v for k, v in NODE.items() if k != "mod_revision"}
    return state(seq, revision, compacted=COMPACTED, nodes=[stored], **fields)


def pod_history(trace: Trace) -> list[dict[str, Any]]:
    """kubectl run web, the scheduler binds it, the kubelet runs it, kubectl deletes it: revisions 10-13.
    The pod is drawn from the store's writes (each ``store.txn`` carries its facts)."""
    kubelet = trace.event(
        "component.state", frm="kubelet:node-1", component="kubelet", node="node-1", state="running"
    )
    watch = {"frm": "apiserver", "to": "kubelet:node-1", "source": "apiserver", "watch": "w-kubelet"}
    opened = trace.event("watch.opened", **watch, resource="pods", revision=9)
    create = trace.request("c", "user:admin", "POST", PODS, revision=10, writes=[put_pod("web")])
    nodes = {"node-1": {"filters": {}, "scores": {}, "total": 80, "feasible": True}}
    decision = trace.event("scheduler.decision", frm="scheduler", pod="default/web", namespace="default",
                           name="web", feasible=["node-1"], chosen="node-1", node="node-1", nodes=nodes,
                           revision=10, requests=["b"])  # fmt: skip
    bind = trace.request(
        "b", "scheduler", "POST", f"{PODS}/web/binding", revision=11, writes=[put_pod("web", node="node-1")]
    )
    told = trace.event(
        "watch.event", **watch, event="ADDED", revision=11, kind="Pod", namespace="default", name="web",
        resource="pods", key=WEB_KEY,
    )  # fmt: skip
    running = [put_pod("web", node="node-1", phase="Running")]
    status = trace.request(
        "s", "kubelet:node-1", "PATCH", f"{PODS}/web/status", code=200, revision=12, writes=running
    )
    deleted = [{"type": "DELETE", "key": WEB_KEY}]
    delete = trace.request("d", "user:admin", "DELETE", f"{PODS}/web", code=200, revision=13, writes=deleted)
    gone = trace.event(
        "watch.event", **watch, event="DELETED", revision=13, kind="Pod", namespace="default", name="web",
        resource="pods", key=WEB_KEY,
    )  # fmt: skip
    return [kubelet, opened, *create, decision, *bind, told, *status, *delete, gone]


def banner(page: Any) -> Any:
    return page.locator("[data-rewind=banner]")


def wait_state(page: Any, mode: str) -> None:
    page.wait_for_function(f"document.querySelector('[data-rewind=banner]').dataset.state === {mode!r}")


def wait_shown(page: Any, revision: int) -> None:
    """Until the banner says the diagram shows `revision` (not while the store is being read)."""
    page.wait_for_function(
        "r => { const b = document.querySelector('[data-rewind=banner]');"
        " return b.dataset.state === 'past' && b.textContent.includes(`Showing revision ${r},`); }",
        arg=revision,
    )


def history_seq(page: Any) -> int:
    seq: int = page.evaluate("() => window.kubelabTopology.rewind.model.lastSeq")
    return seq


def test_rewinding_draws_the_pod_the_store_held_then_and_back_to_live_plays_what_waited(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    etcd = EtcdEndpoint(page)
    open_page(page, fake_socket, lab_page, start=initial_state())
    trace = Trace()
    history = pod_history(trace)
    fake_socket.frame(history)
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    page.wait_for_function("window.kubelabTopology.timeline.queue.length === 0")
    assert pods_drawn(page) == [], "the deleted pod is still drawn live"
    assert banner(page).inner_text() == "Live: the diagram shows the cluster now."

    # Rewind with the keyboard: type the revision where the pod ran, Enter.
    page.locator("[data-rewind=at]").fill("12")
    page.locator("[data-rewind=at]").press("Enter")
    wait_state(page, "past")
    assert etcd.objects_asked() == [12]
    assert banner(page).inner_text().startswith("⏪ Showing revision 12, not now (now: revision 13)")
    assert pods_drawn(page) == ["pod default/web (running)"], "the store at 12 held web, running on node-1"
    assert (
        "Revision 12: the cluster as it was then, not now"
        in page.locator("svg.topology .past-label").text_content()
    )
    assert "revision 12 (then)" in page.locator("g.node[data-node=etcd]").text_content()
    assert page.locator("[data-topology=root]").get_attribute("data-mode") == "past"
    assert "revision=12" in page.url
    # The components and watch lines are the trace's up to the write of 12: the kubelet's pod watch.
    assert page.locator("g.watch[data-watch='apiserver->kubelet:node-1']").count() == 1
    page.locator("g.node[data-node='kubelet:node-1']").focus()
    page.keyboard.press("Enter")
    inspector = page.locator("[data-topology=inspector]").inner_text()
    assert "default/web (Running)" in inspector and "Node object at revision 12" in inspector
    # The etcd panel follows: it reads the store at 12 too.
    page.wait_for_function("document.querySelector('[data-etcd=root]').dataset.mode === 'past'")

    # Live events meanwhile wait: not played, not drawn.
    live_before = page.evaluate("() => window.kubelabTopology.model.lastSeq")
    later = trace.request("g", "user:admin", "GET", f"{PODS}/other", code=404)
    fake_socket.frame(later)
    page.wait_for_function(f"window.kubelabTopology.timeline.queue.length === {len(later)}")
    assert page.evaluate("() => window.kubelabTopology.model.lastSeq") == live_before
    assert f"{len(later)} live events waiting" in page.locator("[data-control=buffered]").inner_text()

    # Step replays the recorded history after 12, one event at a time, each one narrated.
    start = history_seq(page)
    assert start == next(e["seq"] for e in history if e["type"] == "store.txn" and e["revision"] == 12)
    lines = page.locator("[data-topology=narration] li[data-seq]").count()
    page.keyboard.press("Escape")
    page.keyboard.press("n")
    assert history_seq(page) == start + 1
    assert page.locator("[data-topology=narration] li[data-seq]").count() == lines + 1
    assert page.locator("[data-topology=narration] li[data-seq]").last.get_attribute("data-seq") == str(
        start + 1
    )
    page.locator("[data-control=step]").click()
    assert history_seq(page) == start + 2
    assert "rewound: at event #" in page.locator("[data-control=position]").inner_text()
    assert pods_drawn(page) == ["pod default/web (running)"]
    # ... up to the delete's write: the store is read at 13 and the pod is gone from the picture.
    deleted_at = next(e["seq"] for e in history if e["type"] == "store.txn" and e["revision"] == 13)
    while history_seq(page) < deleted_at:
        page.keyboard.press("n")
    wait_shown(page, 13)
    assert etcd.objects_asked() == [12, 13]
    assert pods_drawn(page) == []
    assert page.evaluate("() => window.kubelabTopology.timeline.queue.length") == len(later), (
        "live events lost"
    )

    # Back to live (the keyboard's l): the live diagram again, and the waiting events play.
    page.keyboard.press("l")
    wait_state(page, "live")
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    assert pods_drawn(page) == []
    assert page.locator("[data-topology=root]").get_attribute("data-mode") == "live"
    assert page.locator("svg.topology .past-label").text_content() == ""
    assert "revision=" not in page.url
    assert f"Back to live: {len(later)} events arrived meanwhile; they play now." in narration(page)
    page.wait_for_function(f"document.querySelector(\"li[data-seq='{trace.seq}']\") !== null")


def test_the_scrubber_and_its_keys_rewind_and_a_compacted_revision_is_said_plainly(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    EtcdEndpoint(page)
    open_page(page, fake_socket, lab_page, start=initial_state())
    trace = Trace()
    fake_socket.frame(pod_history(trace))
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    scrub = page.locator("[data-rewind=scrub]")
    page.wait_for_function("document.querySelector('[data-rewind=scrub]').min === '4'")
    assert (scrub.get_attribute("min"), scrub.get_attribute("max")) == (str(COMPACTED), str(CURRENT))
    scrub.focus()
    page.keyboard.press("ArrowLeft")  # one revision back: 12
    wait_state(page, "past")
    assert "Showing revision 12, not now" in banner(page).inner_text()
    assert scrub.get_attribute("aria-valuetext") == "revision 12, not now (now 13)"
    page.keyboard.press("ArrowLeft")  # 11: bound to node-1, not running yet
    wait_shown(page, 11)
    assert pods_drawn(page) == ["pod default/web (scheduled)"]
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("[")  # 10: created, not scheduled: on no node
    wait_shown(page, 10)
    assert pods_drawn(page) == []
    # Too far back: compacted. The page says so and keeps showing revision 10.
    page.locator("[data-rewind=at]").fill("3")
    page.locator("[data-rewind=at]").press("Enter")
    wait_state(page, "compacted")
    text = banner(page).inner_text()
    assert "Revision 3 is compacted: etcd keeps history only from revision 4 on" in text
    assert "Still showing revision 10." in text
    page.locator("[data-rewind=live]").click()
    wait_state(page, "live")
    # Live, a compacted revision leaves the diagram live.
    page.locator("[data-rewind=at]").fill("2")
    page.locator("[data-rewind=at]").press("Enter")
    wait_state(page, "compacted")
    assert "The diagram stays live." in banner(page).inner_text()
    assert page.locator("[data-topology=root]").get_attribute("data-mode") == "live"
    assert not page.evaluate("() => window.kubelabTopology.timeline.paused"), "live stayed paused"


def test_a_deep_link_starts_from_the_state_then_opens_the_cluster_at_its_revision(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    """`#revision=R` starts from the state as any page does (it used to ask for all history), then
    rewinds to R: the store at R draws the pods, though the page never saw the events that made them."""
    etcd = EtcdEndpoint(page)
    trace = Trace()
    pod_history(trace)  # happened before the page opened: the page is never sent these
    page.goto(f"{lab_page}#revision=12&select=node:kubelet:node-1")
    fake_socket.wait_connected()
    fake_socket.send(hello(trace.seq))
    assert fake_socket.sent() == [SUBSCRIBE_STATE], "a deep link starts from the state too"
    kubelet = {"id": "kubelet:node-1", "state": "running"}
    watch = {
        "watch": "w-kubelet",
        "from": "apiserver",
        "to": "kubelet:node-1",
        "resource": "pods",
        "namespace": "",
    }
    fake_socket.send(initial_state(trace.seq, CURRENT, components=[kubelet], watches=[watch]))
    wait_shown(page, 12)
    assert etcd.objects_asked() == [12]
    assert banner(page).inner_text().startswith("⏪ Showing revision 12, not now (now: revision 13)")
    assert pods_drawn(page) == ["pod default/web (running)"]
    assert "Node: the kubelet on node-1" in page.locator("[data-topology=inspector]").inner_text()
    assert "revision=12" in page.url
    assert "older than the state the page started from" in narration(page)
    # Live events meanwhile wait; back to live, the live diagram (the state, web deleted) plays them.
    later = trace.request(
        "api", "user:admin", "POST", PODS, revision=14, writes=[put_pod("api", node="node-1")]
    )
    fake_socket.frame(later)
    page.wait_for_function(f"window.kubelabTopology.timeline.queue.length === {len(later)}")
    assert pods_drawn(page) == ["pod default/web (running)"]
    page.locator("[data-rewind=live]").click()
    wait_state(page, "live")
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    assert pods_drawn(page) == ["pod default/api (scheduled)"]
    assert "revision=" not in page.url
    assert not page.evaluate("() => window.kubelabTopology.timeline.paused"), (
        "live stayed paused after the deep link"
    )


@pytest.mark.skipif(
    importlib.util.find_spec("controlplane.consumers") is None,
    reason="the trace websocket consumer (controlplane.consumers) has not landed yet",
)
def test_kubectl_a_pod_deleted_is_drawn_again_at_a_revision_where_it_existed(
    page: Any, tmp_path: Path
) -> None:
    from tests.support.lab import LiveLab

    lab = LiveLab(tmp_path / "lab")
    try:
        page.goto(f"http://127.0.0.1:{lab.web}/lab/demo/")
        page.wait_for_function("document.querySelector('[data-topology=status]').dataset.state === 'live'")
        page.locator("g.node[data-node^='kubelet:']").first.wait_for(timeout=30_000)
        lab.kubectl("run", "web", "--image=nginx")
        lab.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
        pod = lab.kubectl_json("get", "pod", "web")
        node, existed = pod["spec"]["nodeName"], int(pod["metadata"]["resourceVersion"])
        page.wait_for_function(
            f"[...document.querySelectorAll(\"g.node[data-node='kubelet:{node}'] g.pod title\")]"
            ".some(t => t.textContent.startsWith('pod default/web'))",
            timeout=30_000,
        )
        lab.kubectl("delete", "pod", "web", "--wait=true", "--timeout=60s")
        page.wait_for_function(
            f"![...document.querySelectorAll(\"g.node[data-node='kubelet:{node}'] g.pod title\")]"
            ".some(t => t.textContent.startsWith('pod default/web'))",
            timeout=30_000,
        )
        # Scrub back to the revision where web ran: drawn again, from the store at that revision.
        page.locator("[data-rewind=at]").fill(str(existed))
        page.locator("[data-rewind=at]").press("Enter")
        wait_state(page, "past")
        assert f"Showing revision {existed}, not now" in banner(page).inner_text()
        assert "pod default/web (running)" in pods_drawn(page, node)
        assert f"revision={existed}" in page.url
        # Live work meanwhile waits in the buffer.
        lab.kubectl("create", "configmap", "while-rewound", "--from-literal=a=b")
        page.wait_for_function("window.kubelabTopology.timeline.queue.length > 0", timeout=30_000)
        # Step: one recorded event at a time after the revision.
        start = history_seq(page)
        page.locator("[data-control=step]").click()
        assert history_seq(page) == start + 1
        page.locator("[data-control=step]").click()
        assert history_seq(page) == start + 2
        # Back to live: web is gone again and the waiting events play (the ConfigMap's create among them).
        waited = page.evaluate("() => window.kubelabTopology.timeline.queue.at(-1).seq")
        page.locator("[data-rewind=live]").click()
        wait_state(page, "live")
        page.wait_for_function(f"window.kubelabTopology.model.lastSeq >= {waited}", timeout=30_000)
        page.get_by_text("create configmaps").first.wait_for(timeout=30_000)
        assert not any(chip.startswith("pod default/web") for chip in pods_drawn(page, node))
    finally:
        lab.stop()
