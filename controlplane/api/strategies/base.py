"""Strategies: what is special about each kind when it is created, updated or deleted.

kube-apiserver's generic registry (``k8s.io/apiserver/pkg/registry/generic/registry/store.go``) does the
same things for every kind: name generation, uid, timestamps, optimistic concurrency, storage. What
differs per kind it asks a **strategy** (``pkg/registry/<group>/<kind>/strategy.go``):

- ``prepare_for_create`` / ``prepare_for_update``: clear or keep fields the client may not set here.
  A kind with a ``status`` subresource ignores ``status`` on its main endpoint (the kubelet writes a
  pod's status through ``pods/status``; a user's ``kubectl apply`` cannot overwrite it), and
  ``pods/status`` in turn ignores changes to ``spec``;
- ``default``: fill in defaults (``restartPolicy: Always``, ``imagePullPolicy``...);
- ``validate`` / ``validate_update``: the semantic rules, answering 422 with field paths;
- ``metadata.generation`` is bumped when the *spec* changes, so controllers can report
  ``status.observedGeneration`` and ``kubectl rollout status`` knows whether they have caught up.

``Strategy`` below is the lab's form of upstream's strategy interfaces in
``k8s.io/apiserver/pkg/registry/rest``: ``RESTCreateStrategy`` (``create.go``), ``RESTUpdateStrategy``
(``update.go``) and ``RESTGracefulDeleteStrategy`` (``delete.go``). Upstream declares them as Go
interfaces that every kind implements in full; here one base class carries the behaviour of a plain
kind (a ConfigMap), and the kinds in this package (``common.CoreKindStrategy`` and the modules beside
it) override what they need.
The registry (``controlplane.apiserver.registry``) calls these hooks for every request that writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controlplane.api import serializer
from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object
from controlplane.api.validation import (
    FieldError,
    NameValidator,
    is_dns1123_subdomain,
    validate_object_meta,
    validate_object_meta_update,
)
from controlplane.identity import UserInfo


class Strategy:
    """The behaviour of a kind without special rules; subclasses override per kind."""

    #: The kind has a ``status`` that only its ``/status`` subresource may change.
    status_subresource: bool = False
    #: ``metadata.generation`` counts changes to ``spec`` (1 on create).
    tracks_generation: bool = False
    #: Name rule for ``metadata.name`` (most kinds: a DNS subdomain).
    name_validator: NameValidator = staticmethod(is_dns1123_subdomain)
    #: Whether deleting waits for a grace period (pods) instead of removing at once.
    graceful_deletion: bool = False

    def deletion_grace_period(self, obj: Object, requested: int | None) -> int:
        """Seconds a delete of ``obj`` waits (``CheckGracefulDelete``); 0 removes it at once.

        ``requested`` is the DeleteOptions' ``gracePeriodSeconds``. Kinds without graceful deletion
        always answer 0; others take the request, else ``spec.terminationGracePeriodSeconds`` (30).
        """
        if not self.graceful_deletion:
            return 0
        if requested is not None:
            return max(0, requested)
        value = (obj.get("spec") or {}).get("terminationGracePeriodSeconds")
        return int(value) if isinstance(value, int) and value >= 0 else 30

    def delete_refusal(self, name: str) -> str | None:
        """Why a DELETE of the object ``name`` is refused outright (403), or None. Upstream's REST
        storage of a few kinds overrides ``Delete`` so (the system PriorityClasses); a
        deletecollection goes through the generic store's ``Delete`` and is not refused."""
        return None

    def default(self, obj: Object) -> None:
        """Fill in defaulted fields (upstream's ``SetDefaults_*``)."""

    def warnings_on_create(self, obj: Object) -> list[str]:
        """``WarningsOnCreate``: what a valid new object deserves a warning for (a deprecated field,
        a value that probably does not do what was meant); sent back as ``Warning`` headers."""
        return []

    def warnings_on_update(self, obj: Object, old: Object) -> list[str]:
        """``WarningsOnUpdate``: as ``warnings_on_create``, for an update of the object."""
        return []

    def prepare_for_create(self, obj: Object) -> None:
        if self.status_subresource:
            obj.pop("status", None)
            self.reset_status(obj)
        if self.tracks_generation:
            obj["metadata"]["generation"] = 1

    def reset_status(self, obj: Object) -> None:
        """The status a new object starts with (most kinds: none)."""

    def prepare_for_update(self, obj: Object, old: Object) -> None:
        if self.status_subresource:
            if "status" in old:
                obj["status"] = deep_copy(old["status"])
            else:
                obj.pop("status", None)
        if self.tracks_generation:
            generation = old["metadata"].get("generation", 1)
            obj["metadata"]["generation"] = (
                generation + 1 if obj.get("spec") != old.get("spec") else generation
            )

    #: Metadata fields a ``/status`` write may not change for this kind (its upstream status strategy
    #: resets them: a Deployment's labels, a pod's ownerReferences).
    status_resets_metadata: tuple[str, ...] = ()

    def prepare_for_status_update(self, obj: Object, old: Object) -> None:
        """``/status`` writes change ``status`` and metadata (annotations, labels): the spec and every
        other field come from the stored object, as upstream's status strategies do (``newObj.Spec =
        oldObj.Spec``). The registry has already kept the server-owned metadata (uid, timestamps)."""
        status = obj.get("status")
        meta = obj.get("metadata")
        # The old object's fields, in its order. A field the write left as it was (most of them: a
        # status write is decoded from a copy of the stored object) is kept rather than copied again.
        fields = {
            name: obj[name] if name in obj and _same(obj[name], value) else deep_copy(value)
            for name, value in old.items()
        }
        obj.clear()
        obj.update(fields)
        if isinstance(meta, dict):
            kept = dict(meta)
            for field in self.status_resets_metadata:
                if field in old.get("metadata", {}):
                    kept[field] = deep_copy(old["metadata"][field])
                else:
                    kept.pop(field, None)
            obj["metadata"] = kept
        if status is None:
            obj.pop("status", None)
        else:
            obj["status"] = status

    def set_requester(self, obj: Object, user: UserInfo | None) -> None:
        """Record who creates ``obj`` (None: the API server itself), for kinds that say who asked
        (a CertificateSigningRequest's ``spec.username``); upstream's ``PrepareForCreate`` reads the
        user from the request's context. Most kinds record nobody."""

    def set_condition_times(self, obj: Object, old: Object, now: Callable[[], str]) -> None:
        """Fill in condition times the server owns on a ``/status`` or ``/approval`` write (``now()``:
        the cluster clock's RFC 3339 time). Most kinds leave their conditions as written."""

    def prepare_for_approval_update(self, obj: Object, old: Object) -> None:
        """The ``/approval`` subresource (CertificateSigningRequests only): as ``/status`` unless
        the kind says otherwise."""
        self.prepare_for_status_update(obj, old)

    def validate_approval_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate_status_update(obj, old, namespaced=namespaced)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_object_meta(
            obj["metadata"], namespaced=namespaced, name_validator=self.name_validator
        )

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate(obj, namespaced=namespaced) + validate_object_meta_update(
            obj["metadata"], old["metadata"]
        )

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_object_meta_update(obj["metadata"], old["metadata"])


def _same(new: Any, old: Any) -> bool:
    """Whether ``new`` is ``old``'s JSON, decided in C: ``==`` first, then the encodings, which tell
    ``true`` from ``1`` and ``1`` from ``1.0`` where ``==`` does not. (Keys in another order count as
    a change: the old value is copied then, which is right either way.)"""
    try:
        return bool(new == old) and serializer.encode(new) == serializer.encode(old)
    except serializer.UnencodableObject:
        return False
