"""Ingresses, IngressClasses and NetworkPolicies: ``pkg/apis/networking/validation/validation_test.go``
and the defaults of ``pkg/apis/networking/v1/defaults.go``."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.strategies import IngressClassStrategy, IngressStrategy, NetworkPolicyStrategy
from tests.controlplane.api.strategies import create, stored, update

INGRESSES = IngressStrategy()
CLASSES = IngressClassStrategy()
POLICIES = NetworkPolicyStrategy()


def backend(name: str = "web", port: Any = 80) -> dict[str, Any]:
    key = "number" if isinstance(port, int) else "name"
    return {"service": {"name": name, "port": {key: port}}}


def ingress(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "rules": [
            {
                "host": "foo.bar.com",
                "http": {"paths": [{"path": "/foo", "pathType": "Prefix", "backend": backend()}]},
            }
        ]
    }
    body.update(spec)
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "shop"},
        "spec": body,
    }


def path_errors(**path: Any) -> list[str]:
    entry = {"path": "/foo", "pathType": "Prefix", "backend": backend(), **path}
    return create(INGRESSES, ingress(rules=[{"http": {"paths": [entry]}}]))[1]


def test_a_valid_ingress_and_its_generation() -> None:
    obj = stored(INGRESSES, ingress())
    assert obj["metadata"]["generation"] == 1 and obj["status"] == {"loadBalancer": {}}
    changed = ingress(ingressClassName="nginx")
    assert update(INGRESSES, changed, obj)[0]["metadata"]["generation"] == 2


def test_an_ingress_needs_rules_or_a_default_backend() -> None:
    assert create(INGRESSES, ingress(rules=[]))[1] == [
        "spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"
    ]
    assert create(INGRESSES, ingress(rules=[], defaultBackend=backend()))[1] == []


@pytest.mark.parametrize(
    ("path", "messages"),
    [
        (
            {"pathType": None},
            ["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"],
        ),
        (
            {"pathType": "Regex"},
            [
                'spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": '
                'supported values: "Exact", "ImplementationSpecific", "Prefix"'
            ],
        ),
        (
            {"path": "foo"},
            ['spec.rules[0].http.paths[0].path: Invalid value: "foo": must be an absolute path'],
        ),
        (
            {"path": "/a//b"},
            ["spec.rules[0].http.paths[0].path: Invalid value: \"/a//b\": must not contain '//'"],
        ),
        (
            {"path": "/a/.."},
            ["spec.rules[0].http.paths[0].path: Invalid value: \"/a/..\": cannot end with '/..'"],
        ),
        ({"path": "", "pathType": "ImplementationSpecific"}, []),
        (
            {"backend": {"service": {"name": "web", "port": {}}}},
            ["spec.rules[0].http.paths[0].backend: Required value: port name or number is required"],
        ),
        (
            {"backend": {"service": {"name": "web", "port": {"name": "http", "number": 80}}}},
            [
                'spec.rules[0].http.paths[0].backend: Invalid value: "": '
                "cannot set both port name & port number"
            ],
        ),
        (
            {"backend": {}},
            [
                'spec.rules[0].http.paths[0].backend: Invalid value: "": '
                "resource or service backend is required"
            ],
        ),
    ],
)
def test_ingress_paths_and_backends(path: dict[str, Any], messages: list[str]) -> None:
    assert path_errors(**path) == messages


def test_ingress_hosts() -> None:
    ip_host = ingress()
    ip_host["spec"]["rules"][0]["host"] = "1.2.3.4"
    assert create(INGRESSES, ip_host)[1][0] == (
        'spec.rules[0].host: Invalid value: "1.2.3.4": must be a DNS name, not an IP address'
    )
    wildcard = ingress()
    wildcard["spec"]["rules"][0]["host"] = "*.bar.com"
    assert create(INGRESSES, wildcard)[1] == []


def test_ingress_class_controller() -> None:
    def ingress_class(**spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IngressClass",
            "metadata": {"name": "nginx"},
            "spec": spec,
        }

    obj = stored(CLASSES, ingress_class(controller="k8s.io/ingress-nginx"), namespaced=False)
    assert create(CLASSES, ingress_class(), namespaced=False)[1] == ["spec.controller: Required value"]
    assert create(CLASSES, ingress_class(controller="nginx"), namespaced=False)[1] == [
        'spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")'
    ]
    assert update(CLASSES, ingress_class(controller="k8s.io/other"), obj, namespaced=False)[1] == [
        'spec.controller: Invalid value: "k8s.io/other": field is immutable'
    ]
    with_parameters = stored(
        CLASSES,
        ingress_class(controller="k8s.io/ingress-nginx", parameters={"kind": "P", "name": "p"}),
        namespaced=False,
    )
    assert with_parameters["spec"]["parameters"]["scope"] == "Cluster"


def policy(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "p"},
        "spec": {"podSelector": {"matchLabels": {"app": "db"}}, **spec},
    }


def test_network_policy_defaults() -> None:
    obj = stored(POLICIES, policy(ingress=[{"ports": [{"port": 80}]}]))
    assert obj["spec"]["policyTypes"] == ["Ingress"]
    assert obj["spec"]["ingress"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]
    assert stored(POLICIES, policy(egress=[{}]))["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert stored(POLICIES, policy(policyTypes=["Egress"]))["spec"]["policyTypes"] == ["Egress"]


@pytest.mark.parametrize(
    ("spec", "messages"),
    [
        ({"ingress": [{"from": [{}]}]}, ["spec.ingress[0].from[0]: Required value: must specify a peer"]),
        (
            {"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}]},
            ["spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer"],
        ),
        (
            {"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}}]}]},
            [
                'spec.egress[0].to[0].ipBlock.except[0]: Invalid value: "192.168.0.0/16": '
                "must be a strict subset of `cidr`"
            ],
        ),
        (
            {"ingress": [{"ports": [{"protocol": "ICMP", "port": 80}]}]},
            [
                'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": '
                'supported values: "TCP", "UDP", "SCTP"'
            ],
        ),
        (
            {"ingress": [{"ports": [{"port": 100, "endPort": 90}]}]},
            ["spec.ingress[0].ports[0].endPort: Invalid value: 100: must be greater than or equal to `port`"],
        ),
        (
            {"ingress": [{"ports": [{"port": "http", "endPort": 90}]}]},
            [
                "spec.ingress[0].ports[0].endPort: Invalid value: 90: "
                "may not be specified when `port` is non-numeric"
            ],
        ),
        (
            {"policyTypes": ["Ingress", "Sideways"]},
            ['spec.policyTypes[1]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"'],
        ),
    ],
)
def test_network_policy_validation(spec: dict[str, Any], messages: list[str]) -> None:
    assert create(POLICIES, policy(**spec))[1] == messages
