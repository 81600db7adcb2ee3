"""Status objects become typed errors, by reason first and by code when the reason is missing."""

from __future__ import annotations

import pytest

from controlplane.client import errors
from controlplane.client.errors import (
    AlreadyExists,
    APIClientError,
    APIError,
    APIServerError,
    Conflict,
    Expired,
    Gone,
    Invalid,
    NotFound,
    ResourceExpired,
    ServerTimeout,
    TooManyRequests,
    from_response,
    from_status,
)


def status(code: int, reason: str = "", message: str = "m", **details: object) -> dict[str, object]:
    body: dict[str, object] = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
    if reason:
        body["reason"] = reason
    body["message"] = message
    if details:
        body["details"] = details
    return body


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (409, "", Conflict),
        (410, "Expired", Expired),
        (410, "Gone", Gone),
        (410, "", Gone),
        (422, "Invalid", Invalid),
        (429, "TooManyRequests", TooManyRequests),
        (504, "Timeout", ServerTimeout),
        (500, "ServerTimeout", ServerTimeout),
        (418, "", APIClientError),
        (599, "", APIServerError),
    ],
)
def test_the_class_follows_the_reason_then_the_code(code: int, reason: str, cls: type[APIError]) -> None:
    error = from_status(status(code, reason))
    assert type(error) is cls
    assert error.code == code


def test_expired_and_gone_are_both_what_a_reflector_relists_on() -> None:
    assert isinstance(from_status(status(410, "Expired")), ResourceExpired)
    assert isinstance(from_status(status(410, "Gone")), ResourceExpired)
    assert errors.is_resource_expired(from_status(status(410, "Expired")))
    assert errors.is_gone(from_status(status(410, "Gone")))
    assert not errors.is_gone(from_status(status(410, "Expired")))


def test_predicates_have_client_gos_meaning() -> None:
    exists = from_status(status(409, "AlreadyExists"))
    assert errors.is_already_exists(exists) and not errors.is_conflict(exists)
    assert errors.is_not_found(from_status(status(404)))  # reason inferred from the code
    assert not errors.is_not_found(ValueError("no"))
    too_large = from_status(
        status(504, "Timeout", causes=[{"reason": "ResourceVersionTooLarge", "message": "Too large"}])
    )
    assert errors.is_timeout(too_large) and errors.is_too_large_resource_version(too_large)


def test_invalid_carries_its_causes() -> None:
    error = from_status(
        status(
            422,
            "Invalid",
            'ConfigMap "Bad" is invalid: metadata.name: Invalid value',
            name="Bad",
            kind="ConfigMap",
            causes=[
                {"reason": "FieldValueInvalid", "message": 'Invalid value: "Bad"', "field": "metadata.name"}
            ],
        )
    )
    assert error.name == "Bad"
    [cause] = error.causes
    assert (cause.type, cause.field) == ("FieldValueInvalid", "metadata.name")
    assert str(error) == 'ConfigMap "Bad" is invalid: metadata.name: Invalid value'


def test_a_body_that_is_not_a_status_becomes_the_message() -> None:
    error = from_response(429, b"Too many requests, please try again later.\n", {"retry-after": "7"})
    assert isinstance(error, TooManyRequests)
    assert error.message == "Too many requests, please try again later."
    assert error.retry_after == 7.0
    assert error.reason == "TooManyRequests"


def test_retry_after_seconds_in_the_details_count_too() -> None:
    error = from_response(
        504, b'{"kind":"Status","code":504,"reason":"Timeout","details":{"retryAfterSeconds":1}}'
    )
    assert isinstance(error, ServerTimeout)
    assert error.retry_after == 1.0


def test_an_empty_body_still_says_what_happened() -> None:
    error = from_response(503, b"")
    assert error.reason == "ServiceUnavailable"
    assert "503" in error.message


@pytest.mark.parametrize(
    ("value", "seconds"), [("3", 3.0), (" 0 ", 0.0), ("-1", None), ("soon", None), (None, None)]
)
def test_retry_after_is_whole_seconds(value: str | None, seconds: float | None) -> None:
    assert errors.parse_retry_after(value) == seconds
