"""kube-proxy's rule table: for every Service address, the endpoints traffic to it may go to.

A Service's ``clusterIP`` belongs to no machine. What makes ``10.96.0.12:80`` reach a pod is a rule
that kube-proxy writes on **every node**: "a packet to 10.96.0.12:80/TCP goes to one of 10.244.1.5:8080,
10.244.2.7:8080, chosen at random". In iptables mode that is a ``KUBE-SVC-...`` chain of ``KUBE-SEP-...``
jumps; in IPVS mode a virtual server; in nftables mode a map. This module computes the same table
without touching a kernel: one ``Rule`` per Service address and port, with its endpoints.

Which addresses get a rule (``pkg/proxy/servicechangetracker.go``, ``serviceport.go``):

- the ``clusterIP`` (and every ``clusterIPs``) with each Service port; headless Services
  (``clusterIP: None``) and ``ExternalName`` Services get none: they are DNS only;
- ``type: NodePort`` (and ``LoadBalancer``): each ``nodePort``, on every address of the node;
- ``externalIPs`` and the load balancer's ``status.loadBalancer.ingress[].ip``.

Which endpoints a rule sends to (``pkg/proxy/topology.go`` ``CategorizeEndpoints``): the endpoints of
the Service's EndpointSlices (label ``kubernetes.io/service-name``) whose slice port has the Service
port's name and protocol, that are ``ready``; if none is ready, those ``serving`` and ``terminating``
(so that connections still drain while a rollout replaces every pod). With ``internalTrafficPolicy:
Local`` (cluster IP) or ``externalTrafficPolicy: Local`` (node port, external and load balancer IPs)
only endpoints on this node count. A rule without endpoints *rejects* (iptables ``REJECT``: the client
gets "connection refused" at once rather than a timeout).

The table is pure data, computed from Services and EndpointSlices; ``proxier.py`` keeps it up to date.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

from controlplane.api.meta import Object, object_meta

LABEL_SERVICE_NAME: Final = "kubernetes.io/service-name"
LABEL_SERVICE_PROXY_NAME: Final = "service.kubernetes.io/service-proxy-name"
LABEL_HEADLESS: Final = "service.kubernetes.io/headless"

CLUSTER_IP: Final = "ClusterIP"
NODE_PORT: Final = "NodePort"
EXTERNAL_IP: Final = "ExternalIP"
LOAD_BALANCER: Final = "LoadBalancer"
#: The ``ip`` of a node port rule: any address of this node (iptables ``--dst-type LOCAL``).
ANY_NODE_ADDRESS: Final = "*"


@dataclass(frozen=True, order=True)
class Endpoint:
    """One backend of a Service port: where the packet is sent (``BaseEndpointInfo``)."""

    ip: str
    port: int
    node_name: str = ""
    ready: bool = True
    serving: bool = True
    terminating: bool = False

    def is_local(self, node_name: str) -> bool:
        return bool(self.node_name) and self.node_name == node_name

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"


@dataclass(frozen=True, order=True)
class Rule:
    """Traffic to ``ip:port/protocol`` goes to one of ``endpoints`` (or is rejected if none)."""

    ip: str
    port: int
    protocol: str
    kind: str
    #: ``namespace/name:portname`` (upstream's ``ServicePortName``).
    service: str
    endpoints: tuple[Endpoint, ...] = ()

    @property
    def destination(self) -> str:
        return f"{self.ip}:{self.port}/{self.protocol}"

    @property
    def action(self) -> str:
        return "DNAT" if self.endpoints else "REJECT"

    def to_dict(self) -> Object:
        """JSON-able, for the trace and the topology diagram."""
        data = asdict(self)
        data["endpoints"] = [e.address for e in self.endpoints]
        data["action"] = self.action
        return data


@dataclass(frozen=True)
class RuleTable:
    """Every rule of one node, sorted; ``lookup`` answers "where would this packet go?"."""

    node_name: str
    rules: tuple[Rule, ...] = ()

    def __len__(self) -> int:
        return len(self.rules)

    def lookup(self, ip: str, port: int, protocol: str = "TCP") -> Rule | None:
        """The rule a packet to ``ip:port/protocol`` hits; a node port matches any (node) address."""
        exact = [r for r in self.rules if (r.ip, r.port, r.protocol) == (ip, port, protocol)]
        if exact:
            return exact[0]
        node_ports = [
            r for r in self.rules if r.kind == NODE_PORT and (r.port, r.protocol) == (port, protocol)
        ]
        return node_ports[0] if node_ports else None

    def for_service(self, namespace: str, name: str) -> list[Rule]:
        prefix = f"{namespace}/{name}:"
        return [r for r in self.rules if r.service.startswith(prefix)]

    def to_dict(self) -> Object:
        return {"node": self.node_name, "rules": [r.to_dict() for r in self.rules]}


def service_is_proxied(service: Mapping[str, Any]) -> bool:
    """Services kube-proxy programs: not ExternalName, not headless, not for another proxy."""
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return False
    if not spec.get("clusterIP") or spec.get("clusterIP") == "None":
        return False
    return LABEL_SERVICE_PROXY_NAME not in (object_meta(service).get("labels") or {})


def slice_endpoints(slices: Iterable[Mapping[str, Any]], port_name: str, protocol: str) -> list[Endpoint]:
    """The endpoints of a Service's slices for one Service port (matched by name and protocol)."""
    found: dict[tuple[str, int], Endpoint] = {}
    for slice_ in slices:
        if slice_.get("addressType", "IPv4") != "IPv4":
            continue
        port_number = next(
            (
                p.get("port")
                for p in slice_.get("ports") or []
                if (p.get("name") or "") == port_name and (p.get("protocol") or "TCP") == protocol
            ),
            None,
        )
        if port_number is None:
            continue
        for endpoint in slice_.get("endpoints") or []:
            conditions = endpoint.get("conditions") or {}
            ready = conditions.get("ready") is not False  # nil means ready
            serving = conditions.get("serving", ready) is not False
            terminating = bool(conditions.get("terminating", False))
            for ip in (endpoint.get("addresses") or [])[:1]:  # kube-proxy uses the first address
                found.setdefault(
                    (str(ip), int(port_number)),
                    Endpoint(
                        str(ip),
                        int(port_number),
                        str(endpoint.get("nodeName") or ""),
                        ready,
                        serving,
                        terminating,
                    ),
                )
    return sorted(found.values())


def usable_endpoints(
    endpoints: Iterable[Endpoint], *, local_only: bool, node_name: str
) -> tuple[Endpoint, ...]:
    """Ready endpoints, else serving-and-terminating ones; only this node's with a Local policy."""
    candidates = [e for e in endpoints if not local_only or e.is_local(node_name)]
    ready = [e for e in candidates if e.ready]
    if ready:
        return tuple(ready)
    return tuple(e for e in candidates if e.serving and e.terminating)


def build_rule_table(
    services: Iterable[Mapping[str, Any]], slices: Iterable[Mapping[str, Any]], node_name: str
) -> RuleTable:
    """The rule table of ``node_name`` for these Services and EndpointSlices."""
    slices_by_service: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for slice_ in slices:
        labels = object_meta(slice_).get("labels") or {}
        service_name = labels.get(LABEL_SERVICE_NAME)
        if not service_name or LABEL_HEADLESS in labels:
            continue
        key = (str(object_meta(slice_).get("namespace") or ""), str(service_name))
        slices_by_service.setdefault(key, []).append(slice_)

    rules: list[Rule] = []
    for service in services:
        if not service_is_proxied(service):
            continue
        meta, spec = object_meta(service), service.get("spec") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        service_slices = slices_by_service.get((namespace, name), [])
        cluster_ips = [ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and ip != "None"]
        external_ips = list(spec.get("externalIPs") or [])
        ingress = (service.get("status") or {}).get("loadBalancer", {}).get("ingress") or []
        lb_ips = [i["ip"] for i in ingress if i.get("ip")] if spec.get("type") == "LoadBalancer" else []
        internal_local = spec.get("internalTrafficPolicy") == "Local"
        external_local = spec.get("externalTrafficPolicy") == "Local"
        for port in spec.get("ports") or []:
            port_name = str(port.get("name") or "")
            protocol = str(port.get("protocol") or "TCP")
            service_port = f"{namespace}/{name}:{port_name}"
            all_endpoints = slice_endpoints(service_slices, port_name, protocol)
            internal = usable_endpoints(all_endpoints, local_only=internal_local, node_name=node_name)
            external = usable_endpoints(all_endpoints, local_only=external_local, node_name=node_name)
            for ip in cluster_ips:
                rules.append(Rule(ip, int(port["port"]), protocol, CLUSTER_IP, service_port, internal))
            if spec.get("type") in ("NodePort", "LoadBalancer") and port.get("nodePort"):
                rules.append(
                    Rule(ANY_NODE_ADDRESS, int(port["nodePort"]), protocol, NODE_PORT, service_port, external)
                )
            for ip in external_ips:
                rules.append(Rule(ip, int(port["port"]), protocol, EXTERNAL_IP, service_port, external))
            for ip in lb_ips:
                rules.append(Rule(ip, int(port["port"]), protocol, LOAD_BALANCER, service_port, external))
    return RuleTable(
        node_name, tuple(sorted(rules, key=lambda r: (r.service, r.kind, r.ip, r.port, r.protocol)))
    )


__all__ = [
    "ANY_NODE_ADDRESS",
    "CLUSTER_IP",
    "EXTERNAL_IP",
    "LOAD_BALANCER",
    "NODE_PORT",
    "Endpoint",
    "Rule",
    "RuleTable",
    "build_rule_table",
    "service_is_proxied",
    "slice_endpoints",
    "usable_endpoints",
]
