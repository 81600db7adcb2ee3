"""Services that some tests need (PostgreSQL, Redis, etcd), and what to do when one is missing.

On a developer's machine a missing service skips the tests that need it, saying which. In CI
(``CI=true``) it fails them instead: a suite that silently skipped its PostgreSQL tests is not green.
"""

from __future__ import annotations

import os
import socket

import pytest

POSTGRES_DSN = os.environ.get("KUBELAB_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("KUBELAB_TEST_REDIS", "redis://127.0.0.1:6379/0")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def service_missing(what: str) -> None:
    """Skip (locally) or fail (in CI) the current test because ``what`` is not available."""
    message = f"{what} is not available"
    if in_ci():
        pytest.fail(f"{message}; in CI every service-backed test must run", pytrace=False)
    pytest.skip(message)


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
