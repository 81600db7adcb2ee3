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

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from controlplane.api import schema as schemas
from controlplane.api.fieldmanager.fieldpath import (
    Path,
    PathElement,
    Set,
    element_order,
    index,
    key,
    path_string,
    serialized,
    value,
)
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
    """Atoms by schema node (``id``: dicts are not hashable; each entry keeps its node alive)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: atoms of upstream's schema (``definitions`` None), the ones every request uses
        self.upstream_atoms: dict[int, tuple[Schema, Atom]] = {}
        #: atoms of a test's own definitions, which the entry keeps alive too
        self.atoms: dict[tuple[int, int], tuple[Schema, Mapping[str, Schema], Atom]] = {}
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
    """The atom a schema node describes (cached per node: the walkers ask for every value they visit)."""
    if definitions is None:
        hit = _cache.upstream_atoms.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        result = _make_atom(node, definitions)
        with _cache.lock:
            _cache.upstream_atoms[id(node)] = (node, result)
        return result
    cache_key = (id(node), id(definitions))
    found = _cache.atoms.get(cache_key)
    if found is not None and found[0] is node and found[1] is definitions:
        return found[2]
    result = _make_atom(node, definitions)
    with _cache.lock:
        _cache.atoms[cache_key] = (node, definitions, result)
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
        for key_field in a.keys:
            if key_field in item:
                fields[key_field] = item[key_field]
                continue
            element_name = schemas.ref_name(a.element) if a.element is not None else None
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
    _to_set(v, node, out, None, definitions)
    return out


def _to_set(
    v: Any, node: Schema, parent: Set, pe: PathElement | None, defs: Mapping[str, Schema] | None
) -> None:
    """Add the fields of ``v``, found at ``pe`` below the set node ``parent`` (None: the whole object).

    The set's tree is filled node by node on the way down, rather than inserting each path from the
    root; a node that ends up holding nothing is dropped again.
    """
    a = _effective(atom(node, defs), v)
    if _is_leaf(a) or a.atomic:
        if pe is not None:
            parent.members.add(pe)
        return
    if not isinstance(v, list | dict):  # a list or map that is null
        return
    here = parent if pe is None else parent.children.setdefault(pe, Set())
    if isinstance(v, list):  # a.kind is LIST
        assert a.element is not None
        for position, item in enumerate(v):
            try:
                item_pe = item_element(a, position, item, defs)
            except ItemError:
                continue
            _to_set(item, a.element, here, item_pe, defs)
            here.members.add(item_pe)
    else:
        for name, child_value in v.items():
            child_node, named = _child(a, name)
            name_pe = field_element(name)
            _to_set(child_value, child_node if child_node is not None else _DEDUCED_NODE, here, name_pe, defs)
            if not named:
                here.members.add(name_pe)
    if pe is not None and not here.members and not here.children:
        del parent.children[pe]


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


def compare(
    lhs: Any,
    rhs: Any,
    node: Schema,
    definitions: Mapping[str, Schema] | None = None,
    *,
    ignored: Set | None = None,
) -> Comparison:
    """Fields added, modified and removed from ``lhs`` (the old object) to ``rhs`` (the new one).

    A list item or map entry that appears or disappears is itself added or removed, besides the
    leaves below it. Named struct fields are not: upstream's answer depends on whether the Go
    field is a pointer (absent from a zero object) or not, which the schema does not record.

    ``ignored`` gives ``compare(lhs, rhs, node).exclude(ignored)``, without walking what it would
    throw away (``status`` of an update, ``spec`` and ``metadata`` of a status update).
    """
    out = Comparison()
    _compare(lhs, rhs, node, (), out, definitions, skip=ignored)
    return out.exclude(ignored)


def _compare(
    left_value: Any,
    right_value: Any,
    node: Schema,
    path: Path,
    c: Comparison,
    defs: Mapping[str, Schema] | None,
    *,
    named: bool = False,
    skip: Set | None = None,
) -> None:
    """Compare two values at ``path``; ``skip``: the fields below it that may be left out."""
    if left_value is MISSING:
        _compare_one_side(right_value, node, path, c.added, defs, named=named)
        return
    if right_value is MISSING:
        _compare_one_side(left_value, node, path, c.removed, defs, named=named)
        return
    if _unchanged(left_value, right_value):
        return
    # Both sides are present, so the node itself is neither added nor removed: only what it holds.
    a = atom(node, defs)
    al, ar = _effective(a, left_value), _effective(a, right_value)
    if al is not ar:
        _compare_atom(al, left_value, right_value, path, c, defs, skip)
    _compare_atom(ar, left_value, right_value, path, c, defs, skip)


def _compare_one_side(
    v: Any, node: Schema, path: Path, out: Set, defs: Mapping[str, Schema] | None, *, named: bool
) -> None:
    """:func:`_compare` when ``v`` is on one side only: all of it is added (or all removed) to ``out``.

    The same walk as the two-sided one with the missing side left out (a create is all of this),
    so the leaves, the list items and map keys, and the nodes holding them land in ``out``; a
    named field holding a struct does not (see :func:`compare`). Instead of inserting each path
    from the root, :func:`_one_side` fills the set's tree node by node as it goes down.
    """
    if not path:
        _one_side(v, node, out, None, defs, named)
    else:
        _one_side(v, node, _node_at(out, path[:-1]), path[-1], defs, named)


def _node_at(s: Set, path: Path) -> Set:
    """The node of the set being built ``s`` at ``path``, created (empty) if it is not there yet."""
    for pe in path:
        child = s.children.get(pe)
        if child is None:
            child = s.children[pe] = Set()
        s = child
    return s


def _one_side(
    v: Any,
    node: Schema,
    parent: Set,
    pe: PathElement | None,
    defs: Mapping[str, Schema] | None,
    named: bool,
) -> None:
    """Add ``v``, found at ``pe`` below the set node ``parent``, as :func:`_compare_one_side` says.

    ``pe`` is None for the whole object, which is never a member itself. (The hottest walk of an
    update: :func:`_effective` and :func:`_child` are written out inline.)
    """
    a = atom(node, defs)
    kind = a.kind
    if kind == LIST:
        container = not a.atomic and isinstance(v, list) and bool(v)
    elif kind == MAP:
        container = not a.atomic and isinstance(v, dict) and bool(v)
    elif kind == UNTYPED and not a.atomic and isinstance(v, dict) and v:
        a, container = _DEDUCED_MAP, True
    else:
        container = False
    if not container:
        # a leaf, an atomic or empty list or map, or a value of the wrong shape: one member
        if pe is not None:
            parent.members.add(pe)
        return
    if pe is None:
        here = parent
    else:
        found = parent.children.get(pe)
        here = found if found is not None else parent.children.setdefault(pe, Set())
    if isinstance(v, list):  # a.kind is LIST
        element = a.element
        assert element is not None
        order, items = _index_items(a, v, defs)
        for item_pe in order:
            _one_side(items[item_pe], element, here, item_pe, defs, False)
    else:
        fields, free = a.fields, a.element if a.element is not None else _DEDUCED_NODE
        leaves, free_leaf = _leaves(a, defs)
        members = here.members
        for name, child_value in v.items():
            if name in leaves:
                members.add(field_element(name))  # (what the call below would do)
                continue
            child_node = fields.get(name)
            if child_node is None:
                if free_leaf:
                    members.add(field_element(name))
                else:
                    _one_side(child_value, free, here, field_element(name), defs, False)
            else:
                _one_side(child_value, child_node, here, field_element(name), defs, True)
    if pe is not None and not (named and a.is_struct):
        parent.members.add(pe)


def added_fields_v1(
    v: dict[str, Any],
    node: Schema,
    definitions: Mapping[str, Schema] | None = None,
    *,
    excluding: Set | None = None,
    stripping: Set | None = None,
) -> dict[str, Any] | None:
    """The FieldsV1 of what a create adds, written in one walk; None if the schema's root is no struct.

    Exactly ``compare({}, v, node, ignored=excluding).added.recursive_difference(excluding)
    .difference(stripping).to_fields_v1()`` (``excluding`` drops members with all below them,
    ``stripping`` only the members themselves, as :meth:`Set.difference` does), which is what a
    create gives its manager. Every field of a new object is added, so nothing needs comparing, and
    the document is written as the walk goes instead of building a :class:`Set` first and writing it
    out afterwards: each node follows :func:`_one_side`'s rules for what is a member and
    :meth:`Set.to_fields_v1`'s for order (``tests/controlplane/api/test_fieldmanager_fastpath.py``
    holds the two ways against each other).
    """
    a = atom(node, definitions)
    if a.kind != MAP or a.atomic:
        return None
    if not isinstance(v, dict):
        return None
    return _written_filtered(v, node, definitions, False, excluding, stripping, root=True) or {}


def _written(v: Any, node: Schema, defs: Mapping[str, Schema] | None, named: bool) -> dict[str, Any] | None:
    """What FieldsV1 holds for ``v`` added at one path element: ``{}`` for a member without children,
    ``{".": {}, ...}`` for a member with children, the children alone for a struct reached by a named
    field (never a member, see :func:`compare`), None for nothing. The rules of :func:`_one_side`."""
    found = _container(atom(node, defs), v)
    if found is None:
        return {}
    a = found
    if a.kind == LIST:
        order, items = _index_items(a, v, defs)
        element = a.element
        assert element is not None
        pairs = []
        for pe in order:
            sub = _written(items[pe], element, defs, False)
            if sub is not None:
                pairs.append((element_order(pe), serialized(pe), sub))
        pairs.sort(key=_first)
        out: dict[str, Any] = {".": {}}
        for _, text, sub in pairs:
            out[text] = sub
        return out if pairs else {}
    member = not (named and a.is_struct)
    fields, free = a.fields, a.element if a.element is not None else _DEDUCED_NODE
    leaves, free_leaf = _leaves(a, defs)
    entries: list[tuple[str, dict[str, Any]]] = []
    for name, child_value in v.items():
        if name in leaves:
            entries.append(("f:" + name, {}))  # (what the call below would answer)
            continue
        child_node = fields.get(name)
        if child_node is None:
            sub = {} if free_leaf else _written(child_value, free, defs, False)
        else:
            sub = _written(child_value, child_node, defs, True)
        if sub is not None:
            entries.append(("f:" + name, sub))
    if not entries:
        return {} if member else None
    entries.sort(key=_first)  # every element is a field: upstream's order is the names' order
    out = {".": {}} if member else {}
    out.update(entries)
    return out


def _container(a: Atom, v: Any) -> Atom | None:
    """The atom to walk ``v`` with if it holds members of its own (a non-empty granular list or map).

    None: ``v`` is one member (a leaf, an atomic or empty list or map, a value of the wrong shape),
    as :func:`_one_side` decides.
    """
    kind = a.kind
    if kind == LIST:
        return a if not a.atomic and isinstance(v, list) and v else None
    if kind == MAP:
        return a if not a.atomic and isinstance(v, dict) and v else None
    if kind == UNTYPED and not a.atomic and isinstance(v, dict) and v:
        return _DEDUCED_MAP
    return None


def _always_leaf(a: Atom) -> bool:
    """Whether every value of ``a`` is one member, whatever it holds (scalars, atomic lists and maps)."""
    return a.kind == SCALAR or a.atomic


_leaves_cache: dict[tuple[int, int], tuple[Atom, Mapping[str, Schema] | None, frozenset[str], bool]] = {}


def _leaves(a: Atom, defs: Mapping[str, Schema] | None) -> tuple[frozenset[str], bool]:
    """A map's named fields whose values are always leaves, and whether its free keys' values are.

    Cached per atom (atoms are cached per schema node, so this is per node); each entry keeps the
    atom and definitions its key's ids name alive, so the ids are not reused.
    """
    cache_key = (id(a), id(defs))
    hit = _leaves_cache.get(cache_key)
    if hit is not None and hit[0] is a and hit[1] is defs:
        return hit[2], hit[3]
    names = frozenset(name for name, node in a.fields.items() if _always_leaf(atom(node, defs)))
    free_leaf = a.element is not None and _always_leaf(atom(a.element, defs))
    with _cache.lock:
        _leaves_cache[cache_key] = (a, defs, names, free_leaf)
    return names, free_leaf


def _first(entry: tuple[Any, ...]) -> Any:
    return entry[0]


def _written_filtered(
    v: Any,
    node: Schema,
    defs: Mapping[str, Schema] | None,
    named: bool,
    excluding: Set | None,
    stripping: Set | None,
    *,
    root: bool = False,
) -> dict[str, Any] | None:
    """:func:`_written` where some paths below are excluded or stripped (the object's root, ``metadata``)."""
    found = _container(atom(node, defs), v)
    if found is None:
        return {}
    a = found
    pairs: list[tuple[Any, str, dict[str, Any]]] = []
    if a.kind == LIST:
        element = a.element
        assert element is not None
        order, items = _index_items(a, v, defs)
        for pe in order:
            sub = _written_below(pe, items[pe], element, defs, False, excluding, stripping)
            if sub is not None:
                pairs.append((element_order(pe), serialized(pe), sub))
    else:
        fields, free = a.fields, a.element if a.element is not None else _DEDUCED_NODE
        for name, child_value in v.items():
            child_node = fields.get(name)
            pe = field_element(name)
            if child_node is None:
                sub = _written_below(pe, child_value, free, defs, False, excluding, stripping)
            else:
                sub = _written_below(pe, child_value, child_node, defs, True, excluding, stripping)
            if sub is not None:
                text = "f:" + name
                pairs.append((text, text, sub))  # every element is a field: ordered by name
    pairs.sort(key=_first)
    member = not root and not (named and a.is_struct)
    if not pairs:
        return {} if member else None
    out: dict[str, Any] = {".": {}} if member else {}
    for _, text, sub in pairs:
        out[text] = sub
    return out


def _written_below(
    pe: PathElement,
    v: Any,
    node: Schema,
    defs: Mapping[str, Schema] | None,
    named: bool,
    excluding: Set | None,
    stripping: Set | None,
) -> dict[str, Any] | None:
    """What :func:`_written_filtered` writes at ``pe`` below its node."""
    if excluding is not None:
        if pe in excluding.members:
            return None  # excluded with everything below it
        child_excluding = excluding.children.get(pe)
    else:
        child_excluding = None
    child_stripping = stripping.children.get(pe) if stripping is not None else None
    if child_excluding is None and child_stripping is None:
        sub = _written(v, node, defs, named)
    else:
        sub = _written_filtered(v, node, defs, named, child_excluding, child_stripping)
    if sub is not None and stripping is not None and pe in stripping.members:
        sub.pop(".", None)  # no longer a member itself; what it holds stays
        if not sub:
            return None
    return sub


_strict_json: Final = json.JSONEncoder(allow_nan=False, check_circular=False).encode

#: orjson refuses what is not plain JSON of the built-in types (a subclass, a datetime, a dataclass)
#: instead of writing it its own way: such values take the standard library's encoder.
_PLAIN_JSON: Final = (
    orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
)


def _plain_json(value: Any) -> bytes | None:
    """``value`` as JSON if orjson's encoding tells exactly what :data:`_strict_json`'s would; else None.

    orjson is several times faster. On plain JSON values both encoders are one-to-one (``true`` is
    not ``1``, ``1`` is not ``1.0``), so equal encodings mean the same thing for both; but orjson
    writes ``nan`` and infinities as ``null`` where ``_strict_json`` refuses them, so a document with
    a ``null`` anywhere (or the word in a string) is left to ``_strict_json``, as is anything orjson
    refuses (a non-string key, an integer beyond 64 bits, a lone surrogate).
    """
    try:
        text = orjson.dumps(value, option=_PLAIN_JSON)
    except TypeError:  # orjson.JSONEncodeError included
        return None
    return None if b"null" in text else text


def _unchanged(left_value: Any, right_value: Any) -> bool:
    """True if two maps or lists are certainly :func:`json_equal`, decided in C instead of a walk.

    Most of an update repeats the live object (``spec`` and ``metadata`` of a status write), and an
    equal subtree adds, modifies and removes nothing. Python's ``==`` finds equal subtrees at C speed
    but is looser than ``json_equal`` (``True == 1``; ``nan`` is equal to itself inside a list), so an
    ``==`` match is confirmed by encoding both sides to JSON, which writes ``true`` and ``1``
    differently and refuses ``nan``. Whatever this cannot decide (``1`` against ``1.0``, keys in
    another order, values that are not JSON) goes the slow way and gets the exact answer there.
    (Values are decoded JSON or YAML; a ``str`` subclass, which only Python code could put in an
    object, would count as the string it holds here, as it does in JSON.) The encodings are orjson's
    where :func:`_plain_json` says they tell the same.
    """
    if left_value.__class__ is not right_value.__class__ or left_value.__class__ not in (dict, list):
        return False
    try:
        if left_value is right_value:
            if _plain_json(left_value) is None:
                _strict_json(left_value)
            return True
        if left_value != right_value:
            return False
        left_text = _plain_json(left_value)
        right_text = _plain_json(right_value) if left_text is not None else None
        if right_text is not None:
            return left_text == right_text
        return _strict_json(left_value) == _strict_json(right_value)
    except (TypeError, ValueError, RecursionError):
        return False


def _compare_leaf(left_value: Any, right_value: Any, path: Path, c: Comparison) -> None:
    if left_value is MISSING:
        c.added.insert(path)
    elif right_value is MISSING:
        c.removed.insert(path)
    elif not json_equal(left_value, right_value):
        c.modified.insert(path)


def _compare_atom(
    a: Atom,
    left_value: Any,
    right_value: Any,
    path: Path,
    c: Comparison,
    defs: Mapping[str, Schema] | None,
    skip: Set | None = None,
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
            if pe in left:
                _compare(left[pe], right[pe], a.element, (*path, pe), c, defs)
            else:
                _one_side(right[pe], a.element, _node_at(c.added, path), pe, defs, False)
        for pe, item in left.items():
            if pe not in right:
                _one_side(item, a.element, _node_at(c.removed, path), pe, defs, False)
        return False
    lmap = left_value if isinstance(left_value, dict) else None
    rmap = right_value if isinstance(right_value, dict) else None
    if a.atomic or (not lmap and not rmap):
        _compare_leaf(left_value, right_value, path, c)
        return True
    lmap, rmap = lmap or {}, rmap or {}
    names = list(lmap) + [k for k in rmap if k not in lmap]
    leaves, free_leaf = _leaves(a, defs)
    for name in names:
        pe = field_element(name)
        if skip is not None and pe in skip.members:
            continue  # ignored, with everything below it
        if name in leaves or (free_leaf and name not in a.fields):
            # A value that is always one member (a scalar, an atomic list or map): what _compare
            # and _one_side would find, without walking down to _compare_leaf.
            left_child, right_child = lmap.get(name, MISSING), rmap.get(name, MISSING)
            if left_child is MISSING:
                _node_at(c.added, path).members.add(pe)
            elif right_child is MISSING:
                _node_at(c.removed, path).members.add(pe)
            elif not (
                left_child == right_child
                if left_child.__class__ is str and right_child.__class__ is str
                else json_equal(left_child, right_child)
            ):
                c.modified.insert((*path, pe))
            continue
        child_node, named = _child(a, name)
        if child_node is None:
            child_node = _DEDUCED_NODE
        left_child, right_child = lmap.get(name, MISSING), rmap.get(name, MISSING)
        if left_child is MISSING:  # (what _compare would do, without finding the set node each time)
            _one_side(right_child, child_node, _node_at(c.added, path), pe, defs, named)
        elif right_child is MISSING:
            _one_side(left_child, child_node, _node_at(c.removed, path), pe, defs, named)
        else:
            child_skip = skip.children.get(pe) if skip is not None else None
            _compare(left_child, right_child, child_node, (*path, pe), c, defs, named=named, skip=child_skip)
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
    if a.kind == UNTYPED:
        return
    if v is None:
        return
    if a.kind == SCALAR:
        if a.scalar == "numeric" and (isinstance(v, bool) or not isinstance(v, int | float)):
            message = f"expected numeric (int or float), got {_describe(v)}"
            errors.append(ValidationError(path_string(path), message))
        elif a.scalar == "string" and not isinstance(v, str):
            errors.append(ValidationError(path_string(path), f"expected string, got {_describe(v)}"))
        elif a.scalar == "boolean" and not isinstance(v, bool):
            errors.append(ValidationError(path_string(path), f"expected boolean, got {_describe(v)}"))
        elif not a.scalar and isinstance(v, dict | list):
            errors.append(ValidationError(path_string(path), f"expected scalar, got {_describe(v)}"))
        return
    if a.kind == LIST:
        if not isinstance(v, list):
            errors.append(ValidationError(path_string(path), f"expected list, got {_describe(v)}"))
            return
        assert a.element is not None
        seen: set[PathElement] = set()
        for position, item in enumerate(v):
            try:
                pe = item_element(a, position, item, defs)
            except ItemError as error:
                errors.append(ValidationError(path_string(path), f"element {position}: {error}"))
                return
            if not a.atomic:
                if pe in seen:
                    errors.append(ValidationError(path_string(path), f"duplicate entries for key {pe}"))
                seen.add(pe)
            _validate(item, a.element, (*path, pe), errors, defs)
        return
    if not isinstance(v, dict):
        errors.append(ValidationError(path_string(path), f"expected map, got {_describe(v)}"))
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
