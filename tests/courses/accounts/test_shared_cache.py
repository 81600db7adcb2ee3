"""The failure counts in a cache that several web processes share (``KUBELAB_CACHE=redis://...``):
Django's RedisCache keeps them with the same atomic ``add`` and ``incr`` as the in-memory default, so
failures seen by different processes add up to one count."""

from __future__ import annotations

import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from django.core.cache import caches
from pytest_django import Settings

from courses.accounts import ratelimit
from tests.support.services import REDIS_URL, port_open, service_missing

pytestmark = pytest.mark.redis


@pytest.fixture
def redis_cache(settings: Settings) -> Iterator[None]:
    address = urlsplit(REDIS_URL)
    if not port_open(address.hostname or "127.0.0.1", address.port or 6379):
        service_missing(f"Redis at {REDIS_URL}")
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "kubelab-test-signin",  # nothing else's keys
        }
    }
    caches["default"].clear()
    yield
    caches["default"].clear()


def test_failures_from_two_processes_add_up_in_redis(redis_cache: None, settings: Settings) -> None:
    settings.KUBELAB_SIGNIN_FAILURES = 5
    for _ in range(3):
        ratelimit.record_failure(username="alice", ip="10.0.0.1")
    # A second process: its own connection to the same Redis (a fresh cache handler).
    other = caches.create_connection("default")
    assert other is not caches["default"]
    key = ratelimit.username_key("alice")
    other.incr(f"{key}:n", 2)
    refusal = ratelimit.signin_refusal(username="alice", ip=None)
    assert refusal is not None and 0 < refusal.retry_after(now=time.time()) <= 300
    ratelimit.clear_failures(username="alice")
    assert ratelimit.signin_refusal(username="alice", ip=None) is None
    # The address's count stays: a success clears only the name's.
    assert other.get(f"{ratelimit.address_key('10.0.0.1')}:n") == 3
