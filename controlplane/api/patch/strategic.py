"""Strategic merge patch: a merge patch that knows, from the schema, how to merge each list.

A JSON merge patch replaces lists whole, which is wrong for most of Kubernetes' lists: to change
one container's image you would have to resend every container, and a sidecar that an admission
webhook injected would vanish. Strategic merge patch (``Content-Type:
application/strategic-merge-patch+json``, the default of ``kubectl patch`` and what ``kubectl
apply`` sends) looks like a merge patch, but reads each list's **patch strategy** from the kind's
schema (upstream's ``patchStrategy`` / ``patchMergeKey`` Go struct tags; here
``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key`` in :mod:`..schema`):

* ``merge`` with a **merge key**: the list is a map in disguise. Elements are matched by the
  key (containers by ``name``, container ports by ``containerPort``, env vars by ``name``,
  volume mounts by ``mountPath``, owner references by ``uid``) and merged like objects; patch
  elements with a new key are added; the live object's other elements stay.
* ``merge`` without a key, on a list of scalars (``metadata.finalizers``): a set union.
* no strategy (``tolerations``, ``args``, ``command``): the patch's list replaces the list.
* ``retainKeys`` (on ``Deployment.spec.strategy``, and with ``merge`` on ``volumes``): a
  ``$retainKeys`` list in the patch names the fields to keep; the others are cleared. Switching a
  strategy to ``Recreate`` must drop ``rollingUpdate``, which kubectl never mentions.

A patch may also carry **directives**, keys starting with ``$``:

* ``$patch: replace`` in an object replaces the object; as a list element, the whole list.
* ``$patch: delete``: in a list element, delete the element with that merge key; in an object,
  replace it by ``{}``.
* ``$deleteFromPrimitiveList/<field>: [values]``: remove those scalars from the list.
* ``$setElementOrder/<field>: [...]``: the order the client wants (merge keys, or the scalars);
  elements only on the server keep their place relative to their neighbours.
* ``$retainKeys: [fields]``: see above.
* ``null`` deletes a field, as in a merge patch.

This module ports the *apply* half of apimachinery ``pkg/util/strategicpatch/patch.go``
(``StrategicMergeMapPatch`` -> ``mergeMap``, ``mergeSlice``, ``mergePatchIntoOriginal``,
``normalizeElementOrder``...) with upstream's structure and names, so the two can be read side by
side; kubectl computes the patches, a server only applies them. Upstream behaviours kept on
purpose:

* The schema is consulted only where both the live value and the patch value are objects, or
  both are lists. A field the kind does not have fails there (``unable to find api field in
  struct PodSpec for the json field "foo"``, a 500 upstream), and is otherwise copied in for the
  API server's decoder to reject or drop, as kube-apiserver's strict decoding does.
* A ``map`` field (``labels``, ``resources.limits``, ``additionalProperties`` in the schema) is
  merged key by key, but cannot be recursed into further: upstream's Go map type has no struct
  fields (``merging an object in json but data type is not struct, instead is: map``).
* Kinds with no schema (custom resources) are refused: 400 ``strategic merge patch format is not
  supported``. (kube-apiserver already refuses the content type for them, with a 415.)
* Go slices share their backing array: when a list both loses and gains elements,
  ``$setElementOrder`` sees the live list as overwritten in place. The element order that
  results is part of observable behaviour (upstream's own test "add map and delete map from
  merging list" depends on it), so :class:`_LiveView` reproduces it.

The inputs are not modified: the patch is applied to a deep copy of the document.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api import schema as schemas
from controlplane.api.deepcopy import deep_copy
from controlplane.api.patch._json import go_format, go_quote, go_type_name, same_json, scalar_key
from controlplane.api.patch.errors import (
    InvalidPatch,
    ListOfListsNotSupported,
    MissingMergeKey,
    StrategicMergePatchFailed,
    UnknownPatchField,
    UnsupportedStrategicMergePatch,
)

DIRECTIVE_MARKER: Final = "$patch"
DELETE_DIRECTIVE: Final = "delete"
REPLACE_DIRECTIVE: Final = "replace"
MERGE_DIRECTIVE: Final = "merge"
RETAIN_KEYS_STRATEGY: Final = "retainKeys"
RETAIN_KEYS_DIRECTIVE: Final = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST_PREFIX: Final = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER_PREFIX: Final = "$setElementOrder"

# apimachinery pkg/util/mergepatch/errors.go: the errors kube-apiserver maps to 400 and 422.
_ERR_BAD_PRIMITIVE_LIST: Final = "invalid patch format of primitive list"
_ERR_BAD_RETAIN_KEYS: Final = "invalid patch format of retainKeys"
_ERR_BAD_SET_ELEMENT_ORDER: Final = "invalid patch format of setElementOrder list"
_ERR_NO_LIST_OF_LISTS: Final = "lists of lists are not supported"
_ERR_UNSUPPORTED: Final = "strategic merge patch format is not supported"

_MAP_TYPE: Final = "map[string]interface {}"
_SLICE_TYPE: Final = "[]interface {}"


def apply_strategic_merge_patch(
    doc: Any, patch: Any, *, group: str, version: str, kind: str, copy: bool = True
) -> dict[str, Any]:
    """Apply a strategic merge patch (the decoded request body) to a copy of an object of a kind.

    The kind's schema comes from upstream's definitions (:func:`..schema.definition_for_kind`).
    Raises a :class:`~.PatchError` whose ``status_code`` is what kube-apiserver answers. With
    ``copy`` False, ``doc`` (the caller's own copy) may be changed instead.
    """
    name = schemas.definition_for_kind(group, version, kind)
    if name is None:
        raise UnsupportedStrategicMergePatch(_ERR_UNSUPPORTED)
    return apply_with_definition(doc, patch, definition=name, copy=copy)


def apply_with_definition(
    doc: Any,
    patch: Any,
    *,
    definition: str,
    definitions: Mapping[str, schemas.Schema] | None = None,
    copy: bool = True,
) -> dict[str, Any]:
    """Apply a strategic merge patch against a named schema definition.

    ``definitions`` replaces upstream's set (tests use upstream's own ``MergeItem`` test schema).
    """
    if patch is None:  # json.Unmarshal of null into a map leaves it empty
        patch = {}
    if not isinstance(patch, dict):
        raise InvalidPatch(f"json: cannot unmarshal {_json_kind(patch)} into Go value of type {_MAP_TYPE}")
    original = (deep_copy(doc) if copy else doc) if isinstance(doc, dict) else {}
    root = _Lookup.for_definition(definition, definitions)
    return _merge_map(original, deep_copy(patch), root)


# -- where we are in the schema: upstream's LookupPatchMeta ------------------------------------------


@dataclass(frozen=True)
class _PatchMeta:
    strategies: tuple[str, ...]
    merge_key: str


@dataclass(frozen=True)
class _Lookup:
    """upstream ``PatchMetaFromStruct``: a type, and how to find its fields' types and strategies."""

    schema: schemas.Schema
    type_name: str  # Go's t.Name(), for error messages: "PodSpec"
    definitions: Mapping[str, schemas.Schema] | None

    @classmethod
    def for_definition(cls, name: str, definitions: Mapping[str, schemas.Schema] | None) -> _Lookup:
        return cls(schemas.definition(name, definitions), schemas.short_name(name), definitions)

    def _child(self, property_schema: schemas.Schema) -> _Lookup:
        ref = schemas.ref_name(property_schema)
        return _Lookup(
            schemas.resolve(property_schema, self.definitions),
            schemas.short_name(ref) if ref else "",
            self.definitions,
        )

    @property
    def go_kind(self) -> str:
        """``reflect.Kind`` of the Go type this schema was generated from."""
        return _go_kind(self.schema)

    def name(self) -> str:
        """``LookupPatchMeta.Name()``: the Go kind ("cannot merge lists without merge key for struct")."""
        return self.go_kind

    def for_struct(self, key: str) -> tuple[_Lookup, _PatchMeta]:
        """``LookupPatchMetadataForStruct`` (forked encoding/json ``LookupPatchMetadataForStruct``)."""
        if self.go_kind != "struct":
            raise StrategicMergePatchFailed(
                f"merging an object in json but data type is not struct, instead is: {self.go_kind}"
            )
        properties = self.schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        name = key if key in properties else None
        if name is None:  # encoding/json falls back to a case-insensitive match
            name = next((p for p in properties if p.lower() == key.lower()), None)
        if name is None or not isinstance(properties[name], Mapping):
            raise UnknownPatchField(
                f"unable to find api field in struct {self.type_name} for the json field {go_quote(key)}"
            )
        field = schemas.Field(name, properties[name], self.definitions)
        return self._child(field.schema), _PatchMeta(field.patch_strategies, field.patch_merge_key or "")

    def for_slice(self, key: str) -> tuple[_Lookup, _PatchMeta]:
        """``LookupPatchMetadataForSlice``: the element type of a list field."""
        field_type, meta = self.for_struct(key)
        if field_type.go_kind != "slice":
            raise StrategicMergePatchFailed(f"expected slice or array type, but got: {self.go_kind}")
        items = field_type.schema.get("items")
        element = field_type._child(items if isinstance(items, Mapping) else {})
        if element.go_kind == "slice":
            raise StrategicMergePatchFailed("unexpected slice of slice")
        return element, meta


def _go_kind(schema: schemas.Schema) -> str:
    types = schemas.json_types(schema)
    if "properties" in schema:
        return "struct"
    if "object" in types:
        # A map has additionalProperties; an object with neither (RawExtension, FieldsV1) is a
        # Go struct whose only field is hidden from JSON.
        return "map" if isinstance(schema.get("additionalProperties"), Mapping) else "struct"
    if "array" in types:
        return "slice"
    if "string" in types:
        return "string"
    if "integer" in types:
        return "int32" if schema.get("format") == "int32" else "int64"
    if "number" in types:
        return "float64"
    if "boolean" in types:
        return "bool"
    return "struct"  # no type: IntOrString and Quantity (a oneOf), apiextensions JSON ({})


def _split_strategies(strategies: tuple[str, ...]) -> tuple[bool, str]:
    """``extractRetainKeysPatchStrategy``: (has retainKeys, the other strategy)."""
    if len(strategies) == 0:
        return False, ""
    if len(strategies) == 1:
        return (True, "") if strategies[0] == RETAIN_KEYS_STRATEGY else (False, strategies[0])
    if len(strategies) == 2 and RETAIN_KEYS_STRATEGY in strategies:
        first, second = strategies
        return True, second if first == RETAIN_KEYS_STRATEGY else first
    raise StrategicMergePatchFailed(f"unexpected patch strategy: {go_format(list(strategies))}")


# -- maps -------------------------------------------------------------------------------------------


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: _Lookup) -> dict[str, Any]:
    """``mergeMap`` with ``MergeParallelList`` and ``IgnoreUnmatchedNulls`` (the server's options)."""
    if DIRECTIVE_MARKER in patch:
        return _handle_directive_in_merge_map(patch[DIRECTIVE_MARKER], patch)
    _apply_retain_keys_directive(original, patch)
    _merge_patch_into_original(original, patch, schema)

    for key, patch_value in list(patch.items()):
        is_delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
        if is_delete_list:
            key = _extract_key(key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)
        if patch_value is None:
            original.pop(key, None)
            continue
        if key not in original or type(original[key]) is not type(patch_value):
            # A new field, or one whose JSON type changes: take the patch's value. A deletion
            # list for a field that is not there has nothing to delete from.
            if not is_delete_list:
                _discard_null_values(patch_value)
                value, keep = _remove_directives(patch_value)
                if keep:
                    original[key] = value
                else:
                    original.pop(key, None)
            continue
        current = original[key]
        if isinstance(current, dict):
            subschema, meta = schema.for_struct(key)
            _, strategy = _split_strategies(meta.strategies)
            original[key] = _merge_map_handler(current, patch_value, subschema, strategy)
        elif isinstance(current, list):
            subschema, meta = schema.for_slice(key)
            _, strategy = _split_strategies(meta.strategies)
            original[key] = _merge_slice_handler(
                current, patch_value, subschema, strategy, meta.merge_key, is_delete_list
            )
        else:
            value, keep = _remove_directives(patch_value)
            if keep:
                original[key] = value
            else:
                del original[key]
    return original


def _handle_directive_in_merge_map(directive: Any, patch: dict[str, Any]) -> dict[str, Any]:
    if directive == REPLACE_DIRECTIVE:
        # Use the patch as it is (directives and nulls inside it included), as upstream does.
        del patch[DIRECTIVE_MARKER]
        return patch
    if directive == DELETE_DIRECTIVE:
        return {}
    raise StrategicMergePatchFailed(_bad_patch_type(directive, patch))


def _merge_map_handler(
    original: dict[str, Any], patch: Any, schema: _Lookup, strategy: str
) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise StrategicMergePatchFailed(_bad_arg_type(_MAP_TYPE, patch))
    if strategy == REPLACE_DIRECTIVE:
        return patch
    return _merge_map(original, patch, schema)


def _apply_retain_keys_directive(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """``applyRetainKeysDirective``: keep only the listed fields of ``original``."""
    if RETAIN_KEYS_DIRECTIVE not in patch:
        return
    retain = patch.pop(RETAIN_KEYS_DIRECTIVE)
    if not isinstance(retain, list):
        raise InvalidPatch(_ERR_BAD_RETAIN_KEYS)
    kept = {k for k in retain if isinstance(k, str)}
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_PRIMITIVE_LIST_PREFIX, SET_ELEMENT_ORDER_PREFIX)):
            continue
        if key not in kept:  # the patch sets a field it does not retain
            raise InvalidPatch(_ERR_BAD_RETAIN_KEYS)
    for key in [k for k in original if k not in kept]:
        del original[key]


def _extract_key(key: str, prefix: str) -> str:
    """``$setElementOrder/containers`` -> ``containers``."""
    parts = key.split("/", 1)
    if len(parts) <= 1 or parts[0] != prefix:
        if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX:
            raise InvalidPatch(_ERR_BAD_PRIMITIVE_LIST)
        raise InvalidPatch(_ERR_BAD_SET_ELEMENT_ORDER)
    return parts[1]


def _discard_null_values(value: Any) -> None:
    """``discardNullValuesFromPatch``: drop null members of objects, here and in nested lists."""
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for item in value.values():
            _discard_null_values(item)
    elif isinstance(value, list):
        for item in value:
            _discard_null_values(item)


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """``removeDirectives``: drop objects marked ``$patch``; (value to use, whether to keep it)."""
    if isinstance(value, dict):
        if DIRECTIVE_MARKER in value:
            return None, False
        for key in list(value):
            item, keep = _remove_directives(value[key])
            if keep:
                value[key] = item
            else:
                del value[key]
        return value, True
    if isinstance(value, list):
        kept = []
        for element in value:
            item, keep = _remove_directives(element)
            if keep:
                kept.append(item)
        return kept, True
    return value, True


# -- $setElementOrder -------------------------------------------------------------------------------


def _merge_patch_into_original(original: dict[str, Any], patch: dict[str, Any], schema: _Lookup) -> None:
    """``mergePatchIntoOriginal``: merge each list that has a ``$setElementOrder``, then order it.

    Precedence: the ``$setElementOrder`` list, then the patch's order, then the live order.
    The merged list and its order directive are removed from ``patch``.
    """
    for directive_key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER_PREFIX)]:
        order = patch.pop(directive_key)
        if not isinstance(order, list):
            raise StrategicMergePatchFailed(_bad_arg_type(_SLICE_TYPE, order))
        key = _extract_key(directive_key, SET_ELEMENT_ORDER_PREFIX)
        found_original, found_patch = key in original, key in patch
        original_list: list[Any] = []
        patch_list: list[Any] = []
        if found_original:
            if not isinstance(original[key], list):
                raise StrategicMergePatchFailed(_bad_arg_type(_SLICE_TYPE, original[key]))
            original_list = original[key]
        if found_patch:
            if not isinstance(patch[key], list):
                raise StrategicMergePatchFailed(_bad_arg_type(_SLICE_TYPE, patch[key]))
            patch_list = patch[key]
        subschema, meta = schema.for_slice(key)
        _, strategy = _split_strategies(meta.strategies)
        merge_key = meta.merge_key
        _validate_patch_with_set_order_list(patch_list, order, merge_key)

        live_order = original_list
        if found_original and not found_patch:
            merged = original_list
        elif found_patch and not found_original:
            merged, _ = _remove_directives(patch_list)
        elif found_original and found_patch:
            if strategy == MERGE_DIRECTIVE:
                view = _LiveView(original_list)
                merged = _merge_slice(view, patch_list, subschema, merge_key, is_delete_list=False)
                live_order = view.as_seen_by_caller()
            else:
                merged = patch_list
        else:
            continue

        if merge_key:
            patch_items, server_only = _partition_maps_by_present_in_list(merged, order, merge_key)
        else:
            patch_items, server_only = _partition_primitives_by_present_in_list(merged, order)
        element_kind = _slice_element_type(original_list, patch_list)
        original[key] = _normalize_element_order(
            patch_items, server_only, order, live_order, merge_key, element_kind
        )
        patch.pop(key, None)


def _validate_patch_with_set_order_list(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """Every (non-deleting) patch element must appear in ``$setElementOrder``, in the same order."""
    if not order or not patch_list:
        return
    candidates = _extract_to_delete_items(patch_list)[0] if merge_key else patch_list
    patch_index = order_index = 0
    while patch_index < len(candidates) and order_index < len(order):
        if isinstance(candidates[patch_index], dict) and DIRECTIVE_MARKER in candidates[patch_index]:
            patch_index += 1
            continue
        if _merge_key_value_equal(candidates[patch_index], order[order_index], merge_key):
            patch_index += 1
        order_index += 1
    if patch_index < len(candidates) and order_index >= len(order):
        raise StrategicMergePatchFailed(
            f"The order in patch list:\n{go_format(patch_list)}\n doesn't match "
            f"{SET_ELEMENT_ORDER_PREFIX} list:\n{go_format(order)}\n"
        )


def _merge_key_value_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return same_json(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise StrategicMergePatchFailed(_bad_arg_type(_MAP_TYPE, item))
        if merge_key not in item:
            raise MissingMergeKey(_no_merge_key(item, merge_key))
    return same_json(left[merge_key], right[merge_key])


# -- lists ------------------------------------------------------------------------------------------


def _merge_slice_handler(
    original: list[Any],
    patch: Any,
    schema: _Lookup,
    strategy: str,
    merge_key: str,
    is_delete_list: bool,
) -> list[Any]:
    if not isinstance(patch, list):
        raise StrategicMergePatchFailed(_bad_arg_type(_SLICE_TYPE, patch))
    # A deletion list is applied whatever the field's strategy.
    if strategy == MERGE_DIRECTIVE or is_delete_list:
        return _merge_slice(_LiveView(original), patch, schema, merge_key, is_delete_list=is_delete_list)
    return patch


class _LiveView:
    """The live list as Go's ``mergeSlice`` mutates it through a shared backing array.

    Upstream deletes elements by shifting the rest left (``append(s[:i], s[i+1:]...)``) and
    appends new elements into the slots that frees. The caller still holds the original slice
    header, so ``$setElementOrder`` then orders by the live list with those slots overwritten.
    ``backing`` is that array (our copy) and ``length`` the merging code's slice; once an append
    needs more room, or ``$patch: replace`` swaps the list, the elements live in ``own`` and
    the caller's view no longer changes.
    """

    def __init__(self, live: list[Any]) -> None:
        self.backing = list(live)
        self.length = len(live)
        self.own: list[Any] | None = None

    def elements(self) -> list[Any]:
        return self.backing[: self.length] if self.own is None else list(self.own)

    def delete_at(self, index: int) -> None:
        # Deletions ($patch: delete elements) all happen before any append or replace.
        assert self.own is None
        self.backing[index : self.length - 1] = self.backing[index + 1 : self.length]
        self.length -= 1

    def set_at(self, index: int, value: Any) -> None:
        if self.own is not None:
            self.own[index] = value
        else:
            self.backing[index] = value

    def append(self, value: Any) -> None:
        if self.own is None and self.length < len(self.backing):
            self.backing[self.length] = value
            self.length += 1
            return
        if self.own is None:
            self.own = self.backing[: self.length]
        self.own.append(value)

    def replace_with(self, elements: list[Any]) -> None:
        self.own = list(elements)

    def as_seen_by_caller(self) -> list[Any]:
        return list(self.backing)


def _merge_slice(
    live: _LiveView, patch: list[Any], schema: _Lookup, merge_key: str, *, is_delete_list: bool
) -> list[Any]:
    """``mergeSlice``: merge two lists by merge key (maps) or as a set (scalars), then order."""
    original = live.elements()
    if not original and not patch:
        return original
    element_kind = _slice_element_type(original, patch)
    if element_kind != _MAP_TYPE:
        if is_delete_list:
            return _delete_from_slice(original, patch)
        merged = _deduplicate_scalars(original + patch)
        patch_items, server_only = _partition_primitives_by_present_in_list(merged, patch)
        return _normalize_element_order(patch_items, server_only, patch, original, merge_key, element_kind)

    if not merge_key:
        raise StrategicMergePatchFailed(f"cannot merge lists without merge key for {schema.name()}")
    remaining, patch = _merge_slice_with_special_elements(live, patch, merge_key)
    merged = _merge_slice_without_special_elements(live, patch, merge_key, schema)
    patch_items, server_only = _partition_maps_by_present_in_list(merged, patch, merge_key)
    return _normalize_element_order(patch_items, server_only, patch, remaining, merge_key, element_kind)


def _merge_slice_with_special_elements(
    live: _LiveView, patch: list[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    """Apply ``$patch`` elements: delete by merge key, or ``replace`` the whole list.

    Returns the live elements that remain (the order reference) and the patch without
    directive elements. After ``replace`` the patch's elements are the list.
    """
    plain: list[Any] = []
    replace = False
    for element in patch:
        if DIRECTIVE_MARKER not in element:
            plain.append(element)
            continue
        directive = element[DIRECTIVE_MARKER]
        if directive == DELETE_DIRECTIVE:
            if merge_key not in element:
                raise MissingMergeKey(_no_merge_key(element, merge_key))
            while (index := _find_map_in_slice(live.elements(), merge_key, element[merge_key])) is not None:
                live.delete_at(index)
        elif directive == REPLACE_DIRECTIVE:
            replace = True  # keep going: the other directive elements are dropped too
        elif directive == MERGE_DIRECTIVE:
            raise StrategicMergePatchFailed("merging lists cannot yet be specified in the patch")
        else:
            raise StrategicMergePatchFailed(_bad_patch_type(directive, element))
    if replace:
        live.replace_with(plain)
        return plain, []
    return live.elements(), plain


def _merge_slice_without_special_elements(
    live: _LiveView, patch: list[Any], merge_key: str, schema: _Lookup
) -> list[Any]:
    """Merge each patch element into the live element with its merge key, or append it."""
    for element in patch:
        if merge_key not in element:
            raise MissingMergeKey(_no_merge_key(element, merge_key))
        index = _find_map_in_slice(live.elements(), merge_key, element[merge_key])
        if index is None:
            live.append(element)  # as sent: nulls and nested directives included, as upstream
        else:
            live.set_at(index, _merge_map(live.elements()[index], element, schema))
    return live.elements()


def _find_map_in_slice(items: list[Any], key: str, value: Any) -> int | None:
    """``findMapInSliceBasedOnKeyValue``."""
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise StrategicMergePatchFailed(f"value for key {index} is not a map.")
        if key in item and same_json(item[key], value):
            return index
    return None


def _delete_from_slice(current: list[Any], to_delete: list[Any]) -> list[Any]:
    """``deleteFromSlice``: ``$deleteFromPrimitiveList`` removes every occurrence."""
    doomed = {scalar_key(v) for v in to_delete}
    return [v for v in current if scalar_key(v) not in doomed]


def _deduplicate_scalars(values: list[Any]) -> list[Any]:
    seen: set[tuple[str, Any]] = set()
    unique = []
    for value in values:
        if scalar_key(value) not in seen:
            seen.add(scalar_key(value))
            unique.append(value)
    return unique


def _slice_element_type(*lists: list[Any]) -> str:
    """``sliceElementType``: the one Go type of every element of the lists."""
    found: str | None = None
    for items in lists:
        for item in items:
            current = go_type_name(item)
            if found is None:
                found = current
                if current == _SLICE_TYPE:
                    raise ListOfListsNotSupported(_ERR_NO_LIST_OF_LISTS)
            elif current != found:
                raise StrategicMergePatchFailed(
                    f"list element types are not identical: {go_format([list(x) for x in lists])}"
                )
    if found is None:
        raise StrategicMergePatchFailed("no elements in any of the given slices")
    return found


# -- ordering ---------------------------------------------------------------------------------------


def _partition_primitives_by_present_in_list(
    items: list[Any], partition_by: list[Any]
) -> tuple[list[Any], list[Any]]:
    wanted = {scalar_key(v) for v in partition_by}
    in_patch = [v for v in items if scalar_key(v) in wanted]
    server_only = [v for v in items if scalar_key(v) not in wanted]
    return in_patch, server_only


def _partition_maps_by_present_in_list(
    items: list[Any], partition_by: list[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    in_patch: list[Any] = []
    server_only: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            raise StrategicMergePatchFailed(_bad_arg_type(_MAP_TYPE, item))
        if merge_key not in item:
            raise MissingMergeKey(_no_merge_key(item, merge_key))
        found = _find_map_in_slice(partition_by, merge_key, item[merge_key]) is not None
        (in_patch if found else server_only).append(item)
    return in_patch, server_only


def _normalize_element_order(
    patch_items: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    element_kind: str,
) -> list[Any]:
    """Sort the patch's elements by ``patch_order``, the server's by ``server_order``, then interleave.

    ``mergeSortedSlice`` walks both: a server-only element goes first only if the live list had
    it before the next patch element; otherwise the patch element does.
    """
    patch_items = _normalize_slice_order(patch_items, patch_order, merge_key, element_kind)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, element_kind)
    merged: list[Any] = []
    i = j = 0
    while i < len(server_only) and j < len(patch_items):
        left = _index(server_order, server_only[i], merge_key, element_kind)
        right = _index(server_order, patch_items[j], merge_key, element_kind)
        if left >= 0 and right >= 0 and left < right:
            merged.append(server_only[i])
            i += 1
        else:
            merged.append(patch_items[j])
            j += 1
    return merged + server_only[i:] + patch_items[j:]


def _normalize_slice_order(
    items: list[Any], order: list[Any], merge_key: str, element_kind: str
) -> list[Any]:
    """``normalizeSliceOrder``: stable sort by position in ``order``; deletions go last."""
    to_delete: list[Any] = []
    if element_kind == _MAP_TYPE:
        for item in [*items, *order]:
            if not isinstance(item, dict):
                raise StrategicMergePatchFailed(_bad_arg_type(_MAP_TYPE, item))
            if merge_key not in item:
                raise MissingMergeKey(_no_merge_key(item, merge_key))
        items, to_delete = _extract_to_delete_items(items)
    positions = [_index(order, item, merge_key, element_kind) for item in items]
    # Every element is in `order` where upstream calls this; put strays last, keeping their order.
    ranked = sorted(range(len(items)), key=lambda n: positions[n] if positions[n] >= 0 else len(order))
    return [items[n] for n in ranked] + to_delete


def _index(items: list[Any], value: Any, merge_key: str, element_kind: str) -> int:
    """Position of ``value`` in ``items`` (by merge key for maps), or -1."""
    if element_kind == _MAP_TYPE:
        wanted = value.get(merge_key) if isinstance(value, dict) else None
        for position, item in enumerate(items):
            if same_json(item.get(merge_key) if isinstance(item, dict) else None, wanted):
                return position
        return -1
    for position, item in enumerate(items):
        if same_json(item, value):
            return position
    return -1


def _extract_to_delete_items(items: list[Any]) -> tuple[list[Any], list[Any]]:
    keep: list[Any] = []
    delete: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            raise StrategicMergePatchFailed(_bad_arg_type(_MAP_TYPE, item))
        (delete if item.get(DIRECTIVE_MARKER) == DELETE_DIRECTIVE else keep).append(item)
    return keep, delete


# -- messages (apimachinery pkg/util/mergepatch/errors.go) ----------------------------------------------


def _no_merge_key(item: dict[str, Any], merge_key: str) -> str:
    return f"map: {go_format(item)} does not contain declared merge key: {merge_key}"


def _bad_arg_type(expected: str, actual: Any) -> str:
    return f"expected a {expected}, but received a {go_type_name(actual)}"


def _bad_patch_type(directive: Any, item: dict[str, Any]) -> str:
    return f"unknown patch type: {go_format(directive)} in map: {go_format(item)}"


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array"
