"""Each plugin against small fixtures, with upstream's reasons (cases ported from the *_test.go files)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import pytest

from controlplane.api.quantity import parse_json_quantity
from controlplane.components.scheduler import framework
from controlplane.components.scheduler.framework import (
    Code,
    CycleState,
    NodeInfo,
    Snapshot,
    Status,
    pod_requests,
    resource_from_list,
)
from controlplane.components.scheduler.plugins import (
    BalancedAllocation,
    InterPodAffinity,
    NodeAffinity,
    NodeName,
    NodeResourcesFit,
    NodeUnschedulable,
    PodTopologySpread,
    TaintToleration,
)
from controlplane.components.scheduler.plugins.inter_pod_affinity import existing_anti_affinity_terms
from tests.controlplane.components.scheduler.fixtures import node, pod


def run_filter(
    plugin: Any, p: dict[str, Any], n: dict[str, Any], others: Sequence[dict[str, Any]] = ()
) -> Status:
    snapshot = Snapshot([n], list(others))
    info = snapshot.node_infos[0]
    result: Status = plugin.filter(CycleState(snapshot), p, info)
    return result


def test_pod_requests_sum_containers_max_init_containers_plus_overhead() -> None:
    # resource.PodRequests: max(sum(containers), each init container) + overhead
    p = pod("p")
    p["spec"]["containers"] = [
        {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}},
        {"name": "b", "resources": {"requests": {"cpu": "200m"}}},
    ]
    p["spec"]["initContainers"] = [
        {"name": "i", "resources": {"requests": {"cpu": "500m", "memory": "10Mi"}}}
    ]
    p["spec"]["overhead"] = {"cpu": "10m"}
    r = pod_requests(p)
    assert (r.milli_cpu, r.memory) == (510, 1024**3)
    nz = pod_requests(pod("empty"), non_zero=True)
    assert (nz.milli_cpu, nz.memory) == (100, 200 * 1024 * 1024)


def test_node_info_sums_requests_of_its_pods() -> None:
    info = NodeInfo(node("n"), [pod("a", cpu="1", memory="1Gi"), pod("b", cpu="500m")])
    assert (info.requested.milli_cpu, info.requested.memory) == (1500, 1024**3)
    assert info.allocatable.milli_cpu == 4000 and info.allocatable.allowed_pod_number == 110


def test_each_quantity_spelling_is_parsed_once_per_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[object] = []
    real = parse_json_quantity

    def counting(raw: object) -> Any:
        parsed.append(raw)
        return real(raw)

    monkeypatch.setattr(framework, "parse_json_quantity", counting)
    monkeypatch.setattr(framework, "_AMOUNTS", {})
    first = resource_from_list({"cpu": "1", "memory": "1"})
    again = resource_from_list({"cpu": "1", "memory": "1"})
    assert (first.milli_cpu, first.memory) == (again.milli_cpu, again.memory) == (1000, 1)
    assert parsed == ["1", "1"]  # once as cpu (milli-cores), once as memory (bytes), then remembered
    # Only strings are remembered: a JSON true is refused, a bare 1 is one core, a bad string is skipped.
    assert resource_from_list({"cpu": True}).milli_cpu == 0
    assert resource_from_list({"cpu": 1}).milli_cpu == 1000
    assert resource_from_list({"cpu": "lots"}).milli_cpu == 0
    assert resource_from_list({"cpu": True}).milli_cpu == 0


def test_node_info_reads_the_node_object_again_only_when_it_is_replaced() -> None:
    soft = {"key": "k", "value": "v", "effect": "PreferNoSchedule"}
    info = NodeInfo(node("n", labels={"zone": "a"}), [pod("a", cpu="1")])
    assert (info.taints, info.labels["zone"], info.unschedulable) == ((), "a", False)
    info.set_node(node("n", cpu="8", labels={"zone": "b"}, taints=[soft], unschedulable=True))
    assert (info.taints, info.labels["zone"], info.unschedulable) == ((soft,), "b", True)
    assert (info.allocatable.milli_cpu, info.requested.milli_cpu) == (8000, 1000)  # its pods stay


def test_placed_pods_anti_affinity_terms_are_parsed_once_per_version() -> None:
    placed = pod("w", node_name="a", labels={"app": "web"}, affinity=anti())
    placed["metadata"].update(uid="u-1", resourceVersion="5")
    terms = existing_anti_affinity_terms(placed)
    assert [t.topology_key for t in terms] == ["kubernetes.io/hostname"]
    assert existing_anti_affinity_terms(copy.deepcopy(placed)) is terms  # the same version
    zonal = copy.deepcopy(placed)
    zonal["spec"]["affinity"] = anti("zone")
    zonal["metadata"]["resourceVersion"] = "6"
    assert [t.topology_key for t in existing_anti_affinity_terms(zonal)] == ["zone"]
    # Without a uid (a pod not from the API) nothing is remembered.
    zonal["metadata"].pop("uid")
    assert existing_anti_affinity_terms(zonal) is not existing_anti_affinity_terms(zonal)


def test_node_unschedulable() -> None:
    # node_unschedulable_test.go
    status = run_filter(NodeUnschedulable(), pod("p"), node("n", unschedulable=True))
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("node(s) were unschedulable",)
    tolerant = pod("p", tolerations=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}])
    assert run_filter(NodeUnschedulable(), tolerant, node("n", unschedulable=True)).is_success
    assert run_filter(NodeUnschedulable(), pod("p"), node("n")).is_success


def test_node_name() -> None:
    assert run_filter(NodeName(), pod("p"), node("a")).is_success
    assert run_filter(NodeName(), pod("p", node_name="a"), node("a")).is_success
    status = run_filter(NodeName(), pod("p", node_name="b"), node("a"))
    assert status.reasons == ("node(s) didn't match the requested node name",)


def test_fit_reasons_in_upstream_order() -> None:
    # fit_test.go: "too many resources fails" reports every insufficient resource
    n = node("n", cpu="1", memory="1Gi", pods="1")
    status = run_filter(NodeResourcesFit(), pod("p", cpu="2", memory="2Gi"), n, [pod("x", node_name="n")])
    assert status.code is Code.UNSCHEDULABLE
    assert status.reasons == ("Too many pods", "Insufficient cpu", "Insufficient memory")
    assert run_filter(
        NodeResourcesFit(), pod("p", cpu="1", memory="1Gi"), node("n", cpu="1", memory="1Gi")
    ).is_success


def test_fit_counts_existing_requests() -> None:
    existing = [pod("x", cpu="3500m", node_name="n")]
    assert run_filter(NodeResourcesFit(), pod("p", cpu="600m"), node("n"), existing).reasons == (
        "Insufficient cpu",
    )
    assert run_filter(NodeResourcesFit(), pod("p", cpu="500m"), node("n"), existing).is_success


def test_least_allocated_score() -> None:
    # least_allocated_test.go "nothing scheduled, resources requested, differently sized nodes":
    # cpu 3000m/4000, memory 5000/10000 -> ((4000-3000)*100/4000 + (10000-5000)*100/10000) / 2 = 37
    p = pod("p")
    p["spec"]["containers"] = [
        {"name": "a", "resources": {"requests": {"cpu": "1000m", "memory": "2000"}}},
        {"name": "b", "resources": {"requests": {"cpu": "2000m", "memory": "3000"}}},
    ]
    n = node("n", cpu="4000m", memory="10000")
    snapshot = Snapshot([n])
    assert NodeResourcesFit().score(CycleState(snapshot), p, snapshot.node_infos[0]) == 37


def test_balanced_allocation_score() -> None:
    # balanced_allocation_test.go: cpu 3000/4000 = 0.75, memory 5000/10000 = 0.5 -> (1 - 0.125) * 100 = 87
    p = pod("p")
    p["spec"]["containers"] = [
        {"name": "a", "resources": {"requests": {"cpu": "1000m", "memory": "2000"}}},
        {"name": "b", "resources": {"requests": {"cpu": "2000m", "memory": "3000"}}},
    ]
    snapshot = Snapshot([node("n", cpu="4000m", memory="10000")])
    assert BalancedAllocation().score(CycleState(snapshot), p, snapshot.node_infos[0]) == 87
    assert BalancedAllocation().score(CycleState(snapshot), pod("best-effort"), snapshot.node_infos[0]) == 0


def affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def test_node_affinity_operators_and_node_selector() -> None:
    n = node("n", labels={"zone": "a", "cores": "8"})
    reason = ("node(s) didn't match Pod's node affinity/selector",)
    assert run_filter(NodeAffinity(), pod("p", nodeSelector={"zone": "a"}), n).is_success
    assert run_filter(NodeAffinity(), pod("p", nodeSelector={"zone": "b"}), n).reasons == reason
    cases = [
        ({"key": "zone", "operator": "In", "values": ["a", "b"]}, True),
        ({"key": "zone", "operator": "NotIn", "values": ["a"]}, False),
        ({"key": "zone", "operator": "Exists"}, True),
        ({"key": "gpu", "operator": "DoesNotExist"}, True),
        ({"key": "cores", "operator": "Gt", "values": ["4"]}, True),
        ({"key": "cores", "operator": "Lt", "values": ["4"]}, False),
    ]
    for expression, fits in cases:
        status = run_filter(
            NodeAffinity(), pod("p", affinity=affinity({"matchExpressions": [expression]})), n
        )
        assert status.is_success is fits, expression
    by_name = affinity({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]})
    assert run_filter(NodeAffinity(), pod("p", affinity=by_name), n).is_success
    # terms are ORed; an empty term matches nothing (node_affinity_test.go)
    either = affinity(
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]},
    )
    assert run_filter(NodeAffinity(), pod("p", affinity=either), n).is_success
    assert (
        run_filter(NodeAffinity(), pod("p", affinity=affinity({})), n).code
        is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    )


def test_node_affinity_preferred_score_normalized() -> None:
    preferred = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 2,
                    "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                },
                {"weight": 6, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}},
            ]
        }
    }
    snapshot = Snapshot([node("a", labels={"zone": "a"}), node("b", labels={"ssd": "y"}), node("c")])
    plugin, state, p = NodeAffinity(), CycleState(snapshot), pod("p", affinity=preferred)
    raw = {i.name: plugin.score(state, p, i) for i in snapshot.node_infos}
    assert raw == {"a": 2, "b": 6, "c": 0}
    assert plugin.normalize(raw) == {"a": 33, "b": 100, "c": 0}


def test_taint_toleration_filter_message() -> None:
    taint = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
    status = run_filter(TaintToleration(), pod("p"), node("cp", taints=[taint]))
    assert status.reasons == ("node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }",)
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    dedicated = {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}
    assert run_filter(TaintToleration(), pod("p"), node("g", taints=[dedicated])).reasons == (
        "node(s) had untolerated taint {dedicated: gpu}",
    )
    equal = pod("p", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu"}])
    assert run_filter(TaintToleration(), equal, node("g", taints=[dedicated])).is_success
    exists = pod("p", tolerations=[{"operator": "Exists"}])
    assert run_filter(TaintToleration(), exists, node("cp", taints=[taint, dedicated])).is_success
    wrong_effect = pod("p", tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}])
    assert not run_filter(TaintToleration(), wrong_effect, node("g", taints=[dedicated])).is_success
    soft = {"key": "k", "value": "v", "effect": "PreferNoSchedule"}
    assert run_filter(TaintToleration(), pod("p"), node("s", taints=[soft])).is_success


def test_taint_toleration_score_prefers_fewer_soft_taints() -> None:
    # taint_toleration_test.go "the more intolerable taints a node has, the lower score it gets"
    soft = [{"key": f"k{i}", "value": "v", "effect": "PreferNoSchedule"} for i in range(2)]
    snapshot = Snapshot([node("a"), node("b", taints=soft[:1]), node("c", taints=soft)])
    plugin, state = TaintToleration(), CycleState(snapshot)
    raw = {i.name: plugin.score(state, pod("p"), i) for i in snapshot.node_infos}
    assert plugin.normalize(raw) == {"a": 100, "b": 50, "c": 0}


def spread(max_skew: int = 1, key: str = "zone", **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": max_skew,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
            **extra,
        }
    ]


def filter_all(plugin: Any, p: dict[str, Any], snapshot: Snapshot) -> dict[str, Status]:
    state = CycleState(snapshot)
    return {i.name: plugin.filter(state, p, i) for i in snapshot.node_infos}


def test_pod_topology_spread_max_skew() -> None:
    # filtering_test.go "pods spread across zones as 3/3, all nodes fit" style: zone a has 2, zone b 1
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"}), node("x")]
    web = {"app": "web"}
    pods = [
        pod("w1", node_name="a1", labels=web),
        pod("w2", node_name="a1", labels=web),
        pod("w3", node_name="b1", labels=web),
    ]
    result = filter_all(
        PodTopologySpread(), pod("p", labels=web, topologySpreadConstraints=spread()), Snapshot(nodes, pods)
    )
    assert result["b1"].is_success
    assert result["a1"].reasons == ("node(s) didn't match pod topology spread constraints",)
    assert result["x"].reasons == (
        "node(s) didn't match pod topology spread constraints (missing required label)",
    )
    assert result["x"].code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    # minDomains: with only 2 zones and minDomains 3, the global minimum counts as 0
    strict = pod("p", labels=web, topologySpreadConstraints=spread(minDomains=3))
    assert not filter_all(PodTopologySpread(), strict, Snapshot(nodes, pods))["b1"].is_success


def anti(key: str = "kubernetes.io/hostname", kind: str = "podAntiAffinity") -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": key}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def test_inter_pod_anti_affinity() -> None:
    web = {"app": "web"}
    snapshot = Snapshot([node("a"), node("b")], [pod("w1", node_name="a", labels=web)])
    result = filter_all(InterPodAffinity(), pod("p", labels=web, affinity=anti()), snapshot)
    assert result["a"].reasons == ("node(s) didn't match pod anti-affinity rules",)
    assert result["b"].is_success
    # symmetric: an existing pod's anti-affinity refuses the newcomer
    snapshot = Snapshot(
        [node("a"), node("b")], [pod("w1", node_name="a", labels={"x": "1"}, affinity=anti())]
    )
    result = filter_all(InterPodAffinity(), pod("p", labels=web), snapshot)
    assert result["a"].reasons == ("node(s) didn't satisfy existing pods anti-affinity rules",)


def test_inter_pod_affinity_and_first_pod_exception() -> None:
    web = {"app": "web"}
    nodes = [node("a", labels={"zone": "z1"}), node("b", labels={"zone": "z2"})]
    snapshot = Snapshot(nodes, [pod("w1", node_name="a", labels=web)])
    result = filter_all(InterPodAffinity(), pod("p", affinity=anti("zone", "podAffinity")), snapshot)
    assert result["a"].is_success
    assert result["b"].reasons == ("node(s) didn't match pod affinity rules",)
    assert result["b"].code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    # no matching pod anywhere: a pod matching its own term may start the group; one that doesn't may not
    empty = Snapshot(nodes)
    assert filter_all(InterPodAffinity(), pod("p", labels=web, affinity=anti("zone", "podAffinity")), empty)[
        "b"
    ].is_success
    assert not filter_all(InterPodAffinity(), pod("p", affinity=anti("zone", "podAffinity")), empty)[
        "b"
    ].is_success
