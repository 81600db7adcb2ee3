"""The request's Audit-ID: the client's ``Audit-ID`` header when usable, else a new UUID."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from controlplane.apiserver.http import MAX_AUDIT_ID, Request, audit_id_from_header


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b""}


def request_with(headers: list[tuple[bytes, bytes]]) -> Request:
    scope = {"type": "http", "method": "GET", "path": "/api/v1/pods", "query_string": b"", "headers": headers}
    return Request.from_scope(scope, _receive)


def test_a_clients_audit_id_is_the_requests() -> None:
    assert request_with([(b"audit-id", b"0f6c-my-request")]).audit_id == "0f6c-my-request"
    assert request_with([(b"Audit-ID", b"  spaced-around  ")]).audit_id == "spaced-around"


@pytest.mark.parametrize(
    "header",
    [None, b"", b"   ", b"has space", b"tab\there", "caf\u00e9".encode(), b"x" * (MAX_AUDIT_ID + 1)],
)
def test_without_a_usable_header_the_server_makes_a_uuid(header: bytes | None) -> None:
    headers = [] if header is None else [(b"audit-id", header)]
    audit_id = request_with(headers).audit_id
    assert str(uuid.UUID(audit_id)) == audit_id
    assert request_with(headers).audit_id != audit_id  # a new one each time


def test_the_longest_accepted_id() -> None:
    assert audit_id_from_header("x" * MAX_AUDIT_ID) == "x" * MAX_AUDIT_ID
    assert audit_id_from_header("x" * (MAX_AUDIT_ID + 1)) is None
