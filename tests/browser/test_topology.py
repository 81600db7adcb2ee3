"""The live topology page in a real browser: the trace protocol, the diagram, the controls.

Most tests play the server's side of the websocket through a scripted socket (``fake_socket``): the
hello, the cluster's state the page asks for first, then frames of events shaped exactly as the control
plane emits them (docs/trace.md, schema 2: pods are drawn from the facts of the store's writes); the
last three run a real lab (``manage.py runlab``) and kubectl, and watch the page show what kubectl's
requests did. test_live.py checks the diagram against ``kubectl get pods`` on a real lab.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from pytest_django import Settings

from controlplane.runtime import CLUSTER_LIST_FILE, activate
from tests.browser.conftest import FakeServer

pytestmark = pytest.mark.browser

STAGES = [
    "authentication", "audit", "impersonation", "flowcontrol", "authorization",
    "mutating-admission", "validation", "validating-admission", "storage",
]  # fmt: skip


@pytest.fixture
def lab_page(web_server: str, tmp_path: Path, settings: Settings) -> Iterator[str]:
    settings.KUBELAB_DATA_DIR = tmp_path
    settings.KUBELAB_STORE = "sqlite"
    settings.KUBELAB_TIMING_PROFILE = "classroom"
    (tmp_path / CLUSTER_LIST_FILE).write_text(json.dumps({"clusters": ["demo"]}))
    activate(None)
    yield f"{web_server}/lab/demo/"
    activate(None)


PODS = "/api/v1/namespaces/default/pods"
#: What the page sends first: the cluster's state, then every event after it (docs/trace.md, "Stream").
SUBSCRIBE_STATE = {"action": "subscribe", "since": None, "state": True}
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_DONE = {"create": "created", "update": "updated", "delete": "deleted", "terminate": "marked Terminating"}


def about(method: str, path: str) -> dict[str, str]:
    """What a request is about, as the API server names it on each of its events (schema 2)."""
    parts = [part for part in path.split("?")[0].split("/") if part]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else []
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    resource, name, subresource = [*rest, "", "", ""][:3]
    fields = {"verb": _VERBS.get(method, "get" if name else "list"), "resource": resource}
    fields.update(
        {k: v for k, v in (("namespace", namespace), ("name", name), ("subresource", subresource)) if v}
    )
    return fields


def pod(
    name: str, *, node: str = "", phase: str = "Pending", deleting: bool = False, generate_name: str = ""
) -> dict[str, Any]:
    """A Pod's facts, as a store write and the state carry them (controlplane/trace/objects.py)."""
    return {"namespace": "default", "name": name, "generateName": generate_name, "node": node,
            "phase": phase, "deleting": deleting}  # fmt: skip


def put_pod(name: str, **facts: Any) -> dict[str, Any]:
    """One entry of a ``store.txn``'s ``writes``: a Pod written, with its facts."""
    return {"type": "PUT", "key": f"/registry/pods/default/{name}", "pod": pod(name, **facts)}


def node(name: str, *, ready: str = "True", unschedulable: bool = False) -> dict[str, Any]:
    return {"name": name, "ready": ready, "unschedulable": unschedulable}


def hello(last_seq: int = 0) -> dict[str, Any]:
    return {"type": "hello", "cluster": "demo", "schema": 2, "last_seq": last_seq, "timing": "classroom",
            "stages": STAGES}  # fmt: skip


def state(
    seq: int = 0,
    revision: int = 1,
    *,
    compacted: int = 0,
    nodes: list[dict[str, Any]] | None = None,
    pods: list[dict[str, Any]] | None = None,
    leases: list[dict[str, Any]] | None = None,
    components: list[dict[str, Any]] | None = None,
    watches: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The trace socket's ``state`` message: the store at ``revision``, the lab at trace seq ``seq``."""
    objects = {
        "nodes": nodes or [],
        "pods": pods or [],
        "leases": leases or [],
        "unreadable": 0,
        "more": False,
    }
    return {"type": "state", "seq": seq, "revision": revision, "compacted": compacted, "objects": objects,
            "components": components or [], "watches": watches or []}  # fmt: skip


class Trace:
    """Makes events with the envelope and gapless seqs, as the cluster's trace bus does (schema 2)."""

    def __init__(self, seq: int = 0) -> None:
        self.seq = seq

    def event(self, type: str, **fields: Any) -> dict[str, Any]:
        self.seq += 1
        envelope = {"v": 2, "cluster": "demo", "seq": self.seq, "ts": 1700000000.0 + self.seq, "type": type}
        if "frm" in fields:
            fields["from"] = fields.pop("frm")
        return {**envelope, **fields}

    def request(
        self, rid: str, sender: str, method: str, path: str, *, deny_at: str | None = None,
        detail: str = "", code: int = 201, revision: int | None = None,
        writes: list[dict[str, Any]] | None = None, key: str | None = None, op: str | None = None,
    ) -> list[dict[str, Any]]:  # fmt: skip
        """One request's events. With ``revision`` it wrote the store: its ``store.txn`` (with
        ``writes``, when given) comes just before the storage stage, which names ``key`` and ``op``."""
        fields = about(method, path)
        if sender.startswith("user:"):
            fields["user"] = sender.removeprefix("user:")
        received = {"id": rid, "frm": sender, "to": "apiserver", "method": method, "path": path}
        events = [self.event("request.received", **received, **fields)]
        for stage in STAGES:
            denied = stage == deny_at
            extra: dict[str, Any] = {"detail": detail if denied else ""}
            if stage == "storage" and revision is not None:
                if writes:
                    txn = {"id": rid, "frm": "apiserver", "to": "etcd", "op": "txn", "revision": revision}
                    events.append(self.event("store.txn", **txn, succeeded=True, writes=writes))
                written = key or (writes[0]["key"] if writes else f"/registry/{fields['resource']}")
                done = op or {"create": "create", "delete": "delete"}.get(fields["verb"], "update")
                extra = {"detail": f"{_DONE[done]} {written} at revision {revision}", "key": written,
                         "revision": revision, "op": done}  # fmt: skip
            outcome = "deny" if denied else "pass"
            events.append(
                self.event(
                    "request.stage", id=rid, frm=sender, to="apiserver", stage=stage, outcome=outcome,
                    **extra, **fields,
                )
            )  # fmt: skip
            if denied:
                break
        completed: dict[str, Any] = {
            "id": rid,
            "frm": sender,
            "to": "apiserver",
            "code": code,
            "duration": 0.004,
        }
        if revision is not None and deny_at is None:
            completed["revision"] = revision
        events.append(self.event("request.completed", **completed, **fields))
        return events


def open_page(
    page: Any, fake: FakeServer, url: str, *, last_seq: int = 0, start: dict[str, Any] | None = None
) -> None:
    """Load the page, say hello, answer its request for the state (``start``: an empty cluster at
    ``last_seq``), and wait until it has drawn it."""
    page.goto(url)
    fake.wait_connected()
    fake.send(hello(last_seq))
    assert fake.sent() == [SUBSCRIBE_STATE], "the page asks for the cluster's state first"
    fake.send(start if start is not None else state(last_seq))
    page.wait_for_function("window.kubelabTopology.stream.awaitingState === false")


def pods_drawn(page: Any, node: str = "node-1") -> list[str]:
    """The titles of a node's pod chips: `pod default/web (running)`."""
    chips: list[str] = page.evaluate(
        "node => [...document.querySelectorAll(`g.node[data-node='kubelet:${node}'] g.pod title`)]"
        ".map(t => t.textContent)",
        node,
    )
    return chips


def narrated_seqs(page: Any) -> list[int]:
    seqs: list[int] = page.evaluate(
        "() => [...document.querySelectorAll('[data-topology=narration] li[data-seq]')]"
        ".map(li => Number(li.dataset.seq))"
    )
    return seqs


def narration(page: Any) -> str:
    # Its text, not its rendered text (inner_text): the narration is below the diagram, out of view, and
    # the browser does not render what is out of view (content-visibility: auto in topology.css).
    text: str = page.locator("[data-topology=narration]").text_content()
    return text


def test_the_page_subscribes_and_shows_the_timing_profile(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    open_page(page, fake_socket, lab_page)
    assert fake_socket.url().endswith("/ws/lab/demo/trace/")
    assert fake_socket.url().startswith("ws://")
    assert fake_socket.sent() == [SUBSCRIBE_STATE]
    assert "classroom" in page.locator("[data-topology=timing]").inner_text()
    assert page.locator("[data-topology=status]").inner_text() == "Live"


def kubelet_running(trace: Trace, name: str = "node-1") -> dict[str, Any]:
    return trace.event(
        "component.state", frm=f"kubelet:{name}", component="kubelet", node=name, state="running"
    )


def test_a_create_is_a_packet_through_the_stages_and_a_pod_on_its_node(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    open_page(page, fake_socket, lab_page, start=state(0, 27))
    trace = Trace()
    page.locator("[data-control=pause]").click()  # follow it event by event
    kubelet = kubelet_running(trace)
    create = trace.request("r1", "user:admin", "POST", PODS, revision=28, writes=[put_pod("web")])
    fake_socket.frame([kubelet, *create])
    page.locator("[data-control=step]").click()  # the kubelet
    page.locator("[data-control=step]").click()  # request.received: the packet leaves user admin
    packet = page.locator("g.packet[data-request=r1]")
    packet.wait_for()
    assert packet.locator(".packet-label").text_content() == "CREATE"
    assert "verb-create" in (packet.get_attribute("class") or "")
    assert page.locator("g.node[data-node='user:admin']").count() == 1
    assert page.locator("g.node[data-node='kubelet:node-1']").count() == 1
    page.locator("[data-control=step]").click()  # authentication
    assert "passed authentication" in narration(page)
    assert "waiting" in page.locator("[data-control=buffered]").inner_text()
    assert "paused=" in page.url  # the moment is in the address
    page.locator("[data-control=pause]").click()  # resume: the rest plays
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    assert "The API server answered create pods from user admin with 201 Created" in narration(page)
    assert "the API server created /registry/pods/default/web at revision 28" in narration(page)
    assert "revision 28" in page.locator("g.node[data-node=etcd]").text_content()
    # Stored, not scheduled: on no node yet, counted under the scheduler.
    unscheduled = page.locator("svg.topology .unscheduled")
    assert unscheduled.text_content() == "1 pod to schedule"
    assert pods_drawn(page) == []

    decision = trace.event(
        "scheduler.decision",
        frm="scheduler",
        pod="default/web",
        namespace="default",
        name="web",
        feasible=["node-1"],
        chosen="node-1",
        node="node-1",
        nodes={"node-1": {"filters": {}, "scores": {}, "total": 80, "feasible": True}},
        revision=28,
        requests=["b1"],
    )
    fake_socket.frame([decision])
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    assert "placed default/web on node-1" in narration(page)
    assert pods_drawn(page) == [], "a decision is not a binding: the store does not say node-1 yet"
    bind = trace.request(
        "b1", "scheduler", "POST", f"{PODS}/web/binding", revision=29, writes=[put_pod("web", node="node-1")]
    )
    fake_socket.frame(bind)
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    assert pods_drawn(page) == ["pod default/web (scheduled)"]
    assert unscheduled.text_content() == ""
    status = trace.request(
        "s1", "kubelet:node-1", "PATCH", f"{PODS}/web/status", code=200, revision=30,
        writes=[put_pod("web", node="node-1", phase="Running")],
    )  # fmt: skip
    fake_socket.frame(status)
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    assert pods_drawn(page) == ["pod default/web (running)"]
    chip = page.locator("g.node[data-node='kubelet:node-1'] g.pod")
    assert chip.locator(".chip-label").text_content() == "●\u2009web"  # its state by glyph, not only colour

    # The causal chain of kubectl's create reaches the scheduler's decision and its binding.
    chain = page.evaluate("() => [...window.kubelabTopology.model.chain({request: 'r1'}).requests].sort()")
    assert chain == ["b1", "r1"]
    page.locator("g.node[data-node=scheduler]").focus()
    page.keyboard.press("Enter")
    assert "Node: the scheduler" in page.locator("[data-topology=inspector]").inner_text()
    assert "select=node%3Ascheduler" in page.url or "select=node:scheduler" in page.url


def test_a_refused_request_stops_at_its_stage_with_its_reason(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    open_page(page, fake_socket, lab_page)
    trace = Trace()
    reason = 'Pod "bad" is invalid: spec.containers: Required value'
    fake_socket.frame(
        trace.request(
            "bad",
            "user:admin",
            "POST",
            "/api/v1/namespaces/default/pods",
            deny_at="validation",
            detail=reason,
            code=422,
        )
    )
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    assert f"Refused at validation: create pods: {reason}." in narration(page)
    assert page.locator("li.deny").count() == 1
    assert reason in page.locator("svg.topology .refusal").text_content()
    request = page.evaluate(
        "() => { const r = window.kubelabTopology.model.requests.get('bad');"
        " return [r.state, r.stoppedAt, Object.keys(r.stages).length]; }"
    )
    assert request == ["denied", "validation", 7]  # never reached validating admission or storage
    # Select the refusal's narration line with the keyboard: the inspector shows the raw event.
    page.locator("li.deny button").focus()
    page.keyboard.press("Enter")
    inspector = page.locator("[data-topology=inspector]").inner_text()
    assert "request.stage" in inspector and '"outcome": "deny"' in inspector


RBAC_REFUSAL = {
    "allowed": False,
    "user": "ada",
    "groups": ["system:authenticated"],
    "verb": "list",
    "resource": "secrets",
    "namespace": "default",
    "authorizer": "RBAC",
    "reason": 'no RBAC rule lets ada list secrets in namespace "default"'
    " (1 binding names the user or its groups; none of their rules fits)",
    "considered": [
        {
            "binding": 'ClusterRoleBinding "system:basic-user"',
            "role": 'ClusterRole "system:basic-user"',
            "subject": 'Group "system:authenticated"',
            "why": 'rule 1: verbs [create] do not include "list"',
        }
    ],
    "message": 'secrets is forbidden: User "ada" cannot list resource "secrets" in API group ""'
    ' in the namespace "default"',
}


def test_the_inspector_explains_rbac_admission_flow_control_and_audit(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    open_page(page, fake_socket, lab_page)
    trace = Trace()
    # A list of Secrets that RBAC refuses: flow control lets it through, then the authorizer says no.
    secrets = "/api/v1/namespaces/default/secrets"
    reason = str(RBAC_REFUSAL["reason"])
    refused = trace.request(
        "no", "user:ada", "GET", secrets, deny_at="authorization", detail=reason, code=403
    )
    at = next(i for i, e in enumerate(refused) if e.get("stage") == "authorization")
    flow = {"id": "no", "frm": "user:ada", "to": "apiserver", "outcome": "dispatched",
            "flowschema": "global-default", "priority_level": "global-default", "flow": "ada", "seats": 1,
            "seats_in_use": 1, "concurrency_limit": 5, "waiting": 0, "queue": 7, "queue_length": 0,
            "waited": 0.0}  # fmt: skip
    rbac = {"id": "no", "frm": "user:ada", "to": "apiserver", **RBAC_REFUSAL}
    extra = [trace.event("flowcontrol.decision", **flow), trace.event("rbac.decision", **rbac)]
    refused[at:at] = extra
    # A create that a mutating plugin patched, recorded by audit at level Metadata.
    created = trace.request("ok", "user:admin", "POST", PODS, revision=9, key="/registry/pods/default/web")
    patch = [{"op": "add", "path": "/spec/tolerations", "value": [{"key": "node.kubernetes.io/not-ready",
              "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]},
             {"op": "remove", "path": "/metadata/labels/stale"}]  # fmt: skip
    step = {"id": "ok", "frm": "apiserver", "to": "apiserver", "plugin": "DefaultTolerationSeconds",
            "phase": "mutating", "outcome": "pass", "patch": patch}  # fmt: skip
    created.insert(7, trace.event("admission.step", **step))
    created[-1]["audit"] = "Metadata"
    events = sorted(refused + created, key=lambda e: e["seq"])
    for seq, event in enumerate(events, start=1):  # renumber: the inserts came last
        event["seq"] = seq
    fake_socket.frame(events)
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {len(events)}")
    # The refusal bounces at authorization, in red, with RBAC's reason on the diagram.
    assert "Refused at authorization" in page.locator("svg.topology .refusal").text_content()
    assert reason in page.locator("svg.topology .refusal").text_content()
    # Its narration line, chosen with the keyboard, explains it: the binding considered and why not.
    line = page.locator("li.narration-request-stage.deny button")
    line.focus()
    page.keyboard.press("Enter")
    inspector = page.locator("[data-topology=inspector]")
    rbac_box = inspector.locator("[data-detail=rbac]")
    assert "✕ refused" in rbac_box.locator("h3").inner_text()
    assert "verdict-deny" in (rbac_box.get_attribute("class") or "")
    text = rbac_box.inner_text()
    assert str(RBAC_REFUSAL["message"]) in text
    assert 'ClusterRoleBinding "system:basic-user"' in text and 'verbs [create] do not include "list"' in text
    flow_text = inspector.locator("[data-detail=flowcontrol]").inner_text()
    assert "global-default" in flow_text and "1 of 5 in use" in flow_text
    # The create: its admission patch as diff lines, and the audit level.
    page.evaluate("() => window.kubelabTopology.select({request: 'ok'})")
    diff = inspector.locator("[data-detail=admission] pre.patch-diff").inner_text()
    assert "+ add /spec/tolerations" in diff and '"tolerationSeconds": 300' in diff
    assert "- remove /metadata/labels/stale" in diff
    assert "recorded at level Metadata" in inspector.locator("[data-detail=audit]").inner_text()


def test_a_gap_asks_for_a_resync_and_nothing_is_shown_twice(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    open_page(page, fake_socket, lab_page)
    trace = Trace()
    first = trace.request("a", "user:admin", "GET", "/api/v1/namespaces/default/pods/web", code=200)
    missed = trace.request("b", "user:admin", "GET", "/api/v1/namespaces/default/pods/web", code=200)
    after = trace.request("c", "user:admin", "GET", "/api/v1/namespaces/default/pods/web", code=200)
    fake_socket.frame(first)
    fake_socket.frame(after)  # b never arrived: a gap
    page.wait_for_function("window.__sockets.at(-1).sent.length === 2")
    assert fake_socket.sent()[-1] == {"action": "resync", "since": first[-1]["seq"]}
    fake_socket.frame(after)  # still a gap: no second resync, frame dropped
    assert len(fake_socket.sent()) == 2
    fake_socket.frame(missed + after)  # the resync's answer
    fake_socket.frame(after[-3:])  # a late duplicate
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    page.wait_for_function("window.kubelabTopology.timeline.queue.length === 0")
    seqs = page.evaluate(
        "() => [...document.querySelectorAll('[data-topology=narration] li[data-seq]')]"
        ".map(li => Number(li.dataset.seq))"
    )
    assert seqs == list(range(1, trace.seq + 1))
    assert "Missed events" in narration(page)


def test_a_summary_or_a_410_starts_again_from_the_state(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    """The page missed what a summary stands for, and a 410 means the server no longer has what it
    asked for: either way it asks for the cluster's state again (it used to follow on from now)."""
    open_page(page, fake_socket, lab_page)
    trace = Trace()
    events = trace.request("a", "user:admin", "GET", "/api/v1/pods", code=200)
    trace.seq += 1240  # the server left these out under load
    summary = {"first": events[-1]["seq"] + 1, "last": trace.seq, "counts": {"watch.event": 1240},
               "text": "1,240 watch events to 12 kubelets"}  # fmt: skip
    fake_socket.frame(events, summary=summary)
    page.get_by_text("1,240 watch events to 12 kubelets").wait_for()
    assert fake_socket.sent() == [SUBSCRIBE_STATE, SUBSCRIBE_STATE]
    # Frames of the old stream still on the wire are dropped until the state comes.
    stale = trace.request("stale", "user:admin", "GET", "/api/v1/pods", code=200)
    fake_socket.frame(stale)
    fresh = state(trace.seq, 40, nodes=[node("node-1")], pods=[pod("web", node="node-1", phase="Running")])
    fake_socket.send(fresh)
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    assert not page.evaluate("() => window.kubelabTopology.model.requests.has('stale')")
    assert pods_drawn(page) == ["pod default/web (running)"]
    assert "Drew the cluster as etcd holds it at revision 40: 1 node, 1 pod" in narration(page)
    fake_socket.send({"type": "error", "code": 410, "message": "too old"})
    assert fake_socket.sent()[-1] == SUBSCRIBE_STATE
    assert "starting again from the cluster's state now" in narration(page)


def test_a_flood_of_events_keeps_the_narration_bounded_and_is_drawn_at_once(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    """More than can be animated in time is applied at once and summarised, never queued further;
    what a person asked for still plays, event by event."""
    open_page(page, fake_socket, lab_page)
    page.evaluate("() => window.kubelabTopology.timeline.setSpeed(16)")
    trace = Trace()
    path = "/api/v1/namespaces/default/pods/web"
    own: list[dict[str, Any]] = []
    for frame in range(10):  # 10 x 60 requests x 11 events: far more than 750 ms can animate
        events = []
        for i in range(60):
            events += trace.request(f"r{frame}-{i}", "controller-manager", "GET", path, code=200)
            if frame == 9 and i == 30:
                own = trace.request("kubectl", "user:admin", "GET", path, code=200)
                events += own
        fake_socket.frame(events)
        page.wait_for_function("window.kubelabTopology.timeline.queue.length < 100", timeout=30_000)
    # The last event: a person's, so it plays whatever else is skipped.
    last = trace.request("last", "user:admin", "GET", path, code=200)
    fake_socket.frame(last)
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}", timeout=30_000)
    page.wait_for_function("window.kubelabTopology.timeline.queue.length === 0", timeout=30_000)
    assert re.search(
        r"To keep up, \d+ events were drawn at once: the controller manager read \d+ pods?", narration(page)
    )
    seqs = narrated_seqs(page)
    assert seqs == sorted(seqs) and seqs[-1] == trace.seq  # in order, up to the newest event
    assert {e["seq"] for e in own} <= set(seqs), "a person's request was skipped"
    lines = page.locator("[data-topology=narration] li").count()
    # At most the last 300 lines and a fifth more before old ones go (how many are written depends on
    # how much the timeline folded into summaries, which depends on the machine's speed).
    assert lines <= 360
    sizes = page.evaluate(
        "() => { const m = window.kubelabTopology.model; return [m.events.size, m.requests.size]; }"
    )
    assert sizes[0] <= 5000 * 1.1 and sizes[1] <= 2000 * 1.1


def chips(page: Any, node: str) -> list[dict[str, str]]:
    """A node's pod chips as drawn: title, label and class."""
    drawn: list[dict[str, str]] = page.evaluate(
        "node => [...document.querySelectorAll(`g.node[data-node='kubelet:${node}'] g.pod`)].map(g => ({"
        " title: g.querySelector('title').textContent, label: g.querySelector('.chip-label').textContent,"
        " class: g.getAttribute('class') }))",
        node,
    )
    return drawn


def test_the_page_draws_the_state_then_only_what_the_store_wrote_after_it(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    """The cluster as the state says, whatever happened before the page opened; then the store's
    writes after the state's seq and above its revision; a reconnect goes on from the last seq held."""
    page.goto(lab_page)
    fake_socket.wait_connected()
    fake_socket.send(hello(40))
    assert fake_socket.sent() == [SUBSCRIBE_STATE]
    # A frame sent before the state (on the wire already) is dropped: the state covers it.
    early = Trace(38)
    fake_socket.frame([kubelet_running(early, "node-9"), kubelet_running(early, "node-9")])
    made = "web-7d4b9c8f5-"
    pods = [
        pod(f"{made}x2kq4", generate_name=made, node="node-1", phase="Running"),
        pod(f"{made}p9rtz", generate_name=made, node="node-2"),
        pod(f"{made}zzzzz", generate_name=made),
    ]
    components: list[dict[str, Any]] = [
        {"id": "scheduler", "state": "running", "leader": True},
        {"id": "controller-manager", "state": "running", "leader": True, "controllers": ["replicaset"]},
        {"id": "kubelet:node-1", "state": "running"},
        {"id": "kubelet:node-2", "state": "running"},
    ]
    watch = {"watch": "w1", "from": "apiserver", "to": "kubelet:node-1", "resource": "pods", "namespace": ""}
    leases = [{"name": "kube-scheduler", "holder": "kube-scheduler-5d1c"}]
    fake_socket.send(
        state(40, 50, nodes=[node("node-1"), node("node-2")], pods=pods, leases=leases,
              components=components, watches=[watch])
    )  # fmt: skip
    page.wait_for_function("window.kubelabTopology.model.lastSeq === 40")
    assert (
        "Drew the cluster as etcd holds it at revision 50: 2 nodes, 3 pods, 1 open watch; "
        "following its trace from event #41 on." in narration(page)
    )
    assert page.locator("g.node[data-node='kubelet:node-9']").count() == 0, (
        "a frame before the state was drawn"
    )
    assert chips(page, "node-1") == [
        {"title": f"pod default/{made}x2kq4 (running)", "label": "●\u2009x2kq4", "class": "pod pod-running"}
    ]
    assert pods_drawn(page, "node-2") == [f"pod default/{made}p9rtz (scheduled)"]
    assert page.locator("svg.topology .unscheduled").text_content() == "1 pod to schedule"
    assert "running · leader" in page.locator("g.node[data-node=scheduler]").text_content()
    assert page.locator("g.watch[data-watch='apiserver->kubelet:node-1']").count() == 1
    assert "revision 50" in page.locator("g.node[data-node=etcd]").text_content()

    # After the state: a write at its revision is in it already (skipped); later ones are drawn.
    trace = Trace(40)

    def txn(revision: int, *writes: dict[str, Any]) -> dict[str, Any]:
        fields = {"frm": "apiserver", "to": "etcd", "op": "txn", "revision": revision, "succeeded": True}
        return trace.event("store.txn", **fields, writes=list(writes))

    fake_socket.frame(
        [
            txn(50, {"type": "DELETE", "key": f"/registry/pods/default/{made}x2kq4"}),
            txn(51, put_pod(f"{made}p9rtz", generate_name=made, node="node-2", deleting=True)),
            txn(52, put_pod(f"{made}zzzzz", generate_name=made, node="node-1")),
        ]
    )
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    assert pods_drawn(page, "node-1") == [
        f"pod default/{made}x2kq4 (running)",
        f"pod default/{made}zzzzz (scheduled)",
    ]
    assert chips(page, "node-2")[0]["class"] == "pod pod-terminating"
    assert page.locator("svg.topology .unscheduled").text_content() == ""

    # The connection drops: the page reconnects and goes on from the last seq it holds.
    page.evaluate("() => window.__sockets.at(-1).close(1006)")
    fake_socket.wait_connected(2)
    fake_socket.send(hello(trace.seq))
    assert fake_socket.sent() == [{"action": "subscribe", "since": trace.seq}]
    fake_socket.frame([txn(53, {"type": "DELETE", "key": f"/registry/pods/default/{made}p9rtz"})])
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    assert pods_drawn(page, "node-2") == []


def lease_renewal(trace: Trace, rid: str, revision: int) -> list[dict[str, Any]]:
    """A kubelet renewing its node's Lease: the cluster's own periodic traffic."""
    path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1"
    lease = {"type": "PUT", "key": "/registry/leases/kube-node-lease/node-1"}
    return trace.request(rid, "kubelet:node-1", "PUT", path, code=200, revision=revision, writes=[lease])


PACKETS_SEEN = """() => {
  window.__packets = [];
  new MutationObserver((records) => {
    for (const record of records) for (const added of record.addedNodes) {
      if (added.dataset?.request) window.__packets.push(added.dataset.request);
    }
  }).observe(document.querySelector("svg.topology .layer-packets"), { childList: true });
}"""


def test_background_traffic_is_folded_and_the_switch_animates_it(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    open_page(page, fake_socket, lab_page, start=state(0, 10, nodes=[node("node-1")]))
    page.evaluate(PACKETS_SEEN)
    trace = Trace()
    renewals = lease_renewal(trace, "lease-1", 11) + lease_renewal(trace, "lease-2", 12)
    kubectl = trace.request("kubectl", "user:admin", "GET", f"{PODS}/web", code=404)
    fake_socket.frame(renewals + kubectl + lease_renewal(trace, "lease-3", 13))
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    page.wait_for_function("window.kubelabTopology.timeline.queue.length === 0")
    # Applied (etcd's revision moved on), not animated, not narrated: only kubectl's request is.
    assert "revision 13" in page.locator("g.node[data-node=etcd]").text_content()
    assert narrated_seqs(page) == [e["seq"] for e in kubectl]
    assert page.evaluate("() => window.__packets") == ["kubectl"]
    page.get_by_text(
        "periodic traffic (Lease renewals, node heartbeats, re-watches, resyncs) is folded"
    ).wait_for()
    quiet = page.locator("g.node[data-node='kubelet:node-1'] .quiet")
    page.wait_for_function(
        "document.querySelector(\"g.node[data-node='kubelet:node-1'] .quiet\")"
        ".textContent.startsWith('♻ Lease')"
    )
    assert "renews its node's Lease" in (quiet.locator("title").text_content() or "")

    # Show background traffic (b): renewals animate like everything else.
    page.keyboard.press("b")
    assert page.locator("[data-control=background]").is_checked()
    assert "Showing background traffic event by event." in narration(page)
    # Each event is narrated as it plays, unless it is too late to animate (then it is applied at once):
    # on a busy machine the browser itself may be that late, so no deadline here.
    page.evaluate("() => { window.kubelabTopology.timeline.maxLag = 1e9; }")
    shown = lease_renewal(trace, "lease-4", 14)
    fake_socket.frame(shown)
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    page.wait_for_function(f"document.querySelector(\"li[data-seq='{trace.seq}']\") !== null")
    # Animated events are narrated as the timeline plays them: wait until it has played them all.
    page.wait_for_function("window.kubelabTopology.timeline.queue.length === 0")
    assert page.evaluate("() => window.__packets") == ["kubectl", "lease-4"]
    assert {e["seq"] for e in shown} <= set(narrated_seqs(page))


def test_a_node_with_more_pods_than_fit_shows_seven_and_lists_all_in_the_inspector(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    made = "web-7d4b9c8f5-"
    suffixes = ["b2c4d", "f5g6h", "j7k8l", "m9n2p", "q4r5s", "t6v7w", "x8z9b", "c2d4f", "g5h6j", "k7l8m"]
    pods = [pod(made + s, generate_name=made, node="node-1", phase="Running") for s in suffixes]
    open_page(page, fake_socket, lab_page, start=state(0, 30, nodes=[node("node-1")], pods=pods))
    drawn = chips(page, "node-1")
    assert [chip["label"] for chip in drawn] == [f"●\u2009{s}" for s in sorted(suffixes)[:7]]
    more = page.locator("[data-pods-more='kubelet:node-1']")
    assert more.text_content().startswith("+3")
    more.focus()
    page.keyboard.press("Enter")
    listed = page.locator("[data-topology=inspector] [data-detail=pods]")
    assert "Pods on the kubelet on node-1 (10)" in listed.locator("h3").inner_text()
    rows = listed.locator("tr.pod-row")
    assert rows.count() == 10
    assert rows.first.get_attribute("data-pod") == f"default/{made}{sorted(suffixes)[0]}"


def test_the_model_forgets_old_events_requests_and_their_links(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    """A page left open on a busy cluster must not grow: every map of the model is bounded."""
    open_page(page, fake_socket, lab_page)
    sizes = page.evaluate(
        """async () => {
          const src = document.querySelector("script[type=module]").src;
          const { TopologyModel } = await import(new URL("model.js", src));
          const model = new TopologyModel({ maxEvents: 100, maxRequests: 40 });
          let seq = 0;
          for (let i = 1; i <= 1000; i += 1) {
            const id = `r${i}`;
            const key = `/registry/pods/default/p${i}`;
            model.apply({ seq: ++seq, type: "request.received", id, from: "controller-manager",
                          to: "apiserver", method: "POST", path: "/api/v1/namespaces/default/pods" });
            model.apply({ seq: ++seq, type: "store.txn", id, from: "apiserver", to: "etcd", op: "txn",
                          revision: i, succeeded: true, writes: [{ type: "PUT", key }] });
            model.apply({ seq: ++seq, type: "request.completed", id, from: "controller-manager",
                          to: "apiserver", code: 201, duration: 0.001, revision: i });
            model.apply({ seq: ++seq, type: "watch.event", from: "apiserver", to: "scheduler", watch: "w",
                          event: "ADDED", revision: i, key });
            model.apply({ seq: ++seq, type: "reconcile", from: "controller-manager", controller: "replicaset",
                          key: "default/web", result: "success", revision: i - 1, requests: [id] });
          }
          return { events: model.events.size, requests: model.requests.size,
                   writers: model.writerOfRevision.size, revisions: model.seqsOfRevision.size,
                   work: model.workForRequest.size, newest: model.events.has(seq),
                   chain: [...model.chain({ request: "r1000" }).requests].sort() };
        }"""
    )
    assert 100 <= sizes["events"] <= 110
    assert 40 <= sizes["requests"] <= 44
    assert 100 <= sizes["writers"] <= 110 and 100 <= sizes["revisions"] <= 110
    assert 40 <= sizes["work"] <= 44
    assert sizes["newest"]
    # The recent links still hold (r999's write queued the reconcile that made r1000, and so on
    # back), as far back as the events are remembered, and no further.
    chain = set(sizes["chain"])
    assert {"r1000", "r999", "r990"} <= chain
    assert "r900" not in chain and len(chain) <= 25


def test_a_refusal_by_the_server_is_said_and_not_retried(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    page.goto(lab_page)
    fake_socket.wait_connected()
    fake_socket.send({"type": "error", "code": 4403, "message": "log in to watch this cluster"})
    page.evaluate("() => window.__sockets.at(-1).close(4403)")
    status = page.locator("[data-topology=status]")
    assert "You may not watch this cluster" in status.inner_text()
    page.wait_for_timeout(1200)
    assert page.evaluate("() => window.__sockets.length") == 1


def test_animation_follows_reduced_motion_and_the_switch(browser: Any, lab_page: str) -> None:
    context = browser.new_context(reduced_motion="reduce")
    page = context.new_page()
    try:
        page.goto(lab_page)
        switch = page.locator("[data-control=animate]")
        assert not switch.is_checked()
        assert "animate" not in (page.locator("svg.topology").get_attribute("class") or "").split()
        page.keyboard.press("a")
        assert switch.is_checked()
        assert "animate" in (page.locator("svg.topology").get_attribute("class") or "").split()
    finally:
        context.close()


def test_a_deep_link_restores_the_moment_and_the_selection(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    trace = Trace()
    events = trace.request("r1", "user:admin", "POST", "/api/v1/namespaces/default/pods", revision=5)
    later = trace.request("r2", "user:admin", "DELETE", "/api/v1/namespaces/default/pods/web", code=200)
    page.goto(f"{lab_page}#select=request:r1&paused={events[-1]['seq']}")
    fake_socket.wait_connected()
    fake_socket.send(hello(trace.seq))
    # A paused moment is replayed from what the server still holds, not from the state.
    assert fake_socket.sent() == [{"action": "subscribe", "since": 0}]
    fake_socket.frame(events + later)
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {events[-1]['seq']}")
    assert page.evaluate("() => window.kubelabTopology.timeline.paused")
    assert page.evaluate("() => window.kubelabTopology.timeline.queue.length") == len(later)
    assert "Request: create pods" in page.locator("[data-topology=inspector]").inner_text()


def test_the_etcd_panel_reads_the_keys_a_write_names_and_says_when_history_is_compacted(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    """The panel's side of /lab/<cluster>/etcd/, played by the test: what it asks, and when."""
    asked: list[str] = []
    row = {"key": "/registry/pods/default/web", "create_revision": 5, "mod_revision": 5, "version": 1,
           "lease": 0, "value": {"form": "json", "bytes": 120}}  # fmt: skip

    def answer(route: Any) -> None:
        url = route.request.url
        asked.append(url.split("/etcd/", 1)[1])
        if "revision=3" in url:
            body = {
                "error": "revision 3 is compacted: the store keeps history from revision 4 on",
                "compacted": 4,
            }
            route.fulfill(status=410, json=body)
            return
        keys = [row] if "key=" not in url else [{**row, "mod_revision": 9, "version": 2}]
        body = {"cluster": "demo", "revision": 9 if "key=" in url else 8, "current_revision": 9,
                "compacted": 4, "keys": keys, "more": False, "count": 1}  # fmt: skip
        route.fulfill(status=200, json=body)

    page.route("**/lab/demo/etcd/**", answer)
    open_page(page, fake_socket, lab_page)
    panel = page.locator("[data-etcd=root]")
    panel.locator("tr[data-key='/registry/pods/default/web']").wait_for()
    assert asked == [""]  # one list on load, then nothing until a write is played (no polling)
    marks = panel.locator("[data-etcd=marks]").inner_text()
    assert "history kept from revision 4" in marks
    trace = Trace()
    writes = [{"type": "PUT", "key": "/registry/pods/default/web"}]
    write = trace.event(
        "store.txn", id="r1", frm="apiserver", to="etcd", op="txn", revision=9, succeeded=True, writes=writes
    )
    read = trace.event("store.txn", frm="apiserver", to="etcd", op="range", key="/registry/pods/", revision=9)
    fake_socket.frame([write, read])
    page.wait_for_function(
        "document.querySelector(\"tr[data-key='/registry/pods/default/web']\").cells[3].textContent === '2'"
    )
    assert asked[1:] == [
        "?key=%2Fregistry%2Fpods%2Fdefault%2Fweb&revision=9"
    ]  # the write's key at its revision
    assert "updated at 9" in panel.locator("tr[data-key='/registry/pods/default/web']").inner_text()
    # The inspector of the write offers the store as it was at that revision.
    page.locator(f"li[data-seq='{write['seq']}'] button").click()
    page.locator("[data-inspector=show-revision]").click()
    page.wait_for_function("document.querySelector('[data-etcd=root]').dataset.mode === 'past'")
    page.wait_for_function("document.querySelector('[data-etcd=message]').dataset.state === 'past'")
    assert asked[-1] == "?revision=9"
    # Back in time, past the compaction mark: said plainly, and nothing listed.
    panel.locator("[data-etcd=at]").fill("3")
    panel.locator("[data-etcd=at]").press("Enter")
    page.wait_for_function("document.querySelector('[data-etcd=message]').dataset.state === 'compacted'")
    message = panel.locator("[data-etcd=message]").inner_text()
    assert "Revision 3 is compacted" in message and "from revision 4 on" in message
    assert panel.locator("tr[data-key]").count() == 0


def test_a_write_keeps_its_mark_in_the_etcd_panel_while_background_traffic_is_folded(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    key = "/registry/configmaps/default/colours"
    lists: list[str] = []
    held: list[Any] = []  # the panel's read of the written key, answered when the test says

    def keys(rows: list[dict[str, Any]]) -> dict[str, Any]:
        return {"cluster": "demo", "revision": 10, "current_revision": 10, "compacted": 0, "keys": rows,
                "more": False, "count": len(rows)}  # fmt: skip

    stored = {"key": key, "create_revision": 9, "mod_revision": 9, "version": 1, "lease": 0,
              "value": {"form": "json", "bytes": 120}}  # fmt: skip

    def answer(route: Any) -> None:
        if "key=" in route.request.url:
            held.append(route)
        else:
            lists.append(route.request.url)
            route.fulfill(status=200, json=keys([stored] if len(lists) > 1 else []))

    page.route("**/lab/demo/etcd/**", answer)
    open_page(page, fake_socket, lab_page, start=state(0, 8, nodes=[node("node-1")]))
    trace = Trace()
    colours = trace.request(
        "cm", "user:admin", "POST", "/api/v1/namespaces/default/configmaps", revision=9,
        writes=[{"type": "PUT", "key": key}],
    )  # fmt: skip
    fake_socket.frame(colours)
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    deadline = time.monotonic() + 5
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    assert held, "the panel never read the key the write named"
    # A kubelet renews its Lease meanwhile (folded: not animated), then the key's read is answered.
    fake_socket.frame(lease_renewal(trace, "lease-1", 10))
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    deadline = time.monotonic() + 1  # a panel that re-reads its list on folded writes does so in 150 ms
    while len(lists) == 1 and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    held[0].fulfill(status=200, json=keys([stored]))
    row = page.locator(f"[data-etcd=root] tr[data-key='{key}']")
    row.wait_for()
    page.wait_for_function("document.querySelector('[data-etcd=message]').dataset.state === 'live'")
    assert "created at 9" in row.inner_text()
    assert len(lists) == 1, f"the panel read its whole list again: {lists}"


def test_the_etcd_panel_waits_for_the_diagram_to_play_a_write_while_background_traffic_is_folded(
    page: Any, fake_socket: FakeServer, lab_page: str
) -> None:
    key = "/registry/configmaps/default/colours"
    store: dict[str, dict[str, Any]] = {}  # the store now, as the endpoint reads it
    lists: list[str] = []

    def answer(route: Any) -> None:
        url = route.request.url
        asked = parse_qs(urlsplit(url).query).get("key")
        if asked is None:
            lists.append(url)
        rows = [row for k, row in store.items() if asked is None or k in asked]
        marks = {"cluster": "demo", "revision": 10, "current_revision": 10, "compacted": 0}
        route.fulfill(status=200, json={**marks, "keys": rows, "more": False, "count": len(rows)})

    page.route("**/lab/demo/etcd/**", answer)
    open_page(page, fake_socket, lab_page, start=state(0, 8, nodes=[node("node-1")]))
    page.wait_for_function("document.querySelector('[data-etcd=message]').dataset.state === 'live'")
    page.locator("[data-control=pause]").click()
    trace = Trace()
    renewal = lease_renewal(trace, "lease-1", 9)
    colours = trace.request(
        "cm", "user:admin", "POST", "/api/v1/namespaces/default/configmaps", revision=10,
        writes=[{"type": "PUT", "key": key}],
    )  # fmt: skip
    # The store holds the ConfigMap from the moment it is written; the paused page has not played it.
    store[key] = {"key": key, "create_revision": 10, "mod_revision": 10, "version": 1, "lease": 0,
                  "value": {"form": "json", "bytes": 120}}  # fmt: skip
    fake_socket.frame(renewal + colours)
    page.locator("[data-control=step]").click()  # folds the renewal on its way to kubectl's first event
    assert page.evaluate("() => window.kubelabTopology.model.lastSeq") == colours[0]["seq"]
    deadline = time.monotonic() + 1  # a panel that re-reads its list on folded writes does so in 150 ms
    while len(lists) == 1 and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    row = page.locator(f"[data-etcd=root] tr[data-key='{key}']")
    assert row.count() == 0, "the panel lists a key whose write the paused diagram has not played"
    page.locator("[data-control=pause]").click()  # resume: the write plays
    page.wait_for_function(f"window.kubelabTopology.model.lastSeq === {trace.seq}")
    row.wait_for()
    page.wait_for_function(
        "k => document.querySelector(`tr[data-key='${k}']`).textContent.includes('created at 10')", arg=key
    )


@pytest.mark.skipif(
    importlib.util.find_spec("controlplane.consumers") is None,
    reason="the trace websocket consumer (controlplane.consumers) has not landed yet",
)
def test_kubectl_run_shows_on_the_live_page(page: Any, tmp_path: Path) -> None:
    from tests.support.lab import LiveLab

    lab = LiveLab(tmp_path / "lab")
    try:
        page.goto(f"http://127.0.0.1:{lab.web}/lab/demo/")
        page.wait_for_function("document.querySelector('[data-topology=status]').dataset.state === 'live'")
        page.locator("g.node[data-node^='kubelet:']").first.wait_for(timeout=30_000)
        lab.kubectl("run", "web", "--image=nginx")
        page.get_by_text("create pods").first.wait_for(timeout=30_000)
        page.wait_for_function(
            "[...window.kubelabTopology.model.requests.values()]"
            ".some(r => r.verb === 'create' && r.resource === 'pods' && r.name === '' && r.code === 201)",
            timeout=30_000,
        )
        assert page.locator("g.node[data-node^='kubelet:']").count() >= 1
    finally:
        lab.stop()


@pytest.mark.skipif(
    importlib.util.find_spec("controlplane.consumers") is None,
    reason="the trace websocket consumer (controlplane.consumers) has not landed yet",
)
def test_an_rbac_refusal_from_kubectl_is_explained_in_the_inspector(page: Any, tmp_path: Path) -> None:
    from tests.support.lab import LiveLab

    lab = LiveLab(tmp_path / "lab")
    try:
        page.goto(f"http://127.0.0.1:{lab.web}/lab/demo/")
        page.wait_for_function("document.querySelector('[data-topology=status]').dataset.state === 'live'")
        # The admin impersonates bob, whom no binding lets read Secrets.
        result = lab.kubectl("--as", "bob", "get", "secrets", check=False)
        assert result.returncode != 0 and "forbidden" in result.stderr
        refusal = page.locator("li.narration-request-stage.deny", has_text="Refused at authorization")
        refusal.first.wait_for(timeout=30_000)
        refusal.first.locator("button").focus()
        page.keyboard.press("Enter")
        rbac_box = page.locator("[data-topology=inspector] [data-detail=rbac]")
        rbac_box.wait_for()
        text = rbac_box.inner_text()
        assert "✕ refused" in text
        assert 'User "bob" cannot list resource "secrets"' in text  # what kubectl was told
        assert "system:authenticated" in text  # the bindings considered for bob's groups, and why not
        assert "do not include" in text or "No binding names bob" in text
        assert page.locator("svg.topology .refusal").text_content().startswith("✕ Refused at authorization")
    finally:
        lab.stop()


@pytest.mark.skipif(
    importlib.util.find_spec("controlplane.consumers") is None,
    reason="the trace websocket consumer (controlplane.consumers) has not landed yet",
)
def test_the_etcd_panel_lists_keys_kubectl_wrote_and_secrets_as_ciphertext(page: Any, tmp_path: Path) -> None:
    from tests.support.lab import LiveLab

    password = "hunter2-" + tmp_path.name  # what must never reach the page
    lab = LiveLab(tmp_path / "lab")
    try:
        page.goto(f"http://127.0.0.1:{lab.web}/lab/demo/")
        page.wait_for_function("document.querySelector('[data-topology=status]').dataset.state === 'live'")
        panel = page.locator("[data-etcd=root]")
        panel.locator("button.etcd-key", has_text="/registry/namespaces/default").wait_for(timeout=30_000)
        # Written after the page loaded: the row comes from the store.txn the diagram played.
        lab.kubectl("create", "configmap", "colours", "--from-literal=sky=blue")
        lab.kubectl("create", "secret", "generic", "db", f"--from-literal=password={password}")
        configmap = panel.locator("tr[data-key='/registry/configmaps/default/colours']")
        configmap.wait_for(timeout=30_000)
        assert configmap.locator("td").nth(3).inner_text() == "1"  # version
        assert "created at" in configmap.inner_text()
        # Keyboard: focus the key, Enter shows its stored JSON.
        configmap.locator("button").focus()
        page.keyboard.press("Enter")
        detail = panel.locator("[data-etcd=detail]")
        detail.locator("pre").wait_for()
        assert '"sky": "blue"' in detail.inner_text()
        # Arrow keys move between keys.
        page.keyboard.press("ArrowDown")
        assert (
            page.evaluate("() => document.activeElement.dataset.key") > "/registry/configmaps/default/colours"
        )
        secret = panel.locator("tr[data-key='/registry/secrets/default/db']")
        secret.wait_for(timeout=30_000)
        assert "encrypted (aescbc, key key1)" in secret.inner_text()
        secret.locator("button").click()
        detail.get_by_text("k8s:enc:aescbc:v1:key1:", exact=True).wait_for()
        html = page.content()
        assert password not in html
        assert base64.b64encode(password.encode()).decode() not in html
        marks = panel.locator("[data-etcd=marks]").inner_text()
        assert marks.startswith("Current revision ") and "never compacted" in marks
        # Back in time: label the ConfigMap (version 2), then read the store at its first revision.
        lab.kubectl("label", "configmap", "colours", "tone=warm")
        page.wait_for_function(
            "document.querySelector(\"tr[data-key='/registry/configmaps/default/colours']\")"
            "?.cells[3].textContent === '2'",
            timeout=30_000,
        )
        created = configmap.locator("td").nth(1).inner_text()
        panel.locator("[data-etcd=at]").fill(created)
        panel.locator("[data-etcd=at]").press("Enter")
        message = panel.locator("[data-etcd=message]")
        page.wait_for_function(
            "document.querySelector('[data-etcd=message]').textContent.includes('as it was at revision')"
        )
        assert f"as it was at revision {created}" in message.inner_text()
        assert configmap.locator("td").nth(3).inner_text() == "1"  # before the label
        assert panel.locator("tr[data-key='/registry/secrets/default/db']").count() == 0  # not made yet
        assert panel.get_attribute("data-mode") == "past"
        panel.locator("[data-etcd=live]").click()
        page.wait_for_function(
            "document.querySelector(\"tr[data-key='/registry/secrets/default/db']\") !== null"
        )
        assert configmap.locator("td").nth(3).inner_text() == "2"
    finally:
        lab.stop()
