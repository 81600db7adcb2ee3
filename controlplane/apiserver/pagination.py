"""List options: resourceVersion semantics and continue tokens for paged lists.

A list can ask for a consistent snapshot in pages: ``?limit=500`` returns 500 items and a
``continue`` token; passing the token back returns the next 500 *from the same revision*, so the
pages fit together even while the objects change. The token is upstream's own format
(apiserver ``pkg/storage/continue.go``): unpadded base64url of
``{"v":"meta.k8s.io/v1","rv":<revision>,"start":"<next key>"}``, where the key is relative to the
resource's prefix. Once that revision is compacted away, the token is 410 Expired and the client
starts again.

``resourceVersion`` on a list means (apimachinery ``metainternalversion``, KEP-3157 docs):
unset = the latest, consistent; ``"0"`` = any recent state (served from the cache); ``N`` = not older
than N, or exactly N with ``resourceVersionMatch=Exact`` or with a ``limit``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from controlplane.api.validation import FieldError, forbidden, not_supported
from controlplane.apiserver import errors

CONTINUE_VERSION = "meta.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class ContinueToken:
    revision: int
    start: str  # key relative to the resource prefix, with the trailing "\0" of "after this key"


def encode_continue(revision: int, start: str) -> str:
    raw = json.dumps({"v": CONTINUE_VERSION, "rv": revision, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


#: storage.ErrGenericInvalidKey and its siblings (staging/src/k8s.io/apiserver/pkg/storage/continue.go).
INVALID_KEY = "continue key is not valid"


def decode_continue(token: str) -> ContinueToken:
    """Parse a continue token as ``storage.DecodeContinue`` does; 400 BadRequest ``invalid continue
    token: ...`` (``storage.ValidateListOptions``) when it is not one this server wrote."""
    try:
        raw = _raw_url_base64(token)
    except _Base64Error as error:
        raise invalid_continue(f"{INVALID_KEY}: {error}") from None
    try:
        data = json.loads(raw)
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError: said as Go's decoder says it
        offset = error.pos if isinstance(error, json.JSONDecodeError) else 0
        text = raw[offset : offset + 1].decode("latin-1")
        why = (
            f"invalid character {text!r} looking for beginning of value"
            if text
            else "unexpected end of JSON input"
        )
        raise invalid_continue(f"{INVALID_KEY}: {why}") from None
    if data is None:  # JSON null decodes into Go's zero value: a token of no version
        data = {}
    if not isinstance(data, dict):
        kind = {list: "array", str: "string", bool: "bool"}.get(type(data), "number")
        why = f"json: cannot unmarshal {kind} into Go value of type storage.continueToken"
        raise invalid_continue(f"{INVALID_KEY}: {why}")
    version = data.get("v")
    if version != CONTINUE_VERSION:
        shown = version if isinstance(version, str) else ""
        raise invalid_continue(f"{INVALID_KEY}: server does not recognize this encoded version {shown}")
    revision, start = data.get("rv"), data.get("start")
    if not isinstance(revision, int) or isinstance(revision, bool) or not 0 < revision <= _MAX_INT64:
        raise invalid_continue(
            f"{INVALID_KEY}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        )
    if not isinstance(start, str) or not start:
        raise invalid_continue(f"{INVALID_KEY}: encoded start key empty (version meta.k8s.io/v1)")
    # Upstream cleans the key (path.Clean) and refuses one that changes: no climbing out of the prefix.
    if start.startswith("/") or ".." in start.split("/"):
        raise invalid_continue(f"{INVALID_KEY}: {start}")
    return ContinueToken(revision, start)


def invalid_continue(why: str) -> errors.StatusError:
    return errors.bad_request(f"invalid continue token: {why}")


class _Base64Error(ValueError):
    """Go's ``base64.CorruptInputError``: ``illegal base64 data at input byte N``."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"illegal base64 data at input byte {offset}")


_URL_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _raw_url_base64(token: str) -> bytes:
    """``base64.RawURLEncoding.DecodeString``: the URL alphabet, no padding."""
    for offset, char in enumerate(token):
        if char not in _URL_ALPHABET:
            raise _Base64Error(offset)
    if len(token) % 4 == 1:  # a lone trailing character cannot hold a byte
        raise _Base64Error(len(token) - 1)
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a "
    "new list without the continue parameter, or use the continue token in this response to retrieve "
    "the remainder of the results. Continuing with the provided token results in an inconsistent list "
    "- objects that were created, modified, or deleted between the time the first chunk was returned "
    "and now may show up in the list."
)

MATCH_VALUES = ["Exact", "NotOlderThan"]


def parse_resource_version(value: str | None) -> int | None:
    """``None`` for unset; the revision otherwise; 400 for garbage (upstream: "invalid resource version")."""
    if value is None or value == "":
        return None
    # strconv.ParseUint(value, 10, 64): ASCII digits only (Python's int() also takes " 7", "+7",
    # "1_0" and other scripts' digits), and nothing past 64 bits.
    if not (value.isascii() and value.isdigit()) or len(value) > 20 or int(value) > _MAX_UINT64:
        raise errors.bad_request(f'invalid resource version "{value}"')
    return int(value)


_MAX_UINT64 = 2**64 - 1
#: A continue token's ``rv`` is an int64 (apiserver ``storage/continue.go``).
_MAX_INT64 = 2**63 - 1


def validate_list_options(
    *,
    resource_version: str | None,
    match: str | None,
    continue_: str | None,
    watch: bool,
    send_initial_events: str | None,
) -> None:
    """``ValidateListOptions`` (staging/src/k8s.io/apimachinery/pkg/apis/meta/internalversion/
    validation/validation.go, with the WatchList feature on): 422 Invalid, kind ListOptions, listing
    the problems in upstream's order.

    A watch asking for its initial events needs no ``allowWatchBookmarks``: upstream leaves it
    unchecked, because such events could be asked for with ``resourceVersion=0`` before.
    """
    problems: list[FieldError] = []
    if watch:
        if send_initial_events is not None and match != "NotOlderThan":
            problems.append(
                forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                )
            )
        if match:
            if send_initial_events is None:
                problems.append(
                    forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                    )
                )
            if match != "NotOlderThan":
                problems.append(not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
            if continue_:
                problems.append(_match_with_continue())
    else:
        if match:
            if not resource_version:
                problems.append(
                    forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    )
                )
            if continue_:
                problems.append(_match_with_continue())
            if match not in MATCH_VALUES:
                problems.append(not_supported("resourceVersionMatch", match, [*MATCH_VALUES, ""]))
            if match == "Exact" and resource_version == "0":
                problems.append(
                    forbidden(
                        "resourceVersionMatch",
                        'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                    )
                )
        if send_initial_events is not None:
            problems.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    if problems:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", problems)


def _match_with_continue() -> FieldError:
    return forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided")


__all__ = [
    "EXPIRED_CONTINUE",
    "ContinueToken",
    "decode_continue",
    "encode_continue",
    "parse_resource_version",
    "validate_list_options",
]
