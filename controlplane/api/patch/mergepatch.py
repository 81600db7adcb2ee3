"""JSON merge patch (RFC 7386): send the parts of the object you want to change.

``kubectl patch --type merge -p '{"metadata": {"labels": {"tier": null, "team": "blue"}}}'``
sends ``Content-Type: application/merge-patch+json``. The patch looks like the object itself:

* an object in the patch is merged into the object at the same place, member by member;
* ``null`` deletes a member (so a merge patch cannot *set* a value to null);
* anything else, including a list, replaces what was there: a merge patch cannot add one
  container to ``spec.containers``, only send the whole list again.

That last rule is why Kubernetes has a third type, strategic merge patch, which knows from the
schema that containers are keyed by ``name``. Merge patch needs no schema at all, so it is the
type custom resources support.

kube-apiserver applies merge patches with ``jsonpatch.MergePatch`` from
``gopkg.in/evanphx/json-patch.v4`` (apiserver ``pkg/endpoints/handlers/patch.go``,
``applyJSPatch``). Where that library refines the RFC, we follow it (``merge.go``):

* A member that is new (or was ``null``) is stored with the ``null`` members inside its objects
  removed, recursively, also in objects inside lists; ``null`` *elements* of a list are kept
  (evanphx/json-patch #132, fixed by #143 for Kubernetes' sake).
* A list or scalar replacing an existing object is stored as sent, nulls and all.
* A patch that is ``null``, a string, a number or a boolean is rejected, ``Invalid JSON Patch``
  (kube-apiserver: 400 BadRequest); RFC 7386 would make it the new document. A patch that is a
  list replaces the whole document (the API server then fails to decode the result: 422).
"""

from __future__ import annotations

from typing import Any

from controlplane.api.deepcopy import deep_copy
from controlplane.api.patch.errors import InvalidPatch, UnhandledPatchError


def apply_merge_patch(doc: Any, patch: Any, *, copy: bool = True, consume: bool = False) -> Any:
    """Apply a merge patch (the decoded request body) to a copy of ``doc`` and return it.

    ``doc`` is not modified, unless ``copy`` is False: then it is patched in place (for a caller
    whose ``doc`` is its own copy already, as the API server's read-modify-write decodes one).
    ``patch`` is not modified either, unless ``consume`` is True: then its parts become parts of the
    result, its nulls pruned in place (for a caller that will not use it again).
    Raises :class:`~.InvalidPatch` (400, ``Invalid JSON Patch``) for
    a patch that is not an object or a list, and :class:`~.UnhandledPatchError` (500,
    ``Invalid JSON Document``) for a ``null`` document.
    """
    if doc is None:
        raise UnhandledPatchError("Invalid JSON Document")
    if not isinstance(patch, dict | list):
        raise InvalidPatch("Invalid JSON Patch")
    if not consume:
        patch = deep_copy(patch)
    if isinstance(patch, list):
        return _prune_nulls(patch)
    if not isinstance(doc, dict):
        return _prune_nulls(patch)
    result = deep_copy(doc) if copy else doc
    _merge_into(result, patch)
    return result


def _merge_into(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """evanphx ``mergeDocs``: merge ``patch`` into ``target`` in place."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif target.get(key) is None:  # absent, or null: the new value, its nulls pruned
            target[key] = _prune_nulls(value)
        else:
            target[key] = _merge(target[key], value)


def _merge(current: Any, patch: Any) -> Any:
    """evanphx ``merge``: the value that results from patching ``current`` with ``patch``."""
    if not isinstance(current, dict):
        return _prune_nulls(patch)
    if not isinstance(patch, dict):
        return patch
    _merge_into(current, patch)
    return current


def _prune_nulls(value: Any) -> Any:
    """evanphx ``pruneNulls``: drop null members of objects, recursively; keep null list elements."""
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for item in value.values():
            _prune_nulls(item)
    elif isinstance(value, list):
        for item in value:
            _prune_nulls(item)
    return value
