"""Server-side apply: who owns which field of an object, and how an applied configuration merges.

Kubernetes objects are written by many hands: a user applies a Deployment, an autoscaler changes its
``replicas``, an admission webhook adds a sidecar. Client-side ``kubectl apply`` merges the user's
file by guessing from an annotation what the user set before; **server-side apply** (SSA) instead
has the API server remember, for every field, which **field manager** set it. That record is the
object's ``metadata.managedFields``, and it makes three things possible:

* **ownership**: a manager that applies a configuration owns exactly the fields in it. Applying a
  file again without a field removes that field from the object, unless another manager owns it
  too; other managers' fields are left alone;
* **conflicts**: applying a field that another manager set to a different value fails with
  ``409 Conflict`` naming the manager and the field (``conflict with "kubectl" with subresource
  "scale" using apps/v1: .spec.replicas``), so a user's apply does not silently undo an
  autoscaler; ``force=true`` (``kubectl apply --server-side --force-conflicts``) takes the field;
* **co-ownership**: applying the value a field already has is not a conflict: both managers own it.

Every other write (create, update, merge or strategic patch) is an ``Update`` operation: the fields
it changes become its manager's (named by ``?fieldManager=`` or the User-Agent: ``kubectl``,
``kubectl-client-side-apply``, ``kubectl-edit``), and are taken from everyone else.

Lists are not owned as a whole when their items have an identity: the schema's
``x-kubernetes-list-type: map`` with ``x-kubernetes-list-map-keys`` (containers by ``name``, ports
by ``containerPort`` and ``protocol``) or ``set`` (finalizers), with the strategic-merge-patch merge
key as the fallback, lets two managers own different items of one list.

The package is pure (no I/O) and ports kubernetes-sigs/structured-merge-diff and kubernetes'
``managedfields`` package:

* :mod:`.fieldpath`: field paths, field sets and their ``FieldsV1`` encoding;
* :mod:`.typed`: walking values with their schema (field sets, compare, merge, removal, validation);
* :mod:`.merge`: the updater: ownership after an update, merging and pruning on apply;
* :mod:`.conflicts`: conflicts and their 409 Status;
* :mod:`.managedfields`: ``metadata.managedFields`` entries and the field manager stack.

Where the lab differs from upstream, and why:

* Upstream compares Go objects, whose zero values carry non-pointer structs (``spec``,
  ``template``) and ``null`` for non-``omitempty`` lists. JSON has no such record, so here a named
  field holding a struct is never itself added or removed by an update (upstream's ``"."`` on
  ``f:rollingUpdate`` is missing), while map keys and list items are, as upstream.
* Each kind is served in one version, so conversions between manager versions are the identity.
* kubernetes-validate drops the ``default`` of list-map keys; the two that matter (``protocol``
  of container and service ports, ``TCP``) are in :data:`.typed.KEY_DEFAULTS`.
* Values of the wrong type are walked as leaves instead of failing the whole update; only an
  applied configuration is validated (:func:`.typed.validate`), with upstream's messages.
"""

from __future__ import annotations

from controlplane.api.fieldmanager.conflicts import Conflict, ConflictError
from controlplane.api.fieldmanager.fieldpath import PathElement, Set, make_path, path_string
from controlplane.api.fieldmanager.managedfields import (
    LAST_APPLIED_ANNOTATION,
    ApplyError,
    FieldManager,
    manager_from_user_agent,
    manager_identifier,
)
from controlplane.api.fieldmanager.merge import ManagedFields, Updater, VersionedSet
from controlplane.api.fieldmanager.typed import root_for_kind

__all__ = [
    "LAST_APPLIED_ANNOTATION",
    "ApplyError",
    "Conflict",
    "ConflictError",
    "FieldManager",
    "ManagedFields",
    "PathElement",
    "Set",
    "Updater",
    "VersionedSet",
    "make_path",
    "manager_from_user_agent",
    "manager_identifier",
    "path_string",
    "root_for_kind",
]
