"""The accounts tests' fixtures: a clean failure count for every test, and a fast password hasher.

Failed sign-ins are counted in Django's cache, which lives as long as the test process: each test
starts and ends with an empty one, so no count leaks into another test. Django's real hasher takes a
good part of a second per password on purpose; the tests check the rules around it, not its cost.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.cache import cache
from pytest_django import Settings


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def fast_hasher(settings: Settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
