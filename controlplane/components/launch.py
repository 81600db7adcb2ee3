"""Launching a component: the same scheduler, controller manager, kubelet or kube-proxy, however it runs.

A component needs three things: a way to reach the API server (a ``RESTClient`` factory; its
``Config`` says in-process or HTTPS and carries the component's credential), the cluster's clock and
timing profile, and where its trace events go. ``build_component`` puts them together for each kind,
so the runtime (components as tasks of their cluster, the embedded default) and
``manage.py runcomponent`` (a component as its own process, over HTTPS) start identical components.

Every component has ``start()`` (returns once its caches are synced and it is at work) and ``stop()``
(cancels its work and, with leader election, releases its Lease so a standby takes over at once).
Stopping and starting a component at any moment is always safe: on start it lists everything again.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from controlplane.client.leaderelection import LeaderElectionConfig
from controlplane.client.rest import RESTClient
from controlplane.clock import SYSTEM_CLOCK, Clock
from controlplane.components.controllermanager import ControllerManager
from controlplane.components.identities import NODE_KINDS, component_identity
from controlplane.components.kubelet.kubelet import Kubelet
from controlplane.components.proxy.proxier import KubeProxy
from controlplane.components.scheduler.scheduler import LEASE_NAME, Scheduler
from controlplane.pki import CertificateAuthority
from controlplane.timing import CLASSROOM, TimingProfile
from controlplane.trace import NULL_SINK, TraceSink

ClientFactory = Callable[[], RESTClient]


class Component(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass(frozen=True)
class LaunchOptions:
    """What every component of one cluster shares."""

    cluster: str
    clock: Clock = SYSTEM_CLOCK
    timing: TimingProfile = CLASSROOM
    trace: TraceSink = NULL_SINK
    #: Stand for leader election (scheduler, controller manager), on Leases in ``kube-system`` with
    #: the timing profile's durations: ``--leader-elect``, true by default as upstream's is. A
    #: single replica wins at once, and ``kubectl get leases -n kube-system`` shows who leads.
    leader_election: bool = True
    #: The leader-election identity; a fresh random one when empty.
    identity: str = ""
    #: Seeds each component's randomness, so a scenario replays the same way (None: unseeded).
    seed: int | None = None
    #: For every kubelet: options of its node's shape (``cpu``, ``memory``, ``pull_timing`` ...).
    node_options: Mapping[str, Any] = field(default_factory=dict)
    #: The controller manager's ``--root-ca-file`` (the PEM it publishes as ``kube-root-ca.crt`` in
    #: every namespace); None: the CA its client trusts (``Config.ca_data``), as upstream.
    root_ca: bytes | None = None
    #: The controller manager's ``--cluster-signing-cert-file``/``--cluster-signing-key-file``: the CA
    #: it signs approved CertificateSigningRequests with (None: it signs none).
    signing_ca: CertificateAuthority | None = None


def _rng(options: LaunchOptions, kind: str, node: str) -> random.Random:
    if options.seed is None:
        return random.Random()
    return random.Random(f"{options.seed}/{kind}/{node}")


def build_component(
    kind: str,
    client: ClientFactory,
    options: LaunchOptions,
    *,
    node: str = "",
    node_options: Mapping[str, Any] | None = None,
) -> Component:
    """A component of ``kind`` (see ``identities.KINDS``) reaching the API server through ``client``.

    ``node_options`` add to ``options.node_options`` for this kubelet (its ``pod_cidr``, ``internal_ip``).
    """
    identity = component_identity(kind, node)  # checks kind and node
    rng = _rng(options, kind, node)
    timing = options.timing
    if kind == "scheduler":
        election = None
        if options.leader_election:
            election = LeaderElectionConfig.for_timing(LEASE_NAME, timing, identity=options.identity)
        return Scheduler(
            client,
            clock=options.clock,
            rng=rng,
            trace=options.trace,
            cluster=options.cluster,
            leader_election=election,
        )
    if kind == "kubelet":
        return Kubelet(
            client,
            node,
            clock=options.clock,
            rng=rng,
            trace=options.trace,
            cluster=options.cluster,
            timing=timing,
            **{**options.node_options, **(node_options or {})},
        )
    if kind == "controller-manager":
        return ControllerManager(
            client,
            cluster=options.cluster,
            clock=options.clock,
            timing=timing,
            trace=options.trace,
            rng=rng,
            leader_election=options.leader_election,
            identity=options.identity,
            root_ca=options.root_ca,
            signing_ca=options.signing_ca,
        )
    if kind == "kube-proxy":
        return KubeProxy(
            client, node, clock=options.clock, trace=options.trace, cluster=options.cluster, rng=rng
        )
    raise AssertionError(f"no launcher for {identity.kind}")  # component_identity knows every kind


__all__ = ["NODE_KINDS", "Component", "LaunchOptions", "build_component"]
