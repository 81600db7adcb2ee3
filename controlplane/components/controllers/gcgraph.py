"""The garbage collector's dependency graph, and its decisions: pure code, no I/O.

Kubernetes objects point at their **owners** through ``metadata.ownerReferences``: a pod names the
ReplicaSet that made it, the ReplicaSet names its Deployment. Each reference names the owner's
``apiVersion``, ``kind``, ``name`` and, above all, its ``uid``: a new Deployment with the old name is
*not* the owner. Delete the Deployment, and the garbage collector deletes what it owned.

To know what an object owns without asking the API server, the garbage collector keeps a **graph**,
built from every object its informers report (upstream ``GraphBuilder``)::

    Deployment web (uid d1) <-owner- ReplicaSet web-7d (uid r1) <-owner- Pod web-7d-x (uid p1)
                                                                <-owner- Pod web-7d-y (uid p2)

One **node** per uid, holding the object's identity, its owner references and the uids of its
**dependents**. A dependent may name an owner the graph has not seen (yet, or ever): the graph then
adds a **virtual** node for it, and asks the API server whether it exists. Every change to the graph
says which nodes now deserve a look (``Actions``), on two queues:

- **attemptToDelete**: an object whose owners may all be gone. The collector reads it (and its owners)
  live from the API server and decides (``decide``): keep it (an owner still exists), remove only the
  references to owners that are gone (others remain: ``RemoveOwnerReferences``), or delete it.
- **attemptToOrphan**: an owner deleted with ``propagationPolicy: Orphan``. The server marked it with
  the ``orphan`` finalizer; the collector removes the references to it from each dependent, then the
  finalizer, and the server deletes the owner, leaving the dependents in place.

The three propagation policies, from the owner's point of view:

=============  ===========================================================================
Background     the server deletes the owner at once; the collector sees it gone, and deletes
               its dependents (each in the background too).
Foreground     the server only marks the owner (``deletionTimestamp`` and the
               ``foregroundDeletion`` finalizer). The collector deletes the dependents, in the
               foreground too, and waits: while a dependent whose reference says
               ``blockOwnerDeletion: true`` exists, the owner stays. Then it removes the
               finalizer, and the server deletes the owner.
Orphan         the ``orphan`` finalizer: dependents lose their reference and live on.
=============  ===========================================================================

The graph is a cache, and may lag behind the server: the collector never deletes on the graph's
word alone, it confirms with a live GET that the owner is absent (a 404, or an object of the same
name with another uid) as upstream's ``attemptToDeleteItem`` does. Owners confirmed absent are
remembered in a small LRU (``AbsentOwnerCache``) to spare repeated GETs.

Upstream: ``pkg/controller/garbagecollector/graph.go``, ``graph_builder.go`` (``processGraphChanges``,
``addDependentToOwners``, ``processTransitions``), ``garbagecollector.go`` (``attemptToDeleteItem``,
``classifyReferences``, ``processDeletingDependentsItem``), ``patch.go``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from controlplane.api.meta import object_meta

#: The finalizer of an owner waiting for its dependents to be deleted (``metav1.FinalizerDeleteDependents``).
FOREGROUND_FINALIZER = "foregroundDeletion"
#: The finalizer of an owner waiting for its dependents to be orphaned (``metav1.FinalizerOrphanDependents``).
ORPHAN_FINALIZER = "orphan"

BACKGROUND = "Background"
FOREGROUND = "Foreground"
ORPHAN = "Orphan"

Object = Mapping[str, Any]


# -- identities and references ----------------------------------------------------------------------


@dataclass(frozen=True)
class ObjectReference:
    """An object's identity in the graph: owner-reference coordinates plus the namespace."""

    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str = ""

    def __str__(self) -> str:
        """Upstream's ``objectReference.String()``, which its log lines and Events print."""
        where = f"namespace: {self.namespace}, name: {self.name}, uid: {self.uid}"
        return f"[{self.api_version}/{self.kind}, {where}]"

    def matches(self, ref: OwnerReference) -> bool:
        """``ownerReferenceMatchesCoordinates``: same uid, name, kind and apiVersion."""
        return (self.uid, self.name, self.kind, self.api_version) == (
            ref.uid,
            ref.name,
            ref.kind,
            ref.api_version,
        )


@dataclass(frozen=True)
class OwnerReference:
    """One entry of ``metadata.ownerReferences``."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False
    block_owner_deletion: bool = False

    @classmethod
    def from_dict(cls, ref: Mapping[str, Any]) -> OwnerReference:
        return cls(
            api_version=str(ref.get("apiVersion") or ""),
            kind=str(ref.get("kind") or ""),
            name=str(ref.get("name") or ""),
            uid=str(ref.get("uid") or ""),
            controller=bool(ref.get("controller")),
            block_owner_deletion=bool(ref.get("blockOwnerDeletion")),
        )


def owner_references(obj: Object) -> tuple[OwnerReference, ...]:
    return tuple(OwnerReference.from_dict(r) for r in object_meta(obj).get("ownerReferences") or [])


def finalizers(obj: Object) -> tuple[str, ...]:
    return tuple(str(f) for f in object_meta(obj).get("finalizers") or [])


def being_deleted(obj: Object) -> bool:
    return bool(object_meta(obj).get("deletionTimestamp"))


@dataclass(frozen=True)
class ObservedObject:
    """What the graph needs to know of an object an informer reported."""

    identity: ObjectReference
    owners: tuple[OwnerReference, ...] = ()
    being_deleted: bool = False
    finalizers: frozenset[str] = frozenset()

    @classmethod
    def from_object(cls, obj: Object, *, api_version: str, kind: str) -> ObservedObject:
        """``api_version`` and ``kind`` come from the informer's resource (upstream's ``event.gvk``)."""
        meta = object_meta(obj)
        identity = ObjectReference(
            api_version=api_version,
            kind=kind,
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            namespace=str(meta.get("namespace") or ""),
        )
        return cls(identity, owner_references(obj), being_deleted(obj), frozenset(finalizers(obj)))

    def deletion_starts_with(self, finalizer: str, old: ObservedObject | None) -> bool:
        """Being deleted with ``finalizer``, and ``old`` was not (``deletionStartsWithFinalizer``)."""
        if not self.being_deleted or finalizer not in self.finalizers:
            return False
        return old is None or not old.being_deleted or finalizer not in old.finalizers


# -- the graph ---------------------------------------------------------------------------------------


@dataclass(eq=False)
class Node:
    """One object in the graph (upstream ``node``); dependents are held by uid."""

    identity: ObjectReference
    owners: tuple[OwnerReference, ...] = ()
    dependents: set[str] = field(default_factory=set)
    #: The object has a deletionTimestamp (a one-way trip).
    being_deleted: bool = False
    #: Being deleted with the ``foregroundDeletion`` finalizer: waiting for its dependents.
    deleting_dependents: bool = False
    #: Added for an owner a dependent named, not (yet) seen by an informer.
    virtual: bool = False

    @property
    def uid(self) -> str:
        return self.identity.uid


@dataclass
class Actions:
    """What a change to the graph asks of the collector's workers (uids, in order, without repeats)."""

    attempt_to_delete: list[str] = field(default_factory=list)
    attempt_to_orphan: list[str] = field(default_factory=list)
    #: (dependent, owner reference) pairs naming an owner of another namespace: an Event each.
    invalid_namespace_owner_refs: list[tuple[ObjectReference, OwnerReference]] = field(default_factory=list)

    def delete(self, uid: str) -> None:
        if uid not in self.attempt_to_delete:
            self.attempt_to_delete.append(uid)

    def orphan(self, uid: str) -> None:
        if uid not in self.attempt_to_orphan:
            self.attempt_to_orphan.append(uid)


class AbsentOwnerCache:
    """The owners confirmed absent, most recent last (upstream ``ReferenceCache``, an LRU of 500)."""

    def __init__(self, size: int = 500) -> None:
        self.size = size
        self._items: OrderedDict[ObjectReference, None] = OrderedDict()

    def add(self, ref: ObjectReference) -> None:
        self._items[ref] = None
        self._items.move_to_end(ref)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __contains__(self, ref: object) -> bool:
        if ref in self._items:
            assert isinstance(ref, ObjectReference)
            self._items.move_to_end(ref)
            return True
        return False

    def __len__(self) -> int:
        return len(self._items)


def owner_identity(ref: OwnerReference, namespace: str) -> ObjectReference:
    """The identity of the owner ``ref`` names, assumed in ``namespace`` (its dependent's)."""
    return ObjectReference(ref.api_version, ref.kind, ref.name, ref.uid, namespace)


def references_diffs(
    old: Iterable[OwnerReference], new: Iterable[OwnerReference]
) -> tuple[list[OwnerReference], list[OwnerReference], list[tuple[OwnerReference, OwnerReference]]]:
    """Owner references added, removed, and changed (same uid, other fields) (``referencesDiffs``)."""
    old_by_uid = {r.uid: r for r in old}
    added: list[OwnerReference] = []
    changed: list[tuple[OwnerReference, OwnerReference]] = []
    seen: set[str] = set()
    for ref in new:
        before = old_by_uid.get(ref.uid)
        if before is None:
            added.append(ref)
        else:
            seen.add(ref.uid)
            if before != ref:
                changed.append((before, ref))
    removed = [r for uid, r in old_by_uid.items() if uid not in seen]
    return added, removed, changed


class DependencyGraph:
    """Owners and dependents by uid, updated from informer events (upstream ``GraphBuilder``)."""

    def __init__(self, *, absent_owners: AbsentOwnerCache | None = None) -> None:
        self.nodes: dict[str, Node] = {}
        self.absent_owners = absent_owners if absent_owners is not None else AbsentOwnerCache()

    def node(self, uid: str) -> Node | None:
        return self.nodes.get(uid)

    def __len__(self) -> int:
        return len(self.nodes)

    def of_kind(self, group: str, kind: str) -> list[Node]:
        """The nodes of objects of ``kind`` in API group ``group`` (any version)."""
        return [
            node
            for node in self.nodes.values()
            if node.identity.kind == kind and node.identity.api_version.rpartition("/")[0] == group
        ]

    def dependents(self, node: Node) -> list[Node]:
        return [self.nodes[uid] for uid in sorted(node.dependents) if uid in self.nodes]

    def blocking_dependents(self, node: Node) -> list[Node]:
        """Dependents whose reference to ``node`` says ``blockOwnerDeletion`` (``blockingDependents``)."""
        return [
            dep
            for dep in self.dependents(node)
            if any(ref.uid == node.uid and ref.block_owner_deletion for ref in dep.owners)
        ]

    # -- events --------------------------------------------------------------------------------------

    def observe(self, new: ObservedObject, old: ObservedObject | None = None) -> Actions:
        """An informer reported ``new`` added or updated (``old``: its previous state, if any)."""
        actions = Actions()
        uid = new.identity.uid
        existing = self.nodes.get(uid)
        if existing is not None and existing.virtual:
            self._observe_virtual(existing, new.identity, actions)
        if existing is None:
            node = Node(
                identity=new.identity,
                owners=new.owners,
                being_deleted=new.being_deleted,
                deleting_dependents=new.being_deleted and FOREGROUND_FINALIZER in new.finalizers,
            )
            self.nodes[uid] = node
            self._add_dependent_to_owners(node, node.owners, actions)
            self._process_transitions(old, new, node, actions)
            return actions
        if (existing.identity.api_version, existing.identity.kind) != (
            new.identity.api_version,
            new.identity.kind,
        ):
            existing.identity = replace(
                existing.identity, api_version=new.identity.api_version, kind=new.identity.kind
            )
        added, removed, changed = references_diffs(existing.owners, new.owners)
        if added or removed or changed:
            self._add_unblocked_owners(removed, changed, actions)
            existing.owners = new.owners
            self._add_dependent_to_owners(existing, added, actions)
            self._remove_dependent_from_owners(existing, removed)
        if new.being_deleted:
            existing.being_deleted = True
        self._process_transitions(old, new, existing, actions)
        return actions

    def observe_deleted(self, obj: ObservedObject) -> Actions:
        """An informer reported ``obj`` deleted."""
        actions = Actions()
        existing = self.nodes.get(obj.identity.uid)
        if existing is not None:
            self._remove(existing, obj.identity, actions)
        return actions

    def virtual_delete(self, identity: ObjectReference) -> Actions:
        """The API server says ``identity`` does not exist (a 404 or another uid): a *virtual* delete.

        Upstream ``processGraphChanges`` with ``event.virtual``: a virtual node is removed unless some of
        its dependents name the uid with other coordinates (another kind, name or namespace: then it
        may still exist under those, and is looked at again under one of them).
        """
        actions = Actions()
        existing = self.nodes.get(identity.uid)
        if existing is None:
            return actions
        if existing.virtual:
            matching, nonmatching = self._partition_dependents(existing, identity)
            if nonmatching:
                if matching:
                    self.absent_owners.add(identity)
                    for dep in matching:
                        actions.delete(dep.uid)
                if existing.identity == identity:
                    alternate = _alternate_identity(nonmatching, identity)
                    if alternate is not None:
                        existing.identity = alternate
                        actions.delete(existing.uid)
                return actions
        elif existing.identity != identity:
            # An observed node disagrees with the coordinates that were found absent: keep it, but the
            # dependents that used those coordinates point at nothing.
            matching, _ = self._partition_dependents(existing, identity)
            if matching:
                self.absent_owners.add(identity)
                for dep in matching:
                    actions.delete(dep.uid)
            return actions
        self._remove(existing, identity, actions)
        return actions

    # -- internals -----------------------------------------------------------------------------------

    def _remove(self, node: Node, identity: ObjectReference, actions: Actions) -> None:
        del self.nodes[node.uid]
        self._remove_dependent_from_owners(node, node.owners)
        if node.dependents:
            self.absent_owners.add(identity)
        for dep in sorted(node.dependents):
            actions.delete(dep)
        for ref in node.owners:
            owner = self.nodes.get(ref.uid)
            if owner is not None and owner.deleting_dependents:
                # Maybe it was the last dependent the owner waited for.
                actions.delete(owner.uid)

    def _observe_virtual(self, node: Node, observed: ObjectReference, actions: Actions) -> None:
        """An informer has now seen an object the graph only knew as some dependent's owner."""
        if observed != node.identity:
            _, suspicious = self._partition_dependents(node, observed)
            for dep in suspicious:
                if observed.namespace and dep.identity.namespace != observed.namespace:
                    ref = next((r for r in dep.owners if r.uid == observed.uid), None)
                    if ref is not None:
                        actions.invalid_namespace_owner_refs.append((dep.identity, ref))
                actions.delete(dep.uid)
            node.identity = observed
        node.virtual = False

    def _add_dependent_to_owners(
        self, node: Node, owners: Iterable[OwnerReference], actions: Actions
    ) -> None:
        """``addDependentToOwners``: unknown owners become virtual nodes, to be checked."""
        potentially_invalid = False
        for ref in owners:
            owner = self.nodes.get(ref.uid)
            if owner is None:
                owner = Node(identity=owner_identity(ref, node.identity.namespace), virtual=True)
                self.nodes[ref.uid] = owner
                owner.dependents.add(node.uid)
                actions.delete(owner.uid)
                continue
            owner.dependents.add(node.uid)
            if potentially_invalid:
                continue
            owner_namespaced = bool(owner.identity.namespace)
            if owner_namespaced and owner.identity.namespace != node.identity.namespace:
                # A namespaced owner can only own objects of its own namespace.
                if not owner.virtual:
                    actions.invalid_namespace_owner_refs.append((node.identity, ref))
                potentially_invalid = True
            elif not owner.identity.matches(ref) or (
                not owner_namespaced and owner.identity.namespace != node.identity.namespace and owner.virtual
            ):
                potentially_invalid = True
        if potentially_invalid:
            actions.delete(node.uid)

    def _remove_dependent_from_owners(self, node: Node, owners: Iterable[OwnerReference]) -> None:
        for ref in owners:
            owner = self.nodes.get(ref.uid)
            if owner is not None:
                owner.dependents.discard(node.uid)

    def _add_unblocked_owners(
        self,
        removed: Iterable[OwnerReference],
        changed: Iterable[tuple[OwnerReference, OwnerReference]],
        actions: Actions,
    ) -> None:
        """A blocking reference went away or stopped blocking: its owner may be able to go now."""
        for ref in removed:
            if ref.block_owner_deletion and ref.uid in self.nodes:
                actions.delete(ref.uid)
        for before, after in changed:
            if before.block_owner_deletion and not after.block_owner_deletion and after.uid in self.nodes:
                actions.delete(after.uid)

    def _process_transitions(
        self, old: ObservedObject | None, new: ObservedObject, node: Node, actions: Actions
    ) -> None:
        """``processTransitions``: the start of an orphaning or of a foreground deletion."""
        if new.deletion_starts_with(ORPHAN_FINALIZER, old):
            actions.orphan(node.uid)
            return
        if new.deletion_starts_with(FOREGROUND_FINALIZER, old):
            node.deleting_dependents = True
            for dep in sorted(node.dependents):
                actions.delete(dep)
            actions.delete(node.uid)

    def _partition_dependents(self, node: Node, identity: ObjectReference) -> tuple[list[Node], list[Node]]:
        """Dependents whose reference to ``identity.uid`` matches its coordinates, and those that do not."""
        matching: list[Node] = []
        nonmatching: list[Node] = []
        for dep in self.dependents(node):
            found_match = found_mismatch = False
            if identity.namespace and identity.namespace != dep.identity.namespace:
                found_mismatch = True
            else:
                for ref in dep.owners:
                    if ref.uid == identity.uid:
                        if identity.matches(ref):
                            found_match = True
                        else:
                            found_mismatch = True
            if found_match:
                matching.append(dep)
            if found_mismatch:
                nonmatching.append(dep)
        return matching, nonmatching


def _alternate_identity(dependents: Iterable[Node], absent: ObjectReference) -> ObjectReference | None:
    """Another identity the dependents give the uid (``getAlternateOwnerIdentity``, simplified)."""
    candidates = sorted(
        {
            owner_identity(ref, "" if not absent.namespace else dep.identity.namespace)
            for dep in dependents
            for ref in dep.owners
            if ref.uid == absent.uid
        }
        - {absent},
        key=lambda r: (r.kind, r.api_version, r.namespace, r.name),
    )
    return candidates[0] if candidates else None


# -- decisions ---------------------------------------------------------------------------------------


class OwnerState(Enum):
    """What a live GET found for one owner reference (``classifyReferences``)."""

    #: 404, or an object of that name with another uid.
    ABSENT = "dangling"
    #: Exists and is not waiting for its dependents.
    SOLID = "solid"
    #: Being deleted with the ``foregroundDeletion`` finalizer.
    WAITING_FOR_DEPENDENTS_DELETION = "waitingForDependentsDeletion"


def owner_state(ref: OwnerReference, live: Object | None) -> OwnerState:
    """Classify one owner from the live object found under its name (None: not found)."""
    if live is None or str(object_meta(live).get("uid") or "") != ref.uid:
        return OwnerState.ABSENT
    if being_deleted(live) and FOREGROUND_FINALIZER in finalizers(live):
        return OwnerState.WAITING_FOR_DEPENDENTS_DELETION
    return OwnerState.SOLID


@dataclass(frozen=True)
class Classified:
    """An item's owner references, by what became of their owners."""

    solid: tuple[OwnerReference, ...] = ()
    dangling: tuple[OwnerReference, ...] = ()
    waiting: tuple[OwnerReference, ...] = ()


def classify(refs: Iterable[OwnerReference], states: Mapping[str, OwnerState]) -> Classified:
    solid: list[OwnerReference] = []
    dangling: list[OwnerReference] = []
    waiting: list[OwnerReference] = []
    for ref in refs:
        state = states[ref.uid]
        if state is OwnerState.ABSENT:
            dangling.append(ref)
        elif state is OwnerState.WAITING_FOR_DEPENDENTS_DELETION:
            waiting.append(ref)
        else:
            solid.append(ref)
    return Classified(tuple(solid), tuple(dangling), tuple(waiting))


@dataclass(frozen=True)
class KeepItem:
    """Leave the item alone."""

    reason: str


@dataclass(frozen=True)
class RemoveOwnerReferences:
    """The item has a live owner: only drop its references to owners that are gone or going."""

    uids: tuple[str, ...]


@dataclass(frozen=True)
class DeleteItem:
    """Delete the item with ``policy``; first make its references non-blocking if ``unblock_first``."""

    policy: str
    unblock_first: bool = False


Decision = KeepItem | RemoveOwnerReferences | DeleteItem


def decide(
    item_finalizers: Iterable[str],
    classified: Classified,
    *,
    has_dependents: bool,
    a_dependent_is_deleting_dependents: bool = False,
) -> Decision:
    """What ``attemptToDeleteItem`` does with an item, given what became of its owners."""
    if not (classified.solid or classified.dangling or classified.waiting):
        return KeepItem("item doesn't have an owner")
    if classified.solid:
        if not classified.dangling and not classified.waiting:
            return KeepItem("item has at least one existing owner")
        # The references to waiting owners must go too, or those owners would wait forever.
        return RemoveOwnerReferences(tuple(r.uid for r in (*classified.dangling, *classified.waiting)))
    if classified.waiting and has_dependents:
        # An owner waits for this item, which has dependents of its own: delete it in the foreground
        # as well, so that the wait covers the whole chain. A dependent itself deleting dependents
        # may mean a cycle: unblock our references first (upstream's cycle guard).
        return DeleteItem(FOREGROUND, unblock_first=a_dependent_is_deleting_dependents)
    present = set(item_finalizers)
    if ORPHAN_FINALIZER in present:
        return DeleteItem(ORPHAN)
    if FOREGROUND_FINALIZER in present:
        return DeleteItem(FOREGROUND)
    return DeleteItem(BACKGROUND)


# -- patches -----------------------------------------------------------------------------------------


def remove_owner_references_patch(obj: Object, uids: Iterable[str]) -> dict[str, Any]:
    """A JSON merge patch dropping the references to ``uids``, valid only at the object's resourceVersion.

    A merge patch replaces a list whole, so the patch carries the references that remain; the
    resourceVersion makes it fail with 409 Conflict if the object changed meanwhile
    (upstream ``deleteOwnerRefJSONMergePatch``).
    """
    drop = set(uids)
    meta = object_meta(obj)
    remaining = [r for r in meta.get("ownerReferences") or [] if str(r.get("uid")) not in drop]
    return {
        "metadata": {"ownerReferences": remaining or None, "resourceVersion": meta.get("resourceVersion")}
    }


def unblock_owner_references_patch(obj: Object) -> dict[str, Any]:
    """A merge patch setting ``blockOwnerDeletion: false`` on every reference (``unblockOwnerReferences``)."""
    meta = object_meta(obj)
    refs = [
        {**r, "blockOwnerDeletion": False} if r.get("blockOwnerDeletion") else dict(r)
        for r in meta.get("ownerReferences") or []
    ]
    return {"metadata": {"ownerReferences": refs, "resourceVersion": meta.get("resourceVersion")}}


def remove_finalizer_patch(obj: Object, finalizer: str) -> dict[str, Any] | None:
    """A merge patch removing ``finalizer`` at the object's resourceVersion; None if it is not there."""
    present = finalizers(obj)
    if finalizer not in present:
        return None
    remaining = [f for f in present if f != finalizer]
    return {
        "metadata": {
            "finalizers": remaining or None,
            "resourceVersion": object_meta(obj).get("resourceVersion"),
        }
    }


__all__ = [
    "BACKGROUND",
    "FOREGROUND",
    "FOREGROUND_FINALIZER",
    "ORPHAN",
    "ORPHAN_FINALIZER",
    "AbsentOwnerCache",
    "Actions",
    "Classified",
    "Decision",
    "DeleteItem",
    "DependencyGraph",
    "KeepItem",
    "Node",
    "ObjectReference",
    "ObservedObject",
    "OwnerReference",
    "OwnerState",
    "RemoveOwnerReferences",
    "classify",
    "decide",
    "owner_references",
    "owner_state",
    "references_diffs",
    "remove_finalizer_patch",
    "remove_owner_references_patch",
    "unblock_owner_references_patch",
]
