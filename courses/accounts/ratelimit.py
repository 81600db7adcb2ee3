"""Failed sign-ins, counted and limited: a password guesser gets a few tries, then waits.

Every failed sign-in is counted twice: against the username that was typed and against the client's
IP address. Each count lives in a *window* that the first failure opens and that closes ``window``
seconds later; once a count reaches its limit, sign-in is refused, even with the right password, until
its window closes. By default an account name gets 5 failures in 5 minutes (a guesser's rate, not a
student's who mistyped), an address 20 (a whole classroom may sign in from one address behind a
school's NAT; the address's limit stops a guesser spraying one password over many names).

Two choices keep the limit from telling anyone which accounts exist (no user enumeration):

- the username is counted as typed (case-folded and normalised like Django's ``UsernameField``),
  whether or not such an account exists, so a refusal says nothing about the name;
- a refusal is the same message for every name, and so is a failure (Django's "enter a correct
  username and password"; its ``ModelBackend`` even hashes the password of a name that does not exist,
  so a failure takes as long either way).

A successful sign-in clears its username's count (four typos do not linger), never the address's: a
guesser with an account of their own could otherwise clear it between guesses.

The rule is the pure core here (``Limit``, ``Window``, ``refusal``): plain numbers in, a ``Refusal``
with its retry time out, tested without a cache or a clock. The thin adapter below it keeps the counts
in Django's cache with its atomic ``add`` and ``incr``, so that parallel attempts cannot lose a count.
Django's default cache is one process's memory: enough for ``manage.py runlab``, but several web
processes must share a cache (``KUBELAB_CACHE=redis://...``), or each one counts only the failures it
saw. The limit is applied where passwords are checked, the authentication backend
(``courses.accounts.backends``), so the admin's sign-in is limited too; the sign-in page asks first to
say when to retry.
"""

from __future__ import annotations

import hashlib
import math
import time
import unicodedata
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

# -- the pure core -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limit:
    """At most ``failures`` failed sign-ins in ``window`` seconds."""

    failures: int
    window: float


@dataclass(frozen=True)
class Window:
    """What is counted for one key: ``failures`` since ``opened`` (a Unix time, the first failure)."""

    failures: int
    opened: float


@dataclass(frozen=True)
class Refusal:
    """Sign-in is refused until ``retry_at`` (a Unix time)."""

    retry_at: float

    def retry_after(self, *, now: float) -> int:
        """Whole seconds to wait, at least 1 (what an HTTP ``Retry-After`` says)."""
        return max(1, math.ceil(self.retry_at - now))


def refusal(window: Window | None, *, limit: Limit, now: float) -> Refusal | None:
    """Whether ``window``'s count refuses a sign-in at ``now``, and until when."""
    if window is None or now >= window.opened + limit.window or window.failures < limit.failures:
        return None
    return Refusal(retry_at=window.opened + limit.window)


def latest(*refusals: Refusal | None) -> Refusal | None:
    """The refusal that lasts longest, if any: a sign-in must wait for every key that refuses it."""
    found = [r for r in refusals if r is not None]
    return max(found, key=lambda r: r.retry_at) if found else None


def username_key(username: str) -> str:
    """The count's key for a typed username: "Alice" and "alice" are one name to a guesser.

    Hashed, so any string (a very long one, one with spaces) makes a valid cache key, and the cache
    holds no names."""
    normal = unicodedata.normalize("NFKC", username).casefold()
    return "kubelab:signin:user:" + hashlib.sha256(normal.encode()).hexdigest()


def address_key(ip: str) -> str:
    """The count's key for a client IP address."""
    return "kubelab:signin:ip:" + hashlib.sha256(ip.encode()).hexdigest()


# -- the adapter: Django's cache and settings ---------------------------------------------------------


def user_limit() -> Limit:
    return Limit(failures=settings.KUBELAB_SIGNIN_FAILURES, window=settings.KUBELAB_SIGNIN_WINDOW)


def address_limit() -> Limit:
    return Limit(failures=settings.KUBELAB_SIGNIN_FAILURES_PER_IP, window=settings.KUBELAB_SIGNIN_WINDOW)


def client_ip(request: HttpRequest) -> str | None:
    """The address the request came from, as the server saw it.

    Never ``X-Forwarded-For``, which any client can write: behind a reverse proxy, let the server
    take the proxy's header (daphne's ``--proxy-headers``), so that ``REMOTE_ADDR`` is the client's."""
    return request.META.get("REMOTE_ADDR") or None


def _keys(*, username: str, ip: str | None) -> list[tuple[str, Limit]]:
    keys = [(username_key(username), user_limit())]
    if ip is not None:
        keys.append((address_key(ip), address_limit()))
    return keys


def _read(key: str) -> Window | None:
    found = cache.get_many([f"{key}:n", f"{key}:t"])
    if f"{key}:t" not in found:
        return None
    return Window(failures=int(found.get(f"{key}:n", 0)), opened=float(found[f"{key}:t"]))


def signin_refusal(*, username: str, ip: str | None, now: float | None = None) -> Refusal | None:
    """Whether a sign-in as ``username`` from ``ip`` is refused now, and until when."""
    now = time.time() if now is None else now
    return latest(
        *(refusal(_read(key), limit=limit, now=now) for key, limit in _keys(username=username, ip=ip))
    )


def record_failure(*, username: str, ip: str | None) -> None:
    """Count one failed sign-in against ``username`` and ``ip``."""
    now = time.time()
    for key, limit in _keys(username=username, ip=ip):
        timeout = max(1, math.ceil(limit.window))
        # The first failure opens the window: ``add`` writes only where nothing is, atomically, and
        # both entries expire with the window. ``incr`` is atomic in every cache backend of Django's.
        cache.add(f"{key}:t", now, timeout=timeout)
        if not cache.add(f"{key}:n", 1, timeout=timeout):
            try:
                cache.incr(f"{key}:n")
            except ValueError:  # expired between the two calls: this failure opens a new window
                cache.add(f"{key}:n", 1, timeout=timeout)


def clear_failures(*, username: str) -> None:
    """Forget ``username``'s failures (after a successful sign-in); the address's count stays."""
    key = username_key(username)
    cache.delete_many([f"{key}:n", f"{key}:t"])
