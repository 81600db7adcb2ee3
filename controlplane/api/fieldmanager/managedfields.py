"""``metadata.managedFields``: the field manager that kube-apiserver runs on every write.

Each entry of ``metadata.managedFields`` says which fields one *manager* owns::

    - manager: kubectl-client-side-apply      # who (?fieldManager=, else the User-Agent's first word)
      operation: Update                       # Update (create/update/patch) or Apply (server-side apply)
      apiVersion: apps/v1                     # the version the fields are named in
      time: "2025-01-01T10:00:00Z"            # when this manager last changed something
      fieldsType: FieldsV1
      fieldsV1: {"f:spec": {"f:replicas": {}}}
      subresource: scale                      # only for writes through a subresource

:class:`FieldManager` is the stack kube-apiserver wraps around the updater
(kubernetes/apimachinery ``pkg/util/managedfields/internal``: ``fieldmanager.go``,
``versioncheck.go``, ``lastappliedupdater.go``, ``lastappliedmanager.go``, ``skipnonapplied.go``,
``capmanagers.go``, ``buildmanagerinfo.go``, ``managedfieldsupdater.go``, ``stripmeta.go``,
``structuredmerge.go``, ``managedfields.go``), in the same order:

* managers are identified by ``{manager, operation, apiVersion (Update only), subresource}``, so
  the same name applying and updating is two managers;
* ``apiVersion``, ``kind``, ``metadata.name``/``namespace``/``uid``/``resourceVersion``... are never
  owned (strip-meta), nor are the fields the operation may not change (``status`` on the main
  resource: the *reset fields*);
* a manager's ``time`` moves only when it changed something;
* at most 10 ``Update`` managers are kept; the oldest are merged into ``ancient-changes``;
* an object that has no managed fields gets none from updates (only creates start tracking), and
  its first apply gives its existing fields to ``before-first-apply``;
* ``kubectl apply --server-side`` (manager ``kubectl``) may take over, without conflicts, the fields
  its earlier *client-side* apply recorded in the ``kubectl.kubernetes.io/last-applied-configuration``
  annotation, and keeps that annotation up to date.

Everything here is pure: objects in, objects out, ``now`` passed in by the caller.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.fieldmanager import typed
from controlplane.api.fieldmanager.conflicts import Conflict, ConflictError
from controlplane.api.fieldmanager.fieldpath import FieldsV1Error, Set, make_path
from controlplane.api.fieldmanager.merge import ManagedFields, Updater, VersionedSet
from controlplane.api.meta import Object

APPLY: Final = "Apply"
UPDATE: Final = "Update"
FIELDS_V1: Final = "FieldsV1"
LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"
BEFORE_FIRST_APPLY: Final = "before-first-apply"
ANCIENT_CHANGES: Final = "ancient-changes"
MAX_UPDATE_MANAGERS: Final = 10
FIELD_MANAGER_MAX_LENGTH: Final = 128

#: Fields no manager ever owns (``stripmeta.go``).
STRIP_SET: Final = Set(
    [
        make_path("apiVersion"),
        make_path("kind"),
        make_path("metadata"),
        make_path("metadata", "name"),
        make_path("metadata", "namespace"),
        make_path("metadata", "creationTimestamp"),
        make_path("metadata", "selfLink"),
        make_path("metadata", "uid"),
        make_path("metadata", "clusterName"),
        make_path("metadata", "generation"),
        make_path("metadata", "managedFields"),
        make_path("metadata", "resourceVersion"),
    ]
)


class ApplyError(Exception):
    """An apply the server refuses before any merge: 400 BadRequest with upstream's text."""


@functools.lru_cache(maxsize=1024)
def manager_from_user_agent(user_agent: str) -> str:
    """The manager of a request without ``?fieldManager=``: the User-Agent up to the first ``/``.

    (apiserver ``handlers/create.go`` ``prefixFromUserAgent``: non-printable characters dropped,
    at most 128 bytes.) ``kubectl/v1.37.1 (linux/amd64) kubernetes/f78e722`` -> ``kubectl``.
    (Cached: a cluster's clients send a handful of User-Agents, on every write.)
    """
    out = ""
    for char in user_agent.split("/", 1)[0]:
        if not char.isprintable():
            continue
        if len((out + char).encode()) > FIELD_MANAGER_MAX_LENGTH:
            break
        out += char
    return out


@functools.lru_cache(maxsize=4096)
def manager_identifier(manager: str, operation: str, api_version: str, subresource: str = "") -> str:
    """``BuildManagerIdentifier``: the entry without fields and time (and without the version of an applier).

    Two entries with the same identifier are the same manager; an applier keeps its identity
    whatever version it applies in. (Cached: a cluster has a handful of managers, met on every write.)
    """
    entry: dict[str, str] = {"manager": manager or "unknown", "operation": operation}
    if operation != APPLY and api_version:
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return json.dumps(entry, separators=(",", ":"))


@dataclass
class Managed:
    """Decoded managed fields: each manager's fields, and when it last changed something."""

    fields: ManagedFields = field(default_factory=dict)
    times: dict[str, str | None] = field(default_factory=dict)

    def copy(self) -> Managed:
        return Managed(dict(self.fields), dict(self.times))


class ManagedFieldsError(ValueError):
    """``metadata.managedFields`` that cannot be decoded."""


def decode(entries: Any) -> Managed:
    """``DecodeManagedFields``: entries to sets by manager identifier; raises :class:`ManagedFieldsError`."""
    managed = Managed()
    if entries is None:
        return managed
    if not isinstance(entries, list):
        raise ManagedFieldsError("managedFields must be a list")
    for position, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ManagedFieldsError(f"managed fields entry {position} must be an object")
        operation = entry.get("operation")
        if operation not in (APPLY, UPDATE):
            raise ManagedFieldsError("operation must be `Apply` or `Update`")
        api_version = entry.get("apiVersion")
        if not isinstance(api_version, str) or not api_version:
            raise ManagedFieldsError("apiVersion must not be empty")
        fields_type = entry.get("fieldsType")
        if not fields_type:
            raise ManagedFieldsError(f"missing fieldsType in managed fields entry {position}")
        if fields_type != FIELDS_V1:
            raise ManagedFieldsError(f'invalid fieldsType "{fields_type}" in managed fields entry {position}')
        identifier = manager_identifier(
            str(entry.get("manager") or ""), operation, api_version, str(entry.get("subresource") or "")
        )
        try:
            owned = Set.from_fields_v1(entry.get("fieldsV1") or {})
        except FieldsV1Error as error:
            raise ManagedFieldsError(f"error decoding versioned set: {error}") from None
        managed.fields[identifier] = VersionedSet(owned, api_version, operation == APPLY)
        time = entry.get("time")
        managed.times[identifier] = time if isinstance(time, str) else None
    return managed


def encode(managed: Managed) -> list[dict[str, Any]] | None:
    """``EncodeObjectManagedFields``: entries in upstream's order (Apply first, then by time, manager...)."""
    if not managed.fields:
        return None
    entries: list[dict[str, Any]] = []
    for identifier, owned in managed.fields.items():
        manager, subresource = _manager_and_subresource(identifier)
        entry: dict[str, Any] = {
            "manager": manager,
            "operation": APPLY if owned.applied else UPDATE,
            "apiVersion": owned.api_version,
        }
        time = managed.times.get(identifier)
        if time:
            entry["time"] = time
        entry["fieldsType"] = FIELDS_V1
        entry["fieldsV1"] = owned.set.to_fields_v1()
        if subresource:
            entry["subresource"] = subresource
        entries.append(entry)
    entries.sort(
        key=lambda e: (
            e["operation"],
            e.get("time") or "",
            e["manager"],
            e["apiVersion"],
            e.get("subresource", ""),
        )
    )
    return entries


@functools.lru_cache(maxsize=4096)
def _manager_and_subresource(identifier: str) -> tuple[Any, Any]:
    """The ``manager`` and ``subresource`` a :func:`manager_identifier` names (cached, as it is)."""
    ident = json.loads(identifier)
    return ident.get("manager", ""), ident.get("subresource")


def is_reset(entries: Any) -> bool:
    """``isResetManagedFields``: ``[]`` or ``[{}]`` in a request asks to clear all managed fields."""
    return isinstance(entries, list) and (entries == [] or entries == [{}])


def _entries(obj: Mapping[str, Any] | None) -> Any:
    meta = obj.get("metadata") if obj else None
    return meta.get("managedFields") if isinstance(meta, Mapping) else None


def _without_managed_fields(obj: Mapping[str, Any] | None) -> Object:
    out = dict(obj or {})
    meta = out.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def _set_managed_fields(obj: Object, managed: Managed) -> Object:
    meta = obj.get("metadata")
    meta = dict(meta) if isinstance(meta, Mapping) else {}
    entries = encode(managed)
    if entries is None:
        meta.pop("managedFields", None)
    else:
        meta["managedFields"] = entries
    obj["metadata"] = meta
    return obj


def _object_gvk_nn(obj: Mapping[str, Any], fallback_namespace: str) -> str:
    """``objectGVKNN``: ``default/web; apps/v1, Kind=Deployment`` (core group: ``/v1, Kind=Pod``)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    api_version = str(obj.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    namespace = meta.get("namespace") or fallback_namespace
    return f"{namespace}/{meta.get('name', '')}; {group}/{version}, Kind={obj.get('kind', '')}"


class FieldManager:
    """The field manager of one kind (and one subresource): keeps ``metadata.managedFields`` right.

    ``node`` is the kind's schema (:func:`.typed.root_for_kind`); ``reset_fields`` are the fields
    this endpoint may not change (upstream's strategies' ``GetResetFields``); ``now`` returns the
    time to record, RFC 3339 with seconds.
    """

    def __init__(
        self,
        *,
        group: str,
        version: str,
        kind: str,
        node: Mapping[str, Any],
        now: Callable[[], str],
        subresource: str = "",
        reset_fields: Set | None = None,
        definitions: Mapping[str, Any] | None = None,
    ) -> None:
        self.group = group
        self.version = version
        self.kind = kind
        self.api_version = f"{group}/{version}" if group else version
        self.subresource = subresource
        self.now = now
        self.node = node
        self.definitions = definitions
        self.updater = Updater(node, ignored=reset_fields, definitions=definitions)

    # -- Update ----------------------------------------------------------------------------------

    def update(self, live: Mapping[str, Any] | None, new: Object, manager: str) -> Object:
        """``FieldManager.UpdateNoErrors``: ``new`` with its managed fields after ``manager`` wrote it.

        ``live`` is None for a create. Never fails: on an internal error the object loses its
        managed fields, as upstream's does.
        """
        try:
            return self._update(live, new, manager)
        except (typed.ValidationErrors, ManagedFieldsError, ValueError, TypeError):
            return _set_managed_fields(_without_managed_fields(new), Managed())

    def _update(self, live: Mapping[str, Any] | None, new: Object, manager: str) -> Object:
        sent = _entries(new)
        live_entries = _entries(live)
        if is_reset(sent):
            managed = Managed()
        else:
            managed = Managed()
            if sent and not self.subresource and sent != live_entries:
                try:
                    managed = decode(sent)  # a client may set managedFields directly
                except ManagedFieldsError:
                    managed = Managed()
            if not managed.fields:
                # A client that does not know managedFields must not erase them: keep the live ones
                # (always so through a subresource).
                try:
                    managed = decode(live_entries)
                except ManagedFieldsError:
                    return _set_managed_fields(_without_managed_fields(new), Managed())
        new_obj = _without_managed_fields(new)
        if live is None and not managed.fields:
            created = self._create(new_obj, manager)
            if created is not None:
                return created
        live_obj = _without_managed_fields(live)
        # skipNonApplied: an existing object without managed fields is not tracked by updates.
        if not managed.fields and live is not None and (live.get("metadata") or {}).get("uid"):
            return new_obj
        managed = self._update_managed(live_obj, new_obj, managed, manager)
        managed = self._cap(managed)
        out = _set_managed_fields(new_obj, managed)
        return self._keep_timestamps_if_unchanged(live, out)

    def _create(self, new: Object, manager: str) -> Object | None:
        """The general path's answer for a create that starts tracking (no live object, no managers).

        All of the new object is added and the creator owns all of it but the reset and strip-meta
        fields, so its one entry is :func:`.typed.added_fields_v1` of the object: the same document the
        comparison, the set algebra and the encoding would write, in one walk. None: the general
        path must answer (a schema whose root is no struct).
        """
        fields_v1 = typed.added_fields_v1(
            new, self.node, self.definitions, excluding=self.updater.ignored, stripping=STRIP_SET
        )
        if fields_v1 is None:
            return None
        meta = new.get("metadata")
        meta = dict(meta) if isinstance(meta, Mapping) else {}
        if not fields_v1:
            meta.pop("managedFields", None)  # nothing owned: no entry (encode's None)
        else:
            identifier = manager_identifier(manager, UPDATE, self.api_version, self.subresource)
            name, subresource = _manager_and_subresource(identifier)
            entry: dict[str, Any] = {"manager": name, "operation": UPDATE, "apiVersion": self.api_version}
            time = self.now()
            if time:
                entry["time"] = time
            entry["fieldsType"] = FIELDS_V1
            entry["fieldsV1"] = fields_v1
            if subresource:
                entry["subresource"] = subresource
            meta["managedFields"] = [entry]
        new["metadata"] = meta
        return new

    def _update_managed(self, live: Object, new: Object, managed: Managed, manager: str) -> Managed:
        """buildManagerInfo + managedFieldsUpdater + stripMeta + structuredMerge for an Update."""
        identifier = manager_identifier(manager, UPDATE, self.api_version, self.subresource)
        current = "current-operation"
        fields = self.updater.update(live, new, self.api_version, managed.fields, current)
        fields = _strip(fields, current)
        out = Managed(fields, dict(managed.times))
        taken = out.fields.pop(current, None)
        if taken is not None:
            previous = out.fields.get(identifier)
            owned = taken.set.union(previous.set) if previous is not None else taken.set
            before = managed.fields.get(identifier)
            if before is not None and owned.same_tree(before.set):
                # The manager changed only fields it owned already (a kubelet renewing its Lease):
                # its set as read, which writes its FieldsV1 again without a walk (fieldpath.py).
                owned = before.set
            out.fields[identifier] = VersionedSet(owned, taken.api_version, False)
            out.times[identifier] = self.now()
        out.times = {m: t for m, t in out.times.items() if m in out.fields}
        return out

    def _cap(self, managed: Managed) -> Managed:
        """``capManagersManager``: merge the oldest Update managers into ``ancient-changes`` buckets.

        As upstream: the oldest manager of each API version becomes that version's bucket, and the
        next oldest are merged into it (the bucket taking the newest merged time) until at most
        :data:`MAX_UPDATE_MANAGERS` Update managers are left.
        """
        updaters = [m for m, owned in managed.fields.items() if not owned.applied]
        if len(updaters) <= MAX_UPDATE_MANAGERS:
            return managed
        updaters.sort(key=lambda m: (managed.times.get(m) or "", m))
        out = managed.copy()
        first_of_version: dict[str, str] = {}
        length = len(updaters)
        for identifier in updaters:
            if length <= MAX_UPDATE_MANAGERS:
                break
            owned = out.fields[identifier]
            bucket = manager_identifier(ANCIENT_CHANGES, UPDATE, owned.api_version)
            first = first_of_version.get(owned.api_version)
            if first is None or identifier == bucket:
                first_of_version.setdefault(owned.api_version, identifier)
                continue
            if bucket not in out.fields:
                out.fields[bucket] = out.fields.pop(first)
                out.times.pop(first, None)
            out.fields[bucket] = VersionedSet(
                out.fields[bucket].set.union(owned.set), owned.api_version, False
            )
            del out.fields[identifier]
            out.times[bucket] = out.times.pop(identifier, None)
            length -= 1
        return out

    def _keep_timestamps_if_unchanged(self, live: Mapping[str, Any] | None, new: Object) -> Object:
        return ignore_managed_fields_timestamps(new, live)

    # -- Apply -----------------------------------------------------------------------------------

    def apply(
        self,
        live: Mapping[str, Any] | None,
        applied: Mapping[str, Any],
        manager: str,
        *,
        force: bool,
        namespace: str = "",
    ) -> Object:
        """``FieldManager.Apply``: the object after ``manager`` applied ``applied`` (defaults not yet set).

        ``live`` is None when the object does not exist yet (the apply creates it). Raises
        :class:`ConflictError` (409) or :class:`ApplyError` (400) with upstream's messages.
        """
        live_obj = _without_managed_fields(live)
        try:
            managed = decode(_entries(live))
        except ManagedFieldsError as error:
            raise ApplyError(f"failed to decode managed fields: {error}") from None
        # versionCheckManager
        api_version = applied.get("apiVersion")
        kind = applied.get("kind")
        if api_version != self.api_version or kind != self.kind:
            group, _, version = str(api_version or "").rpartition("/")
            raise ApplyError(f"invalid object type: {group}/{version}, Kind={kind or ''}")
        out, managed = self._apply_with_last_applied(live_obj, applied, managed, manager, force, namespace)
        if manager == "kubectl" and _last_applied(live_obj) is not None:
            # lastAppliedUpdater: kubectl's server-side apply keeps client-side apply's annotation current.
            out = _with_last_applied(out, applied)
        return _set_managed_fields(out, self._cap(managed))

    def _apply_with_last_applied(
        self,
        live: Object,
        applied: Mapping[str, Any],
        managed: Managed,
        manager: str,
        force: bool,
        namespace: str,
    ) -> tuple[Object, Managed]:
        """lastAppliedManager: conflicts with fields client-side apply recorded may be overridden."""
        try:
            return self._apply_skipping_non_applied(live, applied, managed, manager, force, namespace)
        except ConflictError as error:
            if manager != "kubectl":
                raise
            allowed = self._allowed_from_last_applied(live)
            if allowed is None:
                raise
            remaining = [c for c in error.conflicts if not allowed.has(c.path)]
            if remaining:
                raise ConflictError(remaining) from None
            return self._apply_skipping_non_applied(live, applied, managed, manager, True, namespace)

    def _allowed_from_last_applied(self, live: Object) -> Set | None:
        text = _last_applied(live)
        if not text:
            return None
        try:
            last = json.loads(text)
        except ValueError:
            return None
        if not isinstance(last, dict) or last.get("apiVersion") != self.api_version:
            return None
        if typed.validate(last, self.node, self.definitions):
            return None
        fields = typed.to_field_set(last, self.node, self.definitions)
        comparison = typed.compare(last, live, self.node, self.definitions)
        return (
            fields.difference(comparison.modified).difference(comparison.added).difference(comparison.removed)
        )

    def _apply_skipping_non_applied(
        self,
        live: Object,
        applied: Mapping[str, Any],
        managed: Managed,
        manager: str,
        force: bool,
        namespace: str,
    ) -> tuple[Object, Managed]:
        """skipNonAppliedManager: the first apply to an untracked object credits its fields to someone."""
        if not managed.fields and live:
            managed = self._update_managed({}, live, managed, BEFORE_FIRST_APPLY)
        return self._apply_managed(live, applied, managed, manager, force, namespace)

    def _apply_managed(
        self,
        live: Object,
        applied: Mapping[str, Any],
        managed: Managed,
        manager: str,
        force: bool,
        namespace: str,
    ) -> tuple[Object, Managed]:
        """buildManagerInfo + managedFieldsUpdater + stripMeta + structuredMerge for an Apply."""
        identifier = manager_identifier(manager, APPLY, self.api_version, self.subresource)
        meta = applied.get("metadata")
        if isinstance(meta, Mapping) and meta.get("managedFields") is not None:
            raise ApplyError("metadata.managedFields must be nil")
        errors = typed.validate(dict(applied), self.node, self.definitions)
        if errors:
            raise ApplyError(
                f"failed to create typed patch object ({_object_gvk_nn(applied, namespace)}): "
                f"{typed.ValidationErrors(errors).text()}"
            )
        new, fields = self.updater.apply(
            live, dict(applied), self.api_version, managed.fields, identifier, force=force
        )
        fields = _strip(fields, identifier)
        out = Managed(fields, {m: t for m, t in managed.times.items() if m in fields})
        if new is None:
            return deep_copy(live), out
        if identifier in out.fields:
            out.times[identifier] = self.now()
        return new, out


def _strip(fields: ManagedFields, manager: str) -> ManagedFields:
    owned = fields.get(manager)
    if owned is None:
        return fields
    out = dict(fields)
    stripped = owned.set.difference(STRIP_SET)
    if stripped.empty():
        del out[manager]
    else:
        out[manager] = VersionedSet(stripped, owned.api_version, owned.applied)
    return out


def _last_applied(obj: Mapping[str, Any]) -> str | None:
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping):
        return None
    value = annotations.get(LAST_APPLIED_ANNOTATION)
    return value if isinstance(value, str) else None


def _with_last_applied(obj: Object, applied: Mapping[str, Any]) -> Object:
    """``buildLastApplied``: the applied configuration, without the annotation itself, as JSON."""
    config = deep_copy(dict(applied))
    meta = config.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
        meta["annotations"].pop(LAST_APPLIED_ANNOTATION, None)
    out = dict(obj)
    out_meta = dict(out.get("metadata") or {})
    annotations = dict(out_meta.get("annotations") or {})
    annotations[LAST_APPLIED_ANNOTATION] = json.dumps(config, separators=(",", ":"))
    out_meta["annotations"] = annotations
    out["metadata"] = out_meta
    return out


def ignore_managed_fields_timestamps(new: Object, live: Mapping[str, Any] | None) -> Object:
    """``IgnoreManagedFieldsTimestampsTransformer`` (apiserver ``fieldmanager/equality.go``): when
    ``new`` differs from ``live`` only in its managed fields' timestamps, it keeps ``live``'s, so a
    write that changes nothing bumps no resourceVersion.

    Upstream's store runs it after the strategy prepared the update (``store.go`` ``Update``:
    "FieldManager can't know about changes like normalized fields, defaulted fields and other
    mutations"), so a Secret applied again with ``stringData`` (turned into ``data`` by the
    strategy) is unchanged even a second later.
    """
    if live is None:
        return new
    if _without_managed_fields(live) != _without_managed_fields(new):
        return new
    old_entries = (live.get("metadata") or {}).get("managedFields") or []
    new_entries = (new.get("metadata") or {}).get("managedFields") or []

    def untimed(entries: list[Any]) -> list[Any]:
        return [{k: v for k, v in e.items() if k != "time"} for e in entries if isinstance(e, Mapping)]

    if untimed(old_entries) == untimed(new_entries):
        meta = dict(new["metadata"])
        if old_entries:
            meta["managedFields"] = deep_copy(old_entries)
        else:
            meta.pop("managedFields", None)
        new["metadata"] = meta
    return new


__all__ = [
    "ANCIENT_CHANGES",
    "APPLY",
    "BEFORE_FIRST_APPLY",
    "LAST_APPLIED_ANNOTATION",
    "STRIP_SET",
    "UPDATE",
    "ApplyError",
    "Conflict",
    "ConflictError",
    "FieldManager",
    "Managed",
    "ManagedFieldsError",
    "decode",
    "encode",
    "ignore_managed_fields_timestamps",
    "is_reset",
    "manager_from_user_agent",
    "manager_identifier",
]
