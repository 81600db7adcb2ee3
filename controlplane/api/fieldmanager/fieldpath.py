"""Field paths and field sets: how server-side apply names the fields of an object.

Server-side apply records, for every field of an object, which *field manager* set it. To do that
it needs a name for each field, including the ones inside lists, and a compact way to store a set of
such names. This module is a port of structured-merge-diff's ``fieldpath`` package
(kubernetes-sigs/structured-merge-diff ``fieldpath/element.go``, ``path.go``, ``set.go``,
``serialize.go``, ``serialize-pe.go``).

**Path elements.** A path is a sequence of elements, each selecting a child of a value:

=========  ===============================  ==========================================
kind       selects                          written in FieldsV1 / in messages
=========  ===============================  ==========================================
``f``      a field of an object or map       ``f:replicas``  /  ``.replicas``
``k``      the item of a list-map by keys    ``k:{"name":"web"}``  /  ``[name="web"]``
``v``      the item of a set by its value    ``v:"example.com/x"``  /  ``[="example.com/x"]``
``i``      an item of a list by position     ``i:0``  /  ``[0]``
=========  ===============================  ==========================================

Lists of objects with a key (containers by ``name``, container ports by ``containerPort`` and
``protocol``) are addressed by the key, never by position: a path stays valid when another manager
inserts an item before it, which is what lets two managers own different containers of one pod.

**Sets.** A :class:`Set` is a tree. Each node has *members* (path elements that are themselves in
the set) and *children* (path elements below which some deeper path is in the set). Being a child
does not imply being a member: ``.spec.replicas`` in a set makes ``spec`` a child of the root and
``replicas`` a member of ``spec``'s node, but ``spec`` itself is not owned.

**FieldsV1** is that tree as JSON, the format of ``metadata.managedFields[].fieldsV1``::

    {"f:spec": {"f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {
                    "k:{\\"name\\":\\"web\\"}": {".": {}, "f:image": {}}}}}}}

A key mapping to ``{}`` is a member; ``"."`` inside a node says the node itself is a member as well
as having children (the container item ``web`` is owned, and so is its ``image``).

Everything here is pure and immutable from the outside: set operations never modify their
operands. To stay cheap on every write they do not copy either: a result may share unchanged
subtrees (or be one of its operands, when the other is empty or disjoint), so a set that came out of
an operation is read-only. Only a set being built (``Set()``, then :meth:`Set.insert`) is modified.

**Sets read from FieldsV1 are shared.** Every write reads the managed fields of the stored object and
writes them back, and most managers' sets come back unchanged (a kubelet's status write leaves the
creator's set alone); objects made from one template hold the very same sets. So
:meth:`Set.from_fields_v1` keeps the sets it read by their document, and a set read from a
document in the form :meth:`Set.to_fields_v1` writes remembers it, to write it again without a walk.
Being read-only, such a set may be handed to any number of writes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from typing import Any, Final, NamedTuple

import orjson

FIELD: Final = "f"
KEY: Final = "k"
VALUE: Final = "v"
INDEX: Final = "i"

_KIND_ORDER: Final = {FIELD: 0, KEY: 1, VALUE: 2, INDEX: 3}


#: ``json.dumps`` with options builds a new encoder on every call; this one is built once.
_encode_canonical: Final = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode


def canonical_json(value: Any) -> str:
    """JSON as Go's ``encoding/json`` writes it (compact, sorted keys, HTML characters escaped).

    Key and value path elements embed JSON; writing it exactly one way makes equal elements equal
    strings. jsoniter's standard-library-compatible config escapes ``<``, ``>`` and ``&`` like Go.
    """
    text = _encode_canonical(value)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _value_rank(value: Any) -> tuple[Any, ...]:
    """A sort key that orders JSON values as structured-merge-diff's ``value.Compare`` does.

    Numbers (ints and floats compared numerically) < strings < booleans < lists < maps < null.
    """
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(_value_rank(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k, _value_rank(value[k])) for k in sorted(value)))
    return (5,)


def _value_text(value: Any) -> str:
    """``value.ToString``: JSON for strings and composites, plain text for numbers and booleans."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return canonical_json(value)


class PathElement(NamedTuple):
    """One step of a field path. ``kind`` is ``f``, ``k``, ``v`` or ``i``; ``text`` what follows the colon.

    Two elements are equal when they serialize the same way, which is why ``text`` is canonical.
    Build elements with :func:`field`, :func:`key`, :func:`value` and :func:`index`.

    A named tuple rather than a dataclass for speed: sets and dicts of elements hash and compare
    them millions of times per second in a busy API server, and a tuple's ``__hash__`` and ``__eq__``
    run in C where a dataclass's are Python functions.
    """

    kind: str
    text: str

    def serialize(self) -> str:
        """The FieldsV1 key: ``f:name``, ``k:{"name":"web"}``, ``v:"x"``, ``i:0``."""
        return f"{self.kind}:{self.text}"

    def __str__(self) -> str:
        """The element as upstream prints it in paths: ``.name``, ``[name="web"]``, ``[="x"]``, ``[0]``."""
        if self.kind == FIELD:
            return "." + self.text
        if self.kind == KEY:
            fields = json.loads(self.text)
            return "[" + ",".join(f"{k}={_value_text(fields[k])}" for k in sorted(fields)) + "]"
        if self.kind == VALUE:
            return f"[={_value_text(json.loads(self.text))}]"
        return f"[{self.text}]"

    @property
    def sort_key(self) -> tuple[Any, ...]:
        """Upstream's ``PathElement.Compare`` order: fields, then keys, then values, then indexes."""
        return _sort_key(self.kind, self.text)


#: Entries per cache of path elements. Field names repeat across objects, but a map's keys (labels,
#: annotations, a ConfigMap's data) and list keys (an ownerReference's uid) are per object: a bound of
#: a few thousand keeps every hot name while a lab of many clusters cannot grow them without limit
#: (each cache holds at most this many elements, about 1 MB).
_CACHED: Final = 8192


@functools.lru_cache(maxsize=_CACHED)
def _sort_key(kind: str, text: str) -> tuple[Any, ...]:
    rank = _KIND_ORDER[kind]
    if kind == FIELD:
        return (rank, text)
    if kind == KEY:
        fields = json.loads(text)
        # FieldList.Compare: field by field (name, then value); a shorter list sorts first.
        return (rank, tuple((name, _value_rank(fields[name])) for name in sorted(fields)))
    if kind == VALUE:
        return (rank, _value_rank(json.loads(text)))
    return (rank, int(text))


@functools.lru_cache(maxsize=_CACHED)
def field(name: str) -> PathElement:
    """The element selecting a field of an object, or a key of a map: ``f:name``.

    Cached: the same few hundred field names are looked up for every object, and a cached
    element is one dict lookup instead of building a new tuple.
    """
    return PathElement(FIELD, name)


def key(fields: Mapping[str, Any]) -> PathElement:
    """The element selecting a list-map item by its keys: ``k:{"containerPort":80,"protocol":"TCP"}``.

    Keys of strings, integers and booleans (all of upstream's) are cached by their fields and the
    fields' types, so that ``True`` and ``1``, equal in Python, stay apart.
    """
    if all(type(v) in _CACHED_KEY_TYPES for v in fields.values()):
        return _key(tuple((name, type(v), v) for name, v in fields.items()))
    return PathElement(KEY, canonical_json(dict(fields)))


_CACHED_KEY_TYPES: Final = frozenset({str, int, bool})


@functools.lru_cache(maxsize=_CACHED)
def _key(fields: tuple[tuple[str, type, Any], ...]) -> PathElement:
    return PathElement(KEY, canonical_json({name: v for name, _, v in fields}))


def value(item: Any) -> PathElement:
    """The element selecting a set item by its value: ``v:"finalizer.example.com"``."""
    return PathElement(VALUE, canonical_json(item))


def index(position: int) -> PathElement:
    """The element selecting an item of a list by position: ``i:0``."""
    return PathElement(INDEX, str(position))


Path = tuple[PathElement, ...]


def path_string(path: Path) -> str:
    """A path as upstream prints it in conflicts: ``.spec.template.spec.containers[name="web"].image``."""
    return "".join(str(pe) for pe in path)


def make_path(*parts: str | int | PathElement | Mapping[str, Any]) -> Path:
    """Build a path from field names (str), indexes (int), keys (mappings) and ready elements.

    >>> path_string(make_path("spec", "containers", {"name": "web"}, "image"))
    '.spec.containers[name="web"].image'
    """
    out: list[PathElement] = []
    for part in parts:
        if isinstance(part, PathElement):
            out.append(part)
        elif isinstance(part, str):
            out.append(field(part))
        elif isinstance(part, bool):
            raise TypeError("a path part may not be a boolean")
        elif isinstance(part, int):
            out.append(index(part))
        else:
            out.append(key(part))
    return tuple(out)


class FieldsV1Error(ValueError):
    """A ``fieldsV1`` document that is not a field set."""


@functools.lru_cache(maxsize=_CACHED)
def parse_path_element(text: str) -> PathElement:
    """Read a FieldsV1 key (``f:x``, ``k:{...}``, ``v:...``, ``i:N``); raises :class:`FieldsV1Error`.

    Key and value elements are re-encoded canonically, so ``k:{"b":1, "a":2}`` equals ``k:{"a":2,"b":1}``.
    """
    if len(text) < 2 or text[1] != ":":
        raise FieldsV1Error(f"invalid path element {text!r}: missing colon")
    kind, body = text[0], text[2:]
    if kind == FIELD:
        return PathElement(FIELD, body)
    if kind in (KEY, VALUE):
        try:
            decoded = json.loads(body)
        except ValueError as error:
            raise FieldsV1Error(f"invalid path element {text!r}: {error}") from None
        if kind == KEY:
            if not isinstance(decoded, dict):
                raise FieldsV1Error(f"invalid path element {text!r}: keys must be an object")
            return key(decoded)
        return value(decoded)
    if kind == INDEX:
        try:
            return index(int(body))
        except ValueError:
            raise FieldsV1Error(f"invalid path element {text!r}: not an index") from None
    raise FieldsV1Error(f"unknown path element type {kind!r}")


class Set:
    """A set of field paths, stored as a tree (structured-merge-diff ``fieldpath.Set``).

    ``members`` are the path elements of this node that are in the set; ``children`` map a path
    element to the subset below it. Operations never modify their operands, and their results may
    share subtrees with them (see the module docstring): only :meth:`insert` modifies, and is meant
    for building a new set.
    """

    __slots__ = ("_fields_v1", "children", "members")

    def __init__(self, paths: Iterator[Path] | list[Path] | tuple[Path, ...] = ()) -> None:
        self.members: set[PathElement] = set()
        self.children: dict[PathElement, Set] = {}
        #: The set's FieldsV1 as JSON, if it was read from exactly that (see the module docstring).
        self._fields_v1: bytes | None = None
        for path in paths:
            self.insert(path)

    # -- building and reading ------------------------------------------------------------------

    def insert(self, path: Path) -> None:
        """Add ``path`` (its parents are *not* added). The empty path, the whole object, is never owned."""
        if not path:
            return
        node = self
        for pe in path[:-1]:
            child = node.children.get(pe)
            if child is None:
                child = node.children[pe] = Set()
            node = child
        node.members.add(path[-1])

    def has(self, path: Path) -> bool:
        """Whether ``path`` itself is a member."""
        if not path:
            return False
        node: Set | None = self
        for pe in path[:-1]:
            node = node.children.get(pe) if node is not None else None
            if node is None:
                return False
        return node is not None and path[-1] in node.members

    def empty(self) -> bool:
        """True if no path at all is a member (children that hold nothing do not count)."""
        if self.members:
            return False
        for child in self.children.values():  # noqa: SIM110 (no generator to start: every write asks)
            if not child.empty():
                return False
        return True

    def __bool__(self) -> bool:
        return not self.empty()

    def with_prefix(self, pe: PathElement) -> Set:
        """The paths below ``pe``, without the prefix (empty if there are none)."""
        return self.children.get(pe) or Set()

    def __iter__(self) -> Iterator[Path]:
        """Every member path, in upstream's order (this node's members, then each child's subtree)."""
        yield from self._iterate(())

    def _iterate(self, prefix: Path) -> Iterator[Path]:
        for pe in sorted(self.members, key=_element_order):
            yield (*prefix, pe)
        for pe in sorted(self.children, key=_element_order):
            yield from self.children[pe]._iterate((*prefix, pe))

    def paths(self) -> list[str]:
        """Every member as a printed path, in order (handy in tests and messages)."""
        return [path_string(p) for p in self]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Set):
            return NotImplemented
        return self._normal() == other._normal()

    def same_tree(self, other: Set) -> bool:
        """Whether both sets are the very same tree, node for node: then they hold the same paths.

        A quick check for a set that may have come out of an operation unchanged: subtrees shared
        by both are not walked, and a difference in nodes that hold nothing (which ``==`` ignores)
        only makes the answer False, never wrong.
        """
        if self is other:
            return True
        if self.members != other.members or self.children.keys() != other.children.keys():
            return False
        return all(child.same_tree(other.children[pe]) for pe, child in self.children.items())

    def __hash__(self) -> int:  # a mutable container: not hashable, like upstream's pointer
        raise TypeError("unhashable type: 'Set'")

    def _normal(self) -> tuple[frozenset[PathElement], frozenset[tuple[PathElement, Any]]]:
        return (
            frozenset(self.members),
            frozenset((pe, child._normal()) for pe, child in self.children.items() if not child.empty()),
        )

    def __repr__(self) -> str:
        return f"Set({self.paths()!r})"

    def copy(self) -> Set:
        out = Set()
        out.members = set(self.members)
        out.children = {pe: child.copy() for pe, child in self.children.items()}
        return out

    # -- algebra (fieldpath/set.go) -------------------------------------------------------------

    def union(self, other: Set) -> Set:
        """Paths in either set (a subtree only one side has is shared, not copied)."""
        if not other.members and not other.children:
            return self
        if not self.members and not self.children:
            return other
        out = Set()
        out.members = self.members | other.members
        children = dict(self.children)
        for pe, theirs in other.children.items():
            mine = children.get(pe)
            children[pe] = theirs if mine is None else mine.union(theirs)
        out.children = children
        return out

    def intersection(self, other: Set) -> Set:
        """Paths in both sets."""
        out = Set()
        out.members = self.members & other.members
        for pe in self.children.keys() & other.children.keys():
            both = self.children[pe].intersection(other.children[pe])
            if not both.empty():
                out.children[pe] = both
        return out

    def difference(self, other: Set) -> Set:
        """Paths in this set and not in ``other``.

        Not recursive: removing a parent path leaves its children (``parent - child = parent``,
        ``child - parent = child``), exactly as upstream's ``Set.Difference`` does.
        """
        if self.members.isdisjoint(other.members) and self.children.keys().isdisjoint(other.children):
            return self  # nothing to take away (an empty ``other`` is the common case)
        out = Set()
        out.members = self.members - other.members
        for pe, child in self.children.items():
            other_child = other.children.get(pe)
            diff = child.difference(other_child) if other_child is not None else child
            if not diff.empty():
                out.children[pe] = diff
        return out

    def recursive_difference(self, other: Set) -> Set:
        """Like :meth:`difference`, but a member of ``other`` also removes everything below it."""
        if (
            self.members.isdisjoint(other.members)
            and self.children.keys().isdisjoint(other.children)
            and self.children.keys().isdisjoint(other.members)
        ):
            return self
        out = Set()
        out.members = self.members - other.members
        for pe, child in self.children.items():
            if pe in other.members:
                continue
            other_child = other.children.get(pe)
            diff = child.recursive_difference(other_child) if other_child is not None else child
            if not diff.empty():
                out.children[pe] = diff
        return out

    def leaves(self) -> Set:
        """Only the members that have no children of their own."""
        out = Set()
        out.members = {pe for pe in self.members if pe not in self.children or self.children[pe].empty()}
        for pe, child in self.children.items():
            sub = child.leaves()
            if not sub.empty():
                out.children[pe] = sub
        return out

    # -- FieldsV1 (fieldpath/serialize.go) -------------------------------------------------------

    def to_fields_v1(self) -> dict[str, Any]:
        """The set as a ``fieldsV1`` document, keys in upstream's order (a new document each time)."""
        if self._fields_v1 is not None:
            written: dict[str, Any] = orjson.loads(self._fields_v1)
            return written
        return self._emit(False)

    def _emit(self, include_self: bool) -> dict[str, Any]:
        # A child is written only if it holds something, which is exactly when what it writes is
        # not empty: so each child is written once, not first asked (recursively) if it is empty.
        members = self.members
        written: dict[PathElement, dict[str, Any]] = {}
        for pe, child in self.children.items():
            sub = child._emit(pe in members)
            if sub:
                written[pe] = sub
        out: dict[str, Any] = {".": {}} if include_self and (members or written) else {}
        for pe in sorted(members | written.keys() if written else members, key=_element_order):
            below = written.get(pe)
            out[_serialized(pe)] = {} if below is None else below
        return out

    @classmethod
    def from_fields_v1(cls, document: Any) -> Set:
        """Read a ``fieldsV1`` document; raises :class:`FieldsV1Error` if it is not one.

        The set is shared with every other reader of the same document: read-only.
        """
        if not isinstance(document, Mapping):
            raise FieldsV1Error("fieldsV1 must be an object")
        try:
            text: bytes | None = orjson.dumps(document)
        except orjson.JSONEncodeError:  # not plain JSON (a Mapping that is no dict): not kept
            text = None
        if text is not None:
            hit = _read_sets.get(text)
            if hit is not None:
                return hit
        read, _ = cls._read(document)
        out = read or Set()
        if text is not None:
            if orjson.dumps(out._emit(False)) == text:
                out._fields_v1 = text
            if len(_read_sets) >= _READ_SETS_KEPT:
                _read_sets.clear()
            _read_sets[text] = out
        return out

    @classmethod
    def _read(cls, document: Mapping[str, Any]) -> tuple[Set | None, bool]:
        # readIterV1: returns the subtree (None if no children) and whether the node is a member.
        children: Set | None = None
        is_member = False
        for text, sub in document.items():
            if text == ".":
                is_member = True
                continue
            if not isinstance(sub, dict | Mapping):  # (a dict is found without asking the ABC)
                raise FieldsV1Error(f"fieldsV1 entry {text!r} must be an object")
            try:
                pe = parse_path_element(text)
            except FieldsV1Error as error:
                if str(error).startswith("unknown path element type"):
                    continue  # upstream drops element types it does not know
                raise
            if children is None:
                children = Set()
            if not sub:  # a leaf, ``{}``: a member without children
                children.members.add(pe)
                continue
            grandchildren, child_is_member = cls._read(sub)
            if child_is_member:
                children.members.add(pe)
            if grandchildren is not None:
                children.children[pe] = grandchildren
        if children is None:
            is_member = True
        return children, is_member


#: Sets read from FieldsV1 documents, by the document's JSON (see the module docstring).
_read_sets: dict[bytes, Set] = {}
_READ_SETS_KEPT: Final = 2048


@functools.lru_cache(maxsize=_CACHED)
def serialized(pe: PathElement) -> str:
    """``pe.serialize()``, cached: the FieldsV1 key of an element (for walkers that write FieldsV1)."""
    return pe.serialize()


@functools.lru_cache(maxsize=_CACHED)
def element_order(pe: PathElement) -> tuple[Any, ...]:
    """``pe.sort_key``, cached: the order in which FieldsV1 lists the elements of one node."""
    return _sort_key(pe.kind, pe.text)


_serialized: Final = serialized
_element_order: Final = element_order


def set_of(*paths: Path) -> Set:
    """A set of the given paths."""
    return Set(list(paths))


def parse_paths(*texts: str) -> Set:
    """A set from dotted field paths, for tests and fixed sets: ``parse_paths("spec.replicas", "status")``."""
    return Set([make_path(*text.split(".")) for text in texts])


__all__ = [
    "FIELD",
    "INDEX",
    "KEY",
    "VALUE",
    "FieldsV1Error",
    "Path",
    "PathElement",
    "Set",
    "canonical_json",
    "element_order",
    "field",
    "index",
    "key",
    "make_path",
    "parse_path_element",
    "parse_paths",
    "path_string",
    "serialized",
    "set_of",
    "value",
]
