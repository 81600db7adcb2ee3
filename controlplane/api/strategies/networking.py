"""Ingresses, IngressClasses and NetworkPolicies (``networking.k8s.io/v1``): rules others enforce.

None of these objects does anything by itself. An **Ingress** is HTTP routing for an ingress
controller (nginx, Traefik...) to carry out: ``rules`` of ``host`` and ``paths``, each path sending to
a Service ``backend`` (a name and a port number or name), a ``defaultBackend`` for the rest and ``tls``
hosts. Which controller carries it out is the **IngressClass** named by ``ingressClassName``
(``spec.controller`` says who, e.g. ``k8s.io/ingress-nginx``). A **NetworkPolicy** selects pods
(``podSelector``; ``{}`` selects every pod of the namespace) and lists the traffic allowed to them
(``ingress`` rules ``from`` peers) and from them (``egress`` rules ``to`` peers); the cluster's network
plugin enforces it. Kubelab stores and validates them; no data plane acts on them.

What the API server checks: an Ingress has ``rules`` or a ``defaultBackend``; a backend is a Service
or a resource, never both; a path has a ``pathType`` (``Exact``, ``Prefix`` or
``ImplementationSpecific``) and, for the first two, is an absolute path without ``//`` or ``/../``;
hosts are DNS names (a leading ``*.`` allowed), not IP addresses. A NetworkPolicy's peers each name
exactly one of a pod selector, a namespace selector (the two may be combined) or an ``ipBlock``; its
ports use TCP, UDP or SCTP; ``policyTypes`` default to ``Ingress`` (plus ``Egress`` when egress rules
are given).

Upstream: ``pkg/apis/networking/validation/validation.go``, ``pkg/apis/networking/v1/defaults.go``,
``pkg/registry/networking/{ingress,ingressclass,networkpolicy}/strategy.go``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    KindStrategy,
    as_dict,
    as_list,
    as_str,
    child,
    dns_subdomain,
    immutable,
    index,
    is_dns1035_label,
    is_int,
    is_valid_port_name,
    is_valid_port_num,
    spec_of,
    validate_label_selector,
)
from controlplane.api.strategies.workloads import validate_meta_update
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    is_dns1123_subdomain,
    not_supported,
    required,
    too_long,
)

PATH_TYPES: Final = ("Exact", "ImplementationSpecific", "Prefix")
POLICY_TYPES: Final = ("Ingress", "Egress")
PROTOCOLS: Final = ("TCP", "UDP", "SCTP")
MAX_CONTROLLER_LENGTH: Final = 250
_INVALID_PATH_SEQUENCES: Final = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_PATH_SUFFIXES: Final = ("/..", "/.")
_WILDCARD_DNS1123_SUBDOMAIN: Final = r"\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_WILDCARD_RE: Final = re.compile(f"^{_WILDCARD_DNS1123_SUBDOMAIN}$")
_HTTP_PATH: Final = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_RE: Final = re.compile(f"^{_HTTP_PATH}$")


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """``validation.IsWildcardDNS1123Subdomain``: ``*.`` followed by a DNS subdomain."""
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _WILDCARD_RE.match(value):
        errors.append(
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which "
            "must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric "
            f"character (e.g. '*.example.com', regex used for validation is '{_WILDCARD_DNS1123_SUBDOMAIN}')"
        )
    return errors


def _validate_host(host: str, path: str) -> list[FieldError]:
    if not host:
        return []
    errors: list[FieldError] = []
    if _is_ip(host):
        errors.append(invalid(path, host, "must be a DNS name, not an IP address"))
    checker = is_wildcard_dns1123_subdomain if "*" in host else is_dns1123_subdomain
    return errors + [invalid(path, host, msg) for msg in checker(host)]


# -- Ingress ---------------------------------------------------------------------------------------


def validate_ingress_backend(backend: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateIngressBackend``: a Service (name, and a port name or number) or a resource."""
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        return [invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        resource = as_dict(resource)
        errors: list[FieldError] = []
        if not as_str(resource.get("kind")):
            errors.append(required(child(path, "resource.kind")))
        if not as_str(resource.get("name")):
            errors.append(required(child(path, "resource.name")))
        return errors
    if service is None:
        return [invalid(path, "", "resource or service backend is required")]
    service = as_dict(service)
    errors = []
    name = as_str(service.get("name"))
    name_path = child(path, "service.name")
    if not name:
        errors.append(required(name_path))
    else:
        errors += [invalid(name_path, name, msg) for msg in is_dns1035_label(name)]
    port = as_dict(service.get("port"))
    port_name, port_number = as_str(port.get("name")), port.get("number")
    has_number = is_int(port_number) and port_number != 0
    if port_name and has_number:
        errors.append(invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errors += [
            invalid(child(path, "service.port.name"), port_name, m) for m in is_valid_port_name(port_name)
        ]
    elif has_number:
        errors += [
            invalid(child(path, "service.port.number"), port_number, m)
            for m in is_valid_port_num(port_number)
        ]
    else:
        errors.append(required(path, "port name or number is required"))
    return errors


def _validate_http_path(entry: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateHTTPIngressPath``."""
    errors: list[FieldError] = []
    path_type = entry.get("pathType")
    text = as_str(entry.get("path"))
    if path_type is None:
        return [required(child(path, "pathType"), "pathType must be specified")]
    if path_type in ("Exact", "Prefix"):
        if not text.startswith("/"):
            errors.append(invalid(child(path, "path"), text, "must be an absolute path"))
        for sequence in _INVALID_PATH_SEQUENCES:
            if sequence in text:
                errors.append(invalid(child(path, "path"), text, f"must not contain '{sequence}'"))
        for suffix in _INVALID_PATH_SUFFIXES:
            if text.endswith(suffix):
                errors.append(invalid(child(path, "path"), text, f"cannot end with '{suffix}'"))
    elif path_type == "ImplementationSpecific":
        if text and not text.startswith("/"):
            errors.append(invalid(child(path, "path"), text, "must be an absolute path"))
    else:
        errors.append(not_supported(child(path, "pathType"), path_type, list(PATH_TYPES)))
    return errors + validate_ingress_backend(as_dict(entry.get("backend")), child(path, "backend"))


def validate_ingress_spec(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateIngressSpec``."""
    errors: list[FieldError] = []
    rules = as_list(spec.get("rules"))
    default_backend = spec.get("defaultBackend")
    if not rules and default_backend is None:
        errors.append(invalid(path, rules or None, "either `defaultBackend` or `rules` must be specified"))
    if default_backend is not None:
        errors += validate_ingress_backend(as_dict(default_backend), child(path, "defaultBackend"))
    for i, rule in enumerate(rules):
        rule = as_dict(rule)
        rule_path = index(child(path, "rules"), i)
        errors += _validate_host(as_str(rule.get("host")), child(rule_path, "host"))
        http = rule.get("http")
        if http is None:
            continue
        paths = as_list(as_dict(http).get("paths"))
        paths_path = child(rule_path, "http.paths")
        if not paths:
            errors.append(required(paths_path))
        for j, entry in enumerate(paths):
            errors += _validate_http_path(as_dict(entry), index(paths_path, j))
    for i, tls in enumerate(as_list(spec.get("tls"))):
        for j, host in enumerate(as_list(as_dict(tls).get("hosts"))):
            host_path = index(child(index(child(path, "tls"), i), "hosts"), j)
            errors += _validate_host(as_str(host), host_path)
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        errors += dns_subdomain(as_str(class_name), child(path, "ingressClassName"))
    return errors


class IngressStrategy(KindStrategy):
    """``pkg/registry/networking/ingress/strategy.go``: status through ``/status``, spec generation."""

    status_subresource = True
    tracks_generation = True

    def reset_status(self, obj: Object) -> None:
        obj["status"] = {"loadBalancer": {}}

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate_meta(obj, namespaced=namespaced) + validate_ingress_spec(
            as_dict(obj.get("spec")), "spec"
        )

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_meta_update(obj, old) + validate_ingress_spec(as_dict(obj.get("spec")), "spec")


# -- IngressClass ----------------------------------------------------------------------------------


def _validate_controller(controller: str, path: str) -> list[FieldError]:
    """``IsDomainPrefixedPath`` and the length limit of ``spec.controller``."""
    errors: list[FieldError] = []
    if len(controller) > MAX_CONTROLLER_LENGTH:
        errors.append(too_long(path, MAX_CONTROLLER_LENGTH))
    if not controller:
        return [*errors, required(path)]
    host, _, rest = controller.partition("/")
    if not host or not rest:
        return [*errors, invalid(path, controller, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errors += [invalid(path, host, msg) for msg in is_dns1123_subdomain(host)]
    if not _HTTP_PATH_RE.match(rest):
        errors.append(
            invalid(
                path,
                rest,
                f"must be a valid path (e.g. '/foo/bar', regex used for validation is '{_HTTP_PATH}')",
            )
        )
    return errors


def _validate_parameters_reference(parameters: Any, path: str) -> list[FieldError]:
    """``validateIngressClassParametersReference``."""
    if parameters is None:
        return []
    parameters = as_dict(parameters)
    errors: list[FieldError] = []
    if not as_str(parameters.get("kind")):
        errors.append(required(child(path, "kind"), "kind is required"))
    if not as_str(parameters.get("name")):
        errors.append(required(child(path, "name"), "name is required"))
    scope, namespace = parameters.get("scope"), parameters.get("namespace")
    if scope not in ("Cluster", "Namespace"):
        errors.append(not_supported(child(path, "scope"), scope, ["Cluster", "Namespace"]))
    elif scope == "Namespace" and not namespace:
        errors.append(required(child(path, "namespace"), "`parameters.scope` is set to 'Namespace'"))
    elif scope == "Cluster" and namespace is not None:
        errors.append(forbidden(child(path, "namespace"), "`parameters.scope` is set to 'Cluster'"))
    return errors


class IngressClassStrategy(KindStrategy):
    """``pkg/registry/networking/ingressclass/strategy.go``: the controller never changes."""

    tracks_generation = True

    def default(self, obj: Object) -> None:
        """``SetDefaults_IngressClass``: parameters are cluster-scoped unless said otherwise."""
        parameters = spec_of(obj).get("parameters")
        if isinstance(parameters, dict) and not parameters.get("scope"):
            parameters["scope"] = "Cluster"

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        spec = as_dict(obj.get("spec"))
        return (
            self.validate_meta(obj, namespaced=namespaced)
            + _validate_controller(as_str(spec.get("controller")), "spec.controller")
            + _validate_parameters_reference(spec.get("parameters"), "spec.parameters")
        )

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
        return (
            validate_meta_update(obj, old)
            + _validate_parameters_reference(spec.get("parameters"), "spec.parameters")
            + immutable(spec.get("controller"), old_spec.get("controller"), "spec.controller")
        )


# -- NetworkPolicy ---------------------------------------------------------------------------------


def _validate_policy_port(port: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateNetworkPolicyPort``."""
    errors: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PROTOCOLS:
        errors.append(not_supported(child(path, "protocol"), protocol, list(PROTOCOLS)))
    number, end = port.get("port"), port.get("endPort")
    if number is None:
        if end is not None:
            errors.append(
                invalid(child(path, "endPort"), end, "may not be specified when `port` is not specified")
            )
        return errors
    if is_int(number):
        errors += [invalid(child(path, "port"), number, msg) for msg in is_valid_port_num(number)]
        if end is not None:
            if is_int(end) and end < number:
                errors.append(
                    invalid(child(path, "endPort"), number, "must be greater than or equal to `port`")
                )
            errors += [invalid(child(path, "endPort"), end, msg) for msg in is_valid_port_num(end)]
        return errors
    if end is not None:
        errors.append(invalid(child(path, "endPort"), end, "may not be specified when `port` is non-numeric"))
    return errors + [invalid(child(path, "port"), number, msg) for msg in is_valid_port_name(as_str(number))]


def _validate_peer(peer: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateNetworkPolicyPeer``."""
    errors: list[FieldError] = []
    count = 0
    for name in ("podSelector", "namespaceSelector"):
        if peer.get(name) is not None:
            count += 1
            errors += validate_label_selector(peer.get(name), child(path, name))
    block = peer.get("ipBlock")
    if block is not None:
        count += 1
        errors += _validate_ip_block(as_dict(block), child(path, "ipBlock"))
    if count == 0:
        errors.append(required(path, "must specify a peer"))
    elif count > 1 and block is not None:
        errors.append(forbidden(path, "may not specify both ipBlock and another peer"))
    return errors


def _validate_ip_block(block: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateIPBlock``: a CIDR, and exceptions inside it of the same family."""
    cidr = as_str(block.get("cidr"))
    if not cidr:
        return [required(child(path, "cidr"))]
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return [
            invalid(
                child(path, "cidr"), cidr, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
            )
        ]
    errors: list[FieldError] = []
    for i, text in enumerate(as_list(block.get("except"))):
        except_path = index(child(path, "except"), i)
        try:
            excepted = ipaddress.ip_network(as_str(text), strict=False)
        except ValueError:
            errors.append(
                invalid(except_path, text, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")
            )
            continue
        inside = excepted.version == network.version and excepted.subnet_of(network)  # type: ignore[arg-type]
        if not inside or excepted.prefixlen <= network.prefixlen:
            errors.append(invalid(except_path, text, "must be a strict subset of `cidr`"))
    return errors


def _validate_rules(rules: Any, path: str, peers: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, rule in enumerate(as_list(rules)):
        rule = as_dict(rule)
        rule_path = index(path, i)
        for j, port in enumerate(as_list(rule.get("ports"))):
            errors += _validate_policy_port(as_dict(port), index(child(rule_path, "ports"), j))
        for j, peer in enumerate(as_list(rule.get(peers))):
            errors += _validate_peer(as_dict(peer), index(child(rule_path, peers), j))
    return errors


def validate_network_policy_spec(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateNetworkPolicySpec``."""
    errors = validate_label_selector(spec.get("podSelector"), child(path, "podSelector"))
    errors += _validate_rules(spec.get("ingress"), child(path, "ingress"), "from")
    errors += _validate_rules(spec.get("egress"), child(path, "egress"), "to")
    types = as_list(spec.get("policyTypes"))
    if len(types) > len(POLICY_TYPES):
        return [
            *errors,
            invalid(child(path, "policyTypes"), types, "may not specify more than two policyTypes"),
        ]
    for i, policy_type in enumerate(types):
        if policy_type not in POLICY_TYPES:
            errors.append(
                not_supported(index(child(path, "policyTypes"), i), policy_type, list(POLICY_TYPES))
            )
    return errors


class NetworkPolicyStrategy(KindStrategy):
    """``pkg/registry/networking/networkpolicy/strategy.go``."""

    tracks_generation = True

    def default(self, obj: Object) -> None:
        """``SetDefaults_NetworkPolicy`` and ``SetDefaults_NetworkPolicyPort``."""
        spec = spec_of(obj)
        if not isinstance(spec.get("podSelector"), dict):
            spec["podSelector"] = {}
        for rules, _ in (("ingress", "from"), ("egress", "to")):
            for rule in as_list(spec.get(rules)):
                for port in as_list(as_dict(rule).get("ports")):
                    if isinstance(port, dict) and port.get("protocol") is None:
                        port["protocol"] = "TCP"
        if not spec.get("policyTypes"):
            types = ["Ingress"]
            if as_list(spec.get("egress")):
                types.append("Egress")
            spec["policyTypes"] = types

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate_meta(obj, namespaced=namespaced) + validate_network_policy_spec(
            as_dict(obj.get("spec")), "spec"
        )

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_meta_update(obj, old) + validate_network_policy_spec(as_dict(obj.get("spec")), "spec")


__all__ = [
    "IngressClassStrategy",
    "IngressStrategy",
    "NetworkPolicyStrategy",
    "is_wildcard_dns1123_subdomain",
    "validate_ingress_backend",
    "validate_ingress_spec",
    "validate_network_policy_spec",
]
