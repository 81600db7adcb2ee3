"""UIDs: the random UUIDs that name objects (``metadata.uid``) and requests (``Audit-ID``).

Kubernetes gives every object a UUID when it is created (``metadata.uid``), and every request an
Audit-ID of the same kind: version 4, 122 random bits from the system's secure random source (Go's
``crypto/rand`` behind ``github.com/google/uuid``'s ``New``), written as 36 characters,
``xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx`` where ``V`` is 8, 9, a or b (RFC 9562's variant bits).

Python's ``uuid.uuid4()`` asks the kernel for 16 random bytes every time, and a busy API server makes
several UUIDs per request (the Audit-ID, the client's, a created object's uid). Here the bytes come
from the same source 4 KiB at a time, and each UUID is cut from them: the same randomness, one system
call per 256 UUIDs. A lock keeps two threads from cutting the same bytes, and a forked child starts
with a fresh pool, so that two processes never share one.

Generated names (``generateName``'s suffix, the ``kube-api-access-xxxxx`` volume) are a different
kind of random: ``k8s.io/apimachinery/pkg/util/rand``'s ``String``, a few characters from an alphabet
without vowels, drawn from Go's ``math/rand`` seeded at start. Not secret, only unlikely to collide
(the registry retries a taken name), so ``random_string`` draws them the same way.
"""

from __future__ import annotations

import os
import random
import threading

#: Random bytes fetched at once (256 UUIDs).
POOL_BYTES = 4096

#: The variant digit of each hex digit: its top two bits set to ``10``.
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}

_lock = threading.Lock()
_pool = b""
_offset = 0


#: ``utilrand``'s alphabet: no vowels (no words), no 0, 1 or 3 (no look-alikes).
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"

_names = random.Random()  # seeded from the system's random source


def _reset_pool() -> None:
    global _pool, _offset
    _pool, _offset = b"", 0
    _names.seed()


os.register_at_fork(after_in_child=_reset_pool)


def new_uid() -> str:
    """A new random (version 4) UUID, as a string: ``str(uuid.uuid4())``, cheaper."""
    global _pool, _offset
    with _lock:
        if _offset >= len(_pool):
            _pool, _offset = os.urandom(POOL_BYTES), 0
        raw = _pool[_offset : _offset + 16]
        _offset += 16
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


def random_string(length: int) -> str:
    """``utilrand.String``: ``length`` random characters of ``ALPHANUMS``."""
    return "".join(_names.choices(ALPHANUMS, k=length))


__all__ = ["ALPHANUMS", "POOL_BYTES", "new_uid", "random_string"]
