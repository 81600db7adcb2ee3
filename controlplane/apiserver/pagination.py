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
import binascii
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


def decode_continue(token: str) -> ContinueToken:
    """Parse a continue token; 400 BadRequest (as upstream) when it is not one of ours."""
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, UnicodeDecodeError) as error:
        raise errors.bad_request(f"continue key is not valid: {error}") from None
    if not isinstance(data, dict) or data.get("v") != CONTINUE_VERSION:
        raise errors.bad_request("continue key is not valid: server does not recognize this encoded version")
    revision, start = data.get("rv"), data.get("start")
    if not isinstance(revision, int) or isinstance(revision, bool) or not 0 < revision <= _MAX_INT64:
        raise errors.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        )
    if not isinstance(start, str) or not start:
        raise errors.bad_request(
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
        )
    if start.startswith("/") or ".." in start.split("/"):
        raise errors.bad_request("continue key is not valid: key must not be an absolute path")
    return ContinueToken(revision, start)


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
    allow_bookmarks: bool,
) -> None:
    """apimachinery ``ValidateListOptions``: 422 Invalid (kind ListOptions) for bad combinations."""
    problems: list[FieldError] = []
    if match:
        if match not in MATCH_VALUES:
            problems.append(not_supported("resourceVersionMatch", match, MATCH_VALUES))
        if watch and send_initial_events is None:
            problems.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                )
            )
        elif not resource_version and not watch:
            problems.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if continue_:
            problems.append(
                forbidden(
                    "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"
                )
            )
        if match == "Exact" and resource_version == "0":
            problems.append(
                forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if send_initial_events is not None:
        if not watch:
            problems.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
        else:
            if match != "NotOlderThan":
                problems.append(
                    forbidden(
                        "resourceVersionMatch",
                        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                    )
                )
            if not allow_bookmarks:
                problems.append(
                    forbidden(
                        "allowWatchBookmarks",
                        "sendInitialEvents requires setting allowWatchBookmarks to true",
                    )
                )
    if problems:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", problems)


__all__ = [
    "EXPIRED_CONTINUE",
    "ContinueToken",
    "decode_continue",
    "encode_continue",
    "parse_resource_version",
    "validate_list_options",
]
