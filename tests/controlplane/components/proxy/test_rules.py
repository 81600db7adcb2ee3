"""kube-proxy's rule table, computed from Services and EndpointSlices without a server."""

from __future__ import annotations

from typing import Any

from controlplane.api.meta import Object
from controlplane.components.proxy.rules import (
    ANY_NODE_ADDRESS,
    Endpoint,
    build_rule_table,
    usable_endpoints,
)


def service(name: str = "web", **spec: Any) -> Object:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10"],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"}],
            **spec,
        },
    }


def endpoint(
    ip: str, node: str = "n1", *, ready: bool = True, serving: bool | None = None, terminating: bool = False
) -> Object:
    return {
        "addresses": [ip],
        "nodeName": node,
        "conditions": {
            "ready": ready,
            "serving": ready if serving is None else serving,
            "terminating": terminating,
        },
    }


def slice_(
    *endpoints: Object, service_name: str = "web", port: int = 8080, port_name: str = "http"
) -> Object:
    return {
        "metadata": {
            "name": f"{service_name}-abcde",
            "namespace": "default",
            "labels": {"kubernetes.io/service-name": service_name},
        },
        "addressType": "IPv4",
        "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
        "endpoints": list(endpoints),
    }


def test_a_cluster_ip_rule_sends_to_ready_endpoints_on_their_port() -> None:
    table = build_rule_table(
        [service()], [slice_(endpoint("10.244.1.5"), endpoint("10.244.2.7", "n2", ready=False))], "n1"
    )
    rule = table.lookup("10.96.0.10", 80)
    assert rule is not None
    assert rule.kind == "ClusterIP" and rule.service == "default/web:http"
    assert [e.address for e in rule.endpoints] == ["10.244.1.5:8080"]
    assert rule.action == "DNAT"
    assert rule.to_dict()["endpoints"] == ["10.244.1.5:8080"]
    assert table.lookup("10.96.0.10", 81) is None


def test_a_node_port_is_open_on_every_node_address() -> None:
    svc = service(type="NodePort", ports=[{"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080}])
    table = build_rule_table([svc], [slice_(endpoint("10.244.2.7", "n2"))], "n1")
    assert {(r.kind, r.ip, r.port) for r in table.rules} == {
        ("ClusterIP", "10.96.0.10", 80),
        ("NodePort", ANY_NODE_ADDRESS, 30080),
    }
    rule = table.lookup("192.168.0.11", 30080)
    assert rule is not None and [e.address for e in rule.endpoints] == ["10.244.2.7:8080"]


def test_without_ready_endpoints_the_rule_rejects_or_falls_back_to_terminating_ones() -> None:
    table = build_rule_table([service()], [slice_(endpoint("10.244.1.5", ready=False))], "n1")
    rule = table.lookup("10.96.0.10", 80)
    assert rule is not None and rule.endpoints == () and rule.action == "REJECT"
    draining = slice_(endpoint("10.244.1.5", ready=False, serving=True, terminating=True))
    rule = build_rule_table([service()], [draining], "n1").lookup("10.96.0.10", 80)
    assert rule is not None and [e.ip for e in rule.endpoints] == ["10.244.1.5"]


def test_local_traffic_policies_keep_traffic_on_this_node() -> None:
    svc = service(
        type="NodePort",
        externalTrafficPolicy="Local",
        ports=[{"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080}],
    )
    slices = [slice_(endpoint("10.244.1.5", "n1"), endpoint("10.244.2.7", "n2"))]
    table = build_rule_table([svc], slices, "n2")
    cluster_rule, node_rule = table.lookup("10.96.0.10", 80), table.lookup("*", 30080)
    assert cluster_rule is not None and len(cluster_rule.endpoints) == 2  # internal policy: Cluster
    assert node_rule is not None and [e.ip for e in node_rule.endpoints] == ["10.244.2.7"]
    eps = [Endpoint("10.0.0.1", 80, "n1"), Endpoint("10.0.0.2", 80, "n2")]
    assert usable_endpoints(eps, local_only=True, node_name="n3") == ()


def test_ports_match_by_name_and_dns_only_services_get_no_rules() -> None:
    two_ports = service(
        ports=[
            {"name": "http", "port": 80, "protocol": "TCP"},
            {"name": "metrics", "port": 9100, "protocol": "TCP"},
        ]
    )
    table = build_rule_table([two_ports], [slice_(endpoint("10.244.1.5"))], "n1")
    metrics = table.lookup("10.96.0.10", 9100)
    assert metrics is not None and metrics.endpoints == ()  # the slice has no "metrics" port
    headless = service("db", clusterIP="None", clusterIPs=["None"])
    external = {
        "metadata": {"name": "ext", "namespace": "default"},
        "spec": {"type": "ExternalName", "externalName": "example.com"},
    }
    other = slice_(endpoint("10.244.1.6"), service_name="db")
    assert build_rule_table([headless, external], [other], "n1").rules == ()
