"""From the form's text to Kubernetes objects, each with where it stands in the text. Pure: no I/O.

A manifest is YAML: one or more documents separated by ``---``, each a Kubernetes object. kubectl
reads it with a YAML decoder, skips the empty documents (``---`` twice, or only comments; its
``StreamVisitor`` also skips a document that is just ``null``), and sends each object to the API
server. This module does the same, and refuses before anything is sent what the API server would
refuse or what would hurt the lab on the way there (each refusal is its own type in ``errors.py``):

1. **The bytes.** At most 3 MiB (the API server's request limit, ``controlplane/apiserver/http.py``),
   UTF-8, and text: no NUL byte or other character YAML does not allow.
2. **The YAML**, read by libyaml (PyYAML's C parser, when installed) and composed into nodes by a
   composer that counts as it goes, so that hostile input stops early instead of costing the lab:
   at most ``MAX_ALIASES`` ``*alias`` references and never more values, aliases expanded, than the text
   spells out (the "billion laughs": nine aliases of nine aliases of ... make a gigabyte of a kilobyte,
   which yaml.v2 refuses as "excessive aliasing"); mappings and lists at most ``MAX_DEPTH`` levels deep,
   counted before each level is read (the depth the API server decodes, and what keeps Python's
   recursion, and libyaml's, far from their limits); at most ``MAX_DOCUMENTS`` objects.
3. **Each document**, turned into the JSON the API server would decode from it with the API server's
   own rules (``controlplane.api.requestbody``: sigs.k8s.io/yaml's view, where a timestamp stays a
   string and ``.inf`` is refused), must be a mapping with no key twice (the API server refuses
   duplicate fields under ``fieldValidation=Strict``), with a string ``apiVersion`` and ``kind``, and a
   ``metadata.name`` that can be a segment of the object's URL.

What comes back is a tuple of ``Document``: the object as JSON-ready data, its number among the
objects, the lines it spans, and its YAML node tree, whose marks say where each field is in the whole
text (``locate.py`` follows a field path through it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from controlplane.api import requestbody
from controlplane.apiserver.http import MAX_BODY
from courses.manifests import errors

try:  # libyaml: the same events as PyYAML's own parser, several times faster
    from yaml._yaml import CParser as _EventParser
except ImportError:  # pragma: no cover - PyYAML without libyaml
    from yaml.parser import Parser as _PythonParser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _EventParser(Reader, Scanner, _PythonParser):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            _PythonParser.__init__(self)


#: The most objects one submission may hold.
MAX_DOCUMENTS: Final = 50
#: The most empty documents (``---`` with nothing, or only comments) it may hold besides.
MAX_EMPTY_DOCUMENTS: Final = 50
#: The most ``*alias`` references in one submission. Kubernetes manifests rarely use any.
MAX_ALIASES: Final = 100
#: The deepest nesting of mappings and lists, as the API server decodes bodies.
MAX_DEPTH: Final = requestbody.MAX_DEPTH
#: Values the aliases may expand to, beyond one per character of the text (as ``requestbody``).
ALIAS_SLACK: Final = 1000

#: Characters YAML does not allow in text (YAML 1.1 "printable", PyYAML's ``Reader.NON_PRINTABLE``),
#: plus U+FFFD, which stands where bytes that were not UTF-8 were.
_NOT_TEXT: Final = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffc\ufeff\U00010000-\U0010ffff]")

_NULL_TAG: Final = "tag:yaml.org,2002:null"
_STR_TAG: Final = "tag:yaml.org,2002:str"
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_FLOAT_TAG: Final = "tag:yaml.org,2002:float"
_INT_TAG: Final = "tag:yaml.org,2002:int"


@dataclass(frozen=True, eq=False)
class Document:
    """One object of the manifest, as the API server will be sent it, and where it is in the text."""

    #: Its place among the objects of the text, from 1 (empty documents are not counted).
    number: int
    #: The lines it spans in the whole text, 1-based.
    first_line: int
    last_line: int
    #: The object, as JSON-ready data decoded with the API server's rules.
    body: dict[str, Any] = field(repr=False)
    #: Its YAML node tree: every node's ``start_mark`` is a place in the whole text (0-based).
    node: MappingNode = field(repr=False)

    @property
    def api_version(self) -> str:
        return str(self.body["apiVersion"])

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        """``metadata.namespace`` as written (None when absent or empty)."""
        value = self.body["metadata"].get("namespace")
        return value if isinstance(value, str) and value else None


def parse(text: str | bytes) -> tuple[Document, ...]:
    """The objects of ``text``, in order; raises a ``ManifestError`` (``errors.py``) for what is refused.

    Problems of the text as a whole (size, bytes, YAML syntax, aliases, depth, document count) stop at
    the first; problems of single documents are collected over all of them (``SeveralProblems``).
    """
    text = _decode(text)
    _check_characters(text)
    loader = _Loader(text, budget=len(text) + ALIAS_SLACK)
    documents: list[Document] = []
    problems: list[errors.ManifestError] = []
    empty = 0
    try:
        while loader.check_node():
            start: Any = loader.peek_event().start_mark
            if len(documents) + len(problems) >= MAX_DOCUMENTS:
                raise errors.TooManyDocuments(MAX_DOCUMENTS, line=start.line + 1, column=start.column + 1)
            loader.last_line = start.line
            root: Any = loader.get_node()
            if isinstance(root, ScalarNode) and root.tag == _NULL_TAG:
                empty += 1  # kubectl skips these (resource/visitor.go, StreamVisitor)
                if empty > MAX_EMPTY_DOCUMENTS:
                    line, column = start.line + 1, start.column + 1
                    raise errors.TooManyDocuments(MAX_EMPTY_DOCUMENTS, line=line, column=column, empty=True)
                continue
            number = len(documents) + len(problems) + 1
            try:
                documents.append(_document(loader, root, number))
            except errors.ManifestError as problem:
                problems.append(problem)
    except yaml.MarkedYAMLError as error:
        raise _syntax_error(error) from None
    except yaml.YAMLError as error:  # a ReaderError: the characters were checked above, but still
        raise errors.YAMLSyntaxError(str(error), line=None, column=None) from None
    finally:
        loader.dispose()
    if problems:
        raise problems[0] if len(problems) == 1 else errors.SeveralProblems(problems)
    if not documents:
        raise errors.NothingToSubmit()
    return tuple(documents)


# -- the bytes --------------------------------------------------------------------------------------


def _decode(text: str | bytes) -> str:
    """The text as a string with LF line ends, at most ``MAX_BODY`` bytes of UTF-8."""
    if isinstance(text, bytes):
        if len(text) > 2 * MAX_BODY:  # far past the limit, whatever its line ends: not worth decoding
            raise errors.TooLarge(len(text), MAX_BODY)
        raw = text
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            before = raw[: error.start].decode("utf-8")
            line, column = _place(before, len(before))
            raise errors.NotUTF8(line=line, column=column, offset=error.start) from None
    elif len(text) > 2 * MAX_BODY:  # (every character is at least one byte)
        raise errors.TooLarge(len(text.encode("utf-8", "surrogatepass")), MAX_BODY)
    # A textarea posts CRLF line ends: the text is measured and read as the student wrote it.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BODY:
        raise errors.TooLarge(size, MAX_BODY)
    return text


def _place(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of ``offset`` in ``text``."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _check_characters(text: str) -> None:
    found = _NOT_TEXT.search(text)
    if found is None:
        return
    line, column = _place(text, found.start())
    character = found.group()
    if character == "\ufffd" or "\ud800" <= character <= "\udfff":
        raise errors.NotUTF8(line=line, column=column)
    raise errors.NotText(character, line=line, column=column)


def _syntax_error(error: yaml.MarkedYAMLError) -> errors.ManifestError:
    mark = error.problem_mark or error.context_mark
    problem = error.problem or error.context or "invalid YAML"
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
    if isinstance(error, ConstructorError) and problem.startswith("could not determine a constructor"):
        tag = problem.split("tag", 1)[-1].strip().strip("'\"") or "?"
        return errors.UnsupportedTag(tag, line=line or 1, column=column or 1)
    context = error.context if error.problem else None
    return errors.YAMLSyntaxError(problem, context=context, line=line, column=column)


# -- the YAML ---------------------------------------------------------------------------------------


class _Composer(Composer):
    """PyYAML's composer, counting aliases, nesting, and what the aliases expand to, as it goes."""

    def __init__(self, budget: int) -> None:
        super().__init__()
        self.budget = budget
        self.aliases = 0
        self.nesting = 0
        #: Each composed node's size (values, aliases expanded) and depth (levels of mappings and lists).
        self.sizes: dict[int, int] = {}
        self.depths: dict[int, int] = {}
        #: The last line (0-based) that holds something of the document being composed.
        self.last_line = 0

    #: (the event parser's, which the loader below mixes in)
    peek_event: Any

    def compose_node(self, parent: Node | None, index: Any) -> Any:
        event = self.peek_event()
        mark = event.start_mark
        if isinstance(event, AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise errors.TooManyAliases(MAX_ALIASES, line=mark.line + 1, column=mark.column + 1)
            node: Any = super().compose_node(parent, index)
            if id(node) not in self.sizes:  # its anchor is still open: the alias is inside it
                raise errors.RecursiveAlias(str(event.anchor), line=mark.line + 1, column=mark.column + 1)
            return node
        collection = isinstance(event, MappingStartEvent | SequenceStartEvent)
        if collection:
            # Counted before the level is read, so a text of a million "[" stops at the limit.
            self.nesting += 1
            if self.nesting > MAX_DEPTH:
                raise errors.TooDeep(MAX_DEPTH, line=mark.line + 1, column=mark.column + 1)
        node = super().compose_node(parent, index)
        if collection:
            self.nesting -= 1
        self._measure(node)
        return node

    def _measure(self, node: Node) -> None:
        sizes, depths = self.sizes, self.depths
        if isinstance(node, ScalarNode):
            sizes[id(node)], depths[id(node)] = 1, 0
            end = node.end_mark  # after the scalar: at column 0 of the next line after a block scalar
            self.last_line = max(
                self.last_line, end.line - 1 if end.column == 0 and end.line > 0 else end.line
            )
            return
        if isinstance(node, MappingNode):
            children = [child for pair in node.value for child in pair]
        else:
            children = list(node.value)
        size = 1 + sum(sizes[id(child)] for child in children)
        depth = 1 + max((depths[id(child)] for child in children), default=0)
        sizes[id(node)], depths[id(node)] = size, depth
        mark = node.start_mark
        if size > self.budget:
            raise errors.ExcessiveAliasing(self.budget, line=mark.line + 1, column=mark.column + 1)
        if depth > MAX_DEPTH:  # deeper through aliases than written
            raise errors.TooDeep(MAX_DEPTH, line=mark.line + 1, column=mark.column + 1)
        if getattr(node, "flow_style", False):
            self.last_line = max(self.last_line, node.end_mark.line)


class _Loader(_Composer, _EventParser, SafeConstructor, Resolver):
    """libyaml's events, the counting composer, and the API server's YAML rules for scalars."""

    # requestbody's view of scalars: a timestamp is a plain string, as yaml.v2 keeps it.
    yaml_implicit_resolvers = requestbody._GoYAMLLoader.yaml_implicit_resolvers

    def __init__(self, text: str, *, budget: int) -> None:
        _EventParser.__init__(self, text)
        _Composer.__init__(self, budget)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)


def _mark(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _document(loader: _Loader, root: Node, number: int) -> Document:
    """One composed document, checked and decoded; raises a ``ManifestError`` about it."""
    line, column = _mark(root)
    if not isinstance(root, MappingNode):
        shape = "list" if isinstance(root, SequenceNode) else "scalar"
        raise errors.NotAnObject(shape, line=line, column=column, document=number)
    _check_keys(loader, root, number)
    body = _decode_document(loader, root, number)
    _check_identity(body, root, number)
    last_line = max(loader.last_line + 1, line)
    return Document(number=number, first_line=line, last_line=last_line, body=body, node=root)


def _key_text(loader: _Loader, key: Node, number: int) -> str | None:
    """A mapping key as the JSON key it becomes (``requestbody``'s rule), or None for a merge key."""
    if isinstance(key, ScalarNode):
        if key.tag == _MERGE_TAG:
            return None
        if key.tag == _STR_TAG:
            return str(key.value)
    line, column = _mark(key)
    if not isinstance(key, ScalarNode):
        reason = "error converting YAML to JSON: unsupported map key: a mapping or a list"
        raise errors.UnsupportedValue(reason, line=line, column=column, document=number)
    try:
        return requestbody._key(loader.construct_object(key, deep=True))
    except requestbody.BodyError as error:
        raise errors.UnsupportedValue(str(error), line=line, column=column, document=number) from None


def _check_keys(loader: _Loader, root: MappingNode, number: int) -> None:
    """No key twice in one mapping (each node once, however many aliases point at it)."""
    seen: set[int] = set()
    stack: list[Node] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen or isinstance(node, ScalarNode):
            continue
        seen.add(id(node))
        if isinstance(node, SequenceNode):
            stack.extend(node.value)
            continue
        first: dict[str, Node] = {}
        for key, value in node.value:
            text = _key_text(loader, key, number)
            if text is not None:
                if text in first:
                    line, column = _mark(key)
                    first_line = _mark(first[text])[0]
                    raise errors.DuplicateKey(
                        text, first_line=first_line, line=line, column=column, document=number
                    )
                first[text] = key
            stack.append(value)


def _decode_document(loader: _Loader, root: MappingNode, number: int) -> dict[str, Any]:
    """The document as JSON data, decoded as ``requestbody.load_yaml`` decodes a body."""
    try:
        data = loader.construct_document(root)
        body = requestbody._jsonable(data, [loader.budget])
    except ConstructorError as error:
        problem = _syntax_error(error)
        problem.document = number
        raise problem from None
    except ValueError as error:  # BodyError, or an integer longer than Python converts
        reason = str(error) if isinstance(error, requestbody.BodyError) else "yaml: cannot decode number"
        node = _unjsonable(loader, root) or root
        line, column = _mark(node)
        raise errors.UnsupportedValue(reason, line=line, column=column, document=number) from None
    finally:
        loader.constructed_objects = {}
        loader.recursive_objects = {}
    if not isinstance(body, dict):  # a merge that made something else: cannot happen for a mapping node
        line, column = _mark(root)
        raise errors.NotAnObject("scalar", line=line, column=column, document=number)
    return body


def _unjsonable(loader: _Loader, root: Node) -> Node | None:
    """The first scalar that JSON cannot hold (``.inf``, ``.nan``, an enormous integer), to point at."""
    seen: set[int] = set()
    stack: list[Node] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ScalarNode):
            if node.tag == _FLOAT_TAG:
                try:
                    value = float(loader.construct_yaml_float(node))
                except ValueError:
                    return node
                if value != value or value in (float("inf"), float("-inf")):
                    return node
            elif node.tag == _INT_TAG:
                try:
                    loader.construct_yaml_int(node)
                except ValueError:
                    return node
        elif isinstance(node, SequenceNode):
            stack.extend(reversed(node.value))
        elif isinstance(node, MappingNode):
            stack.extend(child for pair in reversed(node.value) for child in reversed(pair))
    return None


def _value_node(node: MappingNode, key: str) -> tuple[Node, Node] | None:
    """The key node and value node of ``key`` in ``node`` (the last one wins, as in the decoded data)."""
    for key_node, value_node in reversed(node.value):
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            return key_node, value_node
    return None


def _check_identity(body: dict[str, Any], root: MappingNode, number: int) -> None:
    """``apiVersion``, ``kind`` and ``metadata.name`` (and ``metadata.namespace``, when set) are usable."""
    start_line, start_column = _mark(root)

    def where(node: MappingNode, key: str) -> tuple[int, int]:
        found = _value_node(node, key)
        return _mark(found[0]) if found else _mark(node)

    for name in ("apiVersion", "kind"):
        value = body.get(name)
        if not isinstance(value, str) or not value:
            line, column = where(root, name)
            raise errors.MissingField(name, present=name in body, line=line, column=column, document=number)
    metadata = body.get("metadata")
    found = _value_node(root, "metadata")
    if not isinstance(metadata, dict):
        line, column = _mark(found[0]) if found else (start_line, start_column)
        present = metadata is not None
        field_name = "metadata" if present else "metadata.name"
        raise errors.MissingField(field_name, present=present, line=line, column=column, document=number)
    metadata_node = found[1] if found and isinstance(found[1], MappingNode) else root
    for name, required in (("name", True), ("namespace", False)):
        value = metadata.get(name)
        if value is None or (value == "" and not required):
            if required:
                line, column = where(metadata_node, name) if found else (start_line, start_column)
                raise errors.MissingField(
                    "metadata.name", present=False, line=line, column=column, document=number
                )
            continue
        line, column = where(metadata_node, name)
        if not isinstance(value, str) or not value:
            raise errors.MissingField(
                f"metadata.{name}", present=True, line=line, column=column, document=number
            )
        # apimachinery path.ValidatePathSegmentName: the name becomes a segment of the object's URL.
        if value in (".", "..") or "/" in value or "%" in value:
            raise errors.InvalidName(f"metadata.{name}", value, line=line, column=column, document=number)


__all__ = ["MAX_ALIASES", "MAX_DEPTH", "MAX_DOCUMENTS", "Document", "parse"]
