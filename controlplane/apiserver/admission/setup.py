"""Which admission plugins a cluster's API server runs, and putting the chain together.

kube-apiserver has ``--enable-admission-plugins`` and ``--disable-admission-plugins`` over a default
set; ``AdmissionOptions`` is the same choice for a Kubelab cluster. The default is upstream's default
set restricted to the plugins Kubelab has, plus the webhooks; SandboxGuardrails (Kubelab's own) is
on only for a cluster that configures it (a student's sandbox).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from controlplane.apiserver.admission.certificates import (
    CertificateApproval,
    CertificateSigning,
    CertificateSubjectRestriction,
)
from controlplane.apiserver.admission.chain import Chain, Plugin, Tracer
from controlplane.apiserver.admission.clusterview import Authorize, CachedCluster, allow_everything
from controlplane.apiserver.admission.defaultstorageclass import DefaultStorageClass
from controlplane.apiserver.admission.defaulttolerationseconds import (
    DEFAULT_SECONDS,
    DefaultTolerationSeconds,
)
from controlplane.apiserver.admission.limitranger import LimitRanger
from controlplane.apiserver.admission.mutatingwebhook import MutatingWebhooks
from controlplane.apiserver.admission.namespacelifecycle import NamespaceLifecycle
from controlplane.apiserver.admission.noderestriction import NodeRestriction
from controlplane.apiserver.admission.podsecurity import PodSecurity
from controlplane.apiserver.admission.priority import Priority
from controlplane.apiserver.admission.resourcequota import ResourceQuota
from controlplane.apiserver.admission.sandboxguardrails import GuardrailsConfig, SandboxGuardrails
from controlplane.apiserver.admission.serviceaccount import ServiceAccount
from controlplane.apiserver.admission.validatingadmissionpolicy import Policies, ValidatingAdmissionPolicy
from controlplane.apiserver.admission.validatingwebhook import ValidatingWebhooks
from controlplane.apiserver.admission.webhookclient import Configurations, WebhookClient
from controlplane.clock import SYSTEM_CLOCK, Clock
from controlplane.trace import TraceSink

if TYPE_CHECKING:
    from controlplane.apiserver.registry import Registry
    from controlplane.apiserver.watchcache import WatchCache

#: The built-in plugins in upstream's order (``AllOrderedPlugins``); ResourceQuota runs after webhooks.
ORDER = (
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "PodSecurity",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "CertificateApproval",
    "CertificateSigning",
    "CertificateSubjectRestriction",
    "SandboxGuardrails",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
)
#: What a cluster runs unless told otherwise (SandboxGuardrails also needs a ``GuardrailsConfig``).
DEFAULT_PLUGINS = tuple(name for name in ORDER if name != "SandboxGuardrails")


@dataclass(frozen=True, slots=True)
class AdmissionOptions:
    """One cluster's admission configuration."""

    plugins: tuple[str, ...] = DEFAULT_PLUGINS
    #: DefaultTolerationSeconds' not-ready and unreachable tolerations.
    default_toleration_seconds: int = DEFAULT_SECONDS
    #: Seconds between lookups of a missing ``default`` ServiceAccount (None: upstream's 0.1-0.2 s).
    service_account_retry_interval: float | None = None
    #: SandboxGuardrails' limits; None leaves the plugin out even if listed.
    guardrails: GuardrailsConfig | None = None

    def without(self, *names: str) -> AdmissionOptions:
        return dataclasses.replace(self, plugins=tuple(n for n in self.plugins if n not in names))

    def with_guardrails(self, config: GuardrailsConfig) -> AdmissionOptions:
        """These options with SandboxGuardrails on, keeping ``config``'s limits."""
        name = SandboxGuardrails.name
        plugins = self.plugins if name in self.plugins else (*self.plugins, name)
        return dataclasses.replace(self, plugins=plugins, guardrails=config)


def _count_objects(caches: Mapping[str, WatchCache]) -> int:
    """The objects a cluster holds: the sum of its watch caches' sizes. A cache of another version of
    objects stored elsewhere (events.k8s.io's Events, stored as core ones) is not counted twice."""
    return sum(len(cache.objects) for cache in caches.values() if cache.rtype.conversion is None)


def build(
    options: AdmissionOptions,
    *,
    registries: Mapping[tuple[str, str, str], Registry],
    caches: Mapping[str, WatchCache],
    trace: TraceSink,
    cluster: str,
    authorize: Authorize = allow_everything,
    clock: Clock = SYSTEM_CLOCK,
) -> tuple[Chain, WebhookClient]:
    """The chain for ``options`` over one API server's registries and caches, and its HTTP client."""
    enabled = set(options.plugins)
    unknown = enabled - set(ORDER)
    if unknown:
        raise ValueError(f"unknown admission plugins: {', '.join(sorted(unknown))}")
    makers: dict[str, Any] = {
        "NamespaceLifecycle": NamespaceLifecycle,
        "LimitRanger": LimitRanger,
        # Its waits on the cluster clock, its jitter from randomness seeded by the cluster's name, so
        # a scenario replays the same way (controlplane/clock.py).
        "ServiceAccount": lambda: ServiceAccount(
            retry_interval=options.service_account_retry_interval,
            clock=clock,
            rng=random.Random(f"{cluster}/admission/ServiceAccount"),
        ),
        "NodeRestriction": NodeRestriction,
        "PodSecurity": PodSecurity,
        "Priority": Priority,
        "DefaultTolerationSeconds": lambda: DefaultTolerationSeconds(
            options.default_toleration_seconds, options.default_toleration_seconds
        ),
        "DefaultStorageClass": DefaultStorageClass,
        "CertificateApproval": CertificateApproval,
        "CertificateSigning": CertificateSigning,
        "CertificateSubjectRestriction": CertificateSubjectRestriction,
        "SandboxGuardrails": lambda: SandboxGuardrails(
            options.guardrails or GuardrailsConfig(), count_objects=partial(_count_objects, caches)
        ),
    }

    def configurations(resource: str) -> Any:
        cache = caches.get(f"/registry/{resource}")
        return lambda: cache.objects if cache is not None and cache.ready else {}

    makers["ValidatingAdmissionPolicy"] = lambda: ValidatingAdmissionPolicy(
        Policies(
            configurations("validatingadmissionpolicies"), configurations("validatingadmissionpolicybindings")
        )
    )
    plugins: list[Plugin] = []
    for name in ORDER:
        if name not in enabled or name not in makers:
            continue
        if name == "SandboxGuardrails" and options.guardrails is None:
            continue
        plugins.append(makers[name]())
    tracer = Tracer(trace, cluster)
    client = WebhookClient()
    mutating = (
        MutatingWebhooks(
            Configurations(configurations("mutatingwebhookconfigurations"), mutating=True), client, tracer
        )
        if "MutatingAdmissionWebhook" in enabled
        else None
    )
    validating = (
        ValidatingWebhooks(
            Configurations(configurations("validatingwebhookconfigurations"), mutating=False), client, tracer
        )
        if "ValidatingAdmissionWebhook" in enabled
        else None
    )
    chain = Chain(
        plugins,
        cluster=CachedCluster(registries, caches, authorize),
        tracer=tracer,
        mutating_webhooks=mutating,
        validating_webhooks=validating,
        after_webhooks=[ResourceQuota()] if "ResourceQuota" in enabled else [],
    )
    return chain, client


__all__ = ["DEFAULT_PLUGINS", "ORDER", "AdmissionOptions", "GuardrailsConfig", "build"]
