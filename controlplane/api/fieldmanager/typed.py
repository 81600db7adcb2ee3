"""Typed values: walking an object together with its schema, the way server-side apply sees it.

Server-side apply never treats an object as plain JSON. Every value is read through the kind's
schema, which says for each node one of three things (structured-merge-diff's *atoms*):

* **scalar**: a leaf (strings, numbers, booleans; also ``IntOrString`` and ``Quantity``);
* **list**: either *atomic* (replaced and owned as a whole: ``args``, ``tolerations``) or
  *associative*: a **list-map** whose items are identified by key fields (containers by ``name``,
  ports by ``containerPort`` + ``protocol``) or a **set** of scalars (``finalizers``). Items of an
  associative list are owned one by one;
* **map**: a *struct* with named fields (``spec``, ``metadata``), or a map with free keys
  (``labels``, ``data``); either may be *atomic* (``x-kubernetes-map-type: atomic``, e.g.
  ``LabelSelector``) and then is owned as a whole.

The schema comes from upstream's definitions (:mod:`controlplane.api.schema`) and is interpreted as
kube-openapi's ``pkg/schemaconv/smd.go`` does: ``x-kubernetes-list-type`` first, then the patch
strategy (``merge`` with a merge key = list-map, ``merge`` without = set), otherwise atomic.

The walkers are ports of structured-merge-diff's ``typed`` package:

* :func:`to_field_set` (``typed/tofieldset.go``): the fields a value sets. An applied configuration's
  field set is exactly what its manager will own;
* :func:`compare` (``typed/compare.go``): fields added, modified and removed between two values;
* :func:`merge` (``typed/merge.go``): an applied configuration merged into the live object;
* :func:`remove_items` (``typed/remove.go``): a value without the given fields;
* :func:`validate` (``typed/validate.go``): unknown fields, duplicate keys, wrong shapes;
* :func:`ensure_named_fields_are_members` (``fieldpath/set.go``).

Values are decoded JSON (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``) and are
never modified: results are new values that may share unchanged subtrees with their inputs.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controlplane.api import schema as schemas
from controlplane.api.fieldmanager.fieldpath import Path, PathElement, Set, index, key, path_string, value
from controlplane.api.fieldmanager.fieldpath import field as field_element

Schema = schemas.Schema


class _Missing:
    """A value that is absent (Go's nil ``value.Value``), as opposed to JSON ``null`` (``None``)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()

# Definitions that are scalars or free-form whatever their JSON schema says (schemaconv/smd.go).
_UNTYPED_SCALARS: Final = frozenset(
    {"io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.api.resource.Quantity"}
)
_UNTYPED_ATOMIC: Final = frozenset({"io.k8s.apimachinery.pkg.runtime.RawExtension"})

#: Defaults of list-map key fields, which upstream's OpenAPI carries as ``default`` (``+default=``
#: tags) and kubernetes-validate's schemas drop: an item may omit them and still be keyed.
KEY_DEFAULTS: Final[Mapping[tuple[str, str], Any]] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
}

SCALAR: Final = "scalar"
LIST: Final = "list"
MAP: Final = "map"
UNTYPED: Final = "untyped"


@dataclass(frozen=True, eq=False)
class Atom:
    """What a schema node is for server-side apply (structured-merge-diff ``schema.Atom``)."""

    kind: str
    #: list: not associative; map: ``x-kubernetes-map-type: atomic``; untyped: a leaf whatever it holds.
    atomic: bool = False
    #: associative list keys; an associative list without keys is a set.
    keys: tuple[str, ...] = ()
    #: list items, or the values of a map's free keys (None: a struct that has no free keys).
    element: Schema | None = None
    #: a struct's named fields.
    fields: Mapping[str, Schema] = field(default_factory=dict)
    #: the definition this atom came from, for key defaults and messages.
    name: str | None = None
    #: a scalar's JSON type ("string", "numeric", "boolean"), or "" for any.
    scalar: str = ""

    @property
    def is_struct(self) -> bool:
        return self.kind == MAP and bool(self.fields) and not self.atomic


_LEAF: Final = Atom(UNTYPED, atomic=True)
_ANY_SCALAR: Final = Atom(SCALAR)
_DEDUCED_NODE: Final[Schema] = {"x-kubelab-deduced": True}
_DEDUCED_MAP: Final = Atom(MAP, element=_DEDUCED_NODE)


class _Cache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.atoms: dict[tuple[int, int], tuple[Schema, Atom]] = {}
        self.roots: dict[tuple[int, str], Schema] = {}


_cache = _Cache()


def root(definition_name: str, definitions: Mapping[str, Schema] | None = None) -> Schema:
    """The schema node of a whole object of a definition (cached, so walkers can cache by node)."""
    cache_key = (id(definitions), definition_name)
    node = _cache.roots.get(cache_key)
    if node is None:
        schemas.definition(definition_name, definitions)  # KeyError if unknown
        node = {"$ref": "#/$defs/" + definition_name}
        with _cache.lock:
            node = _cache.roots.setdefault(cache_key, node)
    return node


def root_for_kind(
    group: str, version: str, kind: str, definitions: Mapping[str, Schema] | None = None
) -> Schema | None:
    """The schema node of a built-in kind, or None if upstream has no schema for it."""
    name = schemas.definition_for_kind(group, version, kind)
    return None if name is None else root(name, definitions)


def atom(node: Schema, definitions: Mapping[str, Schema] | None = None) -> Atom:
    """The atom a schema node describes (cached per node)."""
    cache_key = (id(node), id(definitions))
    hit = _cache.atoms.get(cache_key)
    if hit is not None and hit[0] is node:
        return hit[1]
    result = _make_atom(node, definitions)
    with _cache.lock:
        _cache.atoms[cache_key] = (node, result)
    return result


def _make_atom(node: Schema, definitions: Mapping[str, Schema] | None) -> Atom:
    if node is _DEDUCED_NODE or node.get("x-kubelab-deduced"):
        return Atom(UNTYPED)
    name = schemas.ref_name(node)
    target = schemas.resolve(node, definitions) if name else node
    if name in _UNTYPED_SCALARS:
        return Atom(SCALAR, name=name)
    if name in _UNTYPED_ATOMIC:
        return _LEAF
    # Extensions may sit on the referring property or on the definition; the property wins.
    ext = {k: v for k, v in target.items() if k.startswith("x-")}
    ext.update((k, v) for k, v in node.items() if k.startswith("x-"))
    types = schemas.json_types(target)
    if "array" in types:
        items = target.get("items")
        item_node = items if isinstance(items, Mapping) else _DEDUCED_NODE
        atomic, keys = _list_relationship(ext)
        return Atom(LIST, atomic=atomic, keys=keys, element=item_node, name=name)
    properties = target.get("properties")
    if "object" in types or isinstance(properties, Mapping):
        additional = target.get("additionalProperties")
        map_atomic = ext.get("x-kubernetes-map-type") == "atomic"
        element: Schema | None = None
        if isinstance(additional, Mapping):
            element = additional
        elif additional is True or target.get("x-kubernetes-preserve-unknown-fields"):
            element = _DEDUCED_NODE
        if not isinstance(properties, Mapping) and element is None:
            # A free-form object (FieldsV1, JSON): structured-merge-diff deduces its shape.
            return _LEAF if map_atomic else Atom(UNTYPED)
        return Atom(
            MAP,
            atomic=map_atomic,
            element=element,
            fields=properties if isinstance(properties, Mapping) else {},
            name=name,
        )
    scalar = ""
    if "string" in types:
        scalar = "string"
    elif types & {"integer", "number"}:
        scalar = "numeric"
    elif "boolean" in types:
        scalar = "boolean"
    return Atom(SCALAR, scalar=scalar, name=name)


def _list_relationship(ext: Mapping[str, Any]) -> tuple[bool, tuple[str, ...]]:
    """(atomic, keys) of a list, as kube-openapi ``getListElementRelationship`` decides it."""
    list_type = ext.get("x-kubernetes-list-type")
    if list_type == "atomic":
        return True, ()
    if list_type == "set":
        return False, ()
    if list_type == "map":
        keys = ext.get("x-kubernetes-list-map-keys")
        return False, tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
    strategy = ext.get("x-kubernetes-patch-strategy")
    if strategy in ("merge", "merge,retainKeys"):
        merge_key = ext.get("x-kubernetes-patch-merge-key")
        return False, (merge_key,) if isinstance(merge_key, str) else ()
    return True, ()


def _effective(a: Atom, v: Any) -> Atom:
    """``deduceAtom``: the atom that applies to ``v``; a value of the wrong shape is a leaf here.

    (Upstream fails on a wrong shape; :func:`validate` reports it, the other walkers stay total.)
    """
    if v is MISSING or v is None:
        return a
    if a.kind == UNTYPED:
        if a.atomic:
            return a
        if isinstance(v, dict):
            return _DEDUCED_MAP
        if isinstance(v, list):
            return _LEAF
        return _ANY_SCALAR
    if a.kind == LIST:
        return a if isinstance(v, list) else _LEAF
    if a.kind == MAP:
        return a if isinstance(v, dict) else _LEAF
    return a


def _is_leaf(a: Atom) -> bool:
    return a.kind in (SCALAR, UNTYPED)


def _child(a: Atom, name: str) -> tuple[Schema | None, bool]:
    """The schema of a map's key and whether it is a named field (None: not declared)."""
    node = a.fields.get(name)
    if node is not None:
        return node, True
    return a.element, False


class ItemError(ValueError):
    """A list item that cannot be given a path element (missing key, a map in a set...)."""


def item_element(
    a: Atom, position: int, item: Any, definitions: Mapping[str, Schema] | None = None
) -> PathElement:
    """``listItemToPathElement``: the key of a list-map item, the value of a set item, else the index."""
    if a.atomic:
        return index(position)
    if a.keys:
        if item is None:
            raise ItemError("associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise ItemError("associative list with keys may not have non-map elements")
        fields: dict[str, Any] = {}
        element_name = schemas.ref_name(a.element) if a.element is not None else None
        for key_field in a.keys:
            if key_field in item:
                fields[key_field] = item[key_field]
                continue
            default = _key_default(a, element_name, key_field, definitions)
            if default is None:
                raise ItemError(
                    f'associative list with keys has an element that omits key field "{key_field}" '
                    "(and doesn't have default value)"
                )
            fields[key_field] = default
        return key(fields)
    if isinstance(item, dict):
        raise ItemError("associative list without keys has an element that's a map type")
    if isinstance(item, list):
        raise ItemError("not supported: associative list with lists as elements")
    if item is None:
        raise ItemError("associative list without keys has an element that's an explicit null")
    return value(item)


def _key_default(
    a: Atom, element_name: str | None, key_field: str, definitions: Mapping[str, Schema] | None
) -> Any:
    if element_name is not None:
        if (element_name, key_field) in KEY_DEFAULTS:
            return KEY_DEFAULTS[(element_name, key_field)]
        if a.element is not None:
            element = atom(a.element, definitions)
            declared = element.fields.get(key_field)
            if isinstance(declared, Mapping) and "default" in declared:
                return declared["default"]
    return None


def json_equal(a: Any, b: Any) -> bool:
    """``value.Equals``: deep equality where ints and floats compare numerically, booleans do not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    return type(a) is type(b) and bool(a == b)


def _index_items(
    a: Atom, items: list[Any] | None, definitions: Mapping[str, Schema] | None
) -> tuple[list[PathElement], dict[PathElement, Any]]:
    """Items of a list by path element, first occurrence wins; items that cannot be keyed are skipped."""
    order: list[PathElement] = []
    found: dict[PathElement, Any] = {}
    for position, item in enumerate(items or ()):
        try:
            pe = item_element(a, position, item, definitions)
        except ItemError:
            continue
        if pe in found:
            continue
        found[pe] = item
        order.append(pe)
    return order, found


# -- field sets -------------------------------------------------------------------------------------


def to_field_set(v: Any, node: Schema, definitions: Mapping[str, Schema] | None = None) -> Set:
    """The fields ``v`` sets (``TypedValue.ToFieldSet``): every leaf, every list item, every free map key.

    Named struct fields are not members themselves, only what they hold: applying
    ``{"spec": {"replicas": 2}}`` owns ``.spec.replicas``, not ``.spec``.
    """
    out = Set()
    _to_set(v, node, (), out, definitions)
    return out


def _to_set(v: Any, node: Schema, path: Path, out: Set, defs: Mapping[str, Schema] | None) -> None:
    a = _effective(atom(node, defs), v)
    if _is_leaf(a) or a.atomic:
        out.insert(path)
        return
    if a.kind == LIST:
        if not isinstance(v, list):
            return
        assert a.element is not None
        for position, item in enumerate(v):
            try:
                pe = item_element(a, position, item, defs)
            except ItemError:
                continue
            child = (*path, pe)
            _to_set(item, a.element, child, out, defs)
            out.insert(child)
        return
    if not isinstance(v, dict):
        return
    for name, child_value in v.items():
        child_node, named = _child(a, name)
        child = (*path, field_element(name))
        _to_set(child_value, child_node if child_node is not None else _DEDUCED_NODE, child, out, defs)
        if not named:
            out.insert(child)


# -- compare ----------------------------------------------------------------------------------------


@dataclass
class Comparison:
    """What changed from one value to another (``typed.Comparison``); a field is in at most one set."""

    added: Set = field(default_factory=Set)
    modified: Set = field(default_factory=Set)
    removed: Set = field(default_factory=Set)

    def is_same(self) -> bool:
        return self.added.empty() and self.modified.empty() and self.removed.empty()

    def exclude(self, fields: Set | None) -> Comparison:
        """``ExcludeFields``: the comparison without ``fields`` and what lies below them."""
        if fields is None or fields.empty():
            return self
        return Comparison(
            self.added.recursive_difference(fields),
            self.modified.recursive_difference(fields),
            self.removed.recursive_difference(fields),
        )


def compare(lhs: Any, rhs: Any, node: Schema, definitions: Mapping[str, Schema] | None = None) -> Comparison:
    """Fields added, modified and removed from ``lhs`` (the old object) to ``rhs`` (the new one).

    A list item or map entry that appears or disappears is itself added or removed, besides the
    leaves below it. Named struct fields are not: upstream's answer depends on whether the Go
    field is a pointer (absent from a zero object) or not, which the schema does not record.
    """
    out = Comparison()
    _compare(lhs, rhs, node, (), out, definitions)
    return out


def _compare(
    left_value: Any,
    right_value: Any,
    node: Schema,
    path: Path,
    c: Comparison,
    defs: Mapping[str, Schema] | None,
    *,
    named: bool = False,
) -> None:
    a = atom(node, defs)
    al, ar = _effective(a, left_value), _effective(a, right_value)
    if right_value is MISSING:
        leafed = _compare_atom(al, left_value, right_value, path, c, defs)
    elif left_value is MISSING or al is ar:
        leafed = _compare_atom(ar, left_value, right_value, path, c, defs)
    else:
        _compare_atom(al, left_value, right_value, path, c, defs)
        leafed = _compare_atom(ar, left_value, right_value, path, c, defs)
    # A named field holding a struct is not itself added or removed (see compare's docstring).
    if not leafed and not (named and (ar.is_struct or al.is_struct)):
        if left_value is MISSING:
            c.added.insert(path)
        elif right_value is MISSING:
            c.removed.insert(path)


def _compare_leaf(left_value: Any, right_value: Any, path: Path, c: Comparison) -> None:
    if left_value is MISSING:
        c.added.insert(path)
    elif right_value is MISSING:
        c.removed.insert(path)
    elif not json_equal(left_value, right_value):
        c.modified.insert(path)


def _compare_atom(
    a: Atom, left_value: Any, right_value: Any, path: Path, c: Comparison, defs: Mapping[str, Schema] | None
) -> bool:
    """Handle one atom; True if it was a leaf (so the caller does not add or remove the node itself)."""
    if _is_leaf(a):
        _compare_leaf(left_value, right_value, path, c)
        return True
    if a.kind == LIST:
        lhs = left_value if isinstance(left_value, list) else None
        rhs = right_value if isinstance(right_value, list) else None
        if a.atomic or (not lhs and not rhs):
            _compare_leaf(
                left_value, right_value, path, c
            )  # emptyPromoteToLeaf keeps the empty/null distinction
            return True
        assert a.element is not None
        _, left = _index_items(a, lhs, defs)
        right_order, right = _index_items(a, rhs, defs)
        for pe in right_order:
            _compare(left.get(pe, MISSING), right[pe], a.element, (*path, pe), c, defs)
        for pe, item in left.items():
            if pe not in right:
                _compare(item, MISSING, a.element, (*path, pe), c, defs)
        return False
    lmap = left_value if isinstance(left_value, dict) else None
    rmap = right_value if isinstance(right_value, dict) else None
    if a.atomic or (not lmap and not rmap):
        _compare_leaf(left_value, right_value, path, c)
        return True
    names = list(lmap or ()) + [k for k in (rmap or ()) if not lmap or k not in lmap]
    for name in names:
        child_node, named = _child(a, name)
        _compare(
            (lmap or {}).get(name, MISSING),
            (rmap or {}).get(name, MISSING),
            child_node if child_node is not None else _DEDUCED_NODE,
            (*path, field_element(name)),
            c,
            defs,
            named=named,
        )
    return False


# -- merge ------------------------------------------------------------------------------------------


def merge(lhs: Any, rhs: Any, node: Schema, definitions: Mapping[str, Schema] | None = None) -> Any:
    """``TypedValue.Merge`` with upstream's rule for leaves: the right-hand side wins.

    Structs and granular maps merge key by key; list-maps and sets item by item (new items keep the
    right-hand side's order, items only on the left keep their place); atomic lists, atomic maps and
    scalars are replaced. Returns :data:`MISSING` if the result holds nothing.
    """
    return _merge(lhs, rhs, node, definitions)


def _merge(left_value: Any, right_value: Any, node: Schema, defs: Mapping[str, Schema] | None) -> Any:
    a = atom(node, defs)
    ar = _effective(a, right_value) if right_value is not MISSING else _effective(a, left_value)
    return _merge_atom(ar, left_value, right_value, defs)


def _merge_atom(a: Atom, left_value: Any, right_value: Any, defs: Mapping[str, Schema] | None) -> Any:
    if _is_leaf(a):
        return right_value if right_value is not MISSING else left_value
    if a.kind == LIST:
        lhs = left_value if isinstance(left_value, list) else None
        rhs = right_value if isinstance(right_value, list) else None
        if a.atomic or (not lhs and not rhs):
            return right_value if right_value is not MISSING else left_value
        assert a.element is not None
        return _merge_list(a, lhs, rhs, defs)
    lmap = left_value if isinstance(left_value, dict) else None
    rmap = right_value if isinstance(right_value, dict) else None
    if a.atomic or (not lmap and not rmap):
        return right_value if right_value is not MISSING else left_value
    out: dict[str, Any] = {}
    names = list(lmap or ()) + [k for k in (rmap or ()) if not lmap or k not in lmap]
    for name in names:
        child_node, _ = _child(a, name)
        merged = _merge(
            (lmap or {}).get(name, MISSING),
            (rmap or {}).get(name, MISSING),
            child_node if child_node is not None else _DEDUCED_NODE,
            defs,
        )
        if merged is not MISSING:
            out[name] = merged
    return out if out else MISSING


def _merge_list(
    a: Atom, lhs: list[Any] | None, rhs: list[Any] | None, defs: Mapping[str, Schema] | None
) -> Any:
    """``visitListItems`` of the merging walker: upstream's interleaving of the two orders."""
    assert a.element is not None
    rhs_order, right = _index_items(a, rhs, defs)
    lhs_order, left = _index_items(a, lhs, defs)
    shared = [pe for pe in rhs_order if pe in left]
    next_shared: PathElement | None = shared.pop(0) if shared else None
    out: list[Any] = []

    def add(pe: PathElement, left_value: Any, right_value: Any) -> None:
        merged = _merge(left_value, right_value, a.element or _DEDUCED_NODE, defs)
        if merged is not MISSING:
            out.append(merged)

    li = ri = 0
    while li < len(lhs_order) or ri < len(rhs_order):
        if li < len(lhs_order) and ri < len(rhs_order):
            pe = lhs_order[li]
            if pe == rhs_order[ri]:
                add(pe, left[pe], right[pe])
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in right and next_shared is not None and next_shared != pe:
                li += 1  # a shared item, but not the one we want in this round
                continue
        if li < len(lhs_order):
            pe = lhs_order[li]
            if pe not in right:
                add(pe, left[pe], MISSING)
                li += 1
                continue
        if ri < len(rhs_order):
            pe = rhs_order[ri]
            add(pe, left.get(pe, MISSING), right[pe])
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out if out else MISSING


# -- removal ----------------------------------------------------------------------------------------


def remove_items(
    v: Any, to_remove: Set, node: Schema, definitions: Mapping[str, Schema] | None = None
) -> Any:
    """``TypedValue.RemoveItems``: ``v`` without the members of ``to_remove`` (and what is below them).

    A map or list left with nothing is removed from its parent, as Go drops a nil map or slice
    (``omitempty``) when upstream turns the typed value back into an object.
    """
    result = _remove(v, to_remove, node, definitions)
    return result if result is not MISSING else None


def _remove(v: Any, s: Set, node: Schema, defs: Mapping[str, Schema] | None) -> Any:
    a = _effective(atom(node, defs), v)
    if _is_leaf(a):
        return v
    if a.kind == LIST:
        if not isinstance(v, list) or not v or a.atomic:
            return MISSING
        assert a.element is not None
        items: list[Any] = []
        for position, item in enumerate(v):
            try:
                pe: PathElement | None = item_element(a, position, item, defs)
            except ItemError:
                pe = None
            if pe is not None and pe in s.members:
                continue
            sub = s.with_prefix(pe) if pe is not None else Set()
            if not sub.empty():
                item = _remove(item, sub, a.element, defs)
                if item is MISSING:
                    continue
            items.append(item)
        return items if items else MISSING
    if not isinstance(v, dict) or not v or a.atomic:
        return MISSING
    out: dict[str, Any] = {}
    for name, child_value in v.items():
        pe = field_element(name)
        if pe in s.members:
            continue
        sub = s.with_prefix(pe)
        if not sub.empty():
            child_node, _ = _child(a, name)
            child_value = _remove(
                child_value, sub, child_node if child_node is not None else _DEDUCED_NODE, defs
            )
            if child_value is MISSING:
                continue
        out[name] = child_value
    return out if out else MISSING


def ensure_named_fields_are_members(
    s: Set, node: Schema | None, definitions: Mapping[str, Schema] | None = None
) -> Set:
    """``Set.EnsureNamedFieldsAreMembers``: ``s`` plus every named struct field below which it has a path.

    ``.spec.strategy.rollingUpdate.maxSurge`` then also owns ``.spec``, ``.spec.strategy`` and
    ``.spec.strategy.rollingUpdate``; a key of a map or an item of a list is never added this way,
    only named fields of structs. Pruning uses it so that a struct a manager stopped applying goes
    away as a whole.
    """
    out = Set()
    out.members = set(s.members)
    a = atom(node, definitions) if node is not None else None
    for pe, child in s.children.items():
        child_node: Schema | None = None
        if a is not None and pe.kind == "f" and a.kind == MAP:
            declared = a.fields.get(pe.text)
            if declared is not None:
                out.members.add(pe)
                child_node = declared
            else:
                child_node = a.element
        elif a is not None and pe.kind == "k" and a.kind == LIST:
            child_node = a.element
        out.children[pe] = ensure_named_fields_are_members(child, child_node, definitions)
    return out


# -- validation -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValidationError:
    """One problem of a typed value (``typed.ValidationError``): where, and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ValidationErrors(ValueError):
    """Problems found converting a value to a typed value; the text is upstream's."""

    def __init__(self, errors: list[ValidationError]) -> None:
        self.errors = errors
        super().__init__(self.text())

    def text(self) -> str:
        if len(self.errors) == 1:
            return str(self.errors[0])
        return "\n".join(["errors:", *("  " + str(e) for e in self.errors)])


def validate(v: Any, node: Schema, definitions: Mapping[str, Schema] | None = None) -> list[ValidationError]:
    """Check ``v`` against the schema as ``ObjectToTyped`` does: unknown fields, list keys, shapes.

    Upstream reports one undeclared field per object (it stops iterating that map) and bails out of
    a list at its first item without a usable key.
    """
    errors: list[ValidationError] = []
    _validate(v, node, (), errors, definitions)
    return errors


def _describe(v: Any) -> str:
    from controlplane.api.fieldmanager.fieldpath import canonical_json

    return canonical_json(v)


def _validate(
    v: Any, node: Schema, path: Path, errors: list[ValidationError], defs: Mapping[str, Schema] | None
) -> None:
    a = atom(node, defs)
    where = path_string(path)
    if a.kind == UNTYPED:
        return
    if v is None:
        return
    if a.kind == SCALAR:
        if a.scalar == "numeric" and (isinstance(v, bool) or not isinstance(v, int | float)):
            errors.append(ValidationError(where, f"expected numeric (int or float), got {_describe(v)}"))
        elif a.scalar == "string" and not isinstance(v, str):
            errors.append(ValidationError(where, f"expected string, got {_describe(v)}"))
        elif a.scalar == "boolean" and not isinstance(v, bool):
            errors.append(ValidationError(where, f"expected boolean, got {_describe(v)}"))
        elif not a.scalar and isinstance(v, dict | list):
            errors.append(ValidationError(where, f"expected scalar, got {_describe(v)}"))
        return
    if a.kind == LIST:
        if not isinstance(v, list):
            errors.append(ValidationError(where, f"expected list, got {_describe(v)}"))
            return
        assert a.element is not None
        seen: set[PathElement] = set()
        for position, item in enumerate(v):
            try:
                pe = item_element(a, position, item, defs)
            except ItemError as error:
                errors.append(ValidationError(where, f"element {position}: {error}"))
                return
            if not a.atomic:
                if pe in seen:
                    errors.append(ValidationError(where, f"duplicate entries for key {pe}"))
                seen.add(pe)
            _validate(item, a.element, (*path, pe), errors, defs)
        return
    if not isinstance(v, dict):
        errors.append(ValidationError(where, f"expected map, got {_describe(v)}"))
        return
    for name, child_value in v.items():
        child_node, _ = _child(a, name)
        if child_node is None:
            errors.append(
                ValidationError(path_string((*path, field_element(name))), "field not declared in schema")
            )
            return
        _validate(child_value, child_node, (*path, field_element(name)), errors, defs)


__all__ = [
    "KEY_DEFAULTS",
    "LIST",
    "MAP",
    "MISSING",
    "SCALAR",
    "UNTYPED",
    "Atom",
    "Comparison",
    "ItemError",
    "ValidationError",
    "ValidationErrors",
    "atom",
    "compare",
    "ensure_named_fields_are_members",
    "item_element",
    "json_equal",
    "merge",
    "remove_items",
    "root",
    "root_for_kind",
    "to_field_set",
    "validate",
]
