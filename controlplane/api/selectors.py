"""Selectors: how a client asks for "only the objects that look like this".

Every Kubernetes object carries **labels**, a small map of strings (``app: web``, ``tier: frontend``).
A **label selector** is a query over those maps: ``app=web,tier!=cache`` or
``environment in (prod,staging),!canary``. Labels and selectors are how loosely coupled parts of the
system find each other without holding references: a ReplicaSet does not list its pods, it owns
whatever pods match ``spec.selector``; a Service sends traffic to the pods its selector matches; a
controller's informer lists and watches only what matches. Change a pod's labels and it silently
leaves one set and joins another; that is the design.

Selectors come in two spellings that mean the same thing:

- the **string** form, sent as the ``labelSelector`` query parameter (``kubectl get pods -l app=web``),
  parsed by ``parse_label_selector``: a port of apimachinery's hand-written lexer and parser
  (``pkg/labels/selector.go``), with its exact error messages, because kube-apiserver answers a bad
  selector with 400 BadRequest and that text is what kubectl prints;
- the **object** form inside resources (``matchLabels`` and ``matchExpressions`` with ``In``, ``NotIn``,
  ``Exists``, ``DoesNotExist``), converted by ``label_selector_from_object`` as upstream's
  ``LabelSelectorAsSelector`` does (``pkg/apis/meta/v1/helpers.go``). Careful: a *missing* selector
  matches nothing, an *empty* one (``{}``) matches everything.

A **field selector** (``fieldSelector=spec.nodeName=node-1``) filters on a few fields of the object
itself. Only ``=``, ``==`` and ``!=`` exist, and only the fields each resource chooses to expose: a
kubelet watches ``pods?fieldSelector=spec.nodeName=<its node>``, ``kubectl describe`` finds a pod's
events with ``involvedObject.name=<pod>``. ``parse_field_selector`` ports ``pkg/fields/selector.go``;
``FIELD_LABELS``, ``check_field_selector`` and ``field_set`` give, per resource, the fields the API
server accepts (upstream's field-label conversion functions) and the values it compares them with
(each registry's ``GetAttrs``).

Everything here is pure: strings and dicts in, selectors and booleans out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api.gotypes import go_json, go_quote
from controlplane.api.validation import is_dns1123_subdomain

# -- errors ----------------------------------------------------------------------------------------


class SelectorError(ValueError):
    """A selector the API server refuses; ``message`` is upstream's text, word for word.

    kube-apiserver turns it into ``400 BadRequest`` with this text as the Status message
    (apiserver ``pkg/endpoints/handlers/get.go`` ``ListResource``: ``errors.NewBadRequest(err.Error())``),
    for a bad ``labelSelector`` / ``fieldSelector`` parameter and for an unsupported field label alike.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def bad_request_status(error: SelectorError) -> dict[str, Any]:
    """The Status body kube-apiserver answers for ``error`` (apimachinery ``errors.NewBadRequest``).

    The message is the parser's error text and nothing else: no "invalid label selector" prefix.
    What kubectl prints around it (``Unable to find "/v1, Resource=pods" that match label selector
    ...``) is added on the client side (cli-runtime ``pkg/resource/selector.go``).
    """
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": error.message,
        "reason": "BadRequest",
        "code": 400,
    }


# -- Go formatting helpers: upstream's messages embed %q-quoted strings and json.Marshal'ed values --


def _invalid(path: str, value: str | list[str] | None, detail: str) -> str:
    """``field.Invalid(path, value, detail).Error()`` (apimachinery ``pkg/util/validation/field``)."""
    rendered = go_quote(value) if isinstance(value, str) else go_json(value)
    return f"{path}: Invalid value: {rendered}: {detail}"


def _aggregate(messages: list[str]) -> str:
    """``ErrorList.ToAggregate().Error()``: duplicates dropped; several errors in ``[a, b]``."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# -- label key and value syntax (apimachinery pkg/api/validate/content/{kube,dns,errors}.go) -----

_LABEL_KEY_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_ERR: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character"
)
_LABEL_VALUE_FMT: Final = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE_ERR: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character"
)
_LABEL_KEY_RE: Final = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE: Final = re.compile(_LABEL_VALUE_FMT)


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """``content.RegexError``, double space between examples included."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    text = message + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} bytes"


def _byte_len(text: str) -> int:
    # Go's len() of a string counts UTF-8 bytes.
    return len(text.encode("utf-8", "surrogatepass"))


def label_key_errors(key: str) -> list[str]:
    """Why ``key`` is not a valid label key (``content.IsLabelKey``, a.k.a. ``IsQualifiedName``)."""
    errors: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix))
    else:
        return [
            "a valid label key "
            + _regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif _byte_len(name) > 63:
        errors.append("name part " + _max_len_error(63))
    if not _LABEL_KEY_RE.fullmatch(name):
        errors.append(
            "name part " + _regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a valid label value (``content.IsLabelValue``); empty is valid."""
    errors = []
    if _byte_len(value) > 63:
        errors.append(_max_len_error(63))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(_regex_error(_LABEL_VALUE_ERR, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


# -- label selectors (apimachinery pkg/labels/selector.go) ----------------------------------------

# selection.Operator values (apimachinery pkg/selection/operator.go).
DOES_NOT_EXIST: Final = "!"
EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
IN: Final = "in"
NOT_EQUALS: Final = "!="
NOT_IN: Final = "notin"
EXISTS: Final = "exists"
GREATER_THAN: Final = "gt"
LESS_THAN: Final = "lt"

_BINARY_OPERATORS: Final = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)

_INT64_RE: Final = re.compile(r"[+-]?[0-9]+")


def _parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``, or None where it fails."""
    if not _INT64_RE.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One clause of a label selector: ``key``, an operator, and the values it compares with."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``Requirement.Matches``: note that ``!=`` and ``notin`` match objects without the key."""
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            if self.key not in labels or len(self.values) != 1:
                return False
            have, want = _parse_int64(labels[self.key]), _parse_int64(self.values[0])
            if have is None or want is None:
                return False
            return have > want if op == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        """``Requirement.String``: ``x in (a,b)``, ``x!=a``, ``!x``; values sorted for output."""
        op = self.operator
        text = ("!" if op == DOES_NOT_EXIST else "") + self.key
        if op in (EXISTS, DOES_NOT_EXIST):
            return text
        text += {
            EQUALS: "=",
            DOUBLE_EQUALS: "==",
            NOT_EQUALS: "!=",
            IN: " in ",
            NOT_IN: " notin ",
            GREATER_THAN: ">",
            LESS_THAN: "<",
        }.get(op, "")
        values = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        return text + (f"({values})" if op in (IN, NOT_IN) else values)


def _new_requirement(key: str, operator: str, values: list[str]) -> Requirement:
    """``labels.NewRequirement`` with a nil field path, as the parser and ``LabelSelectorAsSelector`` use."""
    errors: list[str] = []
    key_errors = label_key_errors(key)
    if key_errors:
        errors.append(_invalid("key", key, "; ".join(key_errors)))
    # A nil Go slice marshals as null, an empty one as []; from here both arrive as an empty list
    # and upstream's callers pass nil (LabelSelectorAsSelector appends to nil).
    bad_value: list[str] | None = values or None
    if operator in (IN, NOT_IN):
        if not values:
            errors.append(
                _invalid("values", bad_value, "for 'in', 'notin' operators, values set can't be empty")
            )
    elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if len(values) != 1:
            errors.append(
                _invalid("values", bad_value, "exact-match compatibility requires one single value")
            )
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if values:
            errors.append(
                _invalid("values", bad_value, "values set must be empty for exists and does not exist")
            )
    elif operator in (GREATER_THAN, LESS_THAN):
        if len(values) != 1:
            errors.append(
                _invalid("values", bad_value, "for 'Gt', 'Lt' operators, exactly one value is required")
            )
        for i, value in enumerate(values):
            if _parse_int64(value) is None:
                errors.append(
                    _invalid(f"values[{i}]", value, "for 'Gt', 'Lt' operators, the value must be an integer")
                )
    for i, value in enumerate(values):
        value_errors = label_value_errors(value)
        if value_errors:
            errors.append(_invalid(f"values[{i}][{key}]", value, "; ".join(value_errors)))
    if errors:
        raise SelectorError(_aggregate(errors))
    return Requirement(key, operator, tuple(values))


class LabelSelector:
    """A parsed label selector: the AND of its requirements, sorted by key.

    Two special selectors exist: ``everything()`` (no requirements; ``empty`` is True) and
    ``nothing()``, which matches no object at all and is what a *missing* ``spec.selector`` means.
    """

    __slots__ = ("_requirements",)

    def __init__(self, requirements: Iterable[Requirement] | None = ()) -> None:
        # None is upstream's labels.Nothing(); a (possibly empty) tuple is an internalSelector.
        self._requirements: tuple[Requirement, ...] | None = (
            None if requirements is None else tuple(sorted(requirements, key=_by_key))
        )

    @classmethod
    def everything(cls) -> LabelSelector:
        return cls(())

    @classmethod
    def nothing(cls) -> LabelSelector:
        return cls(None)

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        return self._requirements or ()

    @property
    def is_nothing(self) -> bool:
        return self._requirements is None

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (``Nothing`` is not empty)."""
        return self._requirements is not None and not self._requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self._requirements is None:
            return False
        labels = labels or {}
        return all(requirement.matches(labels) for requirement in self._requirements)

    def requires_exact_match(self, label: str) -> str | None:
        """The value ``label`` must have (``=``, ``==`` or a one-value ``in``), else None."""
        for requirement in self.requirements:
            if requirement.key == label:
                if requirement.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(requirement.values) == 1:
                    return requirement.values[0]
                return None
        return None

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)

    def __repr__(self) -> str:
        return "LabelSelector(<nothing>)" if self.is_nothing else f"LabelSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LabelSelector) and self._requirements == other._requirements

    def __hash__(self) -> int:
        return hash(self._requirements)


def _by_key(requirement: Requirement) -> str:
    return requirement.key


# Lexer tokens, in upstream's order (the numbers are never shown).
(
    _ERROR,
    _END_OF_STRING,
    _CLOSED_PAR,
    _COMMA,
    _DOES_NOT_EXIST,
    _DOUBLE_EQUALS,
    _EQUALS,
    _GREATER_THAN,
    _IDENTIFIER,
    _IN,
    _LESS_THAN,
    _NOT_EQUALS,
    _NOT_IN,
    _OPEN_PAR,
) = range(14)

_STRING_TO_TOKEN: Final = {
    ")": _CLOSED_PAR,
    ",": _COMMA,
    "!": _DOES_NOT_EXIST,
    "==": _DOUBLE_EQUALS,
    "=": _EQUALS,
    ">": _GREATER_THAN,
    "in": _IN,
    "<": _LESS_THAN,
    "!=": _NOT_EQUALS,
    "notin": _NOT_IN,
    "(": _OPEN_PAR,
}
_SPECIAL_SYMBOLS: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")
_END: Final = "\x00"  # Go's lexer reads a 0 byte at the end of input (and stops at an embedded NUL too)


class _Lexer:
    """The label-selector lexer (``labels.Lexer``): identifiers, keywords and operator symbols."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def read(self) -> str:
        if self.pos < len(self.text):
            ch = self.text[self.pos]
            self.pos += 1
            return ch
        return _END

    def unread(self) -> None:
        self.pos -= 1

    def scan_id_or_keyword(self) -> tuple[int, str]:
        buffer = []
        while True:
            ch = self.read()
            if ch == _END:
                break
            if ch in _SPECIAL_SYMBOLS or ch in _WHITESPACE:
                self.unread()
                break
            buffer.append(ch)
        literal = "".join(buffer)
        return _STRING_TO_TOKEN.get(literal, _IDENTIFIER), literal

    def scan_special_symbol(self) -> tuple[int, str]:
        # The longest run of symbols that is still a token: "!=" rather than "!", "==" rather than "=".
        last: tuple[int, str] = (_ERROR, "")
        buffer = ""
        while True:
            ch = self.read()
            if ch == _END:
                break
            if ch in _SPECIAL_SYMBOLS:
                buffer += ch
                if buffer in _STRING_TO_TOKEN:
                    last = (_STRING_TO_TOKEN[buffer], buffer)
                elif last[0] != _ERROR:
                    self.unread()
                    break
            else:
                self.unread()
                break
        if last[0] == _ERROR:
            return _ERROR, f"error expected: keyword found '{buffer}'"
        return last

    def lex(self) -> tuple[int, str]:
        ch = self.read()
        while ch in _WHITESPACE:
            ch = self.read()
        if ch == _END:
            return _END_OF_STRING, ""
        self.unread()
        if ch in _SPECIAL_SYMBOLS:
            return self.scan_special_symbol()
        return self.scan_id_or_keyword()


_VALUES, _KEY_AND_OPERATOR = "values", "key-and-operator"


class _Parser:
    """The recursive-descent parser (``labels.Parser``); messages are upstream's, quirks included."""

    def __init__(self, text: str) -> None:
        lexer = _Lexer(text)
        self.items: list[tuple[int, str]] = []
        while True:
            token, literal = lexer.lex()
            self.items.append((token, literal))
            if token == _END_OF_STRING:
                break
        self.position = 0

    def lookahead(self, context: str) -> tuple[int, str]:
        token, literal = self.items[min(self.position, len(self.items) - 1)]
        if context == _VALUES and token in (_IN, _NOT_IN):
            token = _IDENTIFIER  # "in" and "notin" are plain words where values are expected
        return token, literal

    def consume(self, context: str) -> tuple[int, str]:
        item = self.lookahead(context)
        self.position += 1
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token, literal = self.lookahead(_VALUES)
            if token in (_IDENTIFIER, _DOES_NOT_EXIST):
                try:
                    requirements.append(self.parse_requirement())
                except SelectorError as error:
                    raise SelectorError(f"unable to parse requirement: {error.message}") from None
                token, literal = self.consume(_VALUES)
                if token == _END_OF_STRING:
                    return requirements
                if token == _COMMA:
                    next_token, next_literal = self.lookahead(_VALUES)
                    if next_token not in (_IDENTIFIER, _DOES_NOT_EXIST):
                        raise SelectorError(f"found '{next_literal}', expected: identifier after ','")
                else:
                    raise SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            elif token == _END_OF_STRING:
                return requirements
            else:
                raise SelectorError(f"found '{literal}', expected: !, identifier, or 'end of string'")

    def parse_requirement(self) -> Requirement:
        key, operator = self.parse_key_and_infer_operator()
        if operator in (EXISTS, DOES_NOT_EXIST):
            return _new_requirement(key, operator, [])
        operator = self.parse_operator()
        values = self.parse_values() if operator in (IN, NOT_IN) else self.parse_exact_value()
        return _new_requirement(key, operator, sorted(values))

    def parse_key_and_infer_operator(self) -> tuple[str, str]:
        operator = ""
        token, literal = self.consume(_VALUES)
        if token == _DOES_NOT_EXIST:
            operator = DOES_NOT_EXIST
            token, literal = self.consume(_VALUES)
        if token != _IDENTIFIER:
            raise SelectorError(f"found '{literal}', expected: identifier")
        key_errors = label_key_errors(literal)
        if key_errors:
            # The parser validates with a nil field path, which Go prints as "<nil>".
            raise SelectorError(_invalid("<nil>", literal, "; ".join(key_errors)))
        next_token, _ = self.lookahead(_VALUES)
        if next_token in (_END_OF_STRING, _COMMA) and operator != DOES_NOT_EXIST:
            operator = EXISTS
        return literal, operator

    def parse_operator(self) -> str:
        token, literal = self.consume(_KEY_AND_OPERATOR)
        operator = {
            _IN: IN,
            _EQUALS: EQUALS,
            _DOUBLE_EQUALS: DOUBLE_EQUALS,
            _GREATER_THAN: GREATER_THAN,
            _LESS_THAN: LESS_THAN,
            _NOT_IN: NOT_IN,
            _NOT_EQUALS: NOT_EQUALS,
        }.get(token)
        if operator is None:
            raise SelectorError(f"found '{literal}', expected: {', '.join(_BINARY_OPERATORS)}")
        return operator

    def parse_values(self) -> set[str]:
        token, literal = self.consume(_VALUES)
        if token != _OPEN_PAR:
            raise SelectorError(f"found '{literal}' expected: '('")  # sic: no colon upstream
        token, literal = self.lookahead(_VALUES)
        if token in (_IDENTIFIER, _COMMA):
            values = self.parse_identifiers_list()
            if self.consume(_VALUES)[0] != _CLOSED_PAR:
                # Upstream reports the literal it looked at after "(", not the one it found.
                raise SelectorError(f"found '{literal}', expected: ')'")
            return values
        if token == _CLOSED_PAR:  # "()" is the set holding the empty string
            self.consume(_VALUES)
            return {""}
        raise SelectorError(f"found '{literal}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        values: set[str] = set()
        while True:
            token, literal = self.consume(_VALUES)
            if token == _IDENTIFIER:
                values.add(literal)
                next_token, next_literal = self.lookahead(_VALUES)
                if next_token == _COMMA:
                    continue
                if next_token == _CLOSED_PAR:
                    return values
                raise SelectorError(f"found '{next_literal}', expected: ',' or ')'")
            if token == _COMMA:  # empty values: "(,a)", "(a,)", "(a,,b)"
                if not values:
                    values.add("")
                next_token, _ = self.lookahead(_VALUES)
                if next_token == _CLOSED_PAR:
                    values.add("")
                    return values
                if next_token == _COMMA:
                    self.consume(_VALUES)
                    values.add("")
                continue
            raise SelectorError(f"found '{literal}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        token, _ = self.lookahead(_VALUES)
        if token in (_END_OF_STRING, _COMMA):
            return {""}
        token, literal = self.consume(_VALUES)
        if token == _IDENTIFIER:
            return {literal}
        raise SelectorError(f"found '{literal}', expected: identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse the string form (``labels.Parse``); ``""`` is ``everything()``.

    Raises ``SelectorError`` with upstream's message, e.g. ``found '', expected: identifier after ','``
    or ``unable to parse requirement: values[0][app]: Invalid value: "a$": ...``.
    """
    return LabelSelector(_Parser(text).parse())


_LABEL_SELECTOR_OPERATORS: Final = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
}


def label_selector_from_object(selector: Mapping[str, Any] | None) -> LabelSelector:
    """A ``metav1.LabelSelector`` as a selector (``LabelSelectorAsSelector``).

    ``None`` selects nothing; ``{}`` (no matchLabels, no matchExpressions) selects everything.
    Raises ``SelectorError`` for an invalid key, value or operator.
    """
    if selector is None:
        return LabelSelector.nothing()
    match_labels: Mapping[str, Any] = selector.get("matchLabels") or {}
    match_expressions: list[Mapping[str, Any]] = selector.get("matchExpressions") or []
    if not match_labels and not match_expressions:
        return LabelSelector.everything()
    requirements = []
    # Upstream ranges over a Go map (random order): with several bad labels, which one it reports
    # varies from call to call. Sorted order makes ours repeatable.
    for key in sorted(match_labels):
        requirements.append(_new_requirement(key, EQUALS, [str(match_labels[key])]))
    for expression in match_expressions:
        operator = str(expression.get("operator") or "")
        if operator not in _LABEL_SELECTOR_OPERATORS:
            raise SelectorError(f"{go_quote(operator)} is not a valid pod selector operator")
        values = [str(value) for value in expression.get("values") or []]
        requirements.append(
            _new_requirement(str(expression.get("key") or ""), _LABEL_SELECTOR_OPERATORS[operator], values)
        )
    return LabelSelector(requirements)


def format_label_selector(selector: Mapping[str, Any] | None) -> str:
    """``metav1.FormatLabelSelector``: the string form, ``<none>`` when empty, ``<error>`` when invalid."""
    try:
        text = str(label_selector_from_object(selector))
    except SelectorError:
        return "<error>"
    return text or "<none>"


def format_labels(labels: Mapping[str, str] | None) -> str:
    """``labels.FormatLabels``: ``k=v`` pairs sorted by key, ``<none>`` when there are none."""
    labels = labels or {}
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels)) or "<none>"


# -- field selectors (apimachinery pkg/fields/selector.go) ----------------------------------------


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One term of a field selector: ``field`` ``=`` or ``!=`` ``value`` (value unescaped)."""

    field: str
    operator: str  # EQUALS or NOT_EQUALS
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        have = fields.get(self.field, "")  # fields.Set.Get: a missing field reads as ""
        return have == self.value if self.operator == EQUALS else have != self.value

    def __str__(self) -> str:
        return f"{self.field}{'=' if self.operator == EQUALS else '!='}{escape_field_value(self.value)}"


class FieldSelector:
    """A parsed field selector: the AND of its terms."""

    __slots__ = ("terms",)

    def __init__(self, terms: Iterable[FieldRequirement] = ()) -> None:
        self.terms = tuple(terms)

    @property
    def requirements(self) -> list[tuple[str, str, str]]:
        """``(field, operator, value)`` per term; the operator is ``=`` or ``!=``."""
        return [(term.field, term.operator, term.value) for term in self.terms]

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(term.matches(fields) for term in self.terms)

    def exact_match(self, field: str) -> str | None:
        """The value ``field`` must equal (``RequiresExactMatch``), e.g. ``spec.nodeName``; else None."""
        for term in self.terms:
            if term.field == field and term.operator == EQUALS:
                return term.value
        return None

    def __str__(self) -> str:
        return ",".join(str(term) for term in self.terms)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSelector) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(self.terms)


def escape_field_value(value: str) -> str:
    """``fields.EscapeValue``: backslash-escape ``\\``, ``,`` and ``=``."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_field_value(value: str) -> str:
    """``fields.UnescapeValue``; raises ``SelectorError`` for a bad escape or a bare ``,`` / ``=``."""
    if not any(ch in value for ch in "\\,="):
        return value
    out = []
    in_slash = False
    for ch in value:
        if in_slash:
            if ch not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch in ",=":
            # Upstream formats the rune with %v, which prints its code point: "=" is 61.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if in_slash:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(selector: str) -> list[str]:
    """Split on commas that are not backslash-escaped (escapes stay in the terms)."""
    if not selector:
        return []
    terms, start, in_slash = [], 0, False
    for i, ch in enumerate(selector):
        if in_slash:
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch == ",":
            terms.append(selector[start:i])
            start = i + 1
    terms.append(selector[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """The first operator in ``term`` splits it; ``==`` is tried before ``=``."""
    for i in range(len(term)):
        for operator in ("!=", "==", "="):
            if term.startswith(operator, i):
                return term[:i], operator, term[i + len(operator) :]
    return None


def parse_field_selector(text: str) -> FieldSelector:
    """Parse ``fieldSelector`` (``fields.ParseSelector``). Terms come out sorted, as upstream sorts them.

    A term whose field and value are both empty (``=``) is dropped, as upstream's ``Transform`` does.
    """
    terms = []
    for part in sorted(_split_terms(text)):
        if part == "":
            continue
        split = _split_term(part)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        field, operator, raw_value = split
        value = unescape_field_value(raw_value)
        if field or value:
            terms.append(FieldRequirement(field, NOT_EQUALS if operator == "!=" else EQUALS, value))
    return FieldSelector(terms)


# -- which fields each resource can be selected on -------------------------------------------------
#
# Two upstream tables meet here. The **field label conversion** functions registered per kind decide
# which labels a request may use (an unknown one is a 400); kinds without one get
# runtime.DefaultMetaV1FieldSelectorConversion (metadata.name and metadata.namespace only). Each
# registry's **GetAttrs** builds the field set an object is matched against. They do not always
# agree: ReplicaSets expose status.replicas in GetAttrs but register no conversion, so upstream
# rejects it (kubernetes/kubernetes#135136); pods accept status.podIPs but never set it.

_META: Final = frozenset({"metadata.name", "metadata.namespace"})

_EVENT_LABELS: Final = frozenset(
    {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
        "metadata.namespace",
        "metadata.name",
    }
)

# events.k8s.io/v1 names -> the internal (core) names its field set uses (pkg/apis/events/v1/conversion.go).
_EVENTS_V1_LABELS: Final = {
    "reason": "reason",
    "regarding.kind": "involvedObject.kind",
    "regarding.namespace": "involvedObject.namespace",
    "regarding.name": "involvedObject.name",
    "regarding.uid": "involvedObject.uid",
    "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath",
    "reportingController": "reportingComponent",
    "source": "source",
    "type": "type",
    "metadata.namespace": "metadata.namespace",
    "metadata.name": "metadata.name",
}

#: Field labels the API server accepts, per ``"group/resource"`` (``""`` group for core: ``"/pods"``).
#: Sources: kubernetes ``pkg/apis/core/v1/conversion.go`` (pods, nodes, replicationcontrollers,
#: events, namespaces, secrets, services) and ``pkg/apis/events/v1/conversion.go``; every other
#: resource falls back to ``DEFAULT_FIELD_LABELS``.
FIELD_LABELS: Final[dict[str, frozenset[str]]] = {
    "/pods": frozenset(
        {
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
            "spec.host",  # old v1 clients' name for spec.nodeName, converted to it
        }
    ),
    "/nodes": frozenset({"metadata.name", "spec.unschedulable"}),
    "/namespaces": frozenset({"status.phase", "metadata.name"}),
    "/services": frozenset({"metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"}),
    "/secrets": frozenset({"type", "metadata.namespace", "metadata.name"}),
    "/replicationcontrollers": frozenset({"metadata.name", "metadata.namespace", "status.replicas"}),
    "/events": _EVENT_LABELS,
    "events.k8s.io/events": frozenset(_EVENTS_V1_LABELS),
    "/endpoints": _META,
    "/configmaps": _META,
    "/serviceaccounts": _META,
    "apps/deployments": _META,
    "apps/replicasets": _META,
    # pkg/apis/batch/v1/conversion.go
    "batch/jobs": frozenset({"metadata.name", "metadata.namespace", "status.successful"}),
    "coordination.k8s.io/leases": _META,
    "rbac.authorization.k8s.io/roles": _META,
    "rbac.authorization.k8s.io/rolebindings": _META,
    "rbac.authorization.k8s.io/clusterroles": _META,
    "rbac.authorization.k8s.io/clusterrolebindings": _META,
    # pkg/apis/certificates/v1/conversion.go
    "certificates.k8s.io/certificatesigningrequests": frozenset({"metadata.name", "spec.signerName"}),
}

#: What ``runtime.DefaultMetaV1FieldSelectorConversion`` accepts, for kinds without their own function.
DEFAULT_FIELD_LABELS: Final = _META

# Kinds whose conversion function is upstream's own: they answer "field label not supported: X".
_CUSTOM_CONVERSION: Final = frozenset(
    {
        "/pods",
        "/nodes",
        "/namespaces",
        "/services",
        "/secrets",
        "/replicationcontrollers",
        "/events",
        "events.k8s.io/events",
        "certificates.k8s.io/certificatesigningrequests",
    }
)
#: Kinds whose conversion function words its refusal its own way.
_CONVERSION_MESSAGES: Final = {"batch/jobs": 'field label "{label}" not supported for batchv1.Job'}
_RENAMES: Final[dict[str, dict[str, str]]] = {
    "/pods": {"spec.host": "spec.nodeName"},
    "events.k8s.io/events": {k: v for k, v in _EVENTS_V1_LABELS.items() if k != v},
}


def field_labels(resource_key: str) -> frozenset[str]:
    """The field labels ``resource_key`` accepts (``FIELD_LABELS`` or the metadata-only default)."""
    return FIELD_LABELS.get(resource_key, DEFAULT_FIELD_LABELS)


def _convert_field_label(resource_key: str, label: str) -> str:
    if label not in field_labels(resource_key):
        if resource_key in _CONVERSION_MESSAGES:
            raise SelectorError(_CONVERSION_MESSAGES[resource_key].format(label=label))
        if resource_key in _CUSTOM_CONVERSION:
            raise SelectorError(f"field label not supported: {label}")
        raise SelectorError(
            f'{go_quote(label)} is not a known field selector: only "metadata.name", "metadata.namespace"'
        )
    return _RENAMES.get(resource_key, {}).get(label, label)


def check_field_selector(resource_key: str, selector: FieldSelector) -> FieldSelector:
    """Refuse field labels ``resource_key`` does not support; return the selector in internal names.

    Mirrors ``ListResource``'s ``opts.FieldSelector.Transform(scope.Convertor.ConvertFieldLabel)``
    (apiserver ``pkg/endpoints/handlers/get.go``): the first unsupported term, in the selector's
    sorted order, raises ``SelectorError`` ("field label not supported: X" for kinds with their own
    conversion, ``"X" is not a known field selector: only "metadata.name", "metadata.namespace"`` for
    the rest). Renamed labels (pods' ``spec.host``, events.k8s.io's ``regarding.*``) come back under the
    names ``field_set`` uses.
    """
    terms = []
    for term in selector.terms:
        field = _convert_field_label(resource_key, term.field)
        if field or term.value:
            terms.append(FieldRequirement(field, term.operator, term.value))
    return FieldSelector(terms)


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    value: Any = obj
    for part in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _go_bool(value: Any) -> str:
    return "true" if value is True else "false"


def _meta_fields(obj: Mapping[str, Any], namespaced: bool) -> dict[str, str]:
    """``generic.ObjectMetaFieldsSet``."""
    fields = {"metadata.name": _text(_get(obj, "metadata", "name"))}
    if namespaced:
        fields["metadata.namespace"] = _text(_get(obj, "metadata", "namespace"))
    return fields


def pod_ip(obj: Mapping[str, Any]) -> str:
    """A pod's primary IP as the internal type holds it.

    The v1 -> internal conversion keeps ``status.podIPs`` but lets a set ``status.podIP`` win
    (kubernetes ``pkg/apis/core/v1/conversion.go``), so both spellings of a pod agree here.
    """
    status = obj.get("status") or {}
    ip = _text(status.get("podIP"))
    if ip:
        return ip
    ips = status.get("podIPs") or []
    return _text(ips[0].get("ip")) if ips and isinstance(ips[0], Mapping) else ""


def _pod_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    # pkg/registry/core/pod/strategy.go ToSelectableFields
    spec: Mapping[str, Any] = obj.get("spec") or {}
    status: Mapping[str, Any] = obj.get("status") or {}
    service_account = _text(spec.get("serviceAccountName")) or _text(spec.get("serviceAccount"))
    return {
        "spec.nodeName": _text(spec.get("nodeName")),
        "spec.restartPolicy": _text(spec.get("restartPolicy")),
        "spec.schedulerName": _text(spec.get("schedulerName")),
        "spec.serviceAccountName": service_account,
        "spec.hostNetwork": _go_bool(spec.get("hostNetwork")),
        "status.phase": _text(status.get("phase")),
        "status.podIP": pod_ip(obj),
        "status.nominatedNodeName": _text(status.get("nominatedNodeName")),
        **_meta_fields(obj, True),
    }


def _event_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    # pkg/registry/core/event/strategy.go ToSelectableFields, on the internal Event. An events.k8s.io
    # object is read through its conversion: regarding -> involvedObject, deprecatedSource -> source,
    # reportingController (core/v1 JSON: reportingComponent).
    involved: Mapping[str, Any] = obj.get("involvedObject") or obj.get("regarding") or {}
    source: Mapping[str, Any] = obj.get("source") or obj.get("deprecatedSource") or {}
    reporting = _text(obj.get("reportingComponent") or obj.get("reportingController"))
    return {
        "involvedObject.kind": _text(involved.get("kind")),
        "involvedObject.namespace": _text(involved.get("namespace")),
        "involvedObject.name": _text(involved.get("name")),
        "involvedObject.uid": _text(involved.get("uid")),
        "involvedObject.apiVersion": _text(involved.get("apiVersion")),
        "involvedObject.resourceVersion": _text(involved.get("resourceVersion")),
        "involvedObject.fieldPath": _text(involved.get("fieldPath")),
        "reason": _text(obj.get("reason")),
        "reportingComponent": reporting,
        "source": _text(source.get("component")) or reporting,
        "type": _text(obj.get("type")),
        **_meta_fields(obj, True),
    }


def _int_text(value: Any) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "0"


_FIELD_SETS: Final[dict[str, Callable[[Mapping[str, Any]], dict[str, str]]]] = {
    "/pods": _pod_fields,
    "/nodes": lambda obj: {
        **_meta_fields(obj, False),
        "spec.unschedulable": _go_bool(_get(obj, "spec", "unschedulable")),
    },
    "/namespaces": lambda obj: {
        **_meta_fields(obj, False),
        "status.phase": _text(_get(obj, "status", "phase")),
        "name": _text(_get(obj, "metadata", "name")),  # "This is a bug" upstream, kept for compatibility
    },
    "/services": lambda obj: {
        **_meta_fields(obj, True),
        "spec.clusterIP": _text(_get(obj, "spec", "clusterIP")),
        "spec.type": _text(_get(obj, "spec", "type")),
    },
    "/secrets": lambda obj: {**_meta_fields(obj, True), "type": _text(obj.get("type"))},
    "/replicationcontrollers": lambda obj: {
        **_meta_fields(obj, True),
        "status.replicas": _int_text(_get(obj, "status", "replicas")),
    },
    "apps/replicasets": lambda obj: {
        **_meta_fields(obj, True),
        "status.replicas": _int_text(_get(obj, "status", "replicas")),
    },
    "/events": _event_fields,
    "events.k8s.io/events": _event_fields,
    "batch/jobs": lambda obj: {
        **_meta_fields(obj, True),
        "status.successful": _int_text(_get(obj, "status", "succeeded")),
    },
    # pkg/registry/certificates/certificates/strategy.go SelectableFields
    "certificates.k8s.io/certificatesigningrequests": lambda obj: {
        **_meta_fields(obj, False),
        "spec.signerName": _text(_get(obj, "spec", "signerName")),
    },
}

#: Cluster-scoped resources whose field set has no metadata.namespace (others default to namespaced).
CLUSTER_SCOPED: Final = frozenset(
    {
        "/nodes",
        "/namespaces",
        "/persistentvolumes",
        "/componentstatuses",
        "rbac.authorization.k8s.io/clusterroles",
        "rbac.authorization.k8s.io/clusterrolebindings",
        "admissionregistration.k8s.io/mutatingwebhookconfigurations",
        "admissionregistration.k8s.io/validatingwebhookconfigurations",
        "admissionregistration.k8s.io/validatingadmissionpolicies",
        "admissionregistration.k8s.io/validatingadmissionpolicybindings",
        "flowcontrol.apiserver.k8s.io/flowschemas",
        "flowcontrol.apiserver.k8s.io/prioritylevelconfigurations",
        "apiextensions.k8s.io/customresourcedefinitions",
        "apiregistration.k8s.io/apiservices",
        "scheduling.k8s.io/priorityclasses",
        "storage.k8s.io/storageclasses",
        "storage.k8s.io/csidrivers",
        "storage.k8s.io/csinodes",
        "storage.k8s.io/volumeattachments",
        "certificates.k8s.io/certificatesigningrequests",
        "networking.k8s.io/ingressclasses",
        "node.k8s.io/runtimeclasses",
    }
)


def field_set(resource_key: str, obj: Mapping[str, Any], *, namespaced: bool | None = None) -> dict[str, str]:
    """The fields an object is matched against (each registry's ``GetAttrs``), under internal names.

    Values are strings as upstream renders them (``"true"``/``"false"``, ``"3"``, ``""`` for unset).
    Resources without their own ``GetAttrs`` expose ``metadata.name`` and, when namespaced,
    ``metadata.namespace``; ``namespaced`` overrides the built-in list of cluster-scoped resources.
    """
    extractor = _FIELD_SETS.get(resource_key)
    if extractor is not None:
        return extractor(obj)
    if namespaced is None:
        namespaced = resource_key not in CLUSTER_SCOPED
    return _meta_fields(obj, namespaced)
