"""JSON Patch (RFC 6902): a list of operations, each naming exactly where it applies.

``kubectl patch --type json -p '[{"op": "replace", "path": "/spec/replicas", "value": 3}]'``
sends ``Content-Type: application/json-patch+json``. Of Kubernetes' three patch types this is
the most explicit: every change names a location with a JSON Pointer (RFC 6901: ``/`` between
reference tokens, ``~1`` for a ``/`` inside a key, ``~0`` for ``~``) and one of six operations:

* ``add``: set an object member, or insert into a list before the given index (``-`` appends);
* ``remove``, ``replace``: the target must exist;
* ``move`` and ``copy``: from ``from`` to ``path``;
* ``test``: fail the whole patch unless the value there equals ``value`` (an optimistic lock
  in the patch itself).

The patch is atomic: if any operation fails, nothing is applied. Lists are addressed by index,
which is why a JSON Patch is fragile against a list that changed meanwhile, and why kubectl's
``apply`` uses strategic merge patch instead.

kube-apiserver applies these patches with ``gopkg.in/evanphx/json-patch.v4`` (apiserver
``pkg/endpoints/handlers/patch.go``, ``applyJSPatch``), and this module follows that library,
including where it departs from the RFC, because clients see those departures:

* A negative index counts from the end (``/foo/-1`` is the last element; for ``add`` it is the
  position after the last). RFC 6901 has no negative indices.
* ``replace`` of a missing *object member* adds it (evanphx/json-patch issue #119; fixed only in
  v5). Of a missing list index it fails.
* ``test`` of a missing member against ``null`` passes; ``copy`` from a missing member copies
  ``null``.
* The root cannot be targeted: a path must have at least one ``/``, and its first token is
  ignored (``a/b`` acts as ``/b``), as in the library's ``findObject``.
* ``add``/``replace`` without ``value`` write ``null``.

Errors carry evanphx's messages (``add operation does not apply: doc is missing path:
"/spec/volumes/-": missing value``) as :attr:`~.PatchError.detail`; kube-apiserver answers them
all with 422 and a fixed message (see :mod:`.errors`). A body that is not a list of objects is a
400; more than 10,000 operations a 413.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.gotypes import json_kind
from controlplane.api.patch._json import go_quote, same_json
from controlplane.api.patch.errors import (
    InvalidPatch,
    JSONPatchOperationFailed,
    JSONPatchTestFailed,
    PatchTooLarge,
)

MAX_OPERATIONS: Final = 10_000
"""apiserver ``handlers/patch.go`` ``maxJSONPatchOperations``: more is a 413."""

COPY_SIZE_LIMIT: Final = 3 * 1024 * 1024
"""Bytes that ``copy`` operations may add in one patch: apiserver ``server/config.go`` sets
evanphx's ``AccumulatedCopySizeLimit`` to ``JSONPatchMaxCopyBytes``, 3 MiB by default."""

_MISSING: Final = "missing value"  # evanphx ErrMissing
_INVALID_INDEX: Final = "invalid index referenced"  # evanphx ErrInvalidIndex
_ATOI: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MAX: Final = 2**63 - 1


class _OpError(Exception):
    """An operation failed; the text is evanphx's (the wrapping happens where upstream wraps)."""


class _TestFailed(_OpError):
    pass


def apply_json_patch(
    doc: Any,
    operations: Any,
    *,
    max_operations: int = MAX_OPERATIONS,
    copy_size_limit: int = COPY_SIZE_LIMIT,
    copy: bool = True,
) -> Any:
    """Apply an RFC 6902 patch (the decoded request body) to a copy of ``doc`` and return it.

    ``doc`` is not modified, unless ``copy`` is False (a caller's own copy, patched in place).
    Raises :class:`~.InvalidPatch` (400) if ``operations`` is not a list of objects,
    :class:`~.PatchTooLarge` (413) beyond ``max_operations``, and :class:`~.JSONPatchOperationFailed`
    (422; :class:`~.JSONPatchTestFailed` for ``test``) naming the first operation that failed.
    """
    ops = _decode(operations)
    if len(ops) > max_operations:
        raise PatchTooLarge(
            f"The allowed maximum operations in a JSON patch is {max_operations}, got {len(ops)}"
        )
    state = _State(deep_copy(doc) if copy else doc, copy_size_limit)
    for index, op in enumerate(ops):
        kind = _op_kind(op)
        handler = _HANDLERS.get(kind)
        try:
            if handler is None:
                raise _OpError(f"Unexpected kind: {kind}")
            handler(state, op)
        except _TestFailed as failure:
            raise JSONPatchTestFailed(str(failure), index=index, op=kind) from None
        except _OpError as failure:
            raise JSONPatchOperationFailed(str(failure), index=index, op=kind) from None
    return state.root


def _decode(operations: Any) -> list[dict[str, Any] | None]:
    """``jsonpatch.DecodePatch``: the body must be an array of objects (``null`` entries allowed).

    A body of ``null`` decodes, as in Go, to no operations at all.
    """
    if operations is None:
        return []
    if not isinstance(operations, list):
        raise InvalidPatch(
            f"json: cannot unmarshal {json_kind(operations)} into Go value of type jsonpatch.Patch"
        )
    for op in operations:
        if op is not None and not isinstance(op, dict):
            raise InvalidPatch(
                f"json: cannot unmarshal {json_kind(op)} into Go value of type jsonpatch.Operation"
            )
    return operations


class _State:
    def __init__(self, root: Any, copy_size_limit: int) -> None:
        self.root = root
        self.copy_size_limit = copy_size_limit
        self.copied_bytes = 0


# -- reading an operation -----------------------------------------------------------------------


def _op_kind(op: dict[str, Any] | None) -> str:
    value = (op or {}).get("op")
    return value if isinstance(value, str) else "unknown"


def _op_string(op: dict[str, Any] | None, member: str, missing: str) -> str:
    """``Operation.Path()`` / ``From()``: the member as a string, or an error text."""
    value = (op or {}).get(member)
    if value is None:
        raise _OpError(f"{missing}: {_MISSING}")
    if not isinstance(value, str):
        raise _OpError(f"json: cannot unmarshal {json_kind(value)} into Go value of type string")
    return value


def _path(op: dict[str, Any] | None, name: str, *, keep_cause: bool) -> str:
    try:
        return _op_string(op, "path", "operation missing path field")
    except _OpError as error:
        # Upstream wraps the cause for some operations and replaces it with ErrMissing for others.
        raise _OpError(
            f"{name} operation failed to decode path: {error if keep_cause else _MISSING}"
        ) from None


def _from(op: dict[str, Any] | None, name: str) -> str:
    try:
        return _op_string(op, "from", "operation, missing from field")
    except _OpError as error:
        raise _OpError(f"{name} operation failed to decode from: {error}") from None


def _value(op: dict[str, Any] | None) -> Any:
    """The operation's ``value``; absent and ``null`` both give ``None`` (JSON null)."""
    return deep_copy((op or {}).get("value"))


# -- JSON Pointer and containers ------------------------------------------------------------------

_Container = dict[str, Any] | list[Any]


def _unescape(token: str) -> str:
    # One left-to-right pass, as strings.NewReplacer("~1", "/", "~0", "~"): "~01" is "~1".
    return re.sub(r"~[01]", lambda m: "/" if m.group() == "~1" else "~", token)


def _find_container(root: Any, path: str) -> tuple[_Container | None, str]:
    """evanphx ``findObject``: the container that holds the path's last token, and that token."""
    tokens = path.split("/")
    if len(tokens) < 2 or not isinstance(root, dict | list):
        return None, ""
    node: Any = root
    for token in tokens[1:-1]:
        try:
            node = _get(node, _unescape(token))
        except _OpError:
            return None, ""
        if not isinstance(node, dict | list):
            return None, ""
    return node, _unescape(tokens[-1])


def _atoi(token: str) -> int:
    if not _ATOI.fullmatch(token):
        raise _OpError(f"strconv.Atoi: parsing {go_quote(token)}: invalid syntax")
    number = int(token)
    if not -_INT64_MAX - 1 <= number <= _INT64_MAX:
        raise _OpError(f"strconv.Atoi: parsing {go_quote(token)}: value out of range")
    return number


def _invalid_index(index: int) -> _OpError:
    return _OpError(f"Unable to access invalid index: {index}: {_INVALID_INDEX}")


def _existing_index(items: list[Any], token: str) -> int:
    """An index into ``items`` that must exist; negative counts from the end."""
    index = _atoi(token)
    position = index + len(items) if index < 0 else index
    if not 0 <= position < len(items):
        raise _invalid_index(index)
    return position


def _get(container: _Container, key: str) -> Any:
    """The value at ``key``; a missing object member reads as ``None``, as in evanphx."""
    if isinstance(container, dict):
        return container.get(key)
    return container[_existing_index(container, key)]


def _add(container: _Container, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    try:
        index = _atoi(key)
    except _OpError as error:
        raise _OpError(f"value was not a proper array index: '{key}': {error}") from None
    size = len(container) + 1
    if index >= size or index < -size:
        raise _invalid_index(index)
    container.insert(index + size if index < 0 else index, value)


def _remove(container: _Container, key: str) -> None:
    if isinstance(container, dict):
        if key not in container:
            raise _OpError(f"Unable to remove nonexistent key: {key}: {_MISSING}")
        del container[key]
        return
    del container[_existing_index(container, key)]


def _replace(container: _Container, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value  # evanphx v4 does not check that the member exists
        return
    container[_existing_index(container, key)] = value


# -- the six operations ---------------------------------------------------------------------------
# Messages as in evanphx/json-patch v4 patch.go (Patch.add, Patch.remove, ...).


def _op_add(state: _State, op: dict[str, Any] | None) -> None:
    path = _path(op, "add", keep_cause=False)
    container, key = _find_container(state.root, path)
    if container is None:
        raise _OpError(f'add operation does not apply: doc is missing path: "{path}": {_MISSING}')
    try:
        _add(container, key, _value(op))
    except _OpError as error:
        raise _OpError(f"error in add for path: '{path}': {error}") from None


def _op_remove(state: _State, op: dict[str, Any] | None) -> None:
    path = _path(op, "remove", keep_cause=False)
    container, key = _find_container(state.root, path)
    if container is None:
        raise _OpError(f'remove operation does not apply: doc is missing path: "{path}": {_MISSING}')
    try:
        _remove(container, key)
    except _OpError as error:
        raise _OpError(f"error in remove for path: '{path}': {error}") from None


def _op_replace(state: _State, op: dict[str, Any] | None) -> None:
    path = _path(op, "replace", keep_cause=True)
    container, key = _find_container(state.root, path)
    if container is None:
        raise _OpError(f"replace operation does not apply: doc is missing path: {path}: {_MISSING}")
    try:
        _get(container, key)
    except _OpError:
        raise _OpError(f"replace operation does not apply: doc is missing key: {path}: {_MISSING}") from None
    _replace(container, key, _value(op))


def _op_move(state: _State, op: dict[str, Any] | None) -> None:
    source = _from(op, "move")
    container, key = _find_container(state.root, source)
    if container is None:
        raise _OpError(f"move operation does not apply: doc is missing from path: {source}: {_MISSING}")
    try:
        value = _get(container, key)
        _remove(container, key)
    except _OpError as error:
        raise _OpError(f"error in move for path: '{key}': {error}") from None
    path = _path(op, "move", keep_cause=True)
    container, key = _find_container(state.root, path)
    if container is None:
        raise _OpError(f"move operation does not apply: doc is missing destination path: {path}: {_MISSING}")
    try:
        _add(container, key, value)
    except _OpError as error:
        raise _OpError(f"error in move for path: '{path}': {error}") from None


def _op_test(state: _State, op: dict[str, Any] | None) -> None:
    path = _path(op, "test", keep_cause=True)
    container, key = _find_container(state.root, path)
    if container is None:
        raise _OpError(f"test operation does not apply: is missing path: {path}: {_MISSING}")
    try:
        actual = _get(container, key)
    except _OpError as error:
        raise _OpError(f"error in test for path: '{path}': {error}") from None
    has_value = op is not None and "value" in op
    expected = (op or {}).get("value")
    # A missing member and a JSON null both read as nil, and pass against "value": null. Without
    # a "value" member upstream dereferences nil (a panic, 500); we report a failed test instead.
    if has_value and same_json(actual, expected):
        return
    raise _TestFailed(f"testing value {path} failed: test failed")


def _op_copy(state: _State, op: dict[str, Any] | None) -> None:
    source = _from(op, "copy")
    container, key = _find_container(state.root, source)
    if container is None:
        raise _OpError(f"copy operation does not apply: doc is missing from path: {source}: {_MISSING}")
    try:
        value = _get(container, key)
    except _OpError as error:
        raise _OpError(f"error in copy for from: '{source}': {error}") from None
    path = _path(op, "copy", keep_cause=False)
    container, key = _find_container(state.root, path)
    if container is None:
        raise _OpError(f"copy operation does not apply: doc is missing destination path: {path}: {_MISSING}")
    if value is not None:  # evanphx deepCopy(nil) is nil and adds nothing to the size
        state.copied_bytes += len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    if 0 < state.copy_size_limit < state.copied_bytes:
        raise _OpError(
            "Unable to complete the copy, the accumulated size increase of copy is "
            f"{state.copied_bytes}, exceeding the limit {state.copy_size_limit}"
        )
    try:
        _add(container, key, deep_copy(value))
    except _OpError as error:
        raise _OpError(f"error while adding value during copy: {error}") from None


_HANDLERS: Final[dict[str, Callable[[_State, dict[str, Any] | None], None]]] = {
    "add": _op_add,
    "remove": _op_remove,
    "replace": _op_replace,
    "move": _op_move,
    "test": _op_test,
    "copy": _op_copy,
}
