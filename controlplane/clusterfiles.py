"""A cluster's small shared files: read again whenever another process has changed them.

Several processes of one lab (``runlab``, ``manage.py kubeconfig``, ``manage.py revokecert``) share a
cluster's token registry and certificate revocation list through files in its data directory. Each
reader keeps what it parsed together with the file's *signature* (inode, modification time, size):
writers replace the file atomically, so a new signature means a new version, and a reader whose
signature no longer matches reads the file again before answering. This is how a token issued or a
certificate revoked in one process counts at once in the running lab.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

#: What identifies one version of a file: inode, modification time, size (None: no file).
FileSignature = tuple[int, int, int] | None


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
