"""PodSecurity: the Pod Security Standards, chosen per namespace by labels.

A container can be given powers that reach beyond it: ``privileged: true`` sees every device of the
node, ``hostNetwork`` shares the node's network, a ``hostPath`` volume mounts the node's disk. The
**Pod Security Standards** sort these settings into three levels:

- ``privileged``: anything goes (no checks);
- ``baseline``: no known privilege escalations (no privileged containers, host namespaces,
  hostPath volumes, host ports, extra capabilities beyond the default set, unconfined seccomp,
  unmasked /proc, unsafe sysctls);
- ``restricted``: baseline, and current hardening practice on top (run as non-root, drop ALL
  capabilities, no privilege escalation, a seccomp profile, only "safe" volume types).

A namespace chooses, with labels, what happens to pods that do not meet a level::

    pod-security.kubernetes.io/enforce: restricted   # refuse them (403)
    pod-security.kubernetes.io/warn: baseline        # accept, with a Warning header kubectl prints
    pod-security.kubernetes.io/audit: baseline       # accept, and note it (here: on the trace)

each with an optional ``-version`` label (``latest`` by default). Pods are checked when created (and
when an update changes their containers' images); workload objects that hold a pod template
(Deployments, ReplicaSets, Jobs ...) only get warnings, since they create no containers themselves
and refusing them would hide the problem from the pods' own admission.

The checks below are pure functions of the pod's spec, each returning upstream's reason and detail
(``staging/src/k8s.io/pod-security-admission/policy/check_*.go``); the messages are word for word
upstream's: ``pods "p" is forbidden: violates PodSecurity "restricted:latest": privileged (container
"c" must not set securityContext.privileged=true), ...``. Upstream is
``staging/src/k8s.io/pod-security-admission/admission/admission.go``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api.validation import FieldError, not_supported
from controlplane.apiserver import errors
from controlplane.apiserver.admission.attributes import (
    CREATE,
    UPDATE,
    Attributes,
    Object,
    forbidden,
    labels_of,
    section,
)
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope

PRIVILEGED: Final = "privileged"
BASELINE: Final = "baseline"
RESTRICTED: Final = "restricted"
LEVELS: Final = (PRIVILEGED, BASELINE, RESTRICTED)

LABEL_PREFIX: Final = "pod-security.kubernetes.io/"
MODES: Final = ("enforce", "audit", "warn")

#: Kinds that hold a pod template, and where it is (``PodSpecExtractor``).
TEMPLATE_PATHS: Final = {
    ("", "podtemplates"): ("template",),
    ("", "replicationcontrollers"): ("spec", "template"),
    ("apps", "replicasets"): ("spec", "template"),
    ("apps", "deployments"): ("spec", "template"),
    ("apps", "statefulsets"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"),
    ("batch", "jobs"): ("spec", "template"),
    ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template"),
}

#: ``capabilities_allowed_1_0``: what baseline lets a container add.
BASELINE_CAPABILITIES: Final = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
#: ``sysctls_allowed_1_32``: namespaced sysctls that cannot affect other pods.
SAFE_SYSCTLS: Final = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
#: ``restrictedVolumes``: the volume types restricted allows.
RESTRICTED_VOLUME_TYPES: Final = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
#: Every volume source field of a core/v1 Volume (to name the type of a volume).
_VOLUME_SOURCES: Final = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs",
    "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
    "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk",
    "photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral",
    "image",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Violation:
    """One failed check: upstream's ``ForbiddenReason`` and ``ForbiddenDetail``."""

    reason: str
    detail: str

    def __str__(self) -> str:
        return f"{self.reason} ({self.detail})" if self.detail else self.reason


@dataclass(frozen=True, slots=True)
class Policy:
    """A level and a version, as a namespace label pair gives them (``restricted:latest``)."""

    level: str
    version: str = "latest"

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"


# -- helpers (policy/helpers.go) -------------------------------------------------------------------


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def pluralize(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def join_quote(items: list[str]) -> str:
    return ", ".join(f'"{item}"' for item in items)


def containers(spec: Object) -> Iterator[dict[str, Any]]:
    """``visitContainers``: init containers, containers, ephemeral containers."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in _list(spec.get(field)):
            if isinstance(container, dict):
                yield container


def _name(container: dict[str, Any]) -> str:
    return str(container.get("name") or "")


def _security(container: dict[str, Any]) -> dict[str, Any]:
    return _dict(container.get("securityContext"))


def _containers_phrase(names: list[str]) -> str:
    return f"{pluralize('container', 'containers', len(names))} {join_quote(names)}"


# -- baseline checks --------------------------------------------------------------------------------


def check_capabilities_baseline(spec: Object) -> Violation | None:
    bad: list[str] = []
    added: set[str] = set()
    for c in containers(spec):
        caps = _dict(_security(c).get("capabilities"))
        extra = {str(x) for x in _list(caps.get("add")) if str(x) not in BASELINE_CAPABILITIES}
        if extra:
            bad.append(_name(c))
            added |= extra
    if not bad:
        return None
    return Violation(
        "non-default capabilities",
        f"{_containers_phrase(bad)} must not include {join_quote(sorted(added))} in "
        "securityContext.capabilities.add",
    )


def check_host_namespaces(spec: Object) -> Violation | None:
    used = sorted(
        f"{field}=true" for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field) is True
    )
    return Violation("host namespaces", ", ".join(used)) if used else None


def check_host_path_volumes(spec: Object) -> Violation | None:
    names = [
        str(v.get("name") or "")
        for v in _list(spec.get("volumes"))
        if isinstance(v, dict) and v.get("hostPath")
    ]
    if not names:
        return None
    return Violation("hostPath volumes", f"{pluralize('volume', 'volumes', len(names))} {join_quote(names)}")


def check_host_ports(spec: Object) -> Violation | None:
    bad: list[str] = []
    ports: set[str] = set()
    for c in containers(spec):
        used = {
            str(p.get("hostPort")) for p in _list(c.get("ports")) if isinstance(p, dict) and p.get("hostPort")
        }
        if used:
            bad.append(_name(c))
            ports |= used
    if not bad:
        return None
    return Violation(
        "hostPort",
        f"{_containers_phrase(bad)} {pluralize('uses', 'use', len(bad))} "
        f"{pluralize('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}",
    )


def check_privileged(spec: Object) -> Violation | None:
    bad = [_name(c) for c in containers(spec) if _security(c).get("privileged") is True]
    if not bad:
        return None
    return Violation("privileged", f"{_containers_phrase(bad)} must not set securityContext.privileged=true")


def check_proc_mount(spec: Object) -> Violation | None:
    bad: list[str] = []
    values: set[str] = set()
    for c in containers(spec):
        mount = _security(c).get("procMount")
        if mount not in (None, "", "Default"):
            bad.append(_name(c))
            values.add(str(mount))
    if not bad:
        return None
    return Violation(
        "procMount",
        f"{_containers_phrase(bad)} must not set securityContext.procMount to {join_quote(sorted(values))}",
    )


def _setters(pod_bad: bool, bad_containers: list[str]) -> str:
    setters = ["pod"] if pod_bad else []
    if bad_containers:
        setters.append(_containers_phrase(bad_containers))
    return " and ".join(setters)


def check_seccomp_baseline(spec: Object) -> Violation | None:
    pod_bad = section(spec, "securityContext", "seccompProfile", "type") == "Unconfined"
    bad = [
        _name(c)
        for c in containers(spec)
        if section(c, "securityContext", "seccompProfile", "type") == "Unconfined"
    ]
    if not pod_bad and not bad:
        return None
    return Violation(
        "seccompProfile",
        f'{_setters(pod_bad, bad)} must not set securityContext.seccompProfile.type to "Unconfined"',
    )


def check_sysctls(spec: Object) -> Violation | None:
    names = [
        str(s.get("name") or "")
        for s in _list(section(spec, "securityContext", "sysctls"))
        if isinstance(s, dict) and s.get("name") not in SAFE_SYSCTLS
    ]
    return Violation("forbidden sysctls", ", ".join(names)) if names else None


# -- restricted checks ------------------------------------------------------------------------------


def check_allow_privilege_escalation(spec: Object) -> Violation | None:
    bad = [_name(c) for c in containers(spec) if _security(c).get("allowPrivilegeEscalation") is not False]
    if not bad:
        return None
    return Violation(
        "allowPrivilegeEscalation != false",
        f"{_containers_phrase(bad)} must set securityContext.allowPrivilegeEscalation=false",
    )


def check_capabilities_restricted(spec: Object) -> Violation | None:
    missing_drop: list[str] = []
    adding: list[str] = []
    forbidden_caps: set[str] = set()
    for c in containers(spec):
        caps = _security(c).get("capabilities")
        if not isinstance(caps, dict):
            missing_drop.append(_name(c))
            continue
        if "ALL" not in [str(x) for x in _list(caps.get("drop"))]:
            missing_drop.append(_name(c))
        extra = {str(x) for x in _list(caps.get("add")) if str(x) != "NET_BIND_SERVICE"}
        if extra:
            adding.append(_name(c))
            forbidden_caps |= extra
    details: list[str] = []
    if missing_drop:
        details.append(
            f'{_containers_phrase(missing_drop)} must set securityContext.capabilities.drop=["ALL"]'
        )
    if adding:
        details.append(
            f"{_containers_phrase(adding)} must not include {join_quote(sorted(forbidden_caps))} in "
            "securityContext.capabilities.add"
        )
    return Violation("unrestricted capabilities", "; ".join(details)) if details else None


def check_restricted_volumes(spec: Object) -> Violation | None:
    bad: list[str] = []
    types: set[str] = set()
    for volume in _list(spec.get("volumes")):
        if not isinstance(volume, dict):
            continue
        kind = next((source for source in _VOLUME_SOURCES if volume.get(source) is not None), None)
        if kind is not None and kind not in RESTRICTED_VOLUME_TYPES:
            bad.append(str(volume.get("name") or ""))
            types.add(kind)
    if not bad:
        return None
    return Violation(
        "restricted volume types",
        f"{pluralize('volume', 'volumes', len(bad))} {join_quote(bad)} {pluralize('uses', 'use', len(bad))} "
        f"{pluralize('restricted volume type', 'restricted volume types', len(types))} "
        f"{join_quote(sorted(types))}",
    )


def check_run_as_non_root(spec: Object) -> Violation | None:
    pod_value = section(spec, "securityContext", "runAsNonRoot")
    pod_bad = pod_value is False
    pod_ok = pod_value is True
    explicit: list[str] = []
    implicit: list[str] = []
    for c in containers(spec):
        value = _security(c).get("runAsNonRoot")
        if value is None:
            if not pod_ok:
                implicit.append(_name(c))
        elif value is False:
            explicit.append(_name(c))
    if pod_bad or explicit:
        return Violation(
            "runAsNonRoot != true",
            f"{_setters(pod_bad, explicit)} must not set securityContext.runAsNonRoot=false",
        )
    if implicit:
        return Violation(
            "runAsNonRoot != true",
            f"pod or {_containers_phrase(implicit)} must set securityContext.runAsNonRoot=true",
        )
    return None


def check_run_as_user(spec: Object) -> Violation | None:
    pod_bad = section(spec, "securityContext", "runAsUser") == 0
    bad = [_name(c) for c in containers(spec) if _security(c).get("runAsUser") == 0]
    if not pod_bad and not bad:
        return None
    return Violation("runAsUser=0", f"{_setters(pod_bad, bad)} must not set runAsUser=0")


def check_seccomp_restricted(spec: Object) -> Violation | None:
    valid = ("RuntimeDefault", "Localhost")
    pod_profile = section(spec, "securityContext", "seccompProfile")
    pod_bad = False
    pod_set = False
    bad_values: set[str] = set()
    if isinstance(pod_profile, dict):
        if pod_profile.get("type") in valid:
            pod_set = True
        else:
            pod_bad = True
            bad_values.add(str(pod_profile.get("type") or ""))
    explicit: list[str] = []
    implicit: list[str] = []
    for c in containers(spec):
        profile = _security(c).get("seccompProfile")
        if isinstance(profile, dict):
            if profile.get("type") not in valid:
                explicit.append(_name(c))
                bad_values.add(str(profile.get("type") or ""))
        elif not pod_set:
            implicit.append(_name(c))
    if pod_bad or explicit:
        return Violation(
            "seccompProfile",
            f"{_setters(pod_bad, explicit)} must not set securityContext.seccompProfile.type to "
            f"{join_quote(sorted(bad_values))}",
        )
    if implicit:
        return Violation(
            "seccompProfile",
            f"pod or {_containers_phrase(implicit)} must set securityContext.seccompProfile.type to "
            '"RuntimeDefault" or "Localhost"',
        )
    return None


Check = Callable[[Object], Violation | None]

#: Baseline checks by upstream's check ID, in ID order.
BASELINE_CHECKS: Final[dict[str, Check]] = {
    "capabilities_baseline": check_capabilities_baseline,
    "hostNamespaces": check_host_namespaces,
    "hostPathVolumes": check_host_path_volumes,
    "hostPorts": check_host_ports,
    "privileged": check_privileged,
    "procMount": check_proc_mount,
    "seccompProfile_baseline": check_seccomp_baseline,
    "sysctls": check_sysctls,
}
#: Restricted checks, in ID order; a restricted check may replace a baseline one.
RESTRICTED_CHECKS: Final[dict[str, Check]] = {
    "allowPrivilegeEscalation": check_allow_privilege_escalation,
    "capabilities_restricted": check_capabilities_restricted,
    "restrictedVolumes": check_restricted_volumes,
    "runAsNonRoot": check_run_as_non_root,
    "runAsUser": check_run_as_user,
    "seccompProfile_restricted": check_seccomp_restricted,
}
OVERRIDDEN_BY_RESTRICTED: Final = frozenset({"seccompProfile_baseline"})


def evaluate(level: str, spec: Object) -> list[Violation]:
    """Every violation of ``level`` by a pod spec (pure; ``privileged`` has none)."""
    if level == PRIVILEGED:
        return []
    checks = [
        c for cid, c in BASELINE_CHECKS.items() if level == BASELINE or cid not in OVERRIDDEN_BY_RESTRICTED
    ]
    if level == RESTRICTED:
        checks += list(RESTRICTED_CHECKS.values())
    return [v for v in (check(spec) for check in checks) if v is not None]


def describe(violations: list[Violation]) -> str:
    """``AggregateCheckResults(...).ForbiddenDetail()``: ``reason (detail), reason (detail)``."""
    return ", ".join(str(v) for v in violations)


def namespace_policies(labels: dict[str, str]) -> dict[str, Policy]:
    """The policy of each mode a namespace's labels set (absent modes are ``privileged``).

    An unknown level is taken as ``restricted``: a typo in the label must not open the namespace.
    """
    policies = {}
    for mode in MODES:
        level = labels.get(LABEL_PREFIX + mode)
        if level is None:
            policies[mode] = Policy(PRIVILEGED)
            continue
        version = labels.get(f"{LABEL_PREFIX}{mode}-version") or "latest"
        policies[mode] = Policy(level if level in LEVELS else RESTRICTED, version)
    return policies


def label_problems(labels: dict[str, Any]) -> list[FieldError]:
    """``ValidateNamespaceLabels`` (levels only): a mode label must name one of the three levels."""
    return [
        not_supported(f"metadata.labels[{LABEL_PREFIX}{mode}]", labels[LABEL_PREFIX + mode], list(LEVELS))
        for mode in MODES
        if LABEL_PREFIX + mode in labels and labels[LABEL_PREFIX + mode] not in LEVELS
    ]


def significant_pod_update(pod: Object, old: Object) -> bool:
    """``isSignificantPodUpdate``: only a change of the containers (their number or images) counts."""
    for field in ("initContainers", "containers"):
        new = _list(section(pod, "spec", field))
        before = _list(section(old, "spec", field))
        if len(new) != len(before):
            return True
        if any(_dict(a).get("image") != _dict(b).get("image") for a, b in zip(new, before, strict=True)):
            return True
    return False


class PodSecurity(Plugin):
    name = "PodSecurity"
    validating = True

    def handles(self, a: Attributes) -> bool:
        if a.operation not in (CREATE, UPDATE) or a.subresource or a.object is None:
            return False
        return (
            a.is_pod()
            or (a.group, a.resource) in TEMPLATE_PATHS
            or (a.group == "" and a.resource == "namespaces")
        )

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        assert a.object is not None
        if a.group == "" and a.resource == "namespaces":
            problems = label_problems(labels_of(a.object))
            if problems:
                raise errors.invalid("Namespace", "", a.object_name(), problems)
            return
        namespace = cluster.cached("", "namespaces", "", a.namespace)
        policies = namespace_policies(labels_of(namespace))
        if all(p.level == PRIVILEGED for p in policies.values()):
            return
        if a.is_pod():
            if (
                a.operation == UPDATE
                and a.old_object is not None
                and not significant_pod_update(a.object, a.old_object)
            ):
                return
            spec = _dict(a.object.get("spec"))
            self._pod(a, spec, policies, scope)
        else:
            template = section(a.object, *TEMPLATE_PATHS[(a.group, a.resource)])
            spec = _dict(section(template, "spec"))
            self._template(spec, policies, scope)

    @staticmethod
    def _pod(a: Attributes, spec: Object, policies: dict[str, Policy], scope: Scope) -> None:
        enforce = policies["enforce"]
        violations = evaluate(enforce.level, spec)
        if violations:
            raise forbidden(a, f'violates PodSecurity "{enforce}": {describe(violations)}')
        warn = policies["warn"]
        violations = evaluate(warn.level, spec)
        if violations:
            scope.warn(f'would violate PodSecurity "{warn}": {describe(violations)}')

    @staticmethod
    def _template(spec: Object, policies: dict[str, Policy], scope: Scope) -> None:
        # ``EvaluatePodController``: enforce and warn violations both become warnings.
        for mode in ("enforce", "warn"):
            policy = policies[mode]
            violations = evaluate(policy.level, spec)
            if violations:
                scope.warn(f'would violate PodSecurity "{policy}": {describe(violations)}')


__all__ = [
    "BASELINE",
    "PRIVILEGED",
    "RESTRICTED",
    "PodSecurity",
    "Policy",
    "Violation",
    "describe",
    "evaluate",
    "label_problems",
    "namespace_policies",
]
