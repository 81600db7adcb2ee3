"""Namespace termination on the server side: ``Terminating``, and the ``finalize`` subresource.

Deleting a namespace does not delete it. The first DELETE only **marks** it: ``deletionTimestamp`` is
set and ``status.phase`` becomes ``Terminating``; the ``kubernetes`` entry in ``spec.finalizers`` (put
there when the namespace was created) holds it until the namespace controller has deleted everything
in it. The controller then removes its entry with ``PUT /api/v1/namespaces/<name>/finalize``, the
one door through which ``spec.finalizers`` may change. When ``spec.finalizers`` is empty (and
``metadata.finalizers`` too), the namespace is gone: the finalize request itself removes it, and a
DELETE of a marked namespace removes it as well. Until then, a DELETE of a marked namespace changes
nothing and answers with the namespace as it is.

This differs from every other kind, whose only finalizers are ``metadata.finalizers``; hence a
registry of its own for namespaces (``NamespaceRegistry``): its ``delete`` is upstream's
``REST.Delete``, and an update deletes the namespace only when both lists of finalizers are empty
(``ShouldDeleteNamespaceDuringUpdate``).

Hooks (in the files that dispatch requests):

- ``server.py``, where registries are built: ``finalize.registry_for(store, t, clock)`` instead of
  ``Registry(store, t, clock)``;
- ``routing.py``'s table: ``PUT namespaces/{name}/finalize`` is served by ``finalize.finalize``.

Upstream: ``pkg/registry/core/namespace/storage/storage.go`` (``Delete``,
``ShouldDeleteNamespaceDuringUpdate``, ``FinalizeREST``), ``pkg/registry/core/namespace/strategy.go``
(``namespaceFinalizeStrategy``).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from controlplane.api.meta import Object
from controlplane.api.resources import ResourceType
from controlplane.api.strategies.namespaces import NamespaceFinalizeStrategy
from controlplane.apiserver import errors, patching
from controlplane.apiserver.handlers.resources import Context, Reply, check_body_object
from controlplane.apiserver.http import decode_body, dumps
from controlplane.apiserver.registry import GUARANTEED_UPDATE_ATTEMPTS, Registry, timestamp
from controlplane.apiserver.requestscope import RequestScope, required
from controlplane.clock import Clock
from controlplane.store import Compare, Put, Store, Txn

TERMINATING = "Terminating"
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"


def is_namespaces(rtype: ResourceType) -> bool:
    return rtype.group == "" and rtype.plural == "namespaces"


def registry_for(store: Store, rtype: ResourceType, clock: Clock) -> Registry:
    """The registry of ``rtype``: namespaces get theirs, every other kind the generic one."""
    return NamespaceRegistry(store, rtype, clock) if is_namespaces(rtype) else Registry(store, rtype, clock)


def spec_finalizers(obj: Object) -> list[str]:
    spec = obj.get("spec")
    return list(spec.get("finalizers") or []) if isinstance(spec, dict) else []


class NamespaceRegistry(Registry):
    """Namespaces: marked ``Terminating`` on delete, removed once ``spec.finalizers`` is empty."""

    @staticmethod
    def _finished_deleting(obj: Object) -> bool:
        """``ShouldDeleteNamespaceDuringUpdate``: the generic rule, and no ``spec.finalizers`` left."""
        return Registry._finished_deleting(obj) and not spec_finalizers(obj)

    async def delete(
        self,
        namespace: str,
        name: str,
        *,
        scope: RequestScope,
        preconditions: dict[str, str] | None = None,
        grace_period: int | None = None,
        dry_run: bool = False,
        orphan: bool = False,
        foreground: bool = False,
    ) -> tuple[Object, bool]:
        """Upstream ``REST.Delete`` for namespaces."""
        scope = required(scope, "NamespaceRegistry.delete")
        key = self.key("", name)
        for _ in range(GUARANTEED_UPDATE_ATTEMPTS):
            kv = await self.store.get(key)
            if kv is None:
                raise self.not_found(name)
            current = self.decode(kv)
            meta = current["metadata"]
            self._check_preconditions(name, meta, kv.mod_revision, preconditions)
            if not meta.get("deletionTimestamp"):
                await scope.admit_delete(current)  # (a namespace already terminating: in ``super``)
            if meta.get("deletionTimestamp"):
                # Already terminating: gone only once every finalizer is.
                if spec_finalizers(current):
                    return current, False
                return await super().delete(
                    namespace,
                    name,
                    scope=scope,
                    preconditions=preconditions,
                    grace_period=grace_period,
                    dry_run=dry_run,
                    orphan=orphan,
                    foreground=foreground,
                )
            # The first request to delete switches the namespace to termination.
            marked = copy.deepcopy(current)
            mmeta = marked["metadata"]
            mmeta["deletionTimestamp"] = timestamp(self.clock)
            status = marked.get("status")
            if not isinstance(status, dict):
                status = marked["status"] = {}
            status["phase"] = TERMINATING
            finalizers = list(mmeta.get("finalizers") or [])
            for wanted, finalizer in ((orphan, ORPHAN_FINALIZER), (foreground, FOREGROUND_FINALIZER)):
                if wanted and finalizer not in finalizers:
                    finalizers.append(finalizer)
            if finalizers:
                mmeta["finalizers"] = finalizers
            if dry_run:
                return marked, False
            result = await self.store.txn(
                Txn(
                    compares=(Compare.unchanged(key, kv.mod_revision),),
                    success=(Put(key, self.encode(marked)),),
                ),
                request_id=scope.audit_id,
            )
            if result.succeeded:
                scope.stored("terminate", key, result.revision)
                mmeta["resourceVersion"] = str(result.revision)
                return marked, False
        raise errors.conflict(self.rtype.plural, self.rtype.group, name, errors.OBJECT_MODIFIED)

    def _check_preconditions(
        self, name: str, meta: dict[str, Any], revision: int, preconditions: dict[str, str] | None
    ) -> None:
        if not preconditions:
            return
        uid = preconditions.get("uid")
        if uid and uid != meta.get("uid"):
            raise errors.conflict(
                self.rtype.plural,
                self.rtype.group,
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}",
            )
        rv = preconditions.get("resourceVersion")
        if rv and rv != str(revision):
            raise errors.conflict(
                self.rtype.plural,
                self.rtype.group,
                name,
                f"Precondition failed: ResourceVersion in precondition: {rv}, "
                f"ResourceVersion in object meta: {revision}",
            )


async def finalize(ctx: Context) -> Reply:
    """``PUT namespaces/<name>/finalize``: only ``spec.finalizers`` changes (``FinalizeREST.Update``)."""
    body = decode_body(await ctx.request.read_body(), ctx.request.content_type)
    obj = check_body_object(ctx, body)
    name_in_body = obj["metadata"].get("name")
    if name_in_body and name_in_body != ctx.name:
        raise errors.bad_request(
            f"the name of the object ({name_in_body}) does not match the name on the URL ({ctx.name})"
        )
    obj["metadata"]["name"] = ctx.name
    rtype = dataclasses.replace(ctx.rtype, strategy=NamespaceFinalizeStrategy())
    registry = NamespaceRegistry(ctx.store, rtype, ctx.registry.clock)
    registry.transformer = ctx.registry.transformer
    written = await registry.update(
        "",
        ctx.name,
        lambda current: copy.deepcopy(obj),
        scope=ctx.scope,
        dry_run=ctx.dry_run,
        track=patching.tracker(ctx.rtype, ctx.request, "finalize", ctx.registry.clock),
    )
    return Reply(200, dumps(written.obj))


__all__ = ["NamespaceRegistry", "finalize", "is_namespaces", "registry_for", "spec_finalizers"]
