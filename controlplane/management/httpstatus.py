"""The reason phrases of HTTP status lines, as Go's net/http writes them.

Every HTTP/1.1 response starts with a status line, ``HTTP/1.1 422 Unprocessable Entity``: the code,
then a reason phrase meant for people. Clients act on the code, but people read the phrase:
``kubectl -v=6`` prints it with every response (``status="422 Unprocessable Entity"``), and so do
curl and the browser's network panel.

kube-apiserver is a Go server, and Go writes the phrase of ``http.StatusText(code)``
(``net/http/status.go``). The lab is served by daphne, on Twisted, which writes
``twisted.web.http.RESPONSES[code]`` when the application gives no phrase (an ASGI response has no
place for one), and ``Unknown Status`` for a code missing there. Twisted's table lacks 422 (the API
server's answer to every invalid object), 429 (flow control's), 423, 424, 425, 426, 428, 431, 451,
508 and 511, and spells some others its own way (``504 Gateway Time-out``, ``416 Requested Range
not satisfiable``). So ``runlab`` puts Go's table into Twisted's before daphne starts
(``install``): every port of the process (the API port and the web port) then writes what a real
API server writes.

``GO_STATUS_TEXT`` is Go's table, every code ``http.StatusText`` knows, with its exact phrase.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Go's ``http.StatusText`` (net/http/status.go): every code it names, and its phrase.
GO_STATUS_TEXT: Mapping[int, str] = {
    100: "Continue",
    101: "Switching Protocols",
    102: "Processing",
    103: "Early Hints",
    200: "OK",
    201: "Created",
    202: "Accepted",
    203: "Non-Authoritative Information",
    204: "No Content",
    205: "Reset Content",
    206: "Partial Content",
    207: "Multi-Status",
    208: "Already Reported",
    226: "IM Used",
    300: "Multiple Choices",
    301: "Moved Permanently",
    302: "Found",
    303: "See Other",
    304: "Not Modified",
    305: "Use Proxy",
    307: "Temporary Redirect",
    308: "Permanent Redirect",
    400: "Bad Request",
    401: "Unauthorized",
    402: "Payment Required",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    407: "Proxy Authentication Required",
    408: "Request Timeout",
    409: "Conflict",
    410: "Gone",
    411: "Length Required",
    412: "Precondition Failed",
    413: "Request Entity Too Large",
    414: "Request URI Too Long",
    415: "Unsupported Media Type",
    416: "Requested Range Not Satisfiable",
    417: "Expectation Failed",
    418: "I'm a teapot",
    421: "Misdirected Request",
    422: "Unprocessable Entity",
    423: "Locked",
    424: "Failed Dependency",
    425: "Too Early",
    426: "Upgrade Required",
    428: "Precondition Required",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    451: "Unavailable For Legal Reasons",
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    505: "HTTP Version Not Supported",
    506: "Variant Also Negotiates",
    507: "Insufficient Storage",
    508: "Loop Detected",
    510: "Not Extended",
    511: "Network Authentication Required",
}


def install() -> None:
    """Make Twisted write Go's reason phrase for every code Go names (see the module docstring).

    Twisted's ``Request.setResponseCode`` looks the phrase up in ``twisted.web.http.RESPONSES`` each
    time it is called without one, as daphne always calls it; so updating that table is the one
    place, and it holds for every request served after this. Idempotent.
    """
    from twisted.web import http

    http.RESPONSES.update({code: text.encode("ascii") for code, text in GO_STATUS_TEXT.items()})


__all__ = ["GO_STATUS_TEXT", "install"]
