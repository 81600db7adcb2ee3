"""One live lab per test session for the real-client tests (starting one takes a few seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.lab import LiveLab


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("lab")))
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def namespace(lab: LiveLab, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own (named after it), deleted without waiting afterwards."""
    name = request.node.name.removeprefix("test_").replace("_", "-")[:40].strip("-")
    lab.kubectl("create", "namespace", name)
    # Pods need the namespace's default ServiceAccount, which the controller manager makes a moment
    # later (admission waits up to 2 s for it, as upstream's does): wait for it, as a script would.
    lab.kubectl("wait", "--for=create", "serviceaccount/default", "-n", name, "--timeout=60s", timeout=90)
    yield name
    lab.kubectl("delete", "namespace", name, "--wait=false", check=False)
