"""The updater: who owns what after an update, and what an apply produces.

This is a port of structured-merge-diff's ``merge/update.go`` (``Updater.update``, ``Update``,
``Apply``, ``prune``, ``addBackOwnedItems``, ``addBackDanglingItems``). It knows nothing of HTTP
or of ``metadata.managedFields``; it works on typed values and on :class:`ManagedFields`, a map from
a manager's identifier to the set of fields it owns.

**Update** (every create, update and non-apply patch). The new object is compared with the live one.
Fields that were added or changed become the updating manager's, and are taken away from everyone
else (an update never conflicts: it has already happened); fields that were removed are nobody's
any more.

**Apply** (``PATCH`` with ``application/apply-patch+yaml``). The applied configuration is merged into
the live object, and the applier's set becomes exactly the configuration's field set. Then:

1. *pruning*: fields the applier set last time and no longer sets are removed from the object,
   unless another manager owns them too (``prune``);
2. *conflicts*: each other manager's fields that the result changed or added are conflicts; without
   ``force`` the apply fails with all of them, with ``force`` they change hands.

Applying a field with the value it already has is never a conflict, since nothing changed:
both managers then own it (*shared ownership*).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controlplane.api.fieldmanager import typed
from controlplane.api.fieldmanager.conflicts import Conflict, ConflictError
from controlplane.api.fieldmanager.fieldpath import Set

Schema = typed.Schema


@dataclass(frozen=True, slots=True)
class VersionedSet:
    """The fields one manager owns, the API version it used, and whether it applied them."""

    set: Set
    api_version: str
    applied: bool = False


ManagedFields = dict[str, VersionedSet]
"""Manager identifier (see :func:`..managedfields.manager_identifier`) to the fields it owns."""


class Updater:
    """Computes managed fields for one kind (one schema), ignoring ``ignored`` fields.

    ``ignored`` are the fields the operation may not change (upstream's *reset fields*: ``status``
    on a kind's main resource, everything but ``status`` on ``/status``); nobody gains them here.
    All managers are taken to use one API version: the lab serves each kind in a single version, so
    upstream's conversions between versions are the identity.
    """

    def __init__(
        self, node: Schema, *, ignored: Set | None = None, definitions: Mapping[str, Schema] | None = None
    ) -> None:
        self.node = node
        self.ignored = ignored or Set()
        self.definitions = definitions

    def _field_set(self, value: Any) -> Set:
        return typed.to_field_set(value, self.node, self.definitions)

    def _ensure(self, fields: Set) -> Set:
        return typed.ensure_named_fields_are_members(fields, self.node, self.definitions)

    def _remove(self, value: Any, fields: Set) -> Any:
        return typed.remove_items(value, fields, self.node, self.definitions)

    def _update(
        self, old: Any, new: Any, managers: ManagedFields, workflow: str, *, force: bool
    ) -> tuple[ManagedFields, typed.Comparison]:
        """``Updater.update``: take changed fields from the other managers (or fail with conflicts)."""
        comparison = typed.compare(old, new, self.node, self.definitions, ignored=self.ignored)
        changed = comparison.modified.union(comparison.added)
        conflicts: dict[str, Set] = {}
        removed: dict[str, Set] = {}
        anything_removed = not comparison.removed.empty()
        for manager, owned in managers.items():
            if manager == workflow:
                continue
            clash = owned.set.intersection(changed)
            if not clash.empty():
                conflicts[manager] = clash
            if anything_removed:
                removed[manager] = comparison.removed
        if conflicts and not force:
            raise ConflictError(
                [Conflict(manager, path) for manager in sorted(conflicts) for path in conflicts[manager]]
            )
        out = dict(managers)
        for manager, clash in conflicts.items():
            entry = out[manager]
            out[manager] = VersionedSet(entry.set.difference(clash), entry.api_version, entry.applied)
        for manager, gone in removed.items():
            entry = out[manager]
            out[manager] = VersionedSet(entry.set.difference(gone), entry.api_version, entry.applied)
        return {m: e for m, e in out.items() if not e.set.empty()}, comparison

    def update(
        self, live: Any, new: Any, version: str, managers: ManagedFields, manager: str
    ) -> ManagedFields:
        """Managed fields after ``manager`` turned ``live`` into ``new`` (a create: ``live`` is ``{}``)."""
        out, comparison = self._update(live, new, managers, manager, force=True)
        previous = out.get(manager)
        owned = previous.set if previous is not None else Set()
        owned = (
            owned.union(comparison.modified)
            .union(comparison.added)
            .difference(comparison.removed)
            .recursive_difference(self.ignored)
        )
        if owned.empty():
            out.pop(manager, None)
        else:
            out[manager] = VersionedSet(owned, version, False)
        return out

    def apply(
        self, live: Any, config: Any, version: str, managers: ManagedFields, manager: str, *, force: bool
    ) -> tuple[Any, ManagedFields]:
        """Merge ``config`` into ``live`` for ``manager``: (new object, or None if unchanged; managers).

        Raises :class:`ConflictError` when other managers own fields the result changes, unless ``force``.
        """
        merged = typed.merge(live, config, self.node, self.definitions)
        new = merged if merged is not typed.MISSING else {}
        last = managers.get(manager)
        applied = self._field_set(config).recursive_difference(self.ignored)
        out = dict(managers)
        out[manager] = VersionedSet(applied, version, True)
        new = self._prune(new, out, manager, last)
        if new is None:
            new = {}  # everything was pruned: an empty object, not "unchanged"
        out, _ = self._update(live, new, out, manager, force=force)
        if applied.empty():
            out.pop(manager, None)
        else:
            out[manager] = VersionedSet(applied, version, True)
        if typed.json_equal(live, new):
            return None, out
        return new, out

    def _prune(self, merged: Any, managers: ManagedFields, applier: str, last: VersionedSet | None) -> Any:
        """Remove what ``applier`` applied last time and not now, unless someone else owns it."""
        if last is None or last.set.empty():
            return merged
        last_set = self._ensure(last.set)
        merged_set = self._ensure(self._field_set(merged))  # the same for both steps: computed once
        pruned = self._remove(merged, last_set)
        pruned = self._add_back_owned(merged, merged_set, pruned, managers)
        return self._add_back_dangling(merged, merged_set, pruned, last_set)

    def _add_back_owned(self, merged: Any, merged_set: Set, pruned: Any, managers: ManagedFields) -> Any:
        """``addBackOwnedItems``: put back what pruning removed but some manager (or the new config) owns."""
        owned = Set()
        for entry in managers.values():
            owned = owned.union(entry.set)
        pruned_set = self._ensure(self._field_set(pruned))
        return self._remove(merged, merged_set.difference(pruned_set.union(self._ensure(owned))))

    def _add_back_dangling(self, merged: Any, merged_set: Set, pruned: Any, last_set: Set) -> Any:
        """``addBackDanglingItems``: only what the applier itself owned last time may be removed."""
        pruned_set = self._ensure(self._field_set(pruned))
        return self._remove(merged, merged_set.difference(pruned_set).intersection(last_set))


__all__ = ["ManagedFields", "Updater", "VersionedSet"]
