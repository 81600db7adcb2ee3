"""The generic registry: how every kind is created, read, updated and deleted in the store.

This mirrors kube-apiserver's ``k8s.io/apiserver/pkg/registry/generic/registry/store.go``. The steps
are the same for every kind; what differs is asked of the kind's strategy:

- **create**: generate the name from ``generateName`` if needed, set ``uid`` and
  ``creationTimestamp``, let the strategy prepare, default and validate, then write with
  *create-if-absent* (409 AlreadyExists if the name is taken);
- **update**: read, let the strategy prepare and validate, then write with
  *update-if-unchanged* on the ``resourceVersion`` the client sent (409 Conflict if someone wrote
  in between: optimistic concurrency); a client that sends no resourceVersion gets "last write wins";
- **delete**: objects with finalizers, or pods with a grace period, are only marked
  (``deletionTimestamp``); the rest are removed.

The object is stored without ``resourceVersion``: the store's revision *is* the resourceVersion, set
on the way out (apiserver ``storage/etcd3``'s versioner does the same).
"""

from __future__ import annotations

import copy
import json
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from controlplane.api.resources import ResourceType
from controlplane.apiserver import admission, errors, pipeline
from controlplane.clock import Clock
from controlplane.store import (
    Compare,
    Delete,
    Get,
    KeyValue,
    Put,
    Store,
    Txn,
)

Object = dict[str, Any]
#: Records a write in ``metadata.managedFields``: (live object or None on create, new object) -> new object.
Track = Callable[[Object | None, Object], Object]

#: Letters upstream's name generator uses (no vowels, so generated names spell no words).
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
#: How many times an update retries its read-modify-write after a conflict it caused itself.
GUARANTEED_UPDATE_ATTEMPTS = 16


def timestamp(clock: Clock) -> str:
    """RFC 3339 with second precision, as metav1.Time serializes."""
    return datetime.fromtimestamp(clock.now(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def encode(obj: Object) -> bytes:
    """The stored form: the object without its resourceVersion."""
    meta = obj["metadata"]
    rv = meta.pop("resourceVersion", None)
    try:
        return json.dumps(obj, separators=(",", ":")).encode()
    finally:
        if rv is not None:
            meta["resourceVersion"] = rv


def decode(kv: KeyValue) -> Object:
    obj: Object = json.loads(kv.value)
    obj.setdefault("metadata", {})["resourceVersion"] = str(kv.mod_revision)
    return obj


@dataclass(frozen=True, slots=True)
class Written:
    """The object as stored, and whether the write created it."""

    obj: Object
    created: bool = False


class Registry:
    """Create, read, update and delete objects of one resource type in one cluster's store."""

    def __init__(self, store: Store, rtype: ResourceType, clock: Clock) -> None:
        self.store = store
        self.rtype = rtype
        self.clock = clock
        self.strategy = rtype.strategy

    # -- helpers ---------------------------------------------------------------------------------

    def key(self, namespace: str, name: str) -> str:
        return self.rtype.key(namespace, name)

    def not_found(self, name: str) -> errors.StatusError:
        return errors.not_found(self.rtype.plural, self.rtype.group, name)

    def invalid(self, name: str, problems: list[Any]) -> errors.StatusError:
        return errors.invalid(self.rtype.kind, self.rtype.group, name, problems)

    async def read(self, namespace: str, name: str) -> tuple[Object, int]:
        kv = await self.store.get(self.key(namespace, name))
        if kv is None:
            raise self.not_found(name)
        return decode(kv), kv.mod_revision

    # -- create ----------------------------------------------------------------------------------

    def prepare_create(self, obj: Object, namespace: str, *, track: Track | None = None) -> Object:
        """Fill in what the server owns and check the result (no I/O). Raises 422 on problems.

        ``track`` records the write in ``metadata.managedFields`` (the field manager, which upstream
        runs after decoding and defaulting, before admission); None leaves them as they are.
        """
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))
        if self.rtype.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        meta.pop("resourceVersion", None)
        meta.pop("deletionTimestamp", None)
        meta.pop("deletionGracePeriodSeconds", None)
        meta.pop("selfLink", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = timestamp(self.clock)
        # Upstream's order: defaults while decoding, mutating admission, PrepareForCreate and
        # validation (BeforeCreate), validating admission, storage.
        self.strategy.default(obj)
        if track is not None:
            obj = track(None, obj)
        obj = admission.mutate("CREATE", obj, None)
        self.strategy.prepare_for_create(obj)
        problems = self.strategy.validate(obj, namespaced=self.rtype.namespaced)
        if problems:
            error = self.invalid(meta.get("name") or meta.get("generateName") or "", problems)
            pipeline.stage("validation", "deny", error.message)
            raise error
        pipeline.stage("validation", "pass")
        admission.validate("CREATE", obj, None)
        return obj

    async def create(
        self, obj: Object, namespace: str, *, dry_run: bool = False, track: Track | None = None
    ) -> Object:
        obj = self.prepare_create(obj, namespace, track=track)
        name = obj["metadata"]["name"]
        if dry_run:
            if await self.store.get(self.key(namespace, name)) is not None:
                raise errors.already_exists(self.rtype.plural, self.rtype.group, name)
            return obj
        key = self.key(namespace, name)
        result = await self.store.txn(
            Txn(compares=(Compare.absent(key),), success=(Put(key, encode(obj)),), failure=(Get(key),))
        )
        if not result.succeeded:
            pipeline.stage("storage", "deny", f"{key} already exists")
            raise errors.already_exists(self.rtype.plural, self.rtype.group, name)
        pipeline.stage("storage", "pass", f"created {key} at revision {result.revision}")
        obj["metadata"]["resourceVersion"] = str(result.revision)
        return obj

    # -- update ----------------------------------------------------------------------------------

    async def update(
        self,
        namespace: str,
        name: str,
        mutate: Callable[[Object], Object],
        *,
        subresource: str = "",
        dry_run: bool = False,
        create_if_missing: bool = False,
        track: Track | None = None,
    ) -> Written:
        """Read-modify-write with optimistic concurrency (upstream's ``GuaranteedUpdate``).

        ``mutate`` gets the current object (or None semantics via ``create_if_missing``) and returns
        the desired one. If the desired object carries a resourceVersion, it must equal the current
        one (else 409 Conflict). If it carries none, the write is unconditional on the client's side,
        and a race with another writer is retried here with a fresh read.
        """
        key = self.key(namespace, name)
        for _ in range(GUARANTEED_UPDATE_ATTEMPTS):
            kv = await self.store.get(key)
            if kv is None:
                if not create_if_missing:
                    raise self.not_found(name)
                desired = mutate({})
                desired.setdefault("metadata", {})["name"] = name
                created = await self.create(desired, namespace, dry_run=dry_run, track=track)
                return Written(created, created=True)
            current = decode(kv)
            desired = mutate(copy.deepcopy(current))
            meta = desired.setdefault("metadata", {})
            if not isinstance(meta, dict):
                raise errors.bad_request("metadata must be an object")
            sent_rv = meta.get("resourceVersion")
            if sent_rv not in (None, "") and str(sent_rv) != str(kv.mod_revision):
                raise errors.conflict(self.rtype.plural, self.rtype.group, name, errors.OBJECT_MODIFIED)
            if meta.get("name", name) != name:
                raise errors.bad_request(
                    f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
                )
            meta["name"] = name
            if self.rtype.namespaced:
                meta["namespace"] = namespace
            self._keep_server_fields(desired, current)
            if subresource == "binding":
                # pods/binding: the handler made the one change a binding may make (spec.nodeName and
                # the PodScheduled condition) and checked it; no strategy applies (upstream's
                # BindingREST writes it directly).
                problems = []
            elif subresource == "status":
                desired = admission.mutate("UPDATE", desired, current)
                self.strategy.prepare_for_status_update(desired, current)
                if track is not None:
                    desired = track(current, desired)
                problems = self.strategy.validate_status_update(
                    desired, current, namespaced=self.rtype.namespaced
                )
            else:
                self.strategy.default(desired)
                if track is not None:
                    desired = track(current, desired)
                desired = admission.mutate("UPDATE", desired, current)
                self.strategy.prepare_for_update(desired, current)
                problems = self.strategy.validate_update(desired, current, namespaced=self.rtype.namespaced)
            if problems:
                error = self.invalid(name, problems)
                pipeline.stage("validation", "deny", error.message)
                raise error
            pipeline.stage("validation", "pass")
            admission.validate("UPDATE", desired, current)
            if self._unchanged(desired, current):
                return Written(current)  # upstream skips the write: same resourceVersion back
            if dry_run:
                return Written(desired)
            if self._finished_deleting(desired):
                result = await self.store.txn(
                    Txn(compares=(Compare.unchanged(key, kv.mod_revision),), success=(Delete(key),))
                )
            else:
                result = await self.store.txn(
                    Txn(
                        compares=(Compare.unchanged(key, kv.mod_revision),),
                        success=(Put(key, encode(desired)),),
                        failure=(Get(key),),
                    )
                )
            if result.succeeded:
                pipeline.stage("storage", "pass", f"updated {key} at revision {result.revision}")
                desired["metadata"]["resourceVersion"] = str(result.revision)
                return Written(desired)
            # Someone wrote between our read and our write: read again and re-apply the change (as
            # etcd3's GuaranteedUpdate does). A client that pinned a resourceVersion (a PUT carrying
            # one, a patch that sets one) gets 409 at the check above; a patch without one is simply
            # applied to the newer object.
        raise errors.conflict(self.rtype.plural, self.rtype.group, name, errors.OBJECT_MODIFIED)

    @staticmethod
    def _keep_server_fields(desired: Object, current: Object) -> None:
        meta, old = desired["metadata"], current["metadata"]
        for field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if field in old:
                meta[field] = old[field]
            else:
                meta.pop(field, None)
        if "generation" in old:
            meta["generation"] = old["generation"]
        meta.pop("selfLink", None)

    @staticmethod
    def _unchanged(desired: Object, current: Object) -> bool:
        a = dict(desired, metadata={k: v for k, v in desired["metadata"].items() if k != "resourceVersion"})
        b = dict(current, metadata={k: v for k, v in current["metadata"].items() if k != "resourceVersion"})
        return a == b

    @staticmethod
    def _finished_deleting(obj: Object) -> bool:
        """An object marked for deletion whose last finalizer was just removed is deleted now."""
        meta = obj["metadata"]
        return (
            bool(meta.get("deletionTimestamp"))
            and not meta.get("finalizers")
            and not (meta.get("deletionGracePeriodSeconds"))
        )

    # -- delete ----------------------------------------------------------------------------------

    async def delete(
        self,
        namespace: str,
        name: str,
        *,
        preconditions: dict[str, str] | None = None,
        grace_period: int | None = None,
        dry_run: bool = False,
        orphan: bool = False,
        foreground: bool = False,
    ) -> tuple[Object, bool]:
        """Delete, or mark for deletion; returns the object and whether it is gone for good."""
        key = self.key(namespace, name)
        for _ in range(GUARANTEED_UPDATE_ATTEMPTS):
            kv = await self.store.get(key)
            if kv is None:
                raise self.not_found(name)
            current = decode(kv)
            meta = current["metadata"]
            if preconditions:
                if preconditions.get("uid") and preconditions["uid"] != meta.get("uid"):
                    raise errors.conflict(
                        self.rtype.plural,
                        self.rtype.group,
                        name,
                        f"Precondition failed: UID in precondition: {preconditions['uid']}, "
                        f"UID in object meta: {meta.get('uid')}",
                    )
                if preconditions.get("resourceVersion") and preconditions["resourceVersion"] != str(
                    kv.mod_revision
                ):
                    raise errors.conflict(
                        self.rtype.plural,
                        self.rtype.group,
                        name,
                        "Precondition failed: ResourceVersion in precondition: "
                        f"{preconditions['resourceVersion']}, "
                        f"ResourceVersion in object meta: {kv.mod_revision}",
                    )
            finalizers = list(meta.get("finalizers") or [])
            if orphan and "orphan" not in finalizers:
                finalizers.append("orphan")
            if foreground and "foregroundDeletion" not in finalizers:
                finalizers.append("foregroundDeletion")
            # Pods are deleted gracefully: first only marked, with a grace period for the kubelet
            # to stop them; the kubelet's own delete (grace 0) removes them. Objects with
            # finalizers are marked too, and removed when the last finalizer is (``update``).
            period = self.strategy.deletion_grace_period(current, grace_period)
            graceful = period > 0
            if finalizers or graceful:
                marked = copy.deepcopy(current)
                mmeta = marked["metadata"]
                old_period = mmeta.get("deletionGracePeriodSeconds")
                if not mmeta.get("deletionTimestamp") or (old_period is not None and period < old_period):
                    mmeta["deletionTimestamp"] = timestamp(self.clock)
                    mmeta["deletionGracePeriodSeconds"] = period
                if finalizers:
                    mmeta["finalizers"] = finalizers
                if dry_run or marked == current:
                    return marked, False
                result = await self.store.txn(
                    Txn(
                        compares=(Compare.unchanged(key, kv.mod_revision),),
                        success=(Put(key, encode(marked)),),
                    )
                )
                if result.succeeded:
                    mmeta["resourceVersion"] = str(result.revision)
                    return marked, False
                continue
            if dry_run:
                return current, True
            result = await self.store.txn(
                Txn(compares=(Compare.unchanged(key, kv.mod_revision),), success=(Delete(key),))
            )
            if result.succeeded:
                meta["resourceVersion"] = str(result.revision)
                return current, True
        raise errors.conflict(self.rtype.plural, self.rtype.group, name, errors.OBJECT_MODIFIED)


__all__ = ["Registry", "Written", "decode", "encode", "timestamp"]
