"""The classrooms' tests that need a lab use the sandboxes' one: active in the test's event loop."""

from __future__ import annotations

from tests.courses.sandboxes.conftest import _worker_connections, sandbox_lab

__all__ = ["_worker_connections", "sandbox_lab"]
