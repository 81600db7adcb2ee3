"""Patching, server-side apply, field validation and managed fields: the write-path glue.

kube-apiserver accepts four patch types (apiserver ``pkg/endpoints/handlers/patch.go``):

- JSON patch (RFC 6902): a list of operations at JSON pointers;
- JSON merge patch (RFC 7386): a partial object, ``null`` deletes;
- strategic merge patch: a merge patch that knows Kubernetes' lists (containers merge by ``name``),
  the format kubectl's client-side ``apply`` sends;
- server-side apply (``application/apply-patch+yaml``): the configuration one *field manager* wants.
  The server merges it into the live object, records that the manager owns exactly those fields,
  removes fields the manager applied before and no longer applies, and refuses (409 Conflict) to
  change fields other managers own unless ``force=true``; an apply to a missing object creates it.

The algorithms are pure code elsewhere: the first three in :mod:`controlplane.api.patch`, server-side
apply and ``metadata.managedFields`` in :mod:`controlplane.api.fieldmanager`, unknown and duplicate
fields in :mod:`controlplane.api.strict`. This module picks them per request, reads the query options
the way upstream validates them (``fieldManager``, ``fieldValidation``, ``force``: 422 for bad values,
apimachinery ``pkg/apis/meta/v1/validation``), and turns their errors into Statuses.

A body that cannot be decoded is answered as upstream answers it: a create or update with 400
``<Kind> in version "v1" cannot be handled as a <Kind>: <error>`` (built-in kinds and custom resources
alike); a patch whose result cannot be decoded (a value of the wrong type or, under ``Strict``, a
strict decoding error) with 422 ``patch: Invalid value: "<value>": <error>``, where the value is the
patched object as Go's JSON patch library writes it (JSON and merge patches) or the patch as Go's
``%+v`` prints its map (strategic merge patches), and a strategic merge patch's type errors are the
unstructured converter's (``unrecognized type: int32``), not the JSON decoder's.

Every create, update and patch is recorded in ``metadata.managedFields`` under a manager: the
``fieldManager`` query parameter, or the User-Agent's first word (``kubectl`` for ``kubectl scale``,
``kubectl-client-side-apply`` and ``kubectl-edit`` are sent by kubectl as ``fieldManager``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

from controlplane.api import gotypes, requestbody, strict
from controlplane.api import patch as patches
from controlplane.api import schema as schemas
from controlplane.api.apiextensions.customresources import CustomResourceStrategy
from controlplane.api.deepcopy import deep_copy
from controlplane.api.fieldmanager import (
    ApplyError,
    ConflictError,
    FieldManager,
    manager_from_user_agent,
    typed,
)
from controlplane.api.fieldmanager.fieldpath import Set, make_path
from controlplane.api.meta import Object
from controlplane.api.resources import ResourceType
from controlplane.api.strategies.common import UndecodableObject
from controlplane.api.validation import FieldError, forbidden, invalid, not_supported, required, too_long
from controlplane.apiserver import errors
from controlplane.apiserver.http import JSON_BODIES, YAML_BODIES, Request, decode_body
from controlplane.apiserver.registry import timestamp
from controlplane.clock import Clock

Track = Callable[[Object | None, Object], Object]

CREATE_OPTIONS: Final = "CreateOptions"
UPDATE_OPTIONS: Final = "UpdateOptions"
PATCH_OPTIONS: Final = "PatchOptions"
MAX_FIELD_MANAGER_LENGTH: Final = 128


# -- request options --------------------------------------------------------------------------------


def _options_error(options: str, problems: list[FieldError]) -> errors.StatusError:
    """422 ``PatchOptions.meta.k8s.io "" is invalid: ...`` (apiserver handlers: ``errors.NewInvalid``)."""
    return errors.invalid(options, "meta.k8s.io", "", problems)


def validation_directive(request: Request, options: str) -> str:
    """The ``fieldValidation`` of a write: Strict, Warn (the default since 1.27) or Ignore."""
    value = request.query.get("fieldValidation", "")
    if value not in strict.DIRECTIVES:
        raise _options_error(options, [not_supported("fieldValidation", value, list(strict.DIRECTIVES))])
    return value or strict.WARN


def manager_name(request: Request, options: str) -> str:
    """``managerOrUserAgent``: ``?fieldManager=`` if given (validated), else the User-Agent's prefix."""
    manager = request.query.get("fieldManager", "")
    problems: list[FieldError] = []
    if len(manager.encode()) > MAX_FIELD_MANAGER_LENGTH:
        problems.append(too_long("fieldManager", MAX_FIELD_MANAGER_LENGTH))
    elif not manager.isprintable():
        problems.append(invalid("fieldManager", manager, "must only contain printable characters"))
    if problems:
        raise _options_error(options, problems)
    return manager or manager_from_user_agent(request.headers.get("user-agent", ""))


def warning_headers(warnings: list[str]) -> dict[str, str] | None:
    """``Warning: 299 - "<text>"`` headers (RFC 7234), one value per warning, comma-joined."""
    if not warnings:
        return None
    return {"Warning": ", ".join(f"299 - {json.dumps(w)}" for w in warnings)}


# -- schemas and field managers ---------------------------------------------------------------------


def _schema(rtype: ResourceType) -> Any:
    if isinstance(rtype.strategy, CustomResourceStrategy):  # a custom resource: its definition's schema
        return rtype.strategy.typed_schema
    return _builtin_schema(rtype)[0]


def _definition(rtype: ResourceType) -> str | None:
    """The name of a kind's upstream definition (None: upstream has none)."""
    return _builtin_schema(rtype)[1]


def _builtin_schema(rtype: ResourceType) -> tuple[Any, str | None]:
    """A kind's typed schema root and upstream definition name, looked up once per resource type.

    Both depend only on the type's group, version and kind (a frozen ResourceType's) and on
    upstream's schema, which is read once and never changes: an entry cannot go stale. (A custom
    resource's schema, which its definition can change, is not taken from here.) Each entry keeps
    its resource type alive, so the id that keys it is not reused meanwhile.
    """
    hit = _builtin_schemas.get(id(rtype))
    if hit is not None and hit[0] is rtype:
        return hit[1], hit[2]
    node = typed.root_for_kind(rtype.group, rtype.version, rtype.kind)
    definition = schemas.definition_for_kind(rtype.group, rtype.version, rtype.kind)
    if len(_builtin_schemas) >= _SCHEMAS_KEPT:
        _builtin_schemas.clear()
    _builtin_schemas[id(rtype)] = (rtype, node, definition)
    return node, definition


_builtin_schemas: dict[int, tuple[ResourceType, Any, str | None]] = {}
_SCHEMAS_KEPT: Final = 1024


def _reset_fields(rtype: ResourceType, subresource: str) -> Set | None:
    """Upstream strategies' ``GetResetFields``: what this endpoint may not change, so nobody owns it."""
    if not rtype.strategy.status_subresource:
        return None
    if subresource == "status":
        return Set([make_path("spec"), make_path("metadata")])
    if not subresource:
        return Set([make_path("status")])
    return None


def field_manager(rtype: ResourceType, subresource: str, clock: Clock) -> FieldManager | None:
    """The field manager of a resource's endpoint, or None for kinds without an upstream schema.

    A field manager holds no state of its own between writes, so each endpoint's is built once and
    kept (for as long as the resource type, its schema and the cluster's clock are the same objects).
    """
    node = _schema(rtype)
    if node is None:
        return None
    key = (id(rtype), subresource, id(clock))
    hit = _field_managers.get(key)
    if hit is not None and hit[0] is rtype and hit[1] is clock and hit[2] is node:
        return hit[3]
    fm = FieldManager(
        group=rtype.group,
        version=rtype.version,
        kind=rtype.kind,
        node=node,
        now=lambda: timestamp(clock),
        subresource=subresource,
        reset_fields=_reset_fields(rtype, subresource),
    )
    if len(_field_managers) >= _FIELD_MANAGERS_KEPT:
        _field_managers.clear()
    _field_managers[key] = (rtype, clock, node, fm)
    return fm


#: The field managers built, by (resource type, subresource, clock) identity; each entry keeps the
#: objects whose ids make its key alive, so an id is not reused while the entry exists.
_field_managers: dict[tuple[int, str, int], tuple[ResourceType, Clock, Any, FieldManager]] = {}
_FIELD_MANAGERS_KEPT: Final = 1024


def tracker(
    rtype: ResourceType, request: Request, subresource: str, clock: Clock, *, options: str = UPDATE_OPTIONS
) -> Track | None:
    """The ``track`` hook the registry calls after defaulting: records an Update in managedFields."""
    manager = manager_name(request, options)
    fm = field_manager(rtype, subresource, clock)
    if fm is None:
        return None
    return lambda live, new: fm.update(live, new, manager)


# -- strict decoding of create and update bodies ----------------------------------------------------


def decode_body_once(raw: bytes, content_type: str) -> tuple[Any, bool]:
    """The request body as ``http.decode_body`` decodes it, and whether no object in it names a member
    twice (then the strict checks need not read ``raw`` again for duplicate fields).

    A YAML body that is a JSON object is read the same way: JSON is YAML, and yaml.v2 reads a JSON
    document's values as Go's JSON decoder does. That is what kubectl sends as a server-side apply
    (``application/apply-patch+yaml``, the object encoded as JSON: ``k8s.io/kubectl/pkg/cmd/apply/
    apply.go`` ``applyOneObject``), and the manifest form too; PyYAML's parser, written in Python,
    takes some thirty times as long to read it.

    Anything else (YAML that is not JSON, protobuf, a duplicate, a body that does not parse) goes
    through ``decode_body`` itself, errors and all: a repeated key's error names its line.
    """
    if content_type in JSON_BODIES or (content_type in YAML_BODIES and raw.lstrip()[:1] == b"{"):
        unique, document = strict.decode_unique(raw)
        if unique:
            return document, True
    return decode_body(raw, content_type), False


def decode_strictly(
    rtype: ResourceType, obj: Object, raw: bytes | None, request: Request, options: str
) -> tuple[Object, list[str]]:
    """The object as upstream's decoder keeps it, and the warnings to send.

    Unknown fields are dropped; under ``Strict`` they (and duplicate fields) fail the request with
    upstream's ``<Kind> in version "v1" cannot be handled as a <Kind>: strict decoding error: ...``.
    ``raw`` is the body, read again for duplicate fields; None when it is known to have none
    (:func:`decode_body_once`).
    """
    directive = validation_directive(request, options)
    if isinstance(rtype.strategy, CustomResourceStrategy):
        # A custom resource (apiextensions-apiserver customresource_handler.go, schemaCoercingDecoder):
        # the JSON decoder's duplicate fields, then the fields pruning drops (structural.py), as one
        # strict decoding error that create.go and update.go pass through transformDecodeError like
        # any other decoding error.
        problems = strict.duplicate_fields(raw) if raw is not None and directive != strict.IGNORE else []
        problems += [f'unknown field "{path}"' for path in rtype.strategy.unknown_fields(obj)]
        if problems and directive == strict.STRICT:
            raise _undecodable(rtype, strict.strict_decoding_message(problems))
        return obj, (problems if directive == strict.WARN else [])
    node = _schema(rtype)
    if node is None:
        return obj, []
    problems = [] if directive == strict.IGNORE else strict.unknown_and_duplicate_fields(obj, node, raw=raw)
    if problems and directive == strict.STRICT:
        raise _undecodable(rtype, strict.strict_decoding_message(problems))
    # With the body checked and nothing found, there is nothing to prune.
    pruned = strict.prune_unknown(obj, node) if problems or directive == strict.IGNORE else obj
    decoded = pruned if isinstance(pruned, dict) else obj
    _check_go_types(rtype, decoded)
    return decoded, (problems if directive == strict.WARN else [])


def _undecodable(rtype: ResourceType, problem: str) -> errors.StatusError:
    """400 ``CronTab in version "v1" cannot be handled as a CronTab: <decoder's error>``.

    apiserver ``pkg/endpoints/handlers/create.go`` (update.go alike), ``transformDecodeError``:
    ``"%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, objGVK.Kind, err``,
    for built-in kinds and custom resources alike.
    """
    return errors.bad_request(
        f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: {problem}'
    )


def _check_go_types(rtype: ResourceType, obj: Object) -> None:
    """400 BadRequest, as upstream's decoder, for a value that cannot become its Go field's type."""
    definition = _definition(rtype)
    if definition is None:
        return
    problem = gotypes.type_error(obj, definition)
    if problem is not None:
        raise UndecodableObject(problem)


# -- patches ----------------------------------------------------------------------------------------


def apply(
    kind: str,
    current: Object,
    document: Any,
    rtype: ResourceType,
    request: Request,
    *,
    consume: bool = False,
) -> Object:
    """The object after a patch of ``kind`` ("json", "merge", "strategic", "apply"), without ownership.

    The patch algorithms alone, errors turned into Statuses; "apply" here is the structured merge of
    the configuration into ``current`` with no managed fields (see :class:`Patcher` for the real thing).
    ``current`` is the caller's own copy (the registry decodes one for each read-modify-write): it is
    patched in place rather than copied once more. With ``consume``, a merge patch's ``document`` is
    the caller's to give away too: its parts go into the result uncopied.
    """
    try:
        if kind == "json":
            if not isinstance(document, list):
                raise errors.bad_request(
                    "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
                )
            result = patches.apply_json_patch(current, document, copy=False)
        elif kind == "merge":
            result = patches.apply_merge_patch(current, document, copy=False, consume=consume)
        elif kind == "strategic":
            result = patches.apply_strategic_merge_patch(
                current, document, group=rtype.group, version=rtype.version, kind=rtype.kind, copy=False
            )
        else:
            if not isinstance(document, dict):
                raise errors.bad_request("error decoding YAML: the applied configuration must be an object")
            node = _schema(rtype)
            if node is None:
                raise errors.unsupported_media_type()
            merged = typed.merge(deep_copy(current) if current else {}, document, node)
            result = merged if isinstance(merged, dict) else {}
    except patches.PatchError as error:
        status = error.status()
        if error.status_code >= 500:
            # Upstream answers most strategic-merge failures as a bare 500; a malformed patch is the
            # client's fault, and the lab never answers bad input with a 500: 400 with the same text.
            raise errors.bad_request(error.detail) from None
        details = status.get("details") or {}
        if error.status_code == 422:
            # Upstream's 422 message hides the reason; keep its text and add the reason as a cause.
            details = {**details, "causes": [{"message": error.detail}]}
        raise errors.StatusError(
            error.status_code, status.get("reason", "BadRequest"), status["message"], details or None
        ) from None
    if not isinstance(result, dict):
        raise errors.bad_request("the patch did not produce an object")
    return result


def _flag(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.lower() in ("true", "1")


class Patcher:
    """One PATCH request: its options checked, then :meth:`mutate` for the registry's read-modify-write.

    ``mutate`` may run more than once (the registry retries after a concurrent write); each run
    starts its warnings afresh. For ``json``/``merge``/``strategic`` patches :attr:`track` records
    the Update in managedFields; server-side apply computes them itself and has no ``track``.
    """

    def __init__(
        self,
        kind: str,
        document: Any,
        raw: bytes,
        rtype: ResourceType,
        request: Request,
        *,
        subresource: str,
        namespace: str,
        clock: Clock,
        unique_members: bool = False,
    ) -> None:
        self.kind = kind
        #: Whether the body is known to name no member twice (:func:`decode_body_once`).
        self.unique_members = unique_members
        self.document = document
        self.raw = raw
        self.rtype = rtype
        self.request = request
        self.namespace = namespace
        self.warnings: list[str] = []
        #: Whether a merge patch's decoded ``document`` went into an object already (see :meth:`mutate`).
        self._consumed = False
        force = _flag(request.query.get("force"))
        problems: list[FieldError] = []
        if kind != "apply" and force is not None:
            problems.append(forbidden("force", "may not be specified for non-apply patch"))
        if kind == "apply" and not request.query.get("fieldManager"):
            # kubectl defaults it to "kubectl"; controllers HAVE to set it explicitly.
            problems.append(required("fieldManager", "is required for apply patch"))
        if problems:
            raise _options_error(PATCH_OPTIONS, problems)
        self.directive = validation_directive(request, PATCH_OPTIONS)
        self.manager = manager_name(request, PATCH_OPTIONS)
        self.force = bool(force)
        self.fm = field_manager(rtype, subresource, clock)
        self.node = _schema(rtype)
        self.track: Track | None = None
        if kind != "apply" and self.fm is not None:
            fm, manager = self.fm, self.manager
            self.track = lambda live, new: fm.update(live, new, manager)

    def headers(self) -> dict[str, str] | None:
        return warning_headers(self.warnings)

    def mutate(self, current: Object) -> Object:
        """The object to store, from the current one (``{}`` when an apply creates it)."""
        self.warnings = []
        if self.kind == "apply":
            return self._apply(current)
        document, consume = self.document, False
        if self.kind == "merge":
            # The decoded patch becomes part of the object (no copy of it); a second run, after a
            # concurrent write, decodes the body again.
            if self._consumed:
                document = decode_body(self.raw, "application/merge-patch+json")
            consume = self._consumed = True
        clean = self.node is not None and self._is_clean(document)
        patched = apply(self.kind, current, document, self.rtype, self.request, consume=consume)
        if self.node is None:
            return patched
        if self.directive == strict.IGNORE:
            if clean:
                return patched
            pruned = strict.prune_unknown(patched, self.node)
            return self._typed(pruned if isinstance(pruned, dict) else patched, patched)
        # The patch's own strict errors first (duplicate fields of a merge or strategic patch, or of
        # a JSON patch's operations, and their unknown fields), then the patched object's unknown
        # fields, as upstream's decoder finds them (apiserver handlers/patch.go).
        problems = self._patch_problems()
        if clean:
            if problems and self.directive == strict.STRICT:
                raise self._invalid(patched, strict.strict_decoding_message(problems))
            self.warnings = problems
            return patched
        pruned, unknown = strict.without_unknown_fields(patched, self.node)
        problems += _upstream_order(self.kind, unknown)
        # A value of the wrong type is reported before strict errors ("non-strict errors trump").
        decoded = self._typed(pruned if isinstance(pruned, dict) else patched, patched)
        if problems and self.directive == strict.STRICT:
            raise self._invalid(patched, strict.strict_decoding_message(problems))
        self.warnings = problems
        return decoded

    def _patch_problems(self) -> list[str]:
        """The strict errors of the patch itself, in the order Go's strict decoder meets them.

        Merge and strategic patches are decoded into a ``map[string]interface{}``: only duplicate
        fields. A JSON patch is decoded into ``[]jsonPatchOp`` (``op``, ``path``, ``from``,
        ``value``): any other member of an operation is unknown, and each error is prefixed
        ``json patch`` (patch.go, ``applyJSPatch``).
        """
        if self.kind in ("merge", "strategic"):
            return [] if self.unique_members else strict.duplicate_fields(self.raw)
        if self.kind != "json":
            return []
        try:
            operations = requestbody.loads_json(self.raw, object_pairs_hook=_Members)
        except (ValueError, UnicodeDecodeError):
            return []
        if not isinstance(operations, list):
            return []
        problems: list[str] = []
        for position, operation in enumerate(operations):
            if not isinstance(operation, _Members):
                continue
            seen: set[str] = set()
            for name, value in operation:
                where = f"[{position}].{name}"
                if name in seen:
                    problems.append(f'json patch duplicate field "{where}"')
                    continue
                seen.add(name)
                if name not in _JSON_PATCH_OP_FIELDS:
                    problems.append(f'json patch unknown field "{where}"')
                elif name == "value":
                    problems += [f"json patch {p}" for p in _duplicates_in(value, where)]
        return problems

    def _typed(self, patched: Object, shown: Object) -> Object:
        """``patched``, if every value fits its Go field; else upstream's 422 for the patch.

        apiserver ``handlers/patch.go``: a JSON or merge patch's result is decoded from JSON
        (``runtime.DecodeInto``: ``json: cannot unmarshal string into Go struct field ...``); a
        strategic merge patch's result is converted from its map (``applyPatchToObject``,
        ``runtime.DefaultUnstructuredConverter``: ``unrecognized type: int32``), which words its
        errors otherwise (:func:`gotypes.conversion_error`). ``patched`` is checked (its unknown
        fields dropped already); ``shown`` is the patched object the error shows, unknown fields and
        all, as upstream's shows what it decoded.
        """
        definition = _definition(self.rtype)
        if definition is None:
            return patched
        if self.kind == "strategic":
            problem = gotypes.conversion_error(patched, definition)
        else:
            problem = gotypes.type_error(patched, definition)
        if problem is None:
            return patched
        raise self._invalid(shown, problem)

    def _invalid(self, patched: Object, problem: str) -> errors.StatusError:
        """422 ``The request is invalid: patch: Invalid value: "<value>": <problem>``.

        ``errors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath(
        "patch"), <value>, err.Error())})`` (apiserver ``handlers/patch.go``) for a value of the
        wrong type or, under ``fieldValidation=Strict``, a strict decoding error. The value is, for
        a JSON or merge patch, the patched object as the JSON patch library wrote it
        (``string(patchedObjJS)``, :func:`patched_json`); for a strategic merge patch, the patch as
        Go's ``fmt.Sprintf("%+v", patchMap)`` prints its map (:func:`gotypes.go_sprint`). The value is
        a Go string, shown with ``%q`` (:func:`gotypes.go_quote`).
        """
        original = decode_body(self.raw, _PATCH_MEDIA_TYPES[self.kind])
        if self.kind == "strategic":
            shown = gotypes.go_sprint(original)
        else:
            custom = isinstance(self.rtype.strategy, CustomResourceStrategy)
            shown = patched_json(self.kind, patched, original, sorted_current=custom)
        error = FieldError(
            "Invalid value", "FieldValueInvalid", "patch", f"{gotypes.go_quote(shown)}: {problem}"
        )
        return errors.invalid("", "", "", [error])

    def _is_clean(self, document: Any) -> bool:
        """Whether a merge or strategic patch is sure to leave the object as clean as it found it:
        without unknown fields, and with every value of its Go field's type.

        The stored object of a built-in kind is clean (every write prunes and checks it), and such a
        patch only puts its own values where they stand in the patch. So if the patch itself names
        no field outside the kind's schema and has no value of the wrong type, the patched object
        has neither, and the walks of the whole object (a pod's spec and metadata, for a status
        patch of a few fields) can be skipped. Strategic directives (``$setElementOrder/...``)
        count as unknown here: such a patch takes the long way, as does a kind served in a version
        other than the stored one. (The type walk also turns the patch's integral floats into
        integers, as it would have turned the patched object's.)
        """
        if self.kind not in ("merge", "strategic") or self.rtype.conversion is not None:
            return False
        if strict.without_unknown_fields(document, self.node)[1]:
            return False
        definition = _definition(self.rtype)
        return definition is None or gotypes.type_error(document, definition) is None

    def _apply(self, current: Object) -> Object:
        if not isinstance(self.document, dict):
            raise errors.bad_request("error decoding YAML: the applied configuration must be an object")
        if self.fm is None:
            raise errors.unsupported_media_type()
        live = current or None
        try:
            result = self.fm.apply(
                live, self.document, self.manager, force=self.force, namespace=self.namespace
            )
        except ConflictError as error:
            status = error.status()
            raise errors.StatusError(409, "Conflict", status["message"], status["details"]) from None
        except ApplyError as error:
            # Upstream answers typed-conversion failures as a bare 500; bad input is a 400 here.
            raise errors.bad_request(str(error)) from None
        if self.directive in (strict.STRICT, strict.WARN):
            duplicates = None if self.unique_members else strict.yaml_duplicate_keys(self.raw)
            if duplicates is not None:
                if self.directive == strict.STRICT:
                    raise errors.bad_request(f"error strict decoding YAML: {duplicates}")
                self.warnings = [duplicates]
        return result


#: The media type of each patch kind's body (for decoding it again).
_PATCH_MEDIA_TYPES: Final = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}

#: The members of a JSON patch operation (patch.go, ``jsonPatchOp``).
_JSON_PATCH_OP_FIELDS: Final = frozenset({"op", "path", "from", "value"})


class _Members(list[tuple[str, Any]]):
    """A JSON object as the list of its members, repeated ones kept (an ``object_pairs_hook``)."""


def _duplicates_in(value: Any, path: str) -> list[str]:
    """``duplicate field "..."`` errors inside a value decoded with :class:`_Members`."""
    problems: list[str] = []
    if isinstance(value, _Members):
        seen: set[str] = set()
        for name, child in value:
            where = f"{path}.{name}" if path else name
            if name in seen:
                problems.append(f'duplicate field "{where}"')
                continue
            seen.add(name)
            problems += _duplicates_in(child, where)
    elif isinstance(value, list):
        for position, item in enumerate(value):
            problems += _duplicates_in(item, f"{path}[{position}]")
    return problems


_PATH_PART: Final = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def _upstream_order(kind: str, unknown: list[str]) -> list[str]:
    """The patched object's unknown fields in upstream's order.

    A strategic merge patch's come from ``FromUnstructuredWithValidation``, which sorts its errors
    by their text (apimachinery ``pkg/runtime/converter.go``). A JSON or merge patch's come from the
    JSON decoder in the order of the patched object's JSON, where every object the patch went into
    has its keys sorted (evanphx/json-patch v4 marshals them as Go maps), and unknown fields can
    only be where the patch went: sorted field by field, list items by position.
    """
    if kind == "strategic":
        return sorted(unknown)

    def key(error: str) -> list[tuple[int, str, int]]:
        path = error.partition('"')[2].rpartition('"')[0]
        return [(1, "", int(index)) if index else (0, name, 0) for index, name in _PATH_PART.findall(path)]

    return sorted(unknown, key=key)


def patched_json(kind: str, patched: Any, patch: Any, *, sorted_current: bool = False) -> str:
    """The patched object as upstream's JSON and merge patches leave it: ``string(patchedObjJS)``.

    apiserver ``handlers/patch.go`` encodes the current object to JSON and hands it to
    ``gopkg.in/evanphx/json-patch.v4``, which decodes it lazily into Go maps and slices, applies the
    patch and marshals the result with ``json.Marshal``: compact, HTML-safe, and with the keys of
    every object it had to open (the root, each object on a merge patch's way or on a JSON patch
    operation's path, each value a merge patch added) sorted, as Go writes a map. Whatever it did not
    open is written back as it was encoded: a built-in object's fields in its Go struct's order (here:
    in the order the lab keeps them, ``sorted_current=False``), a custom resource's keys sorted (an
    ``Unstructured`` is a map, ``sorted_current=True``); a JSON patch's added values keep the
    patch's order.
    """
    if kind == "merge" and isinstance(patched, dict) and isinstance(patch, dict):
        return _merged_json(patched, patch, sorted_current)
    if kind == "json" and isinstance(patch, list):
        opened: set[tuple[str, ...]] = {()}
        added: set[tuple[str, ...]] = set()
        tested: set[tuple[str, ...]] = set()
        for operation in patch:
            if not isinstance(operation, dict):
                continue
            op = operation.get("op")
            for pointer in (operation.get("path"), operation.get("from") if op in ("move", "copy") else None):
                if isinstance(pointer, str):
                    tokens = _pointer(pointer)
                    opened.update(tokens[:end] for end in range(len(tokens)))
            target = _pointer(operation["path"]) if isinstance(operation.get("path"), str) else None
            if target is not None and op in ("add", "replace", "copy"):
                added.add(target)
            elif target is not None and op == "test":
                tested.add(target)  # lazyNode.equal opens everything it compares
        return _json_patched_json(patched, (), opened, added, tested, sorted_current)
    return gotypes.go_json(patched, sort_keys=sorted_current)


def _pointer(pointer: str) -> tuple[str, ...]:
    """A JSON pointer's reference tokens (RFC 6901: ``~1`` is ``/``, ``~0`` is ``~``)."""
    if not pointer:
        return ()
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:])


def _merged_json(value: dict[str, Any], patch: dict[str, Any], sorted_current: bool) -> str:
    """An object both the current object and a merge patch held objects at (merged: keys sorted)."""
    parts = []
    for key in sorted(value):
        child = value[key]
        if key in patch:
            given = patch[key]
            if isinstance(given, dict) and isinstance(child, dict):
                rendered = _merged_json(child, given, sorted_current)
            else:  # a value from the patch, nulls pruned and objects opened ("pruneNulls")
                rendered = gotypes.go_json(child, sort_keys=True)
        else:
            rendered = gotypes.go_json(child, sort_keys=sorted_current)
        parts.append(f"{gotypes.go_json_string(key)}:{rendered}")
    return "{" + ",".join(parts) + "}"


def _json_patched_json(
    value: Any,
    path: tuple[str, ...],
    opened: set[tuple[str, ...]],
    added: set[tuple[str, ...]],
    tested: set[tuple[str, ...]],
    sorted_current: bool,
) -> str:
    if path in added:
        return gotypes.go_json(value)
    if path in tested:
        return gotypes.go_json(value, sort_keys=True)
    if path in opened and isinstance(value, dict):
        parts = (
            f"{gotypes.go_json_string(k)}:"
            f"{_json_patched_json(value[k], (*path, k), opened, added, tested, sorted_current)}"
            for k in sorted(value)
        )
        return "{" + ",".join(parts) + "}"
    if path in opened and isinstance(value, list):
        items = (
            _json_patched_json(item, (*path, str(i)), opened, added, tested, sorted_current)
            for i, item in enumerate(value)
        )
        return "[" + ",".join(items) + "]"
    return gotypes.go_json(value, sort_keys=sorted_current)


__all__ = [
    "CREATE_OPTIONS",
    "PATCH_OPTIONS",
    "UPDATE_OPTIONS",
    "Patcher",
    "apply",
    "decode_body_once",
    "decode_strictly",
    "field_manager",
    "manager_name",
    "patched_json",
    "tracker",
    "validation_directive",
    "warning_headers",
]
