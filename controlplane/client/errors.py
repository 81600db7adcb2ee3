"""API errors as types: what a client sees when the API server says no.

Every failure the API server answers is a ``Status`` object: an HTTP code, a machine-readable
``reason`` (``NotFound``, ``AlreadyExists``, ``Conflict``, ``Invalid``, ``Expired`` ...), a message
for people, and ``details`` naming the object (for ``Invalid``, one *cause* per bad field)::

    {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 409, "reason": "Conflict",
     "message": "Operation cannot be fulfilled on configmaps \\"web\\": the object has been modified; ...",
     "details": {"name": "web", "kind": "configmaps"}}

Code branches on the *reason*, not on the text: a controller ignores ``NotFound`` when it deletes,
retries ``Conflict`` after reading the object again, and a reflector that sees ``Expired`` lists
everything again. client-go has a predicate for each (``errors.IsNotFound``, ``errors.IsConflict``,
``errors.IsResourceExpired`` ... in apimachinery ``pkg/api/errors/errors.go``); here the reasons are
classes, so ``except Conflict:`` reads like the sentence it means, and the predicates exist too under
their client-go names (``is_conflict``). Like client-go, a reason the server did not give is inferred
from the code (a bare 404 is ``NotFound``).

The hierarchy (as kopf's ``APIError`` > ``APIClientError`` > ...), hiding the HTTP library::

    APIError                      any Status failure: code, reason, message, details, causes
      APIClientError              4xx: the request was wrong; sending it again will not help
        BadRequest 400, Unauthorized 401, Forbidden 403, NotFound 404, MethodNotAllowed 405,
        AlreadyExists 409, Conflict 409, ResourceExpired 410 (Expired, Gone), RequestEntityTooLarge 413,
        UnsupportedMediaType 415, Invalid 422, TooManyRequests 429
      APIServerError              5xx: the server failed; the request may well succeed later
        InternalError 500, ServiceUnavailable 503, ServerTimeout 504
    TransportError                no answer at all: a connection reset, a read timed out
      ConnectError                the connection could not be made (refused, unreachable)

``TooManyRequests`` is a client error by its code, but it is the server asking for patience: it
carries ``retry_after`` (seconds), which the REST client honours before giving up.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

#: Reasons by HTTP code, for a failure without a Status body (apimachinery ``NewGenericServerResponse``).
REASON_FOR_CODE: Mapping[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Gone",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass(frozen=True, slots=True)
class StatusCause:
    """One cause of a failure (``details.causes[]``): for ``Invalid``, one per bad field."""

    #: Machine-readable, e.g. ``FieldValueInvalid``, ``FieldValueRequired`` (JSON key ``reason``).
    type: str
    message: str
    #: The field path, e.g. ``metadata.name`` (may be empty).
    field: str

    @classmethod
    def from_dict(cls, cause: Mapping[str, Any]) -> StatusCause:
        return cls(
            type=str(cause.get("reason") or cause.get("type") or ""),
            message=str(cause.get("message") or ""),
            field=str(cause.get("field") or ""),
        )


class APIError(Exception):
    """A failure the API server answered with a Status (or an error code the client read as one)."""

    #: The code a class stands for (0: any code of its family).
    default_code: ClassVar[int] = 0

    def __init__(
        self, status: Mapping[str, Any], *, code: int | None = None, retry_after: float | None = None
    ):
        self.status: dict[str, Any] = dict(status)
        self.code: int = int(code if code is not None else status.get("code") or self.default_code or 500)
        reason = status.get("reason")
        self.reason: str = str(reason) if reason else REASON_FOR_CODE.get(self.code, "Unknown")
        self.message: str = str(status.get("message") or f"the server answered {self.code} {self.reason}")
        details = status.get("details")
        self.details: dict[str, Any] = dict(details) if isinstance(details, Mapping) else {}
        if retry_after is None and isinstance(self.details.get("retryAfterSeconds"), int | float):
            retry_after = float(self.details["retryAfterSeconds"])
        #: Seconds the server asked us to wait before trying again (``Retry-After``), if it did.
        self.retry_after: float | None = retry_after
        super().__init__(self.message)

    @property
    def causes(self) -> list[StatusCause]:
        return [StatusCause.from_dict(c) for c in self.details.get("causes") or [] if isinstance(c, Mapping)]

    @property
    def name(self) -> str:
        """The object's name from ``details`` ("" when the failure is not about one object)."""
        return str(self.details.get("name") or "")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}, {self.reason!r}, {self.message!r})"


class APIClientError(APIError):
    """4xx: the request cannot succeed as it is."""

    default_code = 400


class BadRequest(APIClientError):
    default_code = 400


class Unauthorized(APIClientError):
    """401: no credentials, or credentials the server does not know."""

    default_code = 401


class Forbidden(APIClientError):
    """403: authenticated, but RBAC (or admission, or impersonation) said no."""

    default_code = 403


class NotFound(APIClientError):
    default_code = 404


class MethodNotAllowed(APIClientError):
    default_code = 405


class AlreadyExists(APIClientError):
    """409 AlreadyExists: a create for a name that is taken (not a ``Conflict``, as in client-go)."""

    default_code = 409


class Conflict(APIClientError):
    """409 Conflict: the object changed since it was read (stale ``resourceVersion``): read it again."""

    default_code = 409


class ResourceExpired(APIClientError):
    """410: a resourceVersion or continue token older than the server's history. List again.

    This is what a reflector re-lists on (client-go ``isExpiredError``: ``IsResourceExpired || IsGone``).
    """

    default_code = 410


class Expired(ResourceExpired):
    """410 with reason ``Expired`` (kube-apiserver's answer for too-old watches and continue tokens)."""


class Gone(ResourceExpired):
    """410 with reason ``Gone``."""


class RequestEntityTooLarge(APIClientError):
    default_code = 413


class UnsupportedMediaType(APIClientError):
    default_code = 415


class Invalid(APIClientError):
    """422: the object failed validation; ``causes`` says which fields and why."""

    default_code = 422


class TooManyRequests(APIClientError):
    """429: the server (API Priority and Fairness) asks the client to slow down for ``retry_after`` s."""

    default_code = 429


class APIServerError(APIError):
    """5xx: the server failed to answer; the same request may succeed later."""

    default_code = 500


class InternalError(APIServerError):
    default_code = 500


class ServiceUnavailable(APIServerError):
    default_code = 503


class ServerTimeout(APIServerError):
    """504 ``Timeout`` (or reason ``ServerTimeout``): the server gave up waiting, e.g. for a future RV."""

    default_code = 504


class TransportError(Exception):
    """No answer from the API server: the connection failed, was reset, or a read timed out."""


class ConnectError(TransportError):
    """The connection could not be made (refused, unreachable): nothing reached the server."""


_BY_REASON: Mapping[str, type[APIError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Expired": Expired,
    "Gone": Gone,
    "RequestEntityTooLarge": RequestEntityTooLarge,
    "UnsupportedMediaType": UnsupportedMediaType,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
    "Timeout": ServerTimeout,
    "ServerTimeout": ServerTimeout,
}

_BY_CODE: Mapping[int, type[APIError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    413: RequestEntityTooLarge,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: ServerTimeout,
}


def error_class(code: int, reason: str) -> type[APIError]:
    """The class for a failure: by reason when the server gave one, by code otherwise (as client-go)."""
    cls = _BY_REASON.get(reason)
    if cls is not None:
        return cls
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls
    return APIServerError if code >= 500 else APIClientError if code >= 400 else APIError


def from_status(
    status: Mapping[str, Any], *, code: int | None = None, retry_after: float | None = None
) -> APIError:
    """The typed error for a Status object (a response body, or the object of a watch ``ERROR`` event)."""
    resolved = int(code if code is not None else status.get("code") or 500)
    reason = str(status.get("reason") or "")
    return error_class(resolved, reason)(status, code=resolved, retry_after=retry_after)


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` in whole seconds, as client-go reads it (``retryAfterSeconds``); None if absent/bad."""
    if value is None:
        return None
    try:
        seconds = int(value.strip())
    except ValueError:
        return None
    return float(seconds) if seconds >= 0 else None


def from_response(code: int, body: bytes, headers: Mapping[str, str] | None = None) -> APIError:
    """The typed error for a failed HTTP response: its Status if the body is one, else built from the code.

    A body that is not a Status (a plain-text 429 from flow control, a proxy's HTML) becomes the message,
    as in client-go's ``newUnstructuredResponseError``.
    """
    retry_after = parse_retry_after((headers or {}).get("retry-after"))
    status: Mapping[str, Any] | None = None
    try:
        decoded = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        decoded = None
    if isinstance(decoded, Mapping) and decoded.get("kind") == "Status":
        status = decoded
    if status is None:
        text = body.decode("utf-8", "replace").strip()
        reason = REASON_FOR_CODE.get(code, "Unknown")
        message = text or (
            f"the server responded with the status code {code} but did not return more information"
        )
        status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason}
        status = dict(status, message=message)
    return from_status(status, code=code, retry_after=retry_after)


# -- client-go's predicates ---------------------------------------------------------------------------


def _reason(error: BaseException) -> str:
    return error.reason if isinstance(error, APIError) else ""


def is_not_found(error: BaseException) -> bool:
    return _reason(error) == "NotFound"


def is_already_exists(error: BaseException) -> bool:
    return _reason(error) == "AlreadyExists"


def is_conflict(error: BaseException) -> bool:
    return _reason(error) == "Conflict"


def is_invalid(error: BaseException) -> bool:
    return _reason(error) == "Invalid"


def is_bad_request(error: BaseException) -> bool:
    return _reason(error) == "BadRequest"


def is_unauthorized(error: BaseException) -> bool:
    return _reason(error) == "Unauthorized"


def is_forbidden(error: BaseException) -> bool:
    return _reason(error) == "Forbidden"


def is_gone(error: BaseException) -> bool:
    return _reason(error) == "Gone"


def is_resource_expired(error: BaseException) -> bool:
    return _reason(error) == "Expired"


def is_too_many_requests(error: BaseException) -> bool:
    return isinstance(error, TooManyRequests)


def is_timeout(error: BaseException) -> bool:
    """Reason ``Timeout`` (504): the server could not finish in time."""
    return _reason(error) == "Timeout"


def is_server_timeout(error: BaseException) -> bool:
    """Reason ``ServerTimeout``: the server asked the client to retry after a while."""
    return _reason(error) == "ServerTimeout"


def is_internal_error(error: BaseException) -> bool:
    return _reason(error) == "InternalError"


def is_too_large_resource_version(error: BaseException) -> bool:
    """A read at a resourceVersion the server has not reached yet (504 with cause ResourceVersionTooLarge)."""
    return isinstance(error, ServerTimeout) and any(c.type == "ResourceVersionTooLarge" for c in error.causes)


__all__ = [
    "REASON_FOR_CODE",
    "APIClientError",
    "APIError",
    "APIServerError",
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "ConnectError",
    "Expired",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "MethodNotAllowed",
    "NotFound",
    "RequestEntityTooLarge",
    "ResourceExpired",
    "ServerTimeout",
    "ServiceUnavailable",
    "StatusCause",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "UnsupportedMediaType",
    "error_class",
    "from_response",
    "from_status",
    "is_already_exists",
    "is_bad_request",
    "is_conflict",
    "is_forbidden",
    "is_gone",
    "is_internal_error",
    "is_invalid",
    "is_not_found",
    "is_resource_expired",
    "is_server_timeout",
    "is_timeout",
    "is_too_large_resource_version",
    "is_too_many_requests",
    "is_unauthorized",
    "parse_retry_after",
]
