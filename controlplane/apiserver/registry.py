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

Every write is made for a request, named by its ``RequestScope`` (``requestscope.py``), a required
argument of each write method: the scope admits the object (mutating admission after defaulting,
validating admission after validation, both on delete), reports each stage on the trace, and collects
the revision the write committed. The API server's own writes pass a scope that says why they are not
admitted; no write can leave the scope out.

The object is stored without ``resourceVersion``: the store's revision *is* the resourceVersion, set
on the way out (apiserver ``storage/etcd3``'s versioner does the same). A type that shares its storage
with another version (``events.k8s.io/v1`` events are core ``v1`` events) is converted to the stored
form on the way in and back on the way out (``ResourceType.to_storage``/``from_storage``): the registry
works in the version of the request, the store holds one form.

**Claims: values no two objects may hold.** A Service's cluster IP and node ports must be unique in
the cluster. A strategy that allocates such values (``ServiceStrategy``) lists them as *claims*, each a
store key (``/registry/ipaddresses/10.96.0.10``, ``/registry/ranges/servicenodeports/30080``). The
registry writes an object together with the claims it does not hold yet, in **one transaction**, each
guarded by "this key does not exist"; so two Services asking for the same IP at the same moment cannot
both win, whatever the timing. When a claim is taken:

- if the client asked for that value, the answer is upstream's 422 ("provided IP is already
  allocated") and nothing is written;
- if the strategy chose it, the strategy chooses again (``reallocate(obj, request, attempt)``) and
  the transaction is retried.

Claims an update no longer holds (a Service turned ``ExternalName`` holds no IP) are deleted in the
update's transaction, and all of them in the transaction that deletes the object. Upstream keeps the
same bookkeeping in allocators backed by etcd (``pkg/registry/core/service/ipallocator``,
``portallocator``, and since 1.33 ``IPAddress`` objects under ``/registry/ipaddresses``), released by
``pkg/registry/core/service/storage/storage.go``'s ``afterDelete``/``afterUpdate``; the claim keys
here are internal bookkeeping and no resource type serves them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Protocol, runtime_checkable

from controlplane.api import serializer
from controlplane.api.deepcopy import deep_copy
from controlplane.api.fieldmanager.managedfields import ignore_managed_fields_timestamps
from controlplane.api.meta import Object
from controlplane.api.resources import ResourceType
from controlplane.api.validation import FieldError
from controlplane.apiserver import errors
from controlplane.apiserver.encryption.storage import open_json, seal
from controlplane.apiserver.encryption.transformer import Transformer
from controlplane.apiserver.requestscope import RequestScope, required
from controlplane.clock import Clock
from controlplane.store import (
    Compare,
    Delete,
    Get,
    KeyValue,
    Put,
    Store,
    Txn,
    TxnResult,
)
from controlplane.uids import new_uid, random_string

#: Records a write in ``metadata.managedFields``: (live object or None on create, new object) -> new object.
Track = Callable[[Object | None, Object], Object]

#: Names tried for one create with ``generateName`` (upstream's ``maxNameGenerationCreateAttempts``).
NAME_GENERATION_ATTEMPTS = 8


def generate_name(prefix: str) -> str:
    """``names.SimpleNameGenerator``: the prefix and five random characters (no vowels, no 0/1/3)."""
    return prefix + random_string(5)


#: How many times an update retries its read-modify-write after a conflict it caused itself.
GUARANTEED_UPDATE_ATTEMPTS = 16
#: How many times a write chooses again after values the strategy chose turned out to be taken.
ALLOCATION_ATTEMPTS = 32


class Claim(Protocol):
    """One value an object holds that no other may (see the module docstring), as a strategy lists it."""

    @property
    def key(self) -> str:
        """The store key that marks the value taken."""
        ...

    @property
    def field(self) -> str:
        """The field path holding the value (``spec.clusterIPs``)."""
        ...

    def requested_in(self, request: Mapping[str, Any]) -> bool:
        """Whether the client's object asked for this exact value."""
        ...

    def conflict(self) -> FieldError:
        """The validation error when the client asked for a value that is taken."""
        ...


@runtime_checkable
class AllocatingStrategy(Protocol):
    """A strategy whose objects hold claims (``ServiceStrategy``)."""

    def claims(self, obj: Object) -> Sequence[Claim]: ...

    def reallocate(self, obj: Object, request: Mapping[str, Any], attempt: int) -> None: ...


def timestamp(clock: Clock) -> str:
    """RFC 3339 with second precision, as metav1.Time serializes."""
    return format_seconds(clock.now())


#: The last second :func:`format_seconds` wrote, and its text: every write of a busy second asks for
#: the same one (``creationTimestamp``, managedFields' ``time``), and ``strftime`` is not free.
_last_second: tuple[int, str] = (-1, "")
#: ``datetime.fromtimestamp`` rounds to the microsecond: from here up, the second may round up.
_ROUNDS_UP = 0.9999995


def format_seconds(moment: float) -> str:
    """``moment`` (seconds since the epoch) in RFC 3339 at second precision, e.g. ``2025-01-01T10:00:00Z``."""
    global _last_second
    second = int(moment)
    if second == _last_second[0] and 0 <= moment - second < _ROUNDS_UP:
        return _last_second[1]
    text = datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if 0 <= moment - second < _ROUNDS_UP:
        _last_second = (second, text)
    return text


#: ObjectMeta's lists and maps, all ``omitempty`` (staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/
#: types.go): Go's encoder leaves an empty one out, so removing the last label leaves no ``labels``.
EMPTY_OMITTED: Final = ("labels", "annotations", "finalizers", "ownerReferences")


def encode(obj: Object) -> bytes:
    """The stored form: the object without its resourceVersion, and without the metadata's empty
    lists and maps (``EMPTY_OMITTED``; dropped from ``obj`` too, which is what the client is sent)."""
    meta = obj["metadata"]
    for name in EMPTY_OMITTED:
        if name in meta and (meta[name] is None or meta[name] in ({}, [])):
            del meta[name]
    rv = meta.pop("resourceVersion", None)
    try:
        return serializer.encode(obj)
    except serializer.UnencodableObject as error:
        raise errors.bad_request(f"the object cannot be stored: {error}") from None
    finally:
        if rv is not None:
            meta["resourceVersion"] = rv


def decode(kv: KeyValue, transformer: Transformer | None = None) -> Object:
    """A stored object with its resourceVersion; ``transformer`` decrypts it (encryption at rest)."""
    obj: Object = serializer.decode(kv.value) if transformer is None else open_json(transformer, kv)
    obj.setdefault("metadata", {})["resourceVersion"] = str(kv.mod_revision)
    return obj


def asked_or_held(current: Object, request: Any) -> Any:
    """Every value in the client's ``request`` or in the ``current`` object, as one JSON document.

    Objects merge key by key, lists concatenate, and a scalar is the request's where it has one. An
    update that must choose a value again passes this to ``reallocate`` as the "request": a value the
    object already holds counts as asked for, so only the newly chosen, colliding ones change.
    """
    if isinstance(current, dict) and isinstance(request, dict):
        merged = dict(current)
        for name, value in request.items():
            merged[name] = asked_or_held(current[name], value) if name in current else value
        return merged
    if isinstance(current, list) and isinstance(request, list):
        return current + request
    return current if request is None else request


def _found(response: object) -> bool:
    """Whether a ``Get`` of a failed transaction found its key."""
    return getattr(response, "kv", None) is not None


@dataclass(frozen=True, slots=True)
class Written:
    """The object as stored, and whether the write created it."""

    obj: Object
    created: bool = False


class Registry:
    """Create, read, update and delete objects of one resource type in one cluster's store."""

    #: Encryption at rest: how this resource's values are transformed on their way to the store and
    #: back (``controlplane.apiserver.encryption``, set by the API server); None stores the JSON as is.
    transformer: Transformer | None = None

    def __init__(self, store: Store, rtype: ResourceType, clock: Clock) -> None:
        self.store = store
        self.rtype = rtype
        self.clock = clock
        self.strategy = rtype.strategy
        #: The strategy, if its objects hold claims (see the module docstring).
        self.allocator = self.strategy if isinstance(self.strategy, AllocatingStrategy) else None
        #: A check of each write that needs more than the object (the RBAC kinds' escalation check,
        #: ``authz/escalation.py``): called with the new and the old object (None on create) and the
        #: write's scope (who writes) after mutating admission, where upstream's ``policybased``
        #: storage wrappers run; raises to refuse.
        self.guard: Callable[[Object, Object | None, RequestScope], None] | None = None

    # -- helpers ---------------------------------------------------------------------------------

    def key(self, namespace: str, name: str) -> str:
        return self.rtype.key(namespace, name)

    def not_found(self, name: str) -> errors.StatusError:
        return errors.not_found(self.rtype.plural, self.rtype.group, name)

    def invalid(self, name: str, problems: list[Any]) -> errors.StatusError:
        return errors.invalid(self.rtype.kind, self.rtype.group, name, problems)

    def encode(self, obj: Object) -> bytes:
        """The stored bytes of an object of this type's version (converted to the stored form)."""
        if self.transformer is None:
            return encode(self.rtype.to_storage(obj))
        meta = obj["metadata"]  # the store key is the ciphertext's authenticated data
        key = self.key(meta.get("namespace", ""), meta["name"])
        return seal(self.transformer, encode(self.rtype.to_storage(obj)), key)

    def decode(self, kv: KeyValue) -> Object:
        """A stored object, in this type's version, with its resourceVersion."""
        return self.rtype.from_storage(decode(kv, self.transformer))

    async def read(self, namespace: str, name: str) -> tuple[Object, int]:
        kv = await self.store.get(self.key(namespace, name))
        if kv is None:
            raise self.not_found(name)
        return self.decode(kv), kv.mod_revision

    # -- claims ----------------------------------------------------------------------------------

    def claims(self, obj: Object) -> list[Claim]:
        return list(self.allocator.claims(obj)) if self.allocator is not None else []

    def claim_record(self, claim: Claim, obj: Object) -> bytes:
        """What a claim key holds: who claimed it, for the etcd panel and for anyone debugging."""
        meta = obj.get("metadata") or {}
        owner = {
            "group": self.rtype.group,
            "resource": self.rtype.plural,
            "namespace": meta.get("namespace", ""),
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
        }
        return json.dumps({"claimedBy": owner, "field": claim.field}, separators=(",", ":")).encode()

    async def _taken(self, claims: list[Claim]) -> list[Claim]:
        """The claims whose keys exist (dry runs look, without writing)."""
        return [claim for claim in claims if await self.store.get(claim.key) is not None]

    def _choose_again(
        self,
        obj: Object,
        request: Object,
        taken: list[Claim],
        attempt: int,
        name: str,
        scope: RequestScope,
        *,
        held_by: Object,
    ) -> None:
        """Answer 422 for taken values the client asked for; let the strategy choose the others again."""
        requested = [claim for claim in taken if claim.requested_in(request)]
        if requested:
            error = self.invalid(name, [claim.conflict() for claim in requested])
            scope.stage("storage", "deny", f"{requested[0].key} is already taken")
            raise error
        assert self.allocator is not None
        self.allocator.reallocate(obj, asked_or_held(held_by, request), attempt + 1)

    def _allocation_failed(self, taken: list[Claim], scope: RequestScope) -> errors.StatusError:
        """Every choice collided: the range is (nearly) full. Upstream answers 500 here too."""
        fields = ", ".join(dict.fromkeys(claim.field for claim in taken))
        scope.stage("storage", "deny", f"no free value for {fields}")
        return errors.internal_error(f"failed to allocate {fields}: range is full")

    # -- create ----------------------------------------------------------------------------------
    #
    # Every method that writes (or admits what will be written) takes the write's ``RequestScope``,
    # required: see ``requestscope.py``.

    async def prepare_create(
        self, obj: Object, namespace: str, *, scope: RequestScope, track: Track | None = None
    ) -> Object:
        """Fill in what the server owns, admit and check the result. Raises 422 on problems.

        ``track`` records the write in ``metadata.managedFields`` (the field manager, which upstream
        runs after decoding and defaulting, before admission); None leaves them as they are.
        """
        scope = required(scope, "Registry.prepare_create")
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = generate_name(meta["generateName"])
        if self.rtype.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        meta.pop("resourceVersion", None)
        meta.pop("deletionTimestamp", None)
        meta.pop("deletionGracePeriodSeconds", None)
        meta.pop("selfLink", None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = timestamp(self.clock)
        # Upstream's order: defaults while decoding, mutating admission, PrepareForCreate and
        # validation (BeforeCreate), validating admission, storage.
        self.strategy.default(obj)
        if track is not None:
            obj = track(None, obj)
        obj = await scope.mutate("CREATE", obj, None)
        if self.guard is not None:
            self.guard(obj, None, scope)
        self.strategy.prepare_for_create(obj)
        self.strategy.set_requester(obj, scope.user)
        problems = self.strategy.validate(obj, namespaced=self.rtype.namespaced)
        if problems:
            error = self.invalid(meta.get("name") or meta.get("generateName") or "", problems)
            scope.stage("validation", "deny", error.message)
            raise error
        scope.stage("validation", "pass")
        for warning in self.strategy.warnings_on_create(obj):  # upstream's rest.BeforeCreate
            scope.warn(warning)
        await scope.validate("CREATE", obj, None)
        return obj

    async def create(
        self,
        obj: Object,
        namespace: str,
        *,
        scope: RequestScope,
        dry_run: bool = False,
        track: Track | None = None,
    ) -> Object:
        """Create ``obj`` in ``namespace``: prepared and admitted, then written if its name is free."""
        scope = required(scope, "Registry.create")
        # The client's own object, to tell the values it asked for from those the strategy chose.
        request = deep_copy(obj) if self.allocator is not None else obj
        generated = not (obj.get("metadata") or {}).get("name")
        obj = await self.prepare_create(obj, namespace, scope=scope, track=track)
        name = obj["metadata"]["name"]
        key = self.key(namespace, name)
        taken: list[Claim] = []
        names_left = NAME_GENERATION_ATTEMPTS - 1
        for attempt in range(ALLOCATION_ATTEMPTS + NAME_GENERATION_ATTEMPTS):
            claims = self.claims(obj)
            if dry_run:
                exists = await self.store.get(key) is not None
                taken = await self._taken(claims)
            else:
                result = await self.store.txn(
                    Txn(
                        compares=(Compare.absent(key), *(Compare.absent(c.key) for c in claims)),
                        success=(
                            Put(key, self.encode(obj)),
                            *(Put(c.key, self.claim_record(c, obj)) for c in claims),
                        ),
                        failure=(Get(key), *(Get(c.key) for c in claims)),
                    ),
                    request_id=scope.audit_id,
                )
                if result.succeeded:
                    held = f"with {len(claims)} claims" if claims else ""
                    scope.stored("create", key, result.revision, detail=held)
                    obj["metadata"]["resourceVersion"] = str(result.revision)
                    return obj
                exists = _found(result.responses[0])
                taken = [c for c, r in zip(claims, result.responses[1:], strict=True) if _found(r)]
            if not taken:
                if not exists:  # a dry run that would succeed
                    return obj
                if generated and names_left > 0 and obj["metadata"].get("generateName"):
                    # RetryGenerateName (GA in 1.32, generic/registry/store.go): a generated name that
                    # is taken is generated again, up to 8 names in all, before the client sees 409.
                    names_left -= 1
                    name = generate_name(obj["metadata"]["generateName"])
                    obj["metadata"]["name"] = name
                    key = self.key(namespace, name)
                    continue
                scope.stage("storage", "deny", f"{key} already exists")
                raise errors.already_exists(self.rtype.plural, self.rtype.group, name)
            if exists and not any(c.requested_in(request) for c in taken):
                # Choosing again cannot help: the name is taken (upstream allocates first, so a value
                # the client asked for that is taken is reported before the name).
                scope.stage("storage", "deny", f"{key} already exists")
                raise errors.already_exists(self.rtype.plural, self.rtype.group, name)
            self._choose_again(obj, request, taken, attempt, name, scope, held_by={})
        raise self._allocation_failed(taken, scope)

    # -- update ----------------------------------------------------------------------------------

    async def update(
        self,
        namespace: str,
        name: str,
        mutate: Callable[[Object], Object],
        *,
        scope: RequestScope,
        subresource: str = "",
        dry_run: bool = False,
        create_if_missing: bool = False,
        track: Track | None = None,
        replaces: bool = False,
    ) -> Written:
        """Read-modify-write with optimistic concurrency (upstream's ``GuaranteedUpdate``).

        ``mutate`` gets the current object (or None semantics via ``create_if_missing``) and returns
        the desired one. If the desired object carries a resourceVersion, it must equal the current
        one (else 409 Conflict). If it carries none, the write is unconditional on the client's side,
        and a race with another writer is retried here with a fresh read.

        ``replaces``: ``mutate`` ignores the object it gets and returns a whole new one (a PUT), so
        no copy of the current object is made for it; it gets ``{}``.
        """
        scope = required(scope, "Registry.update")
        key = self.key(namespace, name)
        for _ in range(GUARANTEED_UPDATE_ATTEMPTS):
            kv = await self.store.get(key)
            if kv is None:
                if not create_if_missing:
                    raise self.not_found(name)
                desired = mutate({})
                meta = desired.setdefault("metadata", {})
                # An apply that creates names its object twice, in the URL and in the body: they must
                # agree, as for an update (upstream handlers/rest.go, checkName).
                if isinstance(meta, dict) and meta.get("name", name) != name:
                    sent = meta.get("name")
                    raise errors.bad_request(
                        f"the name of the object ({sent}) does not match the name on the URL ({name})"
                    )
                meta["name"] = name
                created = await self.create(desired, namespace, scope=scope, dry_run=dry_run, track=track)
                return Written(created, created=True)
            current = self.decode(kv)
            if replaces:
                desired = mutate({})
            else:
                # The copy to change: decoding the stored bytes again is twice as fast as copying
                # the decoded object (unless they must be decrypted again).
                desired = mutate(self.decode(kv) if self.transformer is None else deep_copy(current))
            request = deep_copy(desired) if self.allocator is not None else desired
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
                desired = await scope.mutate("UPDATE", desired, current)
                self.strategy.prepare_for_status_update(desired, current)
                self.strategy.set_condition_times(desired, current, lambda: timestamp(self.clock))
                if track is not None:
                    desired = track(current, desired)
                problems = self.strategy.validate_status_update(
                    desired, current, namespaced=self.rtype.namespaced
                )
            elif subresource == "approval":
                # certificatesigningrequests/approval: only the conditions change (upstream's
                # csrApprovalStrategy, pkg/registry/certificates/certificates/strategy.go).
                desired = await scope.mutate("UPDATE", desired, current)
                self.strategy.prepare_for_approval_update(desired, current)
                self.strategy.set_condition_times(desired, current, lambda: timestamp(self.clock))
                if track is not None:
                    desired = track(current, desired)
                problems = self.strategy.validate_approval_update(
                    desired, current, namespaced=self.rtype.namespaced
                )
            else:
                self.strategy.default(desired)
                if track is not None:
                    desired = track(current, desired)
                desired = await scope.mutate("UPDATE", desired, current)
                if self.guard is not None:
                    self.guard(desired, current, scope)
                self.strategy.prepare_for_update(desired, current)
                problems = self.strategy.validate_update(desired, current, namespaced=self.rtype.namespaced)
            if problems:
                error = self.invalid(name, problems)
                scope.stage("validation", "deny", error.message)
                raise error
            scope.stage("validation", "pass")
            if not subresource:  # upstream's rest.BeforeUpdate
                for warning in self.strategy.warnings_on_update(desired, current):
                    scope.warn(warning)
            # After the strategy, as upstream's store does: a change only to managed fields'
            # timestamps is none (a Secret's stringData became data only now).
            desired = ignore_managed_fields_timestamps(desired, current)
            await scope.validate("UPDATE", desired, current)
            if self._unchanged(desired, current) and not (
                self.transformer is not None and self.transformer.stale(kv.value)
            ):
                # Upstream skips the write (same resourceVersion back), unless the stored value is
                # stale: encrypted with a key that no longer writes, which this write re-encrypts.
                return Written(current)
            result = await self._write_update(
                key, kv, desired, current, request, name, scope, dry_run=dry_run
            )
            if result is None:  # a dry run that would succeed
                return Written(desired)
            if result.succeeded:
                # Removing the last finalizer of an object marked for deletion deleted it.
                deleted = self._finished_deleting(desired)
                scope.stored("delete" if deleted else "update", key, result.revision)
                desired["metadata"]["resourceVersion"] = str(result.revision)
                return Written(desired)
            # Someone wrote between our read and our write: read again and re-apply the change (as
            # etcd3's GuaranteedUpdate does). A client that pinned a resourceVersion (a PUT carrying
            # one, a patch that sets one) gets 409 at the check above; a patch without one is simply
            # applied to the newer object.
        raise errors.conflict(self.rtype.plural, self.rtype.group, name, errors.OBJECT_MODIFIED)

    async def _write_update(
        self,
        key: str,
        kv: KeyValue,
        desired: Object,
        current: Object,
        request: Object,
        name: str,
        scope: RequestScope,
        *,
        dry_run: bool,
    ) -> TxnResult | None:
        """Write ``desired`` over ``current`` (read at ``kv``), claiming what it newly holds and releasing
        what it no longer does; the failed result if someone else wrote first; None for a dry run."""
        held = {claim.key for claim in self.claims(current)}
        taken: list[Claim] = []
        for attempt in range(ALLOCATION_ATTEMPTS):
            guard = Compare.unchanged(key, kv.mod_revision)
            if self._finished_deleting(desired):
                # The last finalizer is gone: the object is deleted, and every claim with it.
                if dry_run:
                    return None
                return await self.store.txn(
                    Txn(
                        compares=(guard,),
                        success=(Delete(key), *(Delete(k) for k in sorted(held))),
                        failure=(Get(key),),
                    ),
                    request_id=scope.audit_id,
                )
            claims = self.claims(desired)
            new = [claim for claim in claims if claim.key not in held]
            released = sorted(held - {claim.key for claim in claims})
            if dry_run:
                taken = await self._taken(new)
                if not taken:
                    return None
            else:
                result = await self.store.txn(
                    Txn(
                        compares=(guard, *(Compare.absent(c.key) for c in new)),
                        success=(
                            Put(key, self.encode(desired)),
                            *(Put(c.key, self.claim_record(c, desired)) for c in new),
                            *(Delete(k) for k in released),
                        ),
                        failure=(Get(key), *(Get(c.key) for c in new)),
                    ),
                    request_id=scope.audit_id,
                )
                latest = result.responses[0] if result.responses else None
                if result.succeeded or not guard.holds(getattr(latest, "kv", None)):
                    return result  # written, or someone else wrote first: read again
                taken = [c for c, r in zip(new, result.responses[1:], strict=True) if _found(r)]
            self._choose_again(desired, request, taken, attempt, name, scope, held_by=current)
        raise self._allocation_failed(taken, scope)

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

    def _check_delete_preconditions(
        self, name: str, preconditions: Mapping[str, str], uid: str | None, resource_version: str
    ) -> None:
        """``rest.BeforeDelete``'s early check (staging/src/k8s.io/apiserver/pkg/registry/rest/
        delete.go): its Conflict names the kind, not the resource (``GroupResource{Resource: Kind}``).
        A namespace's own ``Delete`` (pkg/registry/core/namespace/storage/storage.go) words it as the
        storage layer does, and names the resource."""
        namespace = self.rtype.kind == "Namespace"
        what = self.rtype.plural if namespace else self.rtype.kind
        wanted_uid, wanted_version = preconditions.get("uid"), preconditions.get("resourceVersion")
        if wanted_uid and wanted_uid != uid:
            field = "uid"
            why = (
                f"Precondition failed: UID in precondition: {wanted_uid}, UID in object meta: {uid}"
                if namespace
                else f"the UID in the precondition ({wanted_uid}) does not match the UID in record ({uid}). "
                "The object might have been deleted and then recreated"
            )
        elif wanted_version and wanted_version != resource_version:
            field = "resourceVersion"
            why = (
                f"Precondition failed: ResourceVersion in precondition: {wanted_version}, "
                f"ResourceVersion in object meta: {resource_version}"
                if namespace
                else f"the ResourceVersion in the precondition ({wanted_version}) does not match the "
                f"ResourceVersion in record ({resource_version}). The object might have been modified"
            )
        else:
            return
        raise errors.PreconditionFailed(what, self.rtype.group, name, field, why)

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
        """Delete, or mark for deletion; returns the object and whether it is gone for good."""
        scope = required(scope, "Registry.delete")
        key = self.key(namespace, name)
        for _ in range(GUARANTEED_UPDATE_ATTEMPTS):
            kv = await self.store.get(key)
            if kv is None:
                raise self.not_found(name)
            current = self.decode(kv)
            meta = current["metadata"]
            if preconditions:
                self._check_delete_preconditions(name, preconditions, meta.get("uid"), str(kv.mod_revision))
            await scope.admit_delete(current)
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
                marked = deep_copy(current)
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
                        success=(Put(key, self.encode(marked)),),
                    ),
                    request_id=scope.audit_id,
                )
                if result.succeeded:
                    scope.stored("terminate", key, result.revision)
                    mmeta["resourceVersion"] = str(result.revision)
                    return marked, False
                continue
            if dry_run:
                return current, True
            # The object goes, and the values it held are free again, in the same revision.
            released = sorted({claim.key for claim in self.claims(current)})
            result = await self.store.txn(
                Txn(
                    compares=(Compare.unchanged(key, kv.mod_revision),),
                    success=(Delete(key), *(Delete(k) for k in released)),
                ),
                request_id=scope.audit_id,
            )
            if result.succeeded:
                scope.stored("delete", key, result.revision)
                meta["resourceVersion"] = str(result.revision)
                return current, True
        raise errors.conflict(self.rtype.plural, self.rtype.group, name, errors.OBJECT_MODIFIED)


__all__ = [
    "ALLOCATION_ATTEMPTS",
    "AllocatingStrategy",
    "Claim",
    "Registry",
    "Written",
    "asked_or_held",
    "decode",
    "encode",
    "format_seconds",
    "timestamp",
]
