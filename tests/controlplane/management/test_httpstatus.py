"""Status lines with Go's reason phrases: the table is Go's, and Twisted writes it once installed."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from twisted.web import http

from controlplane.management import httpstatus
from controlplane.management.httpstatus import GO_STATUS_TEXT

APISERVER = Path(httpstatus.__file__).resolve().parent.parent / "apiserver"
#: The codes the API server's answers name: its Status errors and plain-text errors (errors.py,
#: flow control's 429), plus the successes its handlers send.
_ERROR_CODE = re.compile(r"(?:StatusError|PlainTextError)\(\s*([1-5][0-9]{2})\b")
SUCCESSES = {200, 201, 202}


def codes_the_api_server_sends() -> set[int]:
    found = set(SUCCESSES)
    for source in APISERVER.rglob("*.py"):
        found.update(int(code) for code in _ERROR_CODE.findall(source.read_text(encoding="utf-8")))
    return found


@pytest.fixture
def responses(monkeypatch: pytest.MonkeyPatch) -> dict[int, bytes]:
    """Twisted's own table for the test (a copy), so that installing into it leaves no trace."""
    table = dict(http.RESPONSES)
    monkeypatch.setattr(http, "RESPONSES", table)
    return table


def status_line_phrase(code: int) -> bytes:
    """The phrase Twisted puts in the status line when the application names only the code, as
    daphne does (``setResponseCode(status)``): Twisted's own method, on a bare request (no channel,
    so no reactor)."""
    request = SimpleNamespace()
    http.Request.setResponseCode(request, code)  # type: ignore[arg-type]
    phrase: bytes = request.code_message
    return phrase


def test_the_codes_found_include_what_twisted_lacked() -> None:
    assert {409, 422, 429, 500, 504} <= codes_the_api_server_sends()


def test_twisted_alone_writes_unknown_status_for_422_and_429(responses: dict[int, bytes]) -> None:
    assert status_line_phrase(422) == b"Unknown Status"
    assert status_line_phrase(429) == b"Unknown Status"


def test_once_installed_every_code_the_api_server_sends_has_gos_phrase(responses: dict[int, bytes]) -> None:
    httpstatus.install()
    for code in sorted(codes_the_api_server_sends()):
        assert code in GO_STATUS_TEXT, f"{code}: Go's http.StatusText names it; add it to the table"
        assert status_line_phrase(code) == GO_STATUS_TEXT[code].encode(), code
    assert status_line_phrase(422) == b"Unprocessable Entity"
    assert status_line_phrase(429) == b"Too Many Requests"
    assert status_line_phrase(504) == b"Gateway Timeout"  # Twisted's own: "Gateway Time-out"
    httpstatus.install()  # again: nothing changes
    assert responses[422] == b"Unprocessable Entity"


@pytest.mark.parametrize(
    ("code", "phrase"),
    [
        (207, "Multi-Status"),
        (409, "Conflict"),
        (410, "Gone"),
        (413, "Request Entity Too Large"),
        (415, "Unsupported Media Type"),
        (416, "Requested Range Not Satisfiable"),
        (418, "I'm a teapot"),
        (422, "Unprocessable Entity"),
        (429, "Too Many Requests"),
        (505, "HTTP Version Not Supported"),
        (511, "Network Authentication Required"),
    ],
)
def test_phrases_are_gos_exactly(code: int, phrase: str) -> None:
    # net/http/status.go, StatusText
    assert GO_STATUS_TEXT[code] == phrase


def test_every_phrase_fits_a_status_line() -> None:
    for code, phrase in GO_STATUS_TEXT.items():
        assert 100 <= code <= 599 and phrase.isascii() and phrase.isprintable() and "\r" not in phrase
