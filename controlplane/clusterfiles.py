"""A cluster's small shared files: read again whenever another process has changed them.

Several processes of one lab (``runlab``, ``manage.py kubeconfig``, ``manage.py revokecert``) share a
cluster's token registry and certificate revocation list through files in its data directory. Each
reader keeps what it parsed together with the file's *signature* (inode, modification time, size):
writers replace the file atomically, so a new signature means a new version, and a reader whose
signature no longer matches reads the file again before answering. This is how a token issued or a
certificate revoked in one process counts in the running lab.

Looking costs a ``stat`` system call, and the API server asks on every request (its bearer token, its
client certificate's serial). So a reader looks at most every ``RECHECK_SECONDS`` (``Recheck``): a
revocation counts within a tenth of a second, and a reader that does not know a token looks again at
once, so a token issued a moment ago works on its first request.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: What identifies one version of a file: inode, modification time, size (None: no file).
FileSignature = tuple[int, int, int] | None


#: How often a reader looks at a shared file for changes, at most.
RECHECK_SECONDS = 0.1


class Recheck:
    """When a reader should look at its file again: at most every ``seconds`` (see the module docstring)."""

    __slots__ = ("_last", "_monotonic", "seconds")

    def __init__(
        self, seconds: float = RECHECK_SECONDS, *, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.seconds = seconds
        self._monotonic = monotonic
        self._last = float("-inf")

    def due(self, *, anyway: bool = False) -> bool:
        """Whether to look now (``anyway``: yes); if so, the interval starts again."""
        now = self._monotonic()
        if not anyway and now - self._last < self.seconds:
            return False
        self._last = now
        return True


def file_signature(path: Path) -> FileSignature:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def read_json(path: Path, what: str) -> tuple[Any, FileSignature]:
    """The decoded document in ``path`` and its signature; a signature of None: there is no file.

    ``RuntimeError`` names ``what`` the file is when it cannot be read or is not JSON.
    """
    signature = file_signature(path)
    if signature is None:
        return None, None
    try:
        return json.loads(path.read_bytes()), signature
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as error:
        raise RuntimeError(f"cannot read {what} {path}: {error}") from error
