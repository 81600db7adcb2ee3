"""The live page against a real lab (``manage.py runlab``) and the real kubectl: does it draw what
``kubectl get pods`` lists, however the pods came to be?

A lab's trace bus records nothing while nobody watches, so the events that made a Deployment's pods
before a page opened do not exist anywhere: the page must draw them from the cluster's state (the
store, read when it subscribes), then follow the store's writes. One lab serves the whole module
(each start costs seconds); each test opens its own page. The module's Deployment, ``web``, is made
with 3 replicas before any page opens (``deployment``), and the tests scale it.

kubectl is the reference. Once the cluster is at rest (``settle``: kubectl says the pods are where they
were asked to be), kubectl's list is taken and the page must draw exactly that, every pod on its node
in its state, in the model and in the SVG's chips, within 5 s (``drawn_as_listed``). Opening a page is
timed from ``goto``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.browser.test_topology import PACKETS_SEEN, narration

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        importlib.util.find_spec("controlplane.consumers") is None,
        reason="the trace websocket consumer (controlplane.consumers) has not landed yet",
    ),
]

#: A pod as both sides say it: (namespace/name, node or "", state as the diagram names it).
Pod = tuple[str, str, str]
#: A finalizer of this test's own: a pod that carries it stays Terminating until it is removed.
HOLD = "kubelab.test/hold"
SETTLE = 60.0  # s the lab may take to bring pods to where kubectl is asked to put them

DRAWN = """() => {
  const model = window.kubelabTopology.shown();
  const pods = [];
  for (const node of model.nodes.values()) {
    if (node.kind !== "kubelet") continue;
    for (const pod of node.pods.values()) pods.push([pod.key, node.name, pod.state]);
  }
  for (const pod of model.unscheduledPods()) pods.push([pod.key, "", "unscheduled"]);
  const chipped = document.querySelectorAll("svg.topology g.node[data-node^='kubelet:'] g.pod");
  const chips = [...chipped].map((chip) => [
    chip.querySelector("title").textContent,
    chip.closest("g.node").dataset.node,
    chip.getAttribute("class"),
  ]);
  const more = document.querySelectorAll("svg.topology [data-pods-more]").length;
  const unscheduled = document.querySelector("svg.topology .unscheduled").textContent;
  return { pods, chips, more, unscheduled };
}"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.support.lab import LiveLab

    lab = LiveLab(tmp_path_factory.mktemp("live") / "lab")
    try:
        yield lab
    finally:
        lab.stop()


@dataclass(frozen=True)
class Deployment:
    revision: int  # a store revision at which the 3 pods below existed, all Running
    pods: frozenset[Pod]


@pytest.fixture(scope="module")
def deployment(lab: Any) -> Deployment:
    """``web`` with 3 Running pods, made before any page of this lab opened."""
    lab.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=3")
    pods = settle(lab, 3)
    listed = lab.kubectl_json("get", "pods", "-A")["items"]
    deployed = lab.kubectl_json("get", "deployment", "web")
    revision = max(int(obj["metadata"]["resourceVersion"]) for obj in [*listed, deployed])
    return Deployment(revision, frozenset(pods))


def pod_state(item: dict[str, Any]) -> Pod:
    """A pod kubectl lists, as the diagram should draw it (``storedPodState`` in model.js)."""
    metadata, spec, status = item["metadata"], item.get("spec", {}), item.get("status", {})
    node = spec.get("nodeName") or ""
    phase = status.get("phase") or "Pending"
    if metadata.get("deletionTimestamp"):
        state = "terminating"
    elif phase == "Pending":
        state = "scheduled" if node else "unscheduled"
    else:
        state = phase.lower() if phase in ("Running", "Succeeded", "Failed") else "unknown"
    return (f"{metadata['namespace']}/{metadata['name']}", node, state)


def ours(pods: set[Pod]) -> set[Pod]:
    """The test's pods (namespace default), without kube-system's kube-proxy and CoreDNS ones."""
    return {pod for pod in pods if pod[0].startswith("default/")}


def listed(lab: Any) -> set[Pod]:
    """Every pod ``kubectl get pods -A`` lists, Terminating ones too."""
    return {pod_state(item) for item in lab.kubectl_json("get", "pods", "-A")["items"]}


def settle(lab: Any, replicas: int, *, terminating: int = 0) -> set[Pod]:
    """Wait (kubectl's view) until ``replicas`` pods of namespace default run and ``terminating`` more
    are Terminating; every pod kubectl lists.

    Asks once a second: each kubectl request is a person's, which the page animates event by event
    (a dozen events each), and the test should not be what the page is busy drawing."""
    deadline = time.monotonic() + SETTLE
    while True:
        pods = listed(lab)
        # Counted in the test's namespace: kube-system's kube-proxy and CoreDNS pods run throughout
        # (and are drawn, as kubectl lists them).
        states = sorted(state for key, _, state in pods if key.startswith("default/"))
        if states == ["running"] * replicas + ["terminating"] * terminating:
            return pods
        if time.monotonic() > deadline:
            raise AssertionError(
                f"after {SETTLE:g} s, not {replicas} running and {terminating} terminating: {pods}"
            )
        time.sleep(1.0)


CHIP_TITLE = re.compile(r"^pod (\S+) \((\w+)\)$")


def drawn(page: Any) -> set[Pod] | str:
    """The pods the diagram draws now: the model's, checked against the SVG's chips (title, node and
    class) and the unscheduled count. A string says how the two disagree."""
    seen = page.evaluate(DRAWN)
    pods: set[Pod] = {(key, node, state) for key, node, state in seen["pods"]}
    if seen["more"]:
        return f"a node has more pods than chips: {seen}"
    chips = set()
    for title, node_id, classes in seen["chips"]:
        match = CHIP_TITLE.match(title)
        if not match or classes != f"pod pod-{match[2]}":
            return f"chip {title!r} has class {classes!r}"
        chips.add((match[1], node_id.removeprefix("kubelet:"), match[2]))
    on_nodes = {pod for pod in pods if pod[1]}
    if chips != on_nodes:
        return f"the chips {sorted(chips)} are not the model's pods {sorted(on_nodes)}"
    waiting = len(pods) - len(on_nodes)
    said = f"{waiting} pod{'' if waiting == 1 else 's'} to schedule" if waiting else ""
    if seen["unscheduled"] != said:
        return f"{seen['unscheduled']!r} under the scheduler, but {waiting} pods wait for it"
    return pods


def drawn_as_listed(page: Any, lab: Any, *, since: float | None = None, seconds: float = 5.0) -> set[Pod]:
    """What kubectl lists, once the diagram draws it: at most ``seconds`` after ``since`` (default:
    now). For a cluster at rest (``settle``): kubectl is asked once, then the page until it agrees
    (and kubectl again if it never does, to tell a page behind from a cluster that moved)."""
    deadline = (since if since is not None else time.monotonic()) + seconds
    pods = listed(lab)
    while (now := drawn(page)) != pods and time.monotonic() < deadline:
        time.sleep(0.05)
    if now != pods:
        behind = page.evaluate("() => window.kubelabTopology.timeline.queue.length")
        again = listed(lab)
        late = time.monotonic()
        while (later := drawn(page)) != again and time.monotonic() < late + 5:
            time.sleep(0.2)
        raise AssertionError(
            f"after {seconds:g} s the diagram does not draw what kubectl lists:\n"
            f"kubectl: {sorted(pods)}\n"
            f"diagram: {now if isinstance(now, str) else sorted(now)} ({behind} events waiting)\n"
            f"kubectl: {'the same' if again == pods else sorted(again)} after that, and the diagram "
            + (f"agreed {time.monotonic() - late:.1f} s later" if later == again else "still not 5 s later")
        )
    return pods


def open_live(page: Any, lab: Any) -> set[Pod]:
    """Open the lab's page; within 5 s it draws every pod kubectl lists."""
    started = time.monotonic()
    page.goto(f"http://127.0.0.1:{lab.web}/lab/demo/")
    page.wait_for_function("window.kubelabTopology?.rewind.live.base() != null", timeout=5_000)
    return drawn_as_listed(page, lab, since=started)


def scale(lab: Any, replicas: int) -> None:
    lab.kubectl("scale", "deployment/web", f"--replicas={replicas}")


def wait_status(page: Any, state: str) -> None:
    page.wait_for_function(
        f"document.querySelector('[data-topology=status]').dataset.state === {state!r}", timeout=30_000
    )


def test_a_page_opened_after_the_pods_were_made_draws_every_pod_kubectl_lists(
    page: Any, lab: Any, deployment: Deployment
) -> None:
    pods = listed(lab)
    assert len(ours(pods)) == 3 and all(state == "running" for _, _, state in pods)
    assert open_live(page, lab) == pods
    # Drawn from the state: the trace the page was sent never made them (nobody watched then).
    start = page.evaluate("() => window.kubelabTopology.rewind.live.base()")
    assert {f"{p['namespace']}/{p['name']}" for p in start["objects"]["pods"]} == {key for key, _, _ in pods}
    drew = f"Drew the cluster as etcd holds it at revision {start['revision']}: 4 nodes, {len(pods)} pods"
    assert drew in narration(page)
    made = page.evaluate(
        """() => {
          const { model, rewind } = window.kubelabTopology;
          const created = (e) =>
            e.type === "request.stage" && e.op === "create" && String(e.key).startsWith("/registry/pods/");
          return [...model.events.values()].filter((e) => e.seq <= rewind.live.base().seq || created(e));
        }"""
    )
    assert made == [], "the page holds an event from before its state, or one that created a pod"
    # Each chip shows what tells the pods apart: the suffix after the ReplicaSet's generateName; a
    # static pod's mirror (``kube-scheduler-control-plane``) has no generated suffix: its name, cut short.
    labels = page.evaluate(
        "() => [...document.querySelectorAll('svg.topology g.pod .chip-label')].map(l => l.textContent)"
    )

    def chip(key: str) -> str:
        name = key.split("/")[1]
        shown = f"{name[:8]}…" if name.endswith("-control-plane") else name.rsplit("-", 1)[1]
        return f"●\u2009{shown}"

    assert sorted(labels) == sorted(chip(key) for key, _, _ in pods)


def release(lab: Any, pods: set[Pod]) -> None:
    """Take our finalizer off these pods (those being deleted then go)."""
    for key, _, _ in pods:
        remove = '[{"op": "remove", "path": "/metadata/finalizers"}]'
        lab.kubectl("patch", "pod", key.split("/")[1], "--type=json", "-p", remove, check=False)


def test_scaling_up_and_down_is_drawn_as_kubectl_lists_it(
    page: Any, lab: Any, deployment: Deployment
) -> None:
    open_live(page, lab)
    scale(lab, 6)
    settle(lab, 6)
    assert len(ours(drawn_as_listed(page, lab))) == 6
    # Every pod holds a finalizer of ours, so that those the scale-down deletes stay Terminating until
    # it goes: long enough to compare (without it they go within a few tens of ms here).
    held = ours(listed(lab))
    try:
        hold = json.dumps({"metadata": {"finalizers": [HOLD]}})
        for key, _, _ in held:
            lab.kubectl("patch", "pod", key.split("/")[1], "--type=merge", "-p", hold)
        scale(lab, 2)
        settle(lab, 2, terminating=4)
        pods = ours(drawn_as_listed(page, lab))
        # Drawn Terminating (chip class pod-terminating: `drawn` checks each chip's class against its
        # state) while kubectl says deletionTimestamp.
        assert sorted(state for _, _, state in pods) == ["running"] * 2 + ["terminating"] * 4
        assert page.locator("svg.topology g.pod.pod-terminating").count() == 4
    finally:
        release(lab, held)
    settle(lab, 2)
    assert len(ours(drawn_as_listed(page, lab))) == 2


def test_a_configmap_kubectl_creates_on_an_idle_cluster_is_narrated_within_3_s(
    page: Any, lab: Any, deployment: Deployment
) -> None:
    open_live(page, lab)
    page.evaluate(PACKETS_SEEN)
    key = "/registry/configmaps/default/colours"
    started = time.monotonic()
    lab.kubectl("create", "configmap", "colours", "--from-literal=sky=blue")
    left = max(0.0, 3.0 - (time.monotonic() - started))
    page.wait_for_function(
        "key => [...document.querySelectorAll('[data-topology=narration] li.narration-request-stage')]"
        ".some(li => li.textContent.includes(`created ${key} at revision`))",
        arg=key,
        timeout=left * 1000,
    )
    assert "User admin sent create configmaps" in narration(page)
    page.get_by_text("The API server answered create configmaps from user admin with 201 Created").wait_for()
    request = page.evaluate(
        """() => { const r = [...window.kubelabTopology.model.requests.values()]
                     .find((r) => r.verb === "create" && r.resource === "configmaps");
                   return r && { id: r.id, from: r.from, seqs: r.seqs }; }"""
    )
    assert request["from"] == "user:admin"
    # Its packet was animated, and each of its events narrated (a person's request is never folded).
    assert request["id"] in page.evaluate("() => window.__packets")
    narrated = page.evaluate(
        "() => [...document.querySelectorAll('[data-topology=narration] li[data-seq]')]"
        ".map(li => Number(li.dataset.seq))"
    )
    assert set(request["seqs"]) <= set(narrated)


def test_a_deep_link_to_an_old_revision_draws_the_pods_the_store_held_then(
    page: Any, lab: Any, deployment: Deployment
) -> None:
    now = listed(lab)
    if {key for key, _, _ in now} == {key for key, _, _ in deployment.pods}:  # run alone: change it first
        scale(lab, 4)
        now = settle(lab, 4)
    started = time.monotonic()
    page.goto(f"http://127.0.0.1:{lab.web}/lab/demo/#revision={deployment.revision}")
    page.wait_for_function(
        "r => { const b = document.querySelector('[data-rewind=banner]');"
        " return b.dataset.state === 'past' && b.textContent.includes(`Showing revision ${r},`); }",
        arg=deployment.revision,
        timeout=5_000,
    )
    deadline = started + 5.0
    then = set(deployment.pods)
    while (pods := drawn(page)) != then and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pods == then, f"at revision {deployment.revision}: {pods} drawn, {sorted(deployment.pods)} stored"
    assert f"revision={deployment.revision}" in page.url
    # Back to live: what kubectl lists now.
    page.locator("[data-rewind=live]").click()
    assert drawn_as_listed(page, lab) == now


def test_after_the_socket_is_cut_and_reconnects_scaling_still_matches_kubectl(
    page: Any, lab: Any, deployment: Deployment
) -> None:
    running = len(ours(open_live(page, lab)))
    page.evaluate("() => window.kubelabTopology.stream.socket.close()")
    wait_status(page, "offline")
    wait_status(page, "live")
    page.wait_for_function("window.kubelabTopology.stream.socket?.readyState === WebSocket.OPEN")
    scale(lab, running + 2)
    settle(lab, running + 2)
    assert len(ours(drawn_as_listed(page, lab))) == running + 2
    # It was the only watcher: nothing was traced while its socket was down, so it could not go on
    # from the last seq it held (410) and started again from the state.
    assert narration(page).count("Drew the cluster as etcd holds it") == 2


def test_what_changed_while_the_socket_was_down_is_drawn_once_it_reconnects(
    page: Any, lab: Any, deployment: Deployment
) -> None:
    running = len(ours(open_live(page, lab)))
    # The page reconnects 4 s after the socket drops (its fourth try): the cluster changes meanwhile.
    page.evaluate(
        "() => { const stream = window.kubelabTopology.stream; stream.retry = 3; stream.socket.close(); }"
    )
    wait_status(page, "offline")
    scale(lab, running + 1)
    settle(lab, running + 1)
    if page.locator("[data-topology=status]").get_attribute("data-state") != "offline":
        pytest.skip("the page reconnected before the cluster had settled: nothing to tell")
    wait_status(page, "live")
    reconnected = time.monotonic()
    assert len(ours(drawn_as_listed(page, lab, since=reconnected))) == running + 1
