"""Services, Endpoints and EndpointSlices: a stable address in front of pods that come and go.

Pods are replaced all the time and every new pod gets a new IP. A **Service** gives clients one name
(``web.default.svc``) and one virtual IP, its ``clusterIP``, that never changes while the Service
exists; kube-proxy sends the traffic on to whichever pods the ``selector`` currently matches. The
endpoints controller writes those pods' addresses into **EndpointSlices** (and the legacy
**Endpoints**) so kube-proxy and DNS know where to send it.

What the API server does (``pkg/apis/core/v1/defaults.go`` ``SetDefaults_Service``,
``pkg/registry/core/service``):

- **defaults** ``type: ClusterIP``, ``sessionAffinity: None``, port ``protocol: TCP``, ``targetPort``
  equal to ``port``, ``internalTrafficPolicy: Cluster``, and for NodePort/LoadBalancer
  ``externalTrafficPolicy: Cluster``;
- **allocates** the cluster IP from the service CIDR (10.96.0.0/12 here, as kubeadm's default) and,
  for ``type: NodePort``, a node port from 30000-32767 for every port that has none, and fills in
  ``ipFamilies: [IPv4]`` and ``ipFamilyPolicy: SingleStack`` (this lab's clusters are IPv4-only);
- **keeps** the cluster IP for the Service's lifetime: an update may not change it
  (``spec.clusterIPs[0]: Invalid value: ...: may not change once set``), and a client that leaves it
  out of an update (``kubectl replace``) gets the allocated one back rather than an error;
- **validates** ports (a name is required as soon as there is more than one, names and
  protocol/port pairs are unique), the selector's labels and the type-specific fields.

**Allocation without I/O.** Upstream allocates from bitmaps and IPAddress objects kept in etcd. A
strategy here cannot read the store, so allocation is a *deterministic proposal the registry can
retry*: ``prepare_for_create`` fills every unset cluster IP and node port with a value derived from the
Service's namespace/name and an attempt number (0). ``ServiceStrategy.claims(obj)`` lists what the
object holds, each as a store key (``/registry/ipaddresses/<ip>``, ``/registry/ranges/servicenodeports/
<port>``). The registry writes the Service together with those keys, each guarded by
"must not exist"; if one exists, it asks ``claim.requested_in(request)`` whether the client chose that
value (then answer ``claim.conflict()``, upstream's 422 "provided IP is already allocated") or the
strategy did (then ``strategy.reallocate(obj, request, attempt + 1)`` and try again). On delete, or
when an update drops a claim, the registry deletes the keys that are no longer claimed.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    FIELD_IMMUTABLE,
    CoreKindStrategy,
    as_dict,
    as_list,
    as_str,
    child,
    dns_label,
    dns_subdomain,
    duplicate_go,
    go_json,
    go_pointer,
    go_string_slice,
    index,
    invalid_go,
    is_dns1035_label,
    is_int,
    is_valid_port_num,
    label_name,
    spec_of,
    supported,
    too_many,
    valid_ip,
    validate_port_num_or_name,
)
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    is_qualified_name,
    not_supported,
    required,
    validate_labels,
    validate_object_meta_update,
)

SERVICE_CIDR: Final = "10.96.0.0/12"
NODE_PORT_RANGE: Final = (30000, 32767)
PROTOCOLS: Final = ["SCTP", "TCP", "UDP"]
SERVICE_TYPES: Final = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
SESSION_AFFINITIES: Final = ["ClientIP", "None"]
TRAFFIC_POLICIES: Final = ["Cluster", "Local"]
IP_FAMILIES: Final = ["IPv4", "IPv6"]
IP_FAMILY_POLICIES: Final = ["PreferDualStack", "RequireDualStack", "SingleStack"]
TRAFFIC_DISTRIBUTIONS: Final = ["PreferClose", "PreferSameNode", "PreferSameZone"]
DEFAULT_CLIENT_IP_TIMEOUT: Final = 10800
MAX_CLIENT_IP_TIMEOUT: Final = 86400
#: The families this lab's clusters serve (upstream: one allocator per --service-cluster-ip-range).
CONFIGURED_FAMILIES: Final = ("IPv4",)

# -- IP and port allocation (pure) -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServiceIPRange:
    """A service CIDR and the deterministic choice of a free-looking address in it.

    Addresses exclude the network and broadcast addresses. The low band (the first
    ``min(max(16, size/16), 256)`` addresses, KEP-3070) is left to clients that ask for a specific IP
    (the ``kubernetes`` Service takes the first, DNS conventionally the tenth); dynamic choices come
    from above it, as upstream's allocator prefers.
    """

    cidr: str = SERVICE_CIDR

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(self.cidr)

    def contains(self, ip: str) -> bool:
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            return False
        network = self.network
        return address in network and address not in (network.network_address, network.broadcast_address)

    def _offset(self) -> int:
        size = self.network.num_addresses
        if size <= 16:
            return 0
        return min(max(16, size // 16), 256)

    def candidate(self, seed: str, attempt: int) -> str:
        network = self.network
        usable = network.num_addresses - 2
        offset = self._offset()
        span = max(usable - offset, 1)
        pick = _hash(f"{seed}#{attempt}") % span
        return str(network.network_address + 1 + offset + pick)


@dataclass(frozen=True, slots=True)
class NodePortRange:
    """The node port range and a deterministic choice in its upper (dynamic) band (KEP-3668)."""

    low: int = NODE_PORT_RANGE[0]
    high: int = NODE_PORT_RANGE[1]

    def contains(self, port: int) -> bool:
        return self.low <= port <= self.high

    def text(self) -> str:
        return f"{self.low}-{self.high}"

    def candidate(self, seed: str, attempt: int) -> int:
        size = self.high - self.low + 1
        offset = min(max(16, size // 32), 128) if size > 16 else 0
        return self.low + offset + _hash(f"{seed}#{attempt}") % max(size - offset, 1)


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


@dataclass(frozen=True, slots=True)
class Claim:
    """One allocated value a Service holds, and the store key that marks it taken."""

    key: str
    field: str
    value: str | int

    def requested_in(self, request: Mapping[str, Any]) -> bool:
        """Whether the client's request named this exact value (then a conflict is the client's error)."""
        spec = as_dict(request.get("spec"))
        if isinstance(self.value, str):
            return self.value in (spec.get("clusterIP"), *as_list(spec.get("clusterIPs")))
        if self.field == "spec.healthCheckNodePort":
            return spec.get("healthCheckNodePort") == self.value
        return any(as_dict(p).get("nodePort") == self.value for p in as_list(spec.get("ports")))

    def conflict(self) -> FieldError:
        """Upstream's answer when the value is taken (``ipallocator``/``portallocator`` ErrAllocated)."""
        if isinstance(self.value, str):
            return invalid_go(
                "spec.clusterIPs",
                go_string_slice([self.value]),
                f"failed to allocate IP {self.value}: provided IP is already allocated",
            )
        return invalid(self.field, self.value, "provided port is already allocated")


def needs_cluster_ip(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") != "ExternalName"


def needs_node_port(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _externally_accessible(spec: Mapping[str, Any]) -> bool:
    return needs_node_port(spec) or (
        spec.get("type") == "ClusterIP" and bool(as_list(spec.get("externalIPs")))
    )


def _needs_health_check(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _is_headless(spec: Mapping[str, Any]) -> bool:
    ips = as_list(spec.get("clusterIPs"))
    return len(ips) == 1 and ips[0] == "None"


# -- ClusterIP / ClusterIPs bookkeeping (pkg/registry/core/service/strategy.go) -------------------


def normalize_cluster_ips(spec: dict[str, Any], old: Mapping[str, Any] | None) -> None:
    """``NormalizeClusterIPs``: keep the singular ``clusterIP`` and the plural ``clusterIPs`` in step."""
    cluster_ip = as_str(spec.get("clusterIP"))
    ips = as_list(spec.get("clusterIPs"))
    if old is None:
        if cluster_ip and not ips:
            spec["clusterIPs"] = [cluster_ip]
        return
    old_ip = as_str(old.get("clusterIP"))
    old_ips = as_list(old.get("clusterIPs"))
    if old_ips and not ips and old_ip == cluster_ip:
        spec["clusterIPs"] = ips = list(old_ips)
    if old_ip != cluster_ip:
        if old_ip and not cluster_ip:
            if ips == old_ips:
                spec.pop("clusterIPs", None)
        elif ips == old_ips:
            spec["clusterIPs"] = [cluster_ip]


def patch_allocated_values(spec: dict[str, Any], old: Mapping[str, Any]) -> None:
    """``patchAllocatedValues``: an update that leaves out allocated values keeps the old ones."""
    if needs_cluster_ip(old) and needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old.get("clusterIP"):
            spec["clusterIP"] = old["clusterIP"]
        if not as_list(spec.get("clusterIPs")) and as_list(old.get("clusterIPs")):
            spec["clusterIPs"] = list(old["clusterIPs"])
    if needs_node_port(old) and needs_node_port(spec):
        old_used = {p.get("nodePort") for p in map(as_dict, as_list(old.get("ports"))) if p.get("nodePort")}
        new_used = {p.get("nodePort") for p in map(as_dict, as_list(spec.get("ports"))) if p.get("nodePort")}
        used = old_used & new_used
        by_name = {as_str(p.get("name")): p.get("nodePort") for p in map(as_dict, as_list(old.get("ports")))}
        for port in as_list(spec.get("ports")):
            if isinstance(port, dict) and not port.get("nodePort"):
                value = by_name.get(as_str(port.get("name")))
                if value and value not in used:
                    port["nodePort"] = value
    both_need_health_check = _needs_health_check(old) and _needs_health_check(spec)
    if both_need_health_check and not spec.get("healthCheckNodePort") and old.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = old["healthCheckNodePort"]


def drop_type_dependent_fields(spec: dict[str, Any], old: Mapping[str, Any]) -> None:
    """``dropTypeDependentFields``: switching type wipes what the old type had allocated."""
    if needs_cluster_ip(old) and not needs_cluster_ip(spec):
        if spec.get("clusterIP") == old.get("clusterIP") and as_list(spec.get("clusterIPs")) == as_list(
            old.get("clusterIPs")
        ):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if as_list(spec.get("ipFamilies")) == as_list(old.get("ipFamilies")):
            spec.pop("ipFamilies", None)
        if spec.get("ipFamilyPolicy") == old.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    if needs_node_port(old) and not needs_node_port(spec):
        old_ports = [as_dict(p).get("nodePort") for p in as_list(old.get("ports"))]
        new_ports = [as_dict(p).get("nodePort") for p in as_list(spec.get("ports"))]
        if old_ports == new_ports:
            for port in as_list(spec.get("ports")):
                if isinstance(port, dict):
                    port.pop("nodePort", None)
    same_health_check = spec.get("healthCheckNodePort") == old.get("healthCheckNodePort")
    if _needs_health_check(old) and not _needs_health_check(spec) and same_health_check:
        spec.pop("healthCheckNodePort", None)
    same_policy = spec.get("externalTrafficPolicy") == old.get("externalTrafficPolicy")
    if _externally_accessible(old) and not _externally_accessible(spec) and same_policy:
        spec.pop("externalTrafficPolicy", None)


def init_ip_family_fields(spec: dict[str, Any], old: Mapping[str, Any] | None) -> None:
    """The defaulting half of ``initIPFamilyFields`` (``pkg/registry/core/service/storage/alloc.go``).

    Errors it would raise are reported by ``allocation_errors``.
    """
    if spec.get("type") == "ExternalName":
        return
    headless_selectorless = spec.get("clusterIP") == "None" and not as_dict(spec.get("selector"))
    if spec.get("ipFamilyPolicy") is None:
        if old is not None and old.get("ipFamilyPolicy") is not None:
            spec["ipFamilyPolicy"] = old["ipFamilyPolicy"]
        elif headless_selectorless:
            spec["ipFamilyPolicy"] = "RequireDualStack"
        else:
            spec["ipFamilyPolicy"] = "SingleStack"
    families = as_list(spec.get("ipFamilies"))
    for i, ip in enumerate(as_list(spec.get("clusterIPs"))):
        if ip == "None":
            break
        if i >= len(families) and isinstance(ip, str) and valid_ip(ip, "") == []:
            family = "IPv6" if ":" in ip else "IPv4"
            if family not in CONFIGURED_FAMILIES:
                return  # upstream stops here with "<family> is not configured on this cluster"
            families.append(family)
    if headless_selectorless:
        if not families:
            families = [CONFIGURED_FAMILIES[0]]
        if len(families) < 2 and spec.get("ipFamilyPolicy") != "SingleStack":
            families.append("IPv6" if families[0] == "IPv4" else "IPv4")
    elif not families:
        families = [CONFIGURED_FAMILIES[0]]
    spec["ipFamilies"] = families


def allocate(
    spec: dict[str, Any], *, seed: str, attempt: int, ips: ServiceIPRange, ports: NodePortRange
) -> None:
    """Fill every unset cluster IP and node port with the deterministic choice for ``attempt``."""
    if needs_cluster_ip(spec) and not _is_headless(spec):
        cluster_ips = list(as_list(spec.get("clusterIPs")))
        if not cluster_ips or not cluster_ips[0]:
            chosen = ips.candidate(seed, attempt)
            spec["clusterIP"] = chosen
            spec["clusterIPs"] = [chosen, *cluster_ips[1:]]
    if needs_node_port(spec):
        allocate_lb = (
            spec.get("type") != "LoadBalancer" or spec.get("allocateLoadBalancerNodePorts") is not False
        )
        by_port: dict[Any, int] = {}
        taken = {p.get("nodePort") for p in map(as_dict, as_list(spec.get("ports"))) if p.get("nodePort")}
        for i, port in enumerate(as_list(spec.get("ports"))):
            if not isinstance(port, dict):
                continue
            if port.get("nodePort"):
                by_port.setdefault(port.get("port"), port["nodePort"])
                continue
            if not allocate_lb:
                continue
            if port.get("port") in by_port:  # TCP and UDP on the same port share one node port
                port["nodePort"] = by_port[port.get("port")]
                continue
            step = 0
            choice = ports.candidate(f"{seed}/ports/{i}", attempt)
            while choice in taken:
                step += 1
                choice = ports.candidate(f"{seed}/ports/{i}/{step}", attempt)
            port["nodePort"] = choice
            taken.add(choice)
            by_port[port.get("port")] = choice
    if _needs_health_check(spec) and not spec.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = ports.candidate(f"{seed}/health", attempt)


def service_claims(spec: Mapping[str, Any]) -> list[Claim]:
    """The allocated values a Service spec holds, with their store keys."""
    claims: list[Claim] = []
    if needs_cluster_ip(spec) and not _is_headless(spec):
        for ip in as_list(spec.get("clusterIPs")):
            if isinstance(ip, str) and ip:
                claims.append(Claim(f"/registry/ipaddresses/{ip}", "spec.clusterIPs", ip))
    seen: set[int] = set()
    for i, port in enumerate(as_list(spec.get("ports"))):
        node_port = as_dict(port).get("nodePort")
        if is_int(node_port) and node_port and node_port not in seen:
            seen.add(node_port)
            claims.append(
                Claim(
                    f"/registry/ranges/servicenodeports/{node_port}", f"spec.ports[{i}].nodePort", node_port
                )
            )
    health = spec.get("healthCheckNodePort")
    if is_int(health) and health and health not in seen:
        claims.append(
            Claim(f"/registry/ranges/servicenodeports/{health}", "spec.healthCheckNodePort", health)
        )
    return claims


def allocation_errors(
    spec: Mapping[str, Any], *, ips: ServiceIPRange, ports: NodePortRange
) -> list[FieldError]:
    """What ``allocateCreate``/``allocateUpdate`` refuse (before validation runs, upstream stops here)."""
    if spec.get("type") == "ExternalName":
        return []
    errors = validate_cluster_ips_related_fields(spec)
    if errors:
        return errors
    policy = spec.get("ipFamilyPolicy")
    families = as_list(spec.get("ipFamilies"))
    cluster_ips = as_list(spec.get("clusterIPs"))
    if policy == "SingleStack":
        if len(cluster_ips) == 2:
            errors.append(
                invalid(
                    "spec.ipFamilyPolicy",
                    policy,
                    "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
                )
            )
        if len(families) == 2:
            errors.append(
                invalid(
                    "spec.ipFamilyPolicy",
                    policy,
                    "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
                )
            )
    for i, ip in enumerate(cluster_ips):
        if ip == "None":
            break
        family = "IPv6" if ":" in as_str(ip) else "IPv4"
        if family not in CONFIGURED_FAMILIES:
            errors.append(
                invalid_go(
                    index("spec.clusterIPs", i),
                    go_string_slice(cluster_ips),
                    f"{family} is not configured on this cluster",
                )
            )
    if errors:
        return errors
    headless_selectorless = spec.get("clusterIP") == "None" and not as_dict(spec.get("selector"))
    if not headless_selectorless:
        if policy == "RequireDualStack" and len(CONFIGURED_FAMILIES) < 2:
            errors.append(
                invalid(
                    "spec.ipFamilyPolicy", policy, "this cluster is not configured for dual-stack services"
                )
            )
        for i, family in enumerate(families):
            if family not in CONFIGURED_FAMILIES:
                errors.append(invalid(index("spec.ipFamilies", i), family, "not configured on this cluster"))
    if errors:
        return errors
    if cluster_ips and cluster_ips[0] not in ("", "None") and not ips.contains(as_str(cluster_ips[0])):
        # MultiCIDRServiceAllocator (GA, the default allocator): no ServiceCIDR holds the address
        # (ipallocator.ErrMismatchedNetwork, wrapped by alloc.go's allocIPs).
        ip = as_str(cluster_ips[0])
        errors.append(
            invalid_go(
                "spec.clusterIPs",
                go_string_slice(cluster_ips),
                f"failed to allocate IP {ip}: the provided network does not match the current range",
            )
        )
    if needs_node_port(spec):
        for i, port in enumerate(as_list(spec.get("ports"))):
            node_port = as_dict(port).get("nodePort")
            if is_int(node_port) and node_port and not ports.contains(node_port):
                errors.append(
                    invalid(
                        f"spec.ports[{i}].nodePort",
                        node_port,
                        "provided port is not in the valid range. "
                        f"The range of valid ports is {ports.text()}",
                    )
                )
    return errors


# -- validation ------------------------------------------------------------------------------------


def validate_cluster_ips_related_fields(spec: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateServiceClusterIPsRelatedFields``: clusterIP vs clusterIPs, families, policy."""
    if spec.get("type") == "ExternalName":
        return []
    errors: list[FieldError] = []
    cluster_ip = as_str(spec.get("clusterIP"))
    cluster_ips = as_list(spec.get("clusterIPs"))
    if cluster_ip:
        if not cluster_ips:
            errors.append(required("spec.clusterIPs"))
        elif cluster_ips[0] != cluster_ip:
            errors.append(
                invalid_go(
                    "spec.clusterIPs", go_string_slice(cluster_ips), "first value must match `clusterIP`"
                )
            )
    elif cluster_ips:
        errors.append(
            invalid_go(
                "spec.clusterIPs",
                go_string_slice(cluster_ips),
                "must be empty when `clusterIP` is not specified",
            )
        )
    seen: set[Any] = set()
    for i, family in enumerate(as_list(spec.get("ipFamilies"))):
        if family not in IP_FAMILIES:
            errors.append(not_supported(index("spec.ipFamilies", i), family, IP_FAMILIES))
        if family in seen:
            errors.append(
                FieldError(
                    "Duplicate value", "FieldValueDuplicate", index("spec.ipFamilies", i), "", family, True
                )
            )
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        errors.append(not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    bad_ips = False
    for i, ip in enumerate(cluster_ips):
        if i == 0 and ip == "None":
            if len(cluster_ips) > 1:
                bad_ips = True
                errors.append(
                    invalid_go(
                        "spec.clusterIPs",
                        go_string_slice(cluster_ips),
                        "'None' must be the first and only value",
                    )
                )
            continue
        ip_errors = valid_ip(as_str(ip), index("spec.clusterIPs", i))
        bad_ips = bad_ips or bool(ip_errors)
        errors += ip_errors
    if len(cluster_ips) > 2:
        errors.append(
            invalid_go("spec.clusterIPs", go_string_slice(cluster_ips), "may only hold up to 2 values")
        )
    if bad_ips:
        return errors
    if len(cluster_ips) > 1:
        kinds = {":" in as_str(ip) for ip in cluster_ips}
        if len(kinds) != len(cluster_ips):
            errors.append(
                invalid_go(
                    "spec.clusterIPs",
                    go_string_slice(cluster_ips),
                    "may specify no more than one IP for each IP family",
                )
            )
    families = as_list(spec.get("ipFamilies"))
    if not _is_headless(spec):
        for i, ip in enumerate(cluster_ips[: len(families)]):
            v6 = ":" in as_str(ip)
            if families[i] == "IPv4" and v6:
                errors.append(
                    invalid(
                        index("spec.clusterIPs", i),
                        ip,
                        f"expected an IPv4 value as indicated by `ipFamilies[{i}]`",
                    )
                )
            if families[i] == "IPv6" and not v6:
                errors.append(
                    invalid(
                        index("spec.clusterIPs", i),
                        ip,
                        f"expected an IPv6 value as indicated by `ipFamilies[{i}]`",
                    )
                )
    return errors


def _go_service_port(protocol: Any, port: Any) -> str:
    """The internal ``core.ServicePort`` key of upstream's duplicate-port check, as JSON."""
    key = {
        "Name": "",
        "Protocol": as_str(protocol),
        "AppProtocol": None,
        "Port": port if is_int(port) else 0,
        "TargetPort": 0,
        "NodePort": 0,
    }
    return go_json(key)


def _validate_service_port(
    port: Mapping[str, Any], require_name: bool, names: set[str], path: str
) -> list[FieldError]:
    """``validateServicePort``."""
    errors: list[FieldError] = []
    name = as_str(port.get("name"))
    if require_name and not name:
        errors.append(required(child(path, "name")))
    elif name:
        errors += dns_label(name, child(path, "name"))
        if name in names:
            errors.append(
                FieldError("Duplicate value", "FieldValueDuplicate", child(path, "name"), "", name, True)
            )
        else:
            names.add(name)
    errors += [
        invalid(child(path, "port"), port.get("port") or 0, m) for m in is_valid_port_num(port.get("port"))
    ]
    errors += supported(port.get("protocol"), child(path, "protocol"), PROTOCOLS)
    errors += validate_port_num_or_name(port.get("targetPort"), child(path, "targetPort"))
    app_protocol = port.get("appProtocol")
    if app_protocol is not None:
        errors += [
            invalid(child(path, "appProtocol"), app_protocol, m)
            for m in is_qualified_name(as_str(app_protocol))
        ]
    return errors


def validate_service(obj: Object, meta_errors: list[FieldError]) -> list[FieldError]:
    """``ValidateService``, in upstream's order."""
    spec = as_dict(obj.get("spec"))
    errors = list(meta_errors)
    kind = spec.get("type")
    ports = as_list(spec.get("ports"))
    headless = _is_headless(spec)
    if not ports and not headless and kind != "ExternalName":
        errors.append(required("spec.ports"))
    cluster_ips = as_list(spec.get("clusterIPs"))
    if kind in ("LoadBalancer", "NodePort") and headless:
        errors.append(
            invalid("spec.clusterIPs[0]", cluster_ips[0], f"may not be set to 'None' for {kind} services")
        )
    elif kind == "ExternalName":
        if cluster_ips:
            errors.append(forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if as_list(spec.get("ipFamilies")):
            errors.append(forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errors.append(forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        cname = as_str(spec.get("externalName")).removesuffix(".")
        if cname:
            errors += dns_subdomain(cname, "spec.externalName")
        else:
            errors.append(required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        errors += _validate_service_port(as_dict(port), len(ports) > 1, names, index("spec.ports", i))
    if spec.get("selector") is not None:
        errors += validate_labels(spec.get("selector"), "spec.selector")
    affinity = spec.get("sessionAffinity")
    errors += supported(affinity, "spec.sessionAffinity", SESSION_AFFINITIES)
    config = spec.get("sessionAffinityConfig")
    if affinity == "ClientIP":
        timeout = as_dict(as_dict(config).get("clientIP")).get("timeoutSeconds")
        if config is None:
            errors.append(required("spec.sessionAffinityConfig", "when session affinity type is ClientIP"))
        elif as_dict(config).get("clientIP") is None:
            errors.append(
                required("spec.sessionAffinityConfig.clientIP", "when session affinity type is ClientIP")
            )
        elif timeout is None:
            errors.append(
                required(
                    "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                    "when session affinity type is ClientIP",
                )
            )
        elif not is_int(timeout) or not 0 < timeout <= MAX_CLIENT_IP_TIMEOUT:
            errors.append(
                invalid(
                    "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                    timeout,
                    f"must be greater than 0 and less than {MAX_CLIENT_IP_TIMEOUT}",
                )
            )
    elif affinity == "None" and config is not None:
        errors.append(
            forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None")
        )
    errors += validate_cluster_ips_related_fields(spec)
    for i, ip in enumerate(as_list(spec.get("externalIPs"))):
        ip_errors = valid_ip(as_str(ip), index("spec.externalIPs", i))
        errors += ip_errors or validate_non_special_ip(as_str(ip), index("spec.externalIPs", i))
    errors += supported(kind, "spec.type", SERVICE_TYPES)
    if kind == "ClusterIP":
        for i, port in enumerate(ports):
            if as_dict(port).get("nodePort"):
                errors.append(
                    forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'")
                )
    node_ports: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        port = as_dict(port)
        if not port.get("nodePort"):
            continue
        pair = (port.get("protocol"), port.get("nodePort"))
        if pair in node_ports:
            errors.append(
                FieldError(
                    "Duplicate value",
                    "FieldValueDuplicate",
                    f"spec.ports[{i}].nodePort",
                    "",
                    port.get("nodePort"),
                    True,
                )
            )
        node_ports.add(pair)
    pairs: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        port = as_dict(port)
        pair = (port.get("protocol"), port.get("port"))
        if pair in pairs:
            errors.append(duplicate_go(f"spec.ports[{i}]", _go_service_port(*pair)))
        pairs.add(pair)
    if as_list(spec.get("loadBalancerSourceRanges")) and kind != "LoadBalancer":
        errors.append(
            forbidden("spec.LoadBalancerSourceRanges", "may only be used when `type` is 'LoadBalancer'")
        )
    if spec.get("allocateLoadBalancerNodePorts") is not None and kind != "LoadBalancer":
        errors.append(
            forbidden("spec.allocateLoadBalancerNodePorts", "may only be used when `type` is 'LoadBalancer'")
        )
    if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        errors.append(required("allocateLoadBalancerNodePorts"))  # sic: upstream's path has no "spec."
    lb_class = spec.get("loadBalancerClass")
    if lb_class is not None:
        if kind == "LoadBalancer":
            errors += [
                invalid("spec.loadBalancerClass", lb_class, m) for m in is_qualified_name(as_str(lb_class))
            ]
        else:
            errors.append(
                forbidden("spec.loadBalancerClass", "may only be used when `type` is 'LoadBalancer'")
            )
    external = spec.get("externalTrafficPolicy")
    if not _externally_accessible(spec):
        if external:
            errors.append(
                invalid(
                    "spec.externalTrafficPolicy",
                    external,
                    "may only be set for externally-accessible services",
                )
            )
    else:
        errors += supported(external, "spec.externalTrafficPolicy", TRAFFIC_POLICIES)
    health = spec.get("healthCheckNodePort")
    if not _needs_health_check(spec):
        if health:
            errors.append(
                invalid(
                    "spec.healthCheckNodePort",
                    health,
                    "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
                )
            )
    elif not health:
        errors.append(required("spec.healthCheckNodePort"))
    internal = spec.get("internalTrafficPolicy")
    if internal is None:
        if kind in ("NodePort", "LoadBalancer", "ClusterIP"):
            errors.append(required("spec.internalTrafficPolicy"))
    elif internal not in TRAFFIC_POLICIES:
        errors.append(not_supported("spec.internalTrafficPolicy", internal, TRAFFIC_POLICIES))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution not in TRAFFIC_DISTRIBUTIONS:
        errors.append(not_supported("spec.trafficDistribution", distribution, TRAFFIC_DISTRIBUTIONS))
    return errors


def _validate_upgrade_downgrade(spec: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``validateUpgradeDowngradeClusterIPs``/``IPFamilies``: the primary cluster IP never changes."""
    if spec.get("type") == "ExternalName" or old.get("type") == "ExternalName":
        return []
    errors: list[FieldError] = []
    new_ips, old_ips = as_list(spec.get("clusterIPs")), as_list(old.get("clusterIPs"))
    if not (_is_headless(spec) and _is_headless(old)):
        rendered = go_string_slice(spec.get("clusterIPs"))
        if len(old_ips) == len(new_ips):
            for i, ip in enumerate(old_ips):
                if ip != new_ips[i]:
                    errors.append(
                        invalid_go(index("spec.clusterIPs", i), rendered, "may not change once set")
                    )
        elif len(old_ips) > len(new_ips):
            if not new_ips:
                errors.append(
                    invalid_go("spec.clusterIPs[0]", rendered, "primary clusterIP can not be unset")
                )
            elif old_ips[0] != new_ips[0]:
                errors.append(invalid_go("spec.clusterIPs[0]", rendered, "may not change once set"))
        elif old_ips and new_ips[0] != old_ips[0]:
            errors.append(invalid_go("spec.clusterIPs[0]", rendered, "may not change once set"))
    if _is_headless(spec) == _is_headless(old) and not _is_headless(spec):
        new_families, old_families = as_list(spec.get("ipFamilies")), as_list(old.get("ipFamilies"))
        if len(new_families) == len(old_families) and new_families != old_families:
            errors.append(
                invalid_go("spec.ipFamilies[0]", _go_families(new_families), "may not change once set")
            )
    return errors


def _go_families(families: list[Any]) -> str:
    return go_json([as_str(f) for f in families])


def validate_non_special_ip(ip: str, path: str) -> list[FieldError]:
    """``ValidateNonSpecialIP``: not unspecified, loopback or link-local (Endpoints, external IPs)."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return [invalid(path, ip, "must be a valid IP address")]
    errors = []
    if address.is_unspecified:
        errors.append(invalid(path, ip, f"may not be unspecified ({ip})"))
    if address.is_loopback:
        errors.append(invalid(path, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if address.is_link_local and not address.is_multicast:
        errors.append(invalid(path, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    if address in ipaddress.ip_network("224.0.0.0/24") or (
        address.version == 6 and address in ipaddress.ip_network("ff02::/16")
    ):
        errors.append(
            invalid(path, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
        )
    return errors


# -- the strategies --------------------------------------------------------------------------------


class ServiceStrategy(CoreKindStrategy):
    """Services (``pkg/registry/core/service/strategy.go`` and ``storage/rest.go``)."""

    status_subresource = True
    name_validator = staticmethod(is_dns1035_label)

    def __init__(
        self, ip_range: ServiceIPRange | None = None, port_range: NodePortRange | None = None
    ) -> None:
        self.ip_range = ip_range or ServiceIPRange()
        self.port_range = port_range or NodePortRange()

    def default(self, obj: Object) -> None:
        """``SetDefaults_Service``."""
        spec = spec_of(obj)
        if not spec.get("sessionAffinity"):
            spec["sessionAffinity"] = "None"
        if spec["sessionAffinity"] == "None":
            spec.pop("sessionAffinityConfig", None)
        elif spec["sessionAffinity"] == "ClientIP":
            client_ip = as_dict(as_dict(spec.get("sessionAffinityConfig")).get("clientIP"))
            if client_ip.get("timeoutSeconds") is None:
                spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": DEFAULT_CLIENT_IP_TIMEOUT}}
        if not spec.get("type"):
            spec["type"] = "ClusterIP"
        for port in as_list(spec.get("ports")):
            if not isinstance(port, dict):
                continue
            if not port.get("protocol"):
                port["protocol"] = "TCP"
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
        if _externally_accessible(spec) and not spec.get("externalTrafficPolicy"):
            spec["externalTrafficPolicy"] = "Cluster"
        if spec.get("internalTrafficPolicy") is None and spec["type"] in (
            "NodePort",
            "LoadBalancer",
            "ClusterIP",
        ):
            spec["internalTrafficPolicy"] = "Cluster"
        if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True

    def reset_status(self, obj: Object) -> None:
        obj["status"] = {"loadBalancer": {}}

    def _seed(self, obj: Object) -> str:
        meta = obj["metadata"]
        return f"{meta.get('namespace', '')}/{meta.get('name') or meta.get('generateName', '')}"

    def prepare_for_create(self, obj: Object) -> None:
        super().prepare_for_create(obj)
        spec = spec_of(obj)
        normalize_cluster_ips(spec, None)
        init_ip_family_fields(spec, None)
        if not allocation_errors(spec, ips=self.ip_range, ports=self.port_range):
            allocate(spec, seed=self._seed(obj), attempt=0, ips=self.ip_range, ports=self.port_range)

    def prepare_for_update(self, obj: Object, old: Object) -> None:
        self.default(obj)
        spec, old_spec = spec_of(obj), as_dict(old.get("spec"))
        patch_allocated_values(spec, old_spec)
        normalize_cluster_ips(spec, old_spec)
        init_ip_family_fields(spec, old_spec)
        if not allocation_errors(spec, ips=self.ip_range, ports=self.port_range):
            allocate(spec, seed=self._seed(obj), attempt=0, ips=self.ip_range, ports=self.port_range)
        super().prepare_for_update(obj, old)
        drop_type_dependent_fields(spec, old_spec)
        if spec.get("type") != "LoadBalancer" and isinstance(obj.get("status"), dict):
            obj["status"] = {**obj["status"], "loadBalancer": {}}

    def claims(self, obj: Object) -> list[Claim]:
        """The allocated values ``obj`` holds, each with the store key that marks it taken."""
        return service_claims(as_dict(obj.get("spec")))

    def reallocate(self, obj: Object, request: Mapping[str, Any], attempt: int) -> None:
        """Choose again every value the client did not ask for (after a claim conflict)."""
        spec = spec_of(obj)
        for claim in self.claims(obj):
            if claim.requested_in(request):
                continue
            if claim.field == "spec.clusterIPs":
                spec.pop("clusterIP", None)
                spec.pop("clusterIPs", None)
            elif claim.field == "spec.healthCheckNodePort":
                spec.pop("healthCheckNodePort", None)
            else:
                for port in as_list(spec.get("ports")):
                    if as_dict(port).get("nodePort") == claim.value:
                        port.pop("nodePort", None)
        allocate(spec, seed=self._seed(obj), attempt=attempt, ips=self.ip_range, ports=self.port_range)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        spec = as_dict(obj.get("spec"))
        errors = allocation_errors(spec, ips=self.ip_range, ports=self.port_range)
        if errors:
            return errors
        return validate_service(obj, self.validate_meta(obj, namespaced=namespaced))

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateServiceUpdate``."""
        spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
        errors = allocation_errors(spec, ips=self.ip_range, ports=self.port_range)
        if errors:
            return errors
        errors = validate_object_meta_update(obj["metadata"], old["metadata"])
        errors += _validate_upgrade_downgrade(spec, old_spec)
        both_lb = old_spec.get("type") == "LoadBalancer" and spec.get("type") == "LoadBalancer"
        if both_lb and spec.get("loadBalancerClass") != old_spec.get("loadBalancerClass"):
            errors.append(
                invalid_go(
                    "spec.loadBalancerClass",
                    go_pointer(spec.get("loadBalancerClass")),
                    "may not change once set",
                )
            )
        both_health = _needs_health_check(old_spec) and _needs_health_check(spec)
        if both_health and spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort"):
            errors.append(forbidden("spec.healthCheckNodePort", FIELD_IMMUTABLE))
        return errors + validate_service(obj, self.validate_meta(obj, namespaced=namespaced))


# -- Endpoints and EndpointSlices ------------------------------------------------------------------


def _validate_endpoint_port(port: Mapping[str, Any], require_name: bool, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    name = as_str(port.get("name"))
    if require_name and not name:
        errors.append(required(child(path, "name")))
    elif name:
        errors += dns_label(name, child(path, "name"))
    errors += [
        invalid(child(path, "port"), port.get("port") or 0, m) for m in is_valid_port_num(port.get("port"))
    ]
    errors += supported(port.get("protocol"), child(path, "protocol"), PROTOCOLS)
    if port.get("appProtocol") is not None:
        app = as_str(port.get("appProtocol"))
        errors += [invalid(child(path, "appProtocol"), app, m) for m in is_qualified_name(app)]
    return errors


def _validate_endpoint_address(address: Mapping[str, Any], path: str) -> list[FieldError]:
    ip = as_str(address.get("ip"))
    errors = valid_ip(ip, child(path, "ip"))
    if address.get("hostname"):
        errors += dns_label(as_str(address.get("hostname")), child(path, "hostname"))
    if address.get("nodeName") is not None:
        errors += dns_subdomain(as_str(address.get("nodeName")), child(path, "nodeName"))
    return errors + validate_non_special_ip(ip, child(path, "ip"))


class EndpointsStrategy(CoreKindStrategy):
    """Endpoints (``pkg/registry/core/endpoint/strategy.go``, ``ValidateEndpoints``)."""

    def default(self, obj: Object) -> None:
        for subset in as_list(obj.get("subsets")):
            for port in as_list(as_dict(subset).get("ports")):
                if isinstance(port, dict) and not port.get("protocol"):
                    port["protocol"] = "TCP"

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        errors = self.validate_meta(obj, namespaced=namespaced)
        for i, subset in enumerate(as_list(obj.get("subsets"))):
            subset = as_dict(subset)
            path = index("subsets", i)
            addresses, not_ready = as_list(subset.get("addresses")), as_list(subset.get("notReadyAddresses"))
            if not addresses and not not_ready:
                errors.append(required(path, "must specify `addresses` or `notReadyAddresses`"))
            for j, address in enumerate(addresses):
                errors += _validate_endpoint_address(as_dict(address), index(child(path, "addresses"), j))
            for j, address in enumerate(not_ready):
                errors += _validate_endpoint_address(
                    as_dict(address), index(child(path, "notReadyAddresses"), j)
                )
            ports = as_list(subset.get("ports"))
            for j, port in enumerate(ports):
                errors += _validate_endpoint_port(
                    as_dict(port), len(ports) > 1, index(child(path, "ports"), j)
                )
        return errors

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_object_meta_update(obj["metadata"], old["metadata"]) + self.validate(
            obj, namespaced=namespaced
        )


ADDRESS_TYPES: Final = ["FQDN", "IPv4", "IPv6"]


class EndpointSliceStrategy(CoreKindStrategy):
    """EndpointSlices (``pkg/apis/discovery/validation/validation.go``, ``discovery/v1/defaults.go``)."""

    def default(self, obj: Object) -> None:
        for port in as_list(obj.get("ports")):
            if isinstance(port, dict):
                if port.get("name") is None:
                    port["name"] = ""
                if port.get("protocol") is None:
                    port["protocol"] = "TCP"

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        errors = self.validate_meta(obj, namespaced=namespaced)
        address_type = obj.get("addressType")
        errors += supported(address_type, "addressType", ADDRESS_TYPES)
        endpoints = as_list(obj.get("endpoints"))
        if len(endpoints) > 1000:
            errors.append(too_many("endpoints", len(endpoints), 1000))
            endpoints = []
        for i, endpoint in enumerate(endpoints):
            endpoint = as_dict(endpoint)
            path = index("endpoints", i)
            addresses = as_list(endpoint.get("addresses"))
            if not addresses:
                errors.append(required(child(path, "addresses"), "must contain at least 1 address"))
            elif len(addresses) > 100:
                errors.append(too_many(child(path, "addresses"), len(addresses), 100))
            for j, address in enumerate(addresses):
                address_path = index(child(path, "addresses"), j)
                if address_type in ("IPv4", "IPv6"):
                    text = as_str(address)
                    family_ok = valid_ip(text, address_path) == [] and (
                        (":" in text) == (address_type == "IPv6")
                    )
                    if not family_ok:
                        errors.append(invalid(address_path, text, f"must be a valid {address_type} address"))
                    else:
                        errors += validate_non_special_ip(text, address_path)
                elif address_type == "FQDN":
                    errors += _fqdn(as_str(address), address_path)
            if endpoint.get("nodeName") is not None:
                errors += dns_subdomain(as_str(endpoint.get("nodeName")), child(path, "nodeName"))
            if endpoint.get("zone") is not None:
                errors += label_name(as_str(endpoint.get("zone")), child(path, "zone"))
            if endpoint.get("hostname") is not None:
                errors += dns_label(as_str(endpoint.get("hostname")), child(path, "hostname"))
        names: set[str] = set()
        for i, port in enumerate(as_list(obj.get("ports"))):
            port = as_dict(port)
            path = index("ports", i)
            name = as_str(port.get("name"))
            if name:
                errors += dns_label(name, child(path, "name"))
            if name in names:
                errors.append(
                    FieldError("Duplicate value", "FieldValueDuplicate", child(path, "name"), "", name, True)
                )
            names.add(name)
            if port.get("protocol") is None:
                errors.append(required(child(path, "protocol")))
            elif port.get("protocol") not in PROTOCOLS:
                errors.append(not_supported(child(path, "protocol"), port.get("protocol"), PROTOCOLS))
            if port.get("appProtocol") is not None:
                app = as_str(port.get("appProtocol"))
                errors += [invalid(child(path, "appProtocol"), app, m) for m in is_qualified_name(app)]
        return errors

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        errors = validate_object_meta_update(obj["metadata"], old["metadata"]) + self.validate(
            obj, namespaced=namespaced
        )
        if obj.get("addressType") != old.get("addressType"):
            errors.append(invalid("addressType", as_str(obj.get("addressType")), FIELD_IMMUTABLE))
        return errors


def _fqdn(name: str, path: str) -> list[FieldError]:
    """``IsFullyQualifiedDomainName``."""
    from controlplane.api.validation import is_dns1123_label, is_dns1123_subdomain

    if not name:
        return [required(path)]
    name = name.removesuffix(".")
    messages = is_dns1123_subdomain(name)
    if messages:
        return [invalid(path, name, ",".join(messages))]
    if len(name.split(".")) < 2:
        return [invalid(path, name, "should be a domain with at least two segments separated by dots")]
    for label in name.split("."):
        messages = is_dns1123_label(label)
        if messages:
            return [invalid(path, label, ",".join(messages))]
    return []


__all__ = [
    "NODE_PORT_RANGE",
    "SERVICE_CIDR",
    "Claim",
    "EndpointSliceStrategy",
    "EndpointsStrategy",
    "NodePortRange",
    "ServiceIPRange",
    "ServiceStrategy",
    "allocate",
    "allocation_errors",
    "service_claims",
    "validate_cluster_ips_related_fields",
    "validate_non_special_ip",
    "validate_service",
]
