"""Services, Endpoints, EndpointSlices: ``SetDefaults_Service`` (``pkg/apis/core/v1/defaults_test.go``),
``TestValidateService``/``TestValidateServiceUpdate`` (``pkg/apis/core/validation/validation_test.go``),
the allocation rules of ``pkg/registry/core/service/storage`` and ``pkg/apis/discovery/validation``."""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

from controlplane.api.strategies import EndpointSliceStrategy, EndpointsStrategy, ServiceStrategy
from controlplane.api.strategies.services import ServiceIPRange
from tests.controlplane.api.strategies import create, stored, update

SERVICES = ServiceStrategy()


def service(name: str = "web", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


def errors_of(**spec: Any) -> list[str]:
    return create(SERVICES, service(**spec))[1]


def test_cluster_ip_service_defaults_and_allocation() -> None:
    obj = stored(
        SERVICES, service(ports=[{"name": "a", "port": 80, "targetPort": "http"}, {"name": "b", "port": 81}])
    )
    spec = obj["spec"]
    assert spec["type"] == "ClusterIP" and spec["sessionAffinity"] == "None"
    assert spec["internalTrafficPolicy"] == "Cluster" and "externalTrafficPolicy" not in spec
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["ports"] == [
        {"name": "a", "port": 80, "targetPort": "http", "protocol": "TCP"},
        {"name": "b", "port": 81, "protocol": "TCP", "targetPort": 81},
    ]
    ip = ipaddress.ip_address(spec["clusterIP"])
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert ip in ipaddress.ip_network("10.96.0.0/12")
    assert int(ip) - int(ipaddress.ip_address("10.96.0.0")) > 256  # the low band is left to static IPs
    assert obj["status"] == {"loadBalancer": {}}


def test_allocation_is_deterministic_per_name_and_attempt() -> None:
    first = stored(SERVICES, service("a"))["spec"]["clusterIP"]
    assert stored(SERVICES, service("a"))["spec"]["clusterIP"] == first
    assert stored(SERVICES, service("b"))["spec"]["clusterIP"] != first
    ips = ServiceIPRange()
    assert ips.candidate("default/a", 0) == first and ips.candidate("default/a", 1) != first


def test_a_requested_cluster_ip_is_kept_or_refused_outside_the_range() -> None:
    assert stored(SERVICES, service(clusterIP="10.96.0.10"))["spec"]["clusterIPs"] == ["10.96.0.10"]
    assert errors_of(clusterIP="10.0.0.10") == [
        'spec.clusterIPs: Invalid value: ["10.0.0.10"]: failed to allocate IP 10.0.0.10: '
        "the provided network does not match the current range"
    ]
    assert errors_of(clusterIP="fd00::1") == [
        'spec.clusterIPs[0]: Invalid value: ["fd00::1"]: IPv6 is not configured on this cluster'
    ]
    assert errors_of(ipFamilyPolicy="RequireDualStack") == [
        'spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for '
        "dual-stack services"
    ]


def test_headless_services_get_no_ip() -> None:
    spec = stored(SERVICES, service(clusterIP="None"))["spec"]
    assert spec["clusterIPs"] == ["None"] and spec["ipFamilies"] == ["IPv4"]
    # Headless without a selector defaults to dual-stack families even on a single-stack cluster.
    selectorless = stored(SERVICES, service(clusterIP="None", selector=None))["spec"]
    assert selectorless["ipFamilyPolicy"] == "RequireDualStack" and selectorless["ipFamilies"] == [
        "IPv4",
        "IPv6",
    ]


def test_node_ports_are_allocated_in_range_and_shared_across_protocols() -> None:
    ports = [
        {"name": "dns", "port": 53, "protocol": "UDP"},
        {"name": "dns-tcp", "port": 53},
        {"name": "x", "port": 80, "nodePort": 30080},
    ]
    spec = stored(SERVICES, service(type="NodePort", ports=ports))["spec"]
    allocated = [p["nodePort"] for p in spec["ports"]]
    assert allocated[0] == allocated[1] and 30000 <= allocated[0] <= 32767
    assert allocated[2] == 30080
    assert spec["externalTrafficPolicy"] == "Cluster"
    assert errors_of(type="NodePort", ports=[{"port": 80, "nodePort": 80}]) == [
        "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. "
        "The range of valid ports is 30000-32767"
    ]


def test_ports_rules() -> None:
    assert errors_of(ports=[]) == ["spec.ports: Required value"]
    assert errors_of(ports=[{"port": 80}, {"port": 443}]) == [
        "spec.ports[0].name: Required value",
        "spec.ports[1].name: Required value",
    ]
    assert errors_of(
        ports=[{"name": "a", "port": 80}, {"name": "a", "port": 80}, {"name": "c", "port": 0}]
    ) == [
        'spec.ports[1].name: Duplicate value: "a"',
        "spec.ports[2].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        # targetPort was defaulted to the port:
        "spec.ports[2].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive",
        'spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,'
        '"TargetPort":0,"NodePort":0}',
    ]
    assert errors_of(ports=[{"port": 80, "nodePort": 30080}]) == [
        "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
    ]
    assert errors_of(ports=[{"port": 80, "targetPort": "HTTP"}])[0].startswith(
        'spec.ports[0].targetPort: Invalid value: "HTTP": must contain only alpha-numeric characters'
    )


def test_service_names_are_dns_1035_labels() -> None:
    assert create(SERVICES, service("1web"))[1] == [
        'metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric '
        "characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. "
        "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    ]


def test_selector_and_session_affinity() -> None:
    assert errors_of(selector={"app": "a b"})[0].startswith(
        'spec.selector: Invalid value: "a b": a valid label'
    )
    assert errors_of(type="Bogus") == [
        'spec.type: Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName", '
        '"LoadBalancer", "NodePort"'
    ]
    spec = stored(SERVICES, service(sessionAffinity="ClientIP"))["spec"]
    assert spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


def test_external_name_services() -> None:
    spec = stored(
        SERVICES, service(type="ExternalName", externalName="db.example.com.", selector=None, ports=[])
    )["spec"]
    assert "clusterIP" not in spec and "ipFamilies" not in spec and "internalTrafficPolicy" not in spec
    assert errors_of(type="ExternalName", ports=[]) == ["spec.externalName: Required value"]


def test_the_cluster_ip_may_not_change_but_may_be_left_out() -> None:
    old = stored(SERVICES, service())
    moved = copy.deepcopy(old)
    moved["spec"]["clusterIP"] = "10.96.0.99"
    assert update(SERVICES, moved, old)[1] == [
        'spec.clusterIPs[0]: Invalid value: ["10.96.0.99"]: may not change once set'
    ]
    replaced = service()  # kubectl replace with the original manifest: no clusterIP in it
    result, messages = update(SERVICES, replaced, old)
    assert messages == [] and result["spec"]["clusterIPs"] == old["spec"]["clusterIPs"]


def test_changing_type_allocates_and_releases_node_ports() -> None:
    old = stored(SERVICES, service())
    to_node_port = copy.deepcopy(old)
    to_node_port["spec"]["type"] = "NodePort"
    result, messages = update(SERVICES, to_node_port, old)
    assert messages == [] and 30000 <= result["spec"]["ports"][0]["nodePort"] <= 32767
    assert result["spec"]["externalTrafficPolicy"] == "Cluster"
    back = copy.deepcopy(result)
    back["spec"]["type"] = "ClusterIP"
    again, messages = update(SERVICES, back, result)
    assert messages == [] and "nodePort" not in again["spec"]["ports"][0]
    assert "externalTrafficPolicy" not in again["spec"]


def test_claims_and_the_retry_protocol() -> None:
    request = service(type="NodePort", ports=[{"port": 80}], clusterIP="10.96.0.10")
    obj = stored(SERVICES, request)
    claims = SERVICES.claims(obj)
    node_port = obj["spec"]["ports"][0]["nodePort"]
    assert [c.key for c in claims] == [
        "/registry/ipaddresses/10.96.0.10",
        f"/registry/ranges/servicenodeports/{node_port}",
    ]
    assert claims[0].requested_in(request) and not claims[1].requested_in(request)
    assert claims[0].conflict().message() == (
        'spec.clusterIPs: Invalid value: ["10.96.0.10"]: failed to allocate IP 10.96.0.10: '
        "provided IP is already allocated"
    )
    assert (
        claims[1].conflict().message()
        == f"spec.ports[0].nodePort: Invalid value: {node_port}: provided port is already allocated"
    )
    SERVICES.reallocate(obj, request, attempt=1)
    assert obj["spec"]["clusterIP"] == "10.96.0.10"  # the client's choice stays
    assert obj["spec"]["ports"][0]["nodePort"] != node_port  # the strategy's choice moves


def test_endpoints() -> None:
    strategy = EndpointsStrategy()
    body = {
        "metadata": {"name": "web"},
        "subsets": [
            {"addresses": [{"ip": "10.244.0.5"}], "ports": [{"port": 80}]},
            {
                "addresses": [{"ip": "127.0.0.1"}, {"ip": "bad"}],
                "ports": [{"port": 80}, {"name": "b", "port": 81}],
            },
            {"ports": [{"name": "a", "port": 80}]},
        ],
    }
    obj, messages = create(strategy, body)
    assert obj["subsets"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]
    assert messages == [
        'subsets[1].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range '
        "(127.0.0.0/8, ::1/128)",
        'subsets[1].addresses[1].ip: Invalid value: "bad": must be a valid IP address, (e.g. 10.9.8.7 or '
        "2001:db8::ffff)",
        'subsets[1].addresses[1].ip: Invalid value: "bad": must be a valid IP address',
        "subsets[1].ports[0].name: Required value",
        "subsets[2]: Required value: must specify `addresses` or `notReadyAddresses`",
    ]


def test_endpoint_slices() -> None:
    strategy = EndpointSliceStrategy()
    body = {
        "metadata": {"name": "web-abc"},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.0.5"]}, {"addresses": []}, {"addresses": ["fd00::1"]}],
        "ports": [{"port": 80}],
    }
    obj, messages = create(strategy, body)
    assert obj["ports"] == [{"port": 80, "name": "", "protocol": "TCP"}]
    assert messages == [
        "endpoints[1].addresses: Required value: must contain at least 1 address",
        'endpoints[2].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address',
    ]
    assert create(strategy, dict(body, addressType="IPv5", endpoints=[]))[1] == [
        'addressType: Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6"'
    ]
    old = stored(strategy, dict(body, endpoints=[]))
    assert update(strategy, dict(old, addressType="IPv6"), old)[1] == [
        'addressType: Invalid value: "IPv6": field is immutable'
    ]
