"""Image references: what ``image: nginx:1.27`` means, and the tag that decides pulling.

An image reference is ``[registry[:port]/]path[:tag][@digest]``: ``nginx`` is ``docker.io/library/nginx``,
``nginx:1.27`` names a tag, ``nginx@sha256:...`` names exact content. A tag can be moved to other
content (``latest`` moves all the time); a digest cannot. That is why the default ``imagePullPolicy``
(see ``defaults``) is ``Always`` for ``:latest`` or no tag at all, and ``IfNotPresent`` otherwise.

The grammar is the one of ``github.com/distribution/reference`` (``reference.go``), which upstream's
``pkg/util/parsers`` ``ParseImageName`` uses; ``image_tag`` answers its tag.
"""

from __future__ import annotations

import re

_ALNUM = "[a-z0-9]+"

_SEPARATOR = "(?:[._]|__|[-]+)"

_PATH_COMPONENT = f"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"

_DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"

_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"

_REFERENCE_RE = re.compile(
    rf"^(?:{_HOST}(?::[0-9]+)?/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
)


def image_tag(image: str) -> str:
    """``parsers.ParseImageName``'s tag: ``latest`` when neither tag nor digest, "" if unparsable."""
    match = _REFERENCE_RE.match(image)
    if match is None:
        return ""
    if match.group("tag"):
        return match.group("tag")
    return "" if match.group("digest") else "latest"
