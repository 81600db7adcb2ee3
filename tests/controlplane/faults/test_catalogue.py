"""The catalogue's one check of a fault's parameters, and what it says about each kind, in each language."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.faults import catalogue
from controlplane.faults.catalogue import CATALOGUE, MAX_DURATION, FaultSpec, InvalidFault, check


def test_the_kinds_chapters_need_and_the_boxes_they_hit() -> None:
    values: dict[str, dict[str, Any]] = {
        "stop-kubelet": {"node": "node-2"},
        "stop-kube-proxy": {"node": "node-2"},
        "crash-loop": {"component": "kube-proxy:node-3"},
        "partition-component": {"component": "kubelet:node-2"},
        "slow-store": {"delay": 200},
        "link-latency": {"component": "scheduler", "ms": 100, "jitter": 10},
        "revoke-component-certificate": {"component": "kubelet:node-1"},
        "clock-skew": {"node": "node-3", "seconds": -60},
        "kill-node": {"node": "node-2"},
        "webhook-slow": {"webhook": "no-latest.kubelab.example", "ms": 500},
    }
    targets = {name: check(name, values.get(name, {})).target for name in CATALOGUE}
    assert targets == {
        "compact-store": "etcd",
        "restart-apiserver": "apiserver",
        "stop-kubelet": "kubelet:node-2",
        "stop-kube-proxy": "kube-proxy:node-2",
        "stop-scheduler": "scheduler",
        "stop-controller-manager": "controller-manager",
        "crash-loop": "kube-proxy:node-3",
        "hot-loop-client": "user:hot-loop",
        "partition-component": "kubelet:node-2",
        "slow-store": "etcd",
        "store-unavailable": "etcd",
        "link-latency": "scheduler",
        "revoke-component-certificate": "kubelet:node-1",
        "clock-skew": "kubelet:node-3",
        "kill-node": "kubelet:node-2",
        "rotate-encryption-key": "apiserver",
        "webhook-down": "webhook:*",
        "webhook-slow": "webhook:no-latest.kubelab.example",
    }
    assert [name for name, kind in CATALOGUE.items() if not kind.lasting] == [
        "compact-store",
        "restart-apiserver",
        "rotate-encryption-key",
    ]
    assert check("crash-loop", {"component": "scheduler"}).target == "scheduler"
    assert check("crash-loop", {"component": "controller-manager"}).target == "controller-manager"


def test_a_fault_is_its_kind_its_parameters_and_its_duration() -> None:
    spec = check("stop-kubelet", {"node": "node-2", "for": 60}, nodes=3)
    assert spec == FaultSpec("stop-kubelet", (("node", "node-2"),), 60.0)
    assert spec.key == check("stop-kubelet", {"node": "node-2"}).key, (
        "the duration is not part of which fault"
    )
    assert spec.as_written() == {"fault": "stop-kubelet", "node": "node-2", "for": 60.0}
    assert check("hot-loop-client", {}).duration is None


@pytest.mark.parametrize(
    ("kind", "values", "nodes", "parameter", "message"),
    [
        (
            "stop-node",
            {},
            None,
            None,
            "'stop-node' is not a fault kind (known: compact-store, restart-apiserver",
        ),
        ("stop-kubelet", {}, 3, "node", "stop-kubelet needs 'node'"),
        (
            "stop-kubelet",
            {"node": "node-4"},
            3,
            "node",
            "'node-4': the cluster has 3 node(s), node-1 to node-3",
        ),
        ("stop-kubelet", {"node": "worker"}, 3, "node", "'worker' is not a node's name"),
        ("stop-kubelet", {"node": 2}, 3, "node", "2 is not a node's name"),
        ("stop-kubelet", {"node": "node-1", "nodes": 2}, 3, "nodes", "stop-kubelet has no parameter 'nodes'"),
        ("compact-store", {"for": 30}, 3, "for", "compact-store takes no for: it happens at once"),
        (
            "restart-apiserver",
            {"node": "node-1"},
            3,
            "node",
            "has no parameter 'node' (its parameters: none)",
        ),
        ("hot-loop-client", {"for": 0}, 3, "for", "for must be from 1 to 300 seconds, not 0"),
        ("stop-kubelet", {"node": "node-1", "for": MAX_DURATION + 1}, 3, "for", "from 1 to 1800 seconds"),
        ("hot-loop-client", {"for": True}, 3, "for", "for is a number of seconds, not True"),
        ("stop-kube-proxy", {"node": "node-4"}, 3, "node", "the cluster has 3 node(s)"),
        ("stop-scheduler", {"node": "node-1"}, 3, "node", "stop-scheduler has no parameter 'node'"),
        ("crash-loop", {}, 3, "component", "crash-loop needs 'component'"),
        ("crash-loop", {"component": "etcd"}, 3, "component", "'etcd' is not a component that crash-loops"),
        ("crash-loop", {"component": "kube-proxy:node-4"}, 3, "component", "the cluster has 3 node(s)"),
        ("crash-loop", {"component": "kube-proxy:worker"}, 3, "component", "'worker' is not a node's name"),
        ("crash-loop", {"component": "kubelet:node-1"}, 3, "component", "a kubelet runs under systemd"),
        ("crash-loop", {"component": 7}, 3, "component", "7 is not a component that crash-loops"),
    ],
)
def test_what_is_refused_and_why(
    kind: str, values: dict[str, object], nodes: int | None, parameter: str | None, message: str
) -> None:
    with pytest.raises(InvalidFault) as refused:
        check(kind, values, nodes=nodes)
    assert message in str(refused.value)
    assert refused.value.parameter == parameter


def test_a_fault_named_to_be_cleared() -> None:
    assert check("stop-kubelet", {"node": "node-1"}, clearing=True).duration is None
    with pytest.raises(InvalidFault, match="compact-store happens at once: there is nothing to clear"):
        check("compact-store", {}, clearing=True)
    with pytest.raises(InvalidFault, match="stop-kubelet takes no for: it is cleared, not applied"):
        check("stop-kubelet", {"node": "node-1", "for": 5}, clearing=True)


def test_labels_in_each_language() -> None:
    spec = check("stop-kubelet", {"node": "node-2", "for": 90})
    assert spec.label("en") == "Stop the kubelet on node-2 for 90 s"
    assert spec.label("zh-hans") == "停止 node-2 上的 kubelet，持续 90 秒"  # noqa: RUF001
    assert spec.label("zh-Hant") == spec.label("zh-hans") and spec.label("fr") == spec.label("en")
    assert spec.clear_label("en") == "Start the kubelet on node-2 again"
    assert spec.clear_label("zh-hans") == "重新启动 node-2 上的 kubelet"
    with pytest.raises(InvalidFault):
        check("restart-apiserver", {}).clear_label("en")
    loop = check("crash-loop", {"component": "scheduler"})
    assert loop.label("en") == "Make scheduler crash-loop"
    assert loop.label("zh-hans") == "让 scheduler 陷入崩溃循环"
    assert loop.clear_label("en") == "Let scheduler run normally again"
    assert check("stop-kube-proxy", {"node": "node-1"}).label("zh-hans") == "停止 node-1 上的 kube-proxy"
    for kind in CATALOGUE.values():
        for texts in (kind.label, kind.summary, *([kind.clear_label] if kind.clear_label else [])):
            assert set(texts) == set(catalogue.LANGUAGES) and all(texts.values()), kind.name
