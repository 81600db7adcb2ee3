"""API errors: every failure the API server answers, as a type that renders upstream's Status.

A Kubernetes API error is not free text: it is a ``Status`` object with an HTTP code, a machine-
readable ``reason`` (NotFound, AlreadyExists, Conflict, Invalid, Expired ...) and ``details`` naming
the object. Clients branch on the reason (client-go's ``errors.IsConflict``; kubectl apply retries on
Conflict), so the shapes and messages here follow apimachinery ``pkg/api/errors/errors.go``.

Handlers raise a ``StatusError``; the server turns it into the response. Nothing else is ever sent
for a failure, and nothing raised anywhere becomes a bare 500: unexpected exceptions are wrapped in
``internal_error`` (upstream's "Internal error occurred: ...").
"""

from __future__ import annotations

from typing import Any

from controlplane.api.validation import FieldError


class StatusError(Exception):
    """A failure with its Status: ``code``, ``reason``, ``message`` and optional ``details``."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


class PlainTextError(StatusError):
    """A failure upstream writes with Go's ``http.Error``: one line of plain text, not a Status.

    Flow control's 429 is one (``server/filters/maxinflight.go``, ``tooManyRequests``); clients read
    the code and ``Retry-After``, and make their own error of it.
    """


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def not_found(resource: str, group: str, name: str) -> StatusError:
    return StatusError(
        404, "NotFound", f'{_qualified(resource, group)} "{name}" not found', _details(name, group, resource)
    )


def already_exists(resource: str, group: str, name: str) -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        _details(name, group, resource),
    )


def conflict(resource: str, group: str, name: str, why: str) -> StatusError:
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
        _details(name, group, resource),
    )


class PreconditionFailed(StatusError):
    """409: a delete's ``preconditions`` name another ``uid`` or ``resourceVersion`` than the object's
    (``rest.BeforeDelete``); ``field`` says which."""

    def __init__(self, kind: str, group: str, name: str, field: str, why: str) -> None:
        error = conflict(kind, group, name, why)
        super().__init__(error.code, error.reason, error.message, error.details)
        self.field = field


OBJECT_MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, group: str, name: str, errors: list[FieldError]) -> StatusError:
    """422 Invalid: ``Pod "web" is invalid: spec.containers: Required value``."""
    qualified = f"{kind}.{group}" if group else kind
    # ToAggregate drops repeated messages, keeping the first of each.
    messages = list(dict.fromkeys(e.message() for e in errors))
    summary = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    details = _details(name, group, kind)
    details["causes"] = [e.cause() for e in errors]
    return StatusError(422, "Invalid", f'{qualified} "{name}" is invalid: {summary}', details)


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def method_not_supported(resource: str, group: str, action: str) -> StatusError:
    return StatusError(
        405,
        "MethodNotAllowed",
        f'{action} is not supported on resources of kind "{_qualified(resource, group)}"',
        _details("", group, resource),
    )


def not_acceptable(message: str) -> StatusError:
    return StatusError(406, "NotAcceptable", message)


UNSUPPORTED_MEDIA = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json, application/yaml, application/vnd.kubernetes.protobuf"
)


def unsupported_media_type(message: str = UNSUPPORTED_MEDIA) -> StatusError:
    return StatusError(415, "UnsupportedMediaType", message)


def request_entity_too_large(limit: int) -> StatusError:
    return StatusError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def resource_expired(message: str) -> StatusError:
    """410 Expired: a continue token or resourceVersion whose history was compacted."""
    return StatusError(410, "Expired", message)


def gone(message: str) -> StatusError:
    return StatusError(410, "Gone", message)


def timeout(message: str, retry_after: int = 0) -> StatusError:
    details = {"retryAfterSeconds": retry_after} if retry_after else None
    return StatusError(504, "Timeout", message, details)


def too_large_resource_version(wanted: int, current: int) -> StatusError:
    """504 for a resourceVersion the server has not reached (apiserver ``storage/errors.go``)."""
    return StatusError(
        504,
        "Timeout",
        f"Too large resource version: {wanted}, current: {current}",
        {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
    )


def too_many_requests(message: str, retry_after: int) -> StatusError:
    return StatusError(
        429,
        "TooManyRequests",
        message,
        {"retryAfterSeconds": retry_after},
        headers={"Retry-After": str(retry_after)},
    )


def unauthorized(message: str = "Unauthorized") -> StatusError:
    return StatusError(401, "Unauthorized", message)


def forbidden(resource: str, group: str, name: str, why: str) -> StatusError:
    subject = f'{_qualified(resource, group)} "{name}"' if name else _qualified(resource, group)
    return StatusError(403, "Forbidden", f"{subject} is forbidden: {why}", _details(name, group, resource))


def internal_error(error: BaseException | str) -> StatusError:
    return StatusError(
        500, "InternalError", f"Internal error occurred: {error}", {"causes": [{"message": str(error)}]}
    )


def service_unavailable(message: str) -> StatusError:
    return StatusError(503, "ServiceUnavailable", message)
