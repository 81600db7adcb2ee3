"""HTTP plumbing for the API server: requests, responses and content negotiation over raw ASGI.

The API server is an ASGI application of its own, routed beside Django rather than through it: a
Kubernetes API server answers thousands of small requests a second (every kubelet, controller and
``kubectl get -w``), and the Django request cycle would cost more than the work itself.

Content negotiation follows kube-apiserver: request bodies may be JSON, YAML or, for the kinds
:mod:`protobuf_schema` describes, protobuf (what kubectl's typed commands send); responses are JSON.
A client may ask for a ``Table`` (``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``), which is
how ``kubectl get`` gets its columns.

Every request has an Audit-ID, echoed in the ``Audit-Id`` response header and named by each of its
trace events: the client's own ``Audit-ID`` request header when it sent a usable one, else a new UUID.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qsl

import yaml

from controlplane.api import requestbody, serializer
from controlplane.apiserver import errors, protobuf, requestinfo
from controlplane.apiserver.requestinfo import RequestInfo
from controlplane.uids import new_uid

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: kube-apiserver refuses bodies over 3 MiB (``MaxRequestBodyBytes``).
MAX_BODY = 3 * 1024 * 1024

JSON = "application/json"

#: Upstream's 415 for a protobuf body of a kind without a protobuf schema (a custom resource).
PROTOBUF_UNSUPPORTED = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json, application/yaml"
)


#: The longest client-chosen Audit-ID kept (upstream sets no limit; a UUID is 36 characters).
MAX_AUDIT_ID = 128


def audit_id_from_header(value: str | None) -> str | None:
    """The client's ``Audit-ID`` header, if the server can use it as the request's Audit-ID.

    Upstream (``endpoints/filters/with_auditid.go``) takes any non-empty value and echoes it in the
    response. Kubelab also puts it on the trace and in the browser, so it takes only a visible-ASCII
    token (no spaces, no control characters) of at most ``MAX_AUDIT_ID`` characters; anything else
    is ignored and the request gets a new UUID. A client that sends its own id knows its request's
    id before the answer comes (and a component can name the requests it is about to make).
    """
    if not value:
        return None
    value = value.strip()
    if not value or len(value) > MAX_AUDIT_ID or not _visible_ascii(value):
        return None
    return value


def _visible_ascii(value: str) -> bool:
    """Whether ``value`` is only visible ASCII, ``!`` to ``~`` (the regular expression ``[!-~]*``):
    ASCII that is printable (space to ``~``) without a space. String methods, not a regular
    expression, since every request with an ``Audit-ID`` asks."""
    return value.isascii() and value.isprintable() and " " not in value


def client_cert_chain(scope: Scope) -> tuple[object, ...]:
    """``scope["extensions"]["tls"]["client_cert_chain"]`` as a tuple, () without one (ASGI TLS extension).

    Whatever the chain holds is kept for the x509 authenticator to judge: a chain that is not a list is
    kept as its only element, so that it is refused as malformed rather than taken for no certificate.
    """
    extensions = scope.get("extensions")
    if extensions is None:  # the usual case in-process: nothing to look into
        return ()
    # ``type(...) is dict`` first: a plain dict (what servers send) skips the ABC's isinstance check.
    tls = extensions.get("tls") if type(extensions) is dict or isinstance(extensions, Mapping) else None
    chain = tls.get("client_cert_chain") if type(tls) is dict or isinstance(tls, Mapping) else None
    if chain is None:
        return ()
    if isinstance(chain, (list, tuple)):
        return tuple(chain)
    return (chain,)


class Body:
    """A request's body, read from the ASGI ``receive`` channel on first need and kept.

    The channel gives the body once, in chunks; whoever reads it first (a handler decoding an object)
    reads it for everyone after (the audit log recording it). So this is the one part of a request that
    changes after it arrives: from unread to read.
    """

    __slots__ = ("_data", "receive")

    def __init__(self, receive: Receive) -> None:
        self.receive = receive
        self._data: bytes | None = None

    @property
    def data(self) -> bytes | None:
        """The body, if something has read it; None if nothing has."""
        return self._data

    async def read(self, declared_length: str | None) -> bytes:
        """The whole body (413 past ``MAX_BODY``, declared or sent); an early disconnect ends it."""
        if self._data is not None:
            return self._data
        if declared_length and declared_length.isdigit() and int(declared_length) > MAX_BODY:
            raise errors.request_entity_too_large(MAX_BODY)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                raise errors.request_entity_too_large(MAX_BODY)
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        self._data = b"".join(chunks)
        return self._data


@dataclass(frozen=True, slots=True)
class Request:
    """One API request as it arrived: what every stage of the pipeline starts from.

    Made once, by ``from_scope``, and never changed: what the stages decide about it (who sent it,
    whom it acts as, whether it may) are values of their own (``pipeline.py``), each holding this one.
    """

    method: str
    #: The path below the cluster's mount point (``/api/v1/namespaces/default/pods``).
    path: str
    #: The query parameters, the last value of each (``query_values`` has every value).
    query: dict[str, str]
    #: The headers, names lower-cased, the last value of each (``header_values`` has every value).
    headers: dict[str, str]
    #: What the URL and method mean in Kubernetes' terms: verb, group, resource, namespace, name...
    info: RequestInfo
    #: Named by every trace event of the request and echoed in the ``Audit-Id`` response header.
    audit_id: str
    #: The body, read when a handler asks for it (``read_body``).
    stream: Body
    #: The client's certificate chain from the ASGI TLS extension (PEM strings, the client's first),
    #: unchecked: the x509 authenticator judges it. Empty without a client certificate.
    client_cert_chain: tuple[object, ...] = ()
    #: The client's address (``host``, from the connection), for the audit log's ``sourceIPs``.
    client_host: str = ""
    #: Every header in order, names lower-cased, repeated ones kept (``headers`` keeps the last):
    #: ``Impersonate-Group`` may be sent several times.
    raw_headers: tuple[tuple[str, str], ...] = ()
    #: The query string as sent: a parameter may be repeated (``/readyz?exclude=a&exclude=b``).
    raw_query: str = ""

    def query_values(self, name: str) -> list[str]:
        """Every value of query parameter ``name``, in the order sent (``query`` keeps the last)."""
        return [value for key, value in parse_qsl(self.raw_query, keep_blank_values=True) if key == name]

    def header_values(self, name: str) -> list[str]:
        """Every value of header ``name`` (lower-case), in the order sent."""
        return [value for key, value in self.raw_headers if key == name]

    @classmethod
    def from_scope(cls, scope: Scope, receive: Receive) -> Request:
        """The request of an ASGI scope. Its Audit-ID is the client's ``Audit-ID`` header when that is
        usable (``audit_id_from_header``), else a new UUID, as upstream's ``WithAuditInit`` does; its
        ``info`` is read from the method, path and query (``requestinfo.parse``) before anything else,
        as upstream's ``WithRequestInfo`` does."""
        method: str = scope["method"]
        path: str = scope.get("path", "/") or "/"
        raw_query = scope.get("query_string", b"").decode("latin-1")
        query: dict[str, str] = {}
        if raw_query:
            for key, value in parse_qsl(raw_query, keep_blank_values=True):
                query[key] = value
        raw = tuple([(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", ())])
        headers = dict(raw)
        client = scope.get("client")
        return cls(
            method,
            path,
            query,
            headers,
            info=requestinfo.parse(method, path, query),
            audit_id=audit_id_from_header(headers.get("audit-id")) or new_uid(),
            stream=Body(receive),
            client_cert_chain=client_cert_chain(scope),
            client_host=str(client[0]) if client else "",
            raw_headers=raw,
            raw_query=raw_query,
        )

    @property
    def receive(self) -> Receive:
        """The ASGI channel the body and the client's disconnect arrive on."""
        return self.stream.receive

    @property
    def body(self) -> bytes | None:
        """The body, if a handler has read it (the audit log records it then); None if not."""
        return self.stream.data

    async def read_body(self) -> bytes:
        """The whole body, read once (413 past ``MAX_BODY``)."""
        return await self.stream.read(self.headers.get("content-length"))

    @property
    def content_type(self) -> str:
        """The body's media type, lower-case, without parameters (``application/json``)."""
        return _media_type(self.headers.get("content-type", ""))

    def flag(self, name: str) -> bool:
        return self.query.get(name, "").lower() in ("true", "1")


@functools.lru_cache(maxsize=64)
def _media_type(header: str) -> str:
    """A ``Content-Type`` header's media type: clients send the same few, and several stages ask
    (decoding, audit, metrics), so each header is read once."""
    return header.split(";")[0].strip().lower()


#: The media types ``decode_body`` reads as JSON ("": a body sent without a Content-Type) ...
JSON_BODIES: Final = frozenset(
    {
        "",
        JSON,
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/json-patch+json",
    }
)
#: ... and as YAML.
YAML_BODIES: Final = frozenset({"application/yaml", "application/apply-patch+yaml", "application/x-yaml"})


def decode_body(body: bytes, content_type: str) -> Any:
    """Parse a JSON, YAML or protobuf body; 400 BadRequest with upstream's wording if it does not parse.

    A protobuf body comes out as the same object's JSON form. A kind without a protobuf schema here is
    415, as upstream answers protobuf for its custom resources.
    """
    if content_type == protobuf.MEDIA_TYPE:
        try:
            return protobuf.decode(body)[2]
        except protobuf.UnsupportedKind:
            raise errors.unsupported_media_type(PROTOBUF_UNSUPPORTED) from None
        except protobuf.ProtobufError as error:
            raise errors.bad_request(f"unable to decode protobuf body: {error}") from None
    if content_type in JSON_BODIES:
        try:
            return requestbody.loads_json(body)
        except (ValueError, UnicodeDecodeError) as error:  # BodyError included
            raise errors.bad_request(f"error decoding JSON: {error}") from None
    if content_type in YAML_BODIES:
        try:
            return requestbody.load_yaml(body)
        except requestbody.BodyError as error:
            raise errors.bad_request(str(error)) from None
        except yaml.YAMLError as error:
            line = ""
            mark = getattr(error, "problem_mark", None)
            if mark is not None:
                line = f"line {mark.line + 1}: "
            raise errors.bad_request(f"error converting YAML to JSON: yaml: {line}{error}") from None
    raise errors.unsupported_media_type()


@dataclass(frozen=True, slots=True)
class Accept:
    """What the client wants back: the objects as JSON, a Table of them (with or without the objects
    inside), or their metadata alone (``PartialObjectMetadata``, what client-go's metadata client and
    controller-runtime's metadata-only watches ask for)."""

    table: bool = False
    include_object: str = "Metadata"  # None | Metadata | Object (metav1.IncludeObjectPolicy)
    #: ``PartialObjectMetadata`` or ``PartialObjectMetadataList`` when the metadata alone is asked for.
    partial: str = ""
    #: The ``meta.k8s.io`` version the Table or the metadata is written in (``v1`` or ``v1beta1``).
    meta_version: str = "v1"

    @property
    def transforms(self) -> bool:
        """Whether the answer is made from the objects (a Table, metadata) rather than their bytes."""
        return self.table or bool(self.partial)


#: ``includeObject`` values a Table may be asked with (``metav1.IncludeObjectPolicy``).
INCLUDE_OBJECT = ("", "None", "Metadata", "Object")


def negotiate(request: Request) -> Accept:
    """Read ``Accept``: the first media type we can produce wins (406 if none)."""
    header = request.headers.get("accept", "")
    if not header:
        return Accept()
    choice = _accepted(header)
    if choice is None:
        raise errors.not_acceptable(
            "only the following media types are accepted: "
            "application/json, application/yaml, application/vnd.kubernetes.protobuf"
        )
    kind, version = choice
    if kind == "Table":
        include = request.query.get("includeObject", "")
        if include not in INCLUDE_OBJECT:  # meta/v1beta1/validation ValidateTableOptions
            raise errors.bad_request(
                "Unable to convert to Table as requested: includeObject: Invalid value: "
                f"{json.dumps(include)}: must be 'Metadata', 'Object', 'None', or empty"
            )
        return Accept(table=True, include_object=include or "Metadata", meta_version=version)
    if kind:
        return Accept(partial=kind, meta_version=version)
    return Accept()


#: The kinds of ``meta.k8s.io`` an ``as=`` parameter may ask for, and their versions
#: (``handlers/response.go``, ``targetEncodingForTransform``).
_META_KINDS = ("Table", "PartialObjectMetadata", "PartialObjectMetadataList")
_META_VERSIONS = ("v1", "v1beta1")


@functools.lru_cache(maxsize=64)
def _accepted(header: str) -> tuple[str, str] | None:
    """What an ``Accept`` header asks for: ``(kind, version)`` of meta.k8s.io (``Table``,
    ``PartialObjectMetadata[List]``), ``("", "")`` for the object itself, or None (nothing we can
    produce).

    Clients send the same few headers again and again, so each is read once.
    """
    for part in header.split(","):
        media, *params = [p.strip() for p in part.split(";")]
        options = dict(p.split("=", 1) for p in params if "=" in p)
        if media not in ("application/json", "application/*", "*/*", "application/yaml"):
            continue
        wanted = options.get("as")
        if not wanted:
            return ("", "")
        version = options.get("v", "")
        if wanted in _META_KINDS and options.get("g") == "meta.k8s.io" and version in _META_VERSIONS:
            return (wanted, version)
    return None


def dumps(obj: Any) -> bytes:
    """A response body: compact JSON (``serializer.encode``; the standard library for the odd value
    it refuses, so a response never fails for its encoding)."""
    try:
        return serializer.encode(obj)
    except serializer.UnencodableObject:
        return json.dumps(obj, separators=(",", ":")).encode()


async def respond(
    send: Send,
    status: int,
    body: bytes,
    *,
    content_type: str = JSON,
    headers: dict[str, str] | None = None,
    audit_id: str = "",
) -> None:
    """Send a complete response."""
    raw = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    if audit_id:
        raw.append((b"audit-id", audit_id.encode()))
    for key, value in (headers or {}).items():
        raw.append((key.lower().encode(), value.encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def respond_error(send: Send, error: errors.StatusError, audit_id: str = "") -> None:
    if isinstance(error, errors.PlainTextError):  # what Go's http.Error writes
        headers = {"X-Content-Type-Options": "nosniff", **error.headers}
        body = (error.message + "\n").encode()
        content_type = "text/plain; charset=utf-8"
        await respond(send, error.code, body, content_type=content_type, headers=headers, audit_id=audit_id)
        return
    await respond(send, error.code, dumps(error.status()), headers=error.headers, audit_id=audit_id)
