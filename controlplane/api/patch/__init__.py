"""Patches: how a client changes part of an object without sending all of it.

A ``PATCH`` request carries a document that describes a change, and its ``Content-Type`` says
how to read it. Kubernetes accepts three kinds (plus server-side apply, elsewhere), because each
answers a different need:

* **JSON Patch** (RFC 6902, ``application/json-patch+json``, :mod:`.jsonpatch`): a list of
  operations at exact paths, ``[{"op": "replace", "path": "/spec/replicas", "value": 3}]``.
  Precise, and it can ``test`` a value first; but list elements are addressed by index.
* **JSON merge patch** (RFC 7386, ``application/merge-patch+json``, :mod:`.mergepatch`): a
  partial object, merged in; ``null`` deletes. Simple and schema-free (custom resources use
  it), but every list in it replaces the whole list.
* **Strategic merge patch** (``application/strategic-merge-patch+json``, :mod:`.strategic`):
  a merge patch that reads each list's strategy from the schema. A list with a **merge key**
  (containers by ``name``) is merged element by element, so a patch naming one container leaves
  the others, and the sidecars the server added, alone. ``kubectl apply`` computes a three-way
  strategic merge patch (last-applied, new, live) and the server only has to apply it.

All three are pure functions here: a decoded JSON document and patch in, a new document out,
nothing modified, no I/O. A failure is a :class:`~.errors.PatchError` carrying the HTTP status
and ``Status`` body kube-apiserver would answer with.
"""

from __future__ import annotations

from controlplane.api.patch.errors import (
    InvalidPatch,
    JSONPatchOperationFailed,
    JSONPatchTestFailed,
    ListOfListsNotSupported,
    MissingMergeKey,
    PatchError,
    PatchTooLarge,
    StrategicMergePatchFailed,
    UnhandledPatchError,
    UnknownPatchField,
    UnprocessablePatch,
    UnsupportedStrategicMergePatch,
)
from controlplane.api.patch.jsonpatch import apply_json_patch
from controlplane.api.patch.mergepatch import apply_merge_patch
from controlplane.api.patch.strategic import apply_strategic_merge_patch

__all__ = [
    "InvalidPatch",
    "JSONPatchOperationFailed",
    "JSONPatchTestFailed",
    "ListOfListsNotSupported",
    "MissingMergeKey",
    "PatchError",
    "PatchTooLarge",
    "StrategicMergePatchFailed",
    "UnhandledPatchError",
    "UnknownPatchField",
    "UnprocessablePatch",
    "UnsupportedStrategicMergePatch",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
]
