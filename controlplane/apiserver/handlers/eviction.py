"""The PodDisruptionBudget half of ``pods/<name>/eviction``: may this pod go now, and spend the budget.

An eviction is a delete that asks first. A pod that has already stopped (``Succeeded``, ``Failed``),
has not started (``Pending``) or is already being deleted is deleted at once: evicting it disrupts
nothing (``canIgnorePDB``). For any other pod the API server looks for the PodDisruptionBudgets of
the pod's namespace whose selector matches its labels (as for the disruption controller, an empty
selector ``{}`` matches every pod, a missing one none):

- none: the pod is deleted;
- more than one: the eviction fails with 500, "This pod has more than one PodDisruptionBudget, which
  the eviction subresource does not support." (a misconfiguration nobody can retry away);
- one: if the pod is not Ready it does not count as healthy anyway, so it may go without spending
  the budget when the budget's ``unhealthyPodEvictionPolicy`` is ``AlwaysAllow``, or (the default,
  ``IfHealthyBudget``) while the application has its desired healthy pods. Otherwise the budget must
  allow a disruption: its status must have been computed for its current spec
  (``observedGeneration``; else 429 "... is still being processed by the server.") and
  ``disruptionsAllowed`` must be above 0, else **429 TooManyRequests** "Cannot evict pod as it would
  violate the pod's disruption budget." with a ``DisruptionBudget`` cause: "The disruption budget web
  needs 2 healthy pods and has 2 currently". ``kubectl drain`` retries every 5 s on a 429.

Spending the budget is a write of the PDB's status, with optimistic concurrency, *before* the pod is
deleted: ``disruptionsAllowed`` minus one (and the ``DisruptionAllowed`` condition ``False`` when it
reaches 0) and the pod's name in ``disruptedPods`` with the time, so that the disruption controller
does not count it as healthy while its deletion is on its way. Two evictions racing for the last
disruption both send the resourceVersion they read: one write wins, the other reads the budget again
and finds nothing left (429). A dry-run eviction checks the budget but writes nothing.

Whatever the budgets said, a pod that goes is first marked with the condition ``DisruptionTarget``
(``True``, reason ``EvictionByEvictionAPI``), so that its workload and whoever watches it see why it
is terminating (not on a dry run).

An unready pod deleted without spending the budget is deleted only as it was read (a resourceVersion
precondition): if it became Ready meanwhile, the delete conflicts and the answer is a 429 "still being
processed", and the client tries again.

Upstream: ``pkg/registry/core/pod/storage/eviction.go`` (``checkAndDecrement``,
``getPodDisruptionBudgets``, ``canIgnorePDB``, ``shouldEnforceResourceVersion``,
``addConditionAndDeletePod``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object, format_time
from controlplane.api.poddisruptionbudget import is_pod_ready, update_disruption_allowed_condition
from controlplane.api.selectors import SelectorError, label_selector_from_object
from controlplane.api.strategies.policy import ALWAYS_ALLOW, DISRUPTION_BUDGET_CAUSE
from controlplane.apiserver import errors
from controlplane.apiserver.handlers.resources import Context, Reply
from controlplane.apiserver.http import dumps
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.requestscope import RequestScope

PDB_RESOURCE: Final = ("policy", "v1", "poddisruptionbudgets")
#: ``MaxDisruptedPodSize``: more evictions than this not yet confirmed by the controller are refused.
MAX_DISRUPTED_POD_SIZE: Final = 2000
#: ``EvictionsRetry``: how often the budget is read again after a conflicting status write.
PDB_RETRIES: Final = 20
VIOLATION_MESSAGE: Final = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_PDBS_MESSAGE: Final = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
)
_TERMINAL: Final = ("Succeeded", "Failed")
#: The pod condition of a pod about to be disrupted (``v1.DisruptionTarget``).
DISRUPTION_TARGET: Final = "DisruptionTarget"


def can_ignore_pdb(pod: Mapping[str, Any]) -> bool:
    """``canIgnorePDB``: a finished, not yet started or already deleting pod disrupts nothing."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in (*_TERMINAL, "Pending") or bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def should_enforce_resource_version(pod: Mapping[str, Any]) -> bool:
    """``shouldEnforceResourceVersion``: not for a finished or deleting pod, else delete it as read."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in _TERMINAL and not (pod.get("metadata") or {}).get("deletionTimestamp")


def _too_many_requests(message: str, cause: str, retry_after: int) -> errors.StatusError:
    """``errors.NewTooManyRequests`` with a ``DisruptionBudget`` cause (Retry-After only when > 0)."""
    details: dict[str, Any] = {"causes": [{"reason": DISRUPTION_BUDGET_CAUSE, "message": cause}]}
    headers = {}
    if retry_after > 0:
        details["retryAfterSeconds"] = retry_after
        headers["Retry-After"] = str(retry_after)
    return errors.StatusError(429, "TooManyRequests", message, details, headers=headers)


def still_being_processed(pdb_name: str) -> errors.StatusError:
    """``createTooManyRequestsError``: the budget's status is not (yet) for its spec; try in 10 s."""
    return _too_many_requests(
        VIOLATION_MESSAGE, f"The disruption budget {pdb_name} is still being processed by the server.", 10
    )


def budget_exhausted(pdb: Mapping[str, Any]) -> errors.StatusError:
    """The 429 of a budget with no disruption left."""
    status = pdb.get("status") or {}
    cause = (
        f"The disruption budget {(pdb.get('metadata') or {}).get('name')} needs "
        f"{int(status.get('desiredHealthy') or 0)} healthy pods and has "
        f"{int(status.get('currentHealthy') or 0)} currently"
    )
    return _too_many_requests(VIOLATION_MESSAGE, cause, 0)


def multiple_pdbs_reply() -> Reply:
    """The answer for a pod with several budgets: a Failure Status with code 500 (no reason)."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": MULTIPLE_PDBS_MESSAGE,
        "code": 500,
    }
    return Reply(500, dumps(body))


async def pdbs_for_pod(registry: Registry, pod: Mapping[str, Any]) -> list[Object]:
    """``getPodDisruptionBudgets``: the budgets of the pod's namespace whose selector matches it.

    A selector that does not parse matches nothing (policy/v1: ``{}`` matches everything, a missing
    selector nothing; policy/v1beta1 once made an empty one match nothing here).
    """
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    labels = (pod.get("metadata") or {}).get("labels") or {}
    result = await registry.store.range(registry.rtype.prefix(namespace))
    matching = []
    for kv in result.kvs:
        pdb = registry.decode(kv)
        try:
            selector = label_selector_from_object((pdb.get("spec") or {}).get("selector"))
        except SelectorError:
            continue
        if not selector.matches(labels):
            continue
        matching.append(pdb)
    return matching


class EvictedPodChanged(errors.StatusError):
    """409: the pod is not the one the eviction's preconditions name (``getLatestPod``)."""


class ResourceVersionChanged(EvictedPodChanged):
    """409: the pod changed since the resourceVersion the eviction expects (it may read it again)."""


def _set_pod_condition(conditions: list[Any], condition: dict[str, Any]) -> None:
    """``UpdatePodCondition``: replace the condition of that type, keeping its transition time when
    its status stays the same."""
    for i, old in enumerate(conditions):
        if isinstance(old, dict) and old.get("type") == condition["type"]:
            if old.get("status") == condition["status"]:
                condition["lastTransitionTime"] = old.get("lastTransitionTime")
            conditions[i] = condition
            return
    conditions.append(condition)


async def mark_disruption_target(
    ctx: Context, scope: RequestScope, preconditions: dict[str, Any]
) -> dict[str, Any]:
    """``addConditionAndDeletePod``'s first half: the pod gets ``DisruptionTarget`` before it goes.

    The condition (``True``, reason ``EvictionByEvictionAPI``, "Eviction API: evicting") tells the
    pod's workload and anyone watching why the pod is terminating. It is written to the pod as it is
    now, checked against the eviction's preconditions; the delete that follows must then expect the
    resourceVersion of this write. Returns the preconditions for that delete.
    """

    # errors.NewConflict(schema.GroupResource{Resource: "Pod"}, ...): "Pod", not "pods".
    details = {"name": ctx.name, "kind": "Pod"}

    def conflict(why: str) -> str:
        return f'Operation cannot be fulfilled on Pod "{ctx.name}": {why}'

    def mutate(current: Object) -> Object:
        meta = current["metadata"]
        uid, version = preconditions.get("uid"), preconditions.get("resourceVersion")
        if uid and uid != meta.get("uid"):
            why = (
                f"the UID in the precondition ({uid}) does not match the UID in record ({meta.get('uid')}). "
                "The object might have been deleted and then recreated"
            )
            raise EvictedPodChanged(409, "Conflict", conflict(why), details)
        if version and version != meta.get("resourceVersion"):
            why = (
                f"the ResourceVersion in the precondition ({version}) does not match the ResourceVersion in "
                f"record ({meta.get('resourceVersion')}). The object might have been modified"
            )
            raise ResourceVersionChanged(409, "Conflict", conflict(why), details)
        updated = deep_copy(current)
        status = updated.setdefault("status", {})
        if not isinstance(status.get("conditions"), list):
            status["conditions"] = []
        condition = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": format_time(ctx.registry.clock.now()),
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
        }
        _set_pod_condition(status["conditions"], condition)
        return updated

    written = await ctx.registry.update(ctx.namespace, ctx.name, mutate, scope=scope, subresource="status")
    if preconditions.get("resourceVersion"):
        # We changed the pod ourselves: the delete expects our write, not the version the client read.
        return {**preconditions, "resourceVersion": written.obj["metadata"]["resourceVersion"]}
    return preconditions


@dataclass(frozen=True)
class Decision:
    """What the budgets said about a pod that cannot skip them."""

    #: The budget that was consulted ("" when none matched).
    pdb_name: str = ""
    #: The pod goes without spending the budget, but only as it was read (it is unready).
    delete_as_read: bool = False
    #: An answer that ends the eviction instead of a delete (several budgets).
    reply: Reply | None = None


async def check_and_decrement(
    ctx: Context, registry: Registry, pod_name: str, pdb: Object, *, dry_run: bool
) -> None:
    """``checkAndDecrement``: refuse (429/403), or spend one disruption in the budget's status.

    Raises 409 Conflict when the budget changed since ``pdb`` was read.
    """
    meta = pdb["metadata"]
    status = pdb.get("status") or {}
    name = str(meta.get("name"))
    if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 0):
        raise still_being_processed(name)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise errors.forbidden("poddisruptionbudget", "policy", name, "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise errors.forbidden(
            "poddisruptionbudget",
            "policy",
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        )
    if allowed == 0:
        raise budget_exhausted(pdb)
    now = format_time(registry.clock.now())
    spent = deep_copy(pdb)
    spent_status = spent.setdefault("status", {})
    spent_status["disruptionsAllowed"] = allowed - 1
    if allowed - 1 == 0:
        update_disruption_allowed_condition(spent, now)
    if dry_run:
        return
    disrupted = spent_status.get("disruptedPods")
    if not isinstance(disrupted, dict):
        disrupted = spent_status["disruptedPods"] = {}
    disrupted[pod_name] = now
    read_version = str(meta.get("resourceVersion") or "")

    def mutate(current: Object) -> Object:
        written = deep_copy(spent)
        written["metadata"]["resourceVersion"] = read_version  # 409 if the budget changed since
        return written

    await registry.update(
        str(meta.get("namespace") or ""),
        name,
        mutate,
        scope=ctx.scope.already_admitted(
            "the budget's status write is the eviction's own (upstream: its loopback PDB client)"
        ),
        subresource="status",
    )


async def consult_budgets(ctx: Context, pod: Object, *, dry_run: bool) -> Decision:
    """The budgets' say on evicting ``pod`` (a pod ``can_ignore_pdb`` refused to let through)."""
    registry = ctx.backends.registries.get(PDB_RESOURCE)
    if registry is None:  # a lab serving no PodDisruptionBudgets: nothing to consult
        return Decision()
    pdbs = await pdbs_for_pod(registry, pod)
    if len(pdbs) > 1:
        return Decision(reply=multiple_pdbs_reply())
    if not pdbs:
        return Decision()
    pdb = pdbs[0]
    name = str(pdb["metadata"].get("name"))
    if not is_pod_ready(pod):
        # An unready pod does not count towards currentHealthy: letting it go spends nothing.
        if (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == ALWAYS_ALLOW:
            return Decision(pdb_name=name, delete_as_read=True)
        status = pdb.get("status") or {}
        current, desired = int(status.get("currentHealthy") or 0), int(status.get("desiredHealthy") or 0)
        if current >= desired > 0:
            return Decision(pdb_name=name, delete_as_read=True)
    pod_name = str(pod["metadata"].get("name"))
    for attempt in range(PDB_RETRIES):
        if attempt:
            pdb, _ = await registry.read(str(pdb["metadata"].get("namespace") or ""), name)
        try:
            await check_and_decrement(ctx, registry, pod_name, pdb, dry_run=dry_run)
        except errors.StatusError as error:
            if error.code == 409 and attempt < PDB_RETRIES - 1:
                continue  # the budget changed: read it again and decide again
            raise
        break
    return Decision(pdb_name=name)


__all__ = [
    "DISRUPTION_TARGET",
    "MAX_DISRUPTED_POD_SIZE",
    "MULTIPLE_PDBS_MESSAGE",
    "VIOLATION_MESSAGE",
    "Decision",
    "EvictedPodChanged",
    "ResourceVersionChanged",
    "budget_exhausted",
    "can_ignore_pdb",
    "check_and_decrement",
    "consult_budgets",
    "mark_disruption_target",
    "pdbs_for_pod",
    "should_enforce_resource_version",
    "still_being_processed",
]
