"""Fixtures that run a test against every store backend: SQLite, PostgreSQL and a real etcd."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from controlplane.store import Store
from tests.support.stores import BACKENDS, make_store

StoreFactory = Callable[..., contextlib.AbstractAsyncContextManager[Store]]


def _marks(backend: str) -> list[pytest.MarkDecorator]:
    return [getattr(pytest.mark, backend)] if backend in ("postgres", "etcd") else []


@pytest.fixture(params=[pytest.param(b, marks=_marks(b), id=b) for b in BACKENDS])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_factory(backend: str) -> StoreFactory:
    """``async with store_factory(**options) as store``: a started store of the backend under test."""

    def factory(cluster: str = "test", **options: Any) -> contextlib.AbstractAsyncContextManager[Store]:
        return make_store(backend, cluster, **options)

    return factory


@pytest.fixture
async def store(store_factory: StoreFactory) -> AsyncIterator[Store]:
    async with store_factory() as store:
        yield store
