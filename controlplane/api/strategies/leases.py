"""Leases: a tiny object that says "I hold this, until then", used for heartbeats and leader election.

A Lease's spec is a ``holderIdentity``, a ``leaseDurationSeconds``, an ``acquireTime`` and a
``renewTime``. Two things use them all the time:

- **node heartbeats**: every kubelet renews ``kube-node-lease/<node>`` every 10 s; the node lifecycle
  controller marks the node unreachable when the renew time is older than the grace period. A Lease is
  far cheaper to write than the whole Node status.
- **leader election**: the scheduler and controller manager run several copies; the one whose identity
  is in ``kube-system/kube-scheduler`` (renewed before it expires) is the leader, and the others wait.
  ``leaseTransitions`` counts how often the holder changed.

Writes are ordinary updates with optimistic concurrency: two candidates racing for an expired lease
both send the resourceVersion they read, and only one update succeeds. Validation is small: the
duration must be positive, transitions not negative, and ``strategy``/``preferredHolder`` (coordinated
leader election) must be consistent.

Upstream: ``pkg/apis/coordination/validation/validation.go``.
"""

from __future__ import annotations

from typing import Final

from controlplane.api.meta import Object
from controlplane.api.strategies.common import KindStrategy, as_dict, as_str, is_int
from controlplane.api.strategies.workloads import validate_meta_update
from controlplane.api.validation import FieldError, forbidden, invalid, is_qualified_name, not_supported

LEASE_STRATEGIES: Final = ["OldestEmulationVersion"]


def validate_lease_spec(spec: object) -> list[FieldError]:
    """``ValidateLeaseSpec`` (note upstream's doubled ``spec.strategy.strategy`` path)."""
    spec = as_dict(spec)
    errors: list[FieldError] = []
    duration = spec.get("leaseDurationSeconds")
    if is_int(duration) and duration <= 0:
        errors.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if is_int(transitions) and transitions < 0:
        errors.append(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    strategy = spec.get("strategy")
    if strategy is not None:
        text = as_str(strategy)
        if "/" not in text:
            if text not in LEASE_STRATEGIES:
                errors.append(not_supported("spec.strategy.strategy", text, LEASE_STRATEGIES))
        else:
            errors += [invalid("spec.strategy.strategy", text, m) for m in is_qualified_name(text)]
    if spec.get("preferredHolder") and not strategy:
        errors.append(forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"))
    return errors


class LeaseStrategy(KindStrategy):
    """Leases (``pkg/registry/coordination/lease/strategy.go``)."""

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate_meta(obj, namespaced=namespaced) + validate_lease_spec(obj.get("spec"))

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_meta_update(obj, old) + validate_lease_spec(obj.get("spec"))


__all__ = ["LeaseStrategy", "validate_lease_spec"]
