"""The namespace controller: deleting a namespace deletes everything in it, then the namespace.

``kubectl delete namespace shop`` does not remove the namespace at once. The API server marks it
(``deletionTimestamp``, ``status.phase: Terminating``) and keeps it, because its ``spec.finalizers``
still holds ``kubernetes``: the promise that this controller will empty it first. For a namespace
being deleted, the controller:

1. **discovers** every namespaced resource the server serves (``discovery.py``): not a fixed list,
   since a namespace may hold kinds this code has never heard of;
2. **deletes all content**, resource by resource: one ``deletecollection`` where the resource supports
   it (every pod of the namespace in one request), otherwise a list and one delete per object;
3. **checks what remains**. Objects with finalizers, and pods (the kubelet first stops their
   containers, up to ``terminationGracePeriodSeconds``), take time to go: the controller looks again
   after half the longest grace period, plus one second, as upstream does; anything else still there
   is a failure, retried with backoff;
4. reports progress on the namespace's **status conditions**, with upstream's types, reasons and
   messages (``kubectl describe namespace shop`` shows them)::

       NamespaceDeletionDiscoveryFailure   False  ResourcesDiscovered   All resources successfully discovered
       NamespaceDeletionContentFailure     False  ContentDeleted        All content successfully deleted, ...
       NamespaceContentRemaining           True   SomeResourcesRemain   Some resources are remaining: ...
       NamespaceFinalizersRemaining        False  ContentHasNoFinalizers ...

5. when nothing remains, **finalizes**: removes ``kubernetes`` from ``spec.finalizers`` through
   ``PUT namespaces/<name>/finalize``; with no finalizer left, the API server removes the namespace
   (the controller's own DELETE afterwards makes sure of it).

Deleting content uses ``propagationPolicy: Background``: the dependents of what is deleted here are
the garbage collector's business, and in any case live in the same namespace, so they are deleted
here too.

Upstream: ``pkg/controller/namespace/namespace_controller.go``,
``pkg/controller/namespace/deletion/namespaced_resources_deleter.go``,
``pkg/controller/namespace/deletion/status_condition_utils.go``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controlplane.api.meta import Object, format_time
from controlplane.client.errors import APIError, Conflict, MethodNotAllowed, NotFound, TransportError
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.rest import ResourceClient, RESTClient
from controlplane.client.workqueue_ratelimiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
)
from controlplane.clock import Clock
from controlplane.components.controllers.discovery import APIResource, discover
from controlplane.components.controllers.kinds import NAMESPACES

logger = logging.getLogger(__name__)


#: The finalizer this controller owns in ``spec.finalizers`` (``v1.FinalizerKubernetes``).
FINALIZER_TOKEN = "kubernetes"
#: kube-controller-manager's ``--concurrent-namespace-syncs`` default.
DEFAULT_WORKERS = 10
#: Seconds assumed for objects with finalizers to go (``finalizerEstimateSeconds``).
FINALIZER_ESTIMATE_SECONDS = 15
#: How many times a write on the namespace is retried after a 409 (``retryOnConflictError``).
CONFLICT_RETRIES = 5

DISCOVERY_FAILURE = "NamespaceDeletionDiscoveryFailure"
GV_PARSING_FAILURE = "NamespaceDeletionGroupVersionParsingFailure"
CONTENT_FAILURE = "NamespaceDeletionContentFailure"
CONTENT_REMAINING = "NamespaceContentRemaining"
FINALIZERS_REMAINING = "NamespaceFinalizersRemaining"

#: The conditions the controller maintains, in upstream's order (``conditionTypes``).
CONDITION_TYPES = (
    DISCOVERY_FAILURE,
    GV_PARSING_FAILURE,
    CONTENT_FAILURE,
    CONTENT_REMAINING,
    FINALIZERS_REMAINING,
)
OK_MESSAGES = {
    DISCOVERY_FAILURE: "All resources successfully discovered",
    GV_PARSING_FAILURE: "All legacy kube types successfully parsed",
    CONTENT_FAILURE: "All content successfully deleted, may be waiting on finalization",
    CONTENT_REMAINING: "All content successfully removed",
    FINALIZERS_REMAINING: "All content-preserving finalizers finished",
}
OK_REASONS = {
    DISCOVERY_FAILURE: "ResourcesDiscovered",
    GV_PARSING_FAILURE: "ParsedGroupVersions",
    CONTENT_FAILURE: "ContentDeleted",
    CONTENT_REMAINING: "ContentRemoved",
    FINALIZERS_REMAINING: "ContentHasNoFinalizers",
}


# -- pure parts --------------------------------------------------------------------------------------


@dataclass
class ContentTotals:
    """What remains in the namespace: objects per resource, and objects per finalizer."""

    remaining: dict[str, int] = field(default_factory=dict)
    finalizers: dict[str, int] = field(default_factory=dict)

    def add(self, resource: APIResource, items: Iterable[Mapping[str, Any]]) -> None:
        count = 0
        for item in items:
            count += 1
            for finalizer in (item.get("metadata") or {}).get("finalizers") or []:
                self.finalizers[finalizer] = self.finalizers.get(finalizer, 0) + 1
        if count:
            # Upstream prints ``gvr.Resource + "." + gvr.Group``: "pods." for the core group.
            key = f"{resource.plural}.{resource.group}"
            self.remaining[key] = self.remaining.get(key, 0) + count


class ConditionUpdater:
    """Turns what went wrong during one pass into namespace conditions (``namespaceConditionUpdater``)."""

    def __init__(self, now: str) -> None:
        self.now = now
        self.new_conditions: list[Object] = []
        self.delete_content_errors: list[str] = []

    def _condition(self, type: str, reason: str, message: str) -> Object:
        return {
            "type": type,
            "status": "True",
            "lastTransitionTime": self.now,
            "reason": reason,
            "message": message,
        }

    def process_discovery_error(self, message: str, failing_groups: int) -> None:
        text = f"Discovery failed for some groups, {failing_groups} failing: {message}"
        self.new_conditions.append(self._condition(DISCOVERY_FAILURE, "DiscoveryFailed", text))

    def process_delete_content_error(self, message: str) -> None:
        self.delete_content_errors.append(message)

    def process_content_totals(self, totals: ContentTotals) -> None:
        if totals.remaining:
            parts = sorted(f"{r} has {n} resource instances" for r, n in totals.remaining.items() if n)
            self.new_conditions.append(
                self._condition(
                    CONTENT_REMAINING,
                    "SomeResourcesRemain",
                    f"Some resources are remaining: {', '.join(parts)}",
                )
            )
        if totals.finalizers:
            parts = sorted(f"{f} in {n} resource instances" for f, n in totals.finalizers.items() if n)
            self.new_conditions.append(
                self._condition(
                    FINALIZERS_REMAINING,
                    "SomeFinalizersRemain",
                    f"Some finalizers are remaining: {', '.join(parts)}",
                )
            )

    def update(self, namespace: Object) -> bool:
        """Write the conditions into ``namespace["status"]``; whether anything changed (``Update``)."""
        if not any(c["type"] == CONTENT_FAILURE for c in self.new_conditions) and self.delete_content_errors:
            messages = sorted(self.delete_content_errors)
            self.new_conditions.append(
                self._condition(
                    CONTENT_FAILURE,
                    "ContentDeletionFailed",
                    f"Failed to delete all resource types, {len(messages)} remaining: {', '.join(messages)}",
                )
            )
        status = namespace.setdefault("status", {})
        conditions: list[Object] = status.setdefault("conditions", [])
        changed = False
        for type in CONDITION_TYPES:
            new = next((c for c in self.new_conditions if c["type"] == type), None)
            if new is None:
                new = {
                    "type": type,
                    "status": "False",
                    "lastTransitionTime": self.now,
                    "reason": OK_REASONS[type],
                    "message": OK_MESSAGES[type],
                }
            old = next((c for c in conditions if c.get("type") == type), None)
            if old is None:
                conditions.append(new)
                changed = True
            elif (old.get("status"), old.get("message"), old.get("reason")) != (
                new["status"],
                new["message"],
                new["reason"],
            ):
                if old.get("status") != new["status"]:
                    old["lastTransitionTime"] = self.now
                old.update(status=new["status"], reason=new["reason"], message=new["message"])
                changed = True
        return changed


def estimate_graceful_termination(pods: Iterable[Mapping[str, Any]]) -> int:
    """The longest grace period of the pods still running (``estimateGracefulTerminationForPods``)."""
    estimate = 0
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
        if isinstance(grace, int) and grace > estimate:
            estimate = grace
    return estimate


def requeue_after(estimate: int) -> float:
    """How long to wait before looking again while content remains (``estimate/2 + 1`` seconds)."""
    return float(estimate // 2 + 1)


def finalized(namespace: Mapping[str, Any]) -> bool:
    return not (namespace.get("spec") or {}).get("finalizers")


def finalize_body(namespace: Mapping[str, Any], token: str = FINALIZER_TOKEN) -> Object:
    """The namespace with ``token`` removed from ``spec.finalizers`` (the rest sorted, as upstream)."""
    spec = dict(namespace.get("spec") or {})
    spec["finalizers"] = sorted({f for f in spec.get("finalizers") or [] if f != token})
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": dict(namespace.get("metadata") or {}),
        "spec": spec,
    }


@dataclass(frozen=True)
class ResourceDeletion:
    """What deleting one resource's content left behind (upstream ``gvrDeletionMetadata``)."""

    estimate: int = 0
    items: tuple[Object, ...] = ()


class ContentRemains(Exception):
    """Content could not be deleted; the message lists why (retried with backoff)."""


# -- the controller ----------------------------------------------------------------------------------


class NamespaceController:
    """The reconciler: a namespace being deleted is emptied, finalized and removed."""

    def __init__(self, manager: Manager, *, finalizer_token: str = FINALIZER_TOKEN) -> None:
        self.client: RESTClient = manager.client
        self.clock = manager.clock
        self.cache = manager.cache(NAMESPACES)
        self.namespaces = manager.client.resource("", "v1", "namespaces")
        self.finalizer_token = finalizer_token

    async def reconcile(self, request: Request) -> Result:
        cached = self.cache.get_by_key(request.key)
        if cached is None or not cached["metadata"].get("deletionTimestamp"):
            return Result()
        # Several controllers may write a terminating namespace: work from its latest state.
        try:
            namespace = await self.namespaces.get(request.name)
        except NotFound:
            return Result()
        if not namespace["metadata"].get("deletionTimestamp"):
            return Result()
        namespace = await self._ensure_terminating(namespace)
        if finalized(namespace):
            await self._delete_namespace(namespace)
            return Result()
        estimate = await self.delete_all_content(namespace)
        if estimate > 0:
            logger.info(
                "namespace %s: some content remains, estimate %d seconds before it is removed",
                request.name,
                estimate,
            )
            return Result(requeue_after=requeue_after(estimate))
        namespace = await self._finalize(namespace)
        if finalized(namespace):
            await self._delete_namespace(namespace)
        return Result()

    # -- the namespace itself ------------------------------------------------------------------------

    async def _ensure_terminating(self, namespace: Object) -> Object:
        """``updateNamespaceStatusFunc``: phase Terminating once deletionTimestamp is set."""
        if (namespace.get("status") or {}).get("phase") == "Terminating":
            return namespace
        namespace.setdefault("status", {})["phase"] = "Terminating"
        return await self.namespaces.update_status(namespace)

    async def _finalize(self, namespace: Object) -> Object:
        """Remove our token from ``spec.finalizers`` via ``namespaces/<n>/finalize``, retrying conflicts."""
        name, uid = namespace["metadata"]["name"], namespace["metadata"].get("uid")
        for _ in range(CONFLICT_RETRIES):
            if self.finalizer_token not in ((namespace.get("spec") or {}).get("finalizers") or []):
                return namespace
            try:
                return await self.client.request_json(
                    "PUT",
                    self.namespaces.path(name, "finalize"),
                    body=finalize_body(namespace, self.finalizer_token),
                )
            except NotFound:
                return finalize_body(namespace, self.finalizer_token)  # removed already
            except Conflict:
                namespace = await self.namespaces.get(name)
                if namespace["metadata"].get("uid") != uid:
                    raise ContentRemains("namespace uid has changed across retries") from None
        raise ContentRemains(f"namespace {name}: could not finalize after {CONFLICT_RETRIES} conflicts")

    async def _delete_namespace(self, namespace: Object) -> None:
        meta = namespace["metadata"]
        with contextlib.suppress(NotFound):
            await self.namespaces.delete(
                meta["name"], preconditions={"uid": meta["uid"]} if meta.get("uid") else None
            )

    # -- the content ---------------------------------------------------------------------------------

    async def delete_all_content(self, namespace: Object) -> int:
        """Delete every namespaced object; the seconds to wait for what remains (``deleteAllContent``).

        Conditions are written on the namespace after each pass. Failures are collected (one failing
        resource does not stop the others) and raised together at the end as ``ContentRemains``.
        """
        name = namespace["metadata"]["name"]
        updater = ConditionUpdater(format_time(self.clock.now()))
        problems: list[str] = []
        resources: list[APIResource] = []
        try:
            found = await discover(self.client)
        except (APIError, TransportError) as error:
            problems.append(str(error))
            updater.process_discovery_error(str(error), 1)
        else:
            if found.failed:
                problems.append(found.error_message())
                updater.process_discovery_error(found.error_message(), len(found.failed))
            resources = found.filtered_by("delete", namespaced=True)
        estimate = 0
        totals = ContentTotals()
        for resource in resources:
            try:
                deletion = await self._delete_resource_content(resource, name)
            except ContentRemains as error:
                problems.append(str(error))
                updater.process_delete_content_error(str(error))
                continue
            except (APIError, TransportError) as error:
                message = f"{resource.group_resource}: {error}"
                problems.append(message)
                updater.process_delete_content_error(message)
                continue
            estimate = max(estimate, deletion.estimate)
            totals.add(resource, deletion.items)
        updater.process_content_totals(totals)
        if updater.update(namespace):
            try:
                namespace.update(await self.namespaces.update_status(namespace))
            except (APIError, TransportError) as error:
                logger.warning("couldn't update status condition for namespace %r: %s", name, error)
        if problems:
            raise ContentRemains("; ".join(problems))
        return estimate

    async def _delete_resource_content(self, resource: APIResource, namespace: str) -> ResourceDeletion:
        """``deleteAllContentForGroupVersionResource`` for one resource."""
        client = self.client.resource(resource.group, resource.version, resource.plural, namespace)
        estimate = 0
        if (resource.group, resource.plural) == ("", "pods") and resource.supports("list"):
            estimate = estimate_graceful_termination((await client.list())["items"])
        if not await self._delete_collection(client, resource):
            await self._delete_each_item(client, resource)
        if not resource.supports("list"):
            return ResourceDeletion(estimate)
        items = tuple((await client.list())["items"])
        if not items:
            return ResourceDeletion(0)
        if estimate:
            return ResourceDeletion(estimate, items)
        if any((item.get("metadata") or {}).get("finalizers") for item in items):
            # Finalizers are a normal reason to wait: give their controllers time.
            return ResourceDeletion(FINALIZER_ESTIMATE_SECONDS, items)
        raise ContentRemains(
            f"unexpected items still remain in namespace: {namespace} for gvr: "
            f"{resource.group}/{resource.version}, Resource={resource.plural}"
        )

    async def _delete_collection(self, client: ResourceClient, resource: APIResource) -> bool:
        """One ``deletecollection``; False if the resource does not support it."""
        if not resource.supports("deletecollection"):
            return False
        try:
            await client.delete_collection(propagation_policy="Background")
        except (MethodNotAllowed, NotFound):
            return False
        return True

    async def _delete_each_item(self, client: ResourceClient, resource: APIResource) -> None:
        if not resource.supports("list"):
            return
        for item in (await client.list())["items"]:
            meta = item.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                continue
            with contextlib.suppress(NotFound):
                await client.delete(str(meta["name"]), propagation_policy="Background")


def rate_limiter(clock: Clock) -> MaxOfRateLimiter:
    """Upstream's ``nsControllerRateLimiter``: 5 ms doubling up to 60 s per namespace, 10/s overall."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 60.0), BucketRateLimiter(10.0, 100, clock=clock)
    )


def add_to_manager(manager: Manager, *, workers: int = DEFAULT_WORKERS) -> Controller:
    """Add the namespace controller (for namespaces) to ``manager``."""
    return manager.new_controller(
        "namespace",
        NamespaceController(manager),
        for_=NAMESPACES,
        workers=workers,
        rate_limiter=rate_limiter(manager.clock),
    )


__all__ = [
    "CONDITION_TYPES",
    "FINALIZER_TOKEN",
    "NAMESPACES",
    "ConditionUpdater",
    "ContentRemains",
    "ContentTotals",
    "NamespaceController",
    "add_to_manager",
    "estimate_graceful_termination",
    "finalize_body",
    "finalized",
    "requeue_after",
]
