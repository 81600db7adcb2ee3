"""Django's database in async tests: rows the worker thread can see, and no connection left behind.

Async code reads the database through ``database_sync_to_async`` (the ORM must not run on the event
loop), that is in asgiref's worker thread, which has a database connection of its own. Two things
follow for a test that needs rows there:

- they must be committed for that connection to see them: use ``transactional_db``, not ``db``;
- the test database is an in-memory SQLite database, whose connections Django never closes (closing
  would drop the database), so the worker's connection outlives the test. Channels checks its
  connections before every message a consumer handles (``aclose_old_connections``), and in a later
  test without database access pytest-django refuses that check. ``forget_worker_connections`` drops
  the worker's connection at the end of the test instead.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.db import connections


def _forget_connections() -> None:
    for connection in connections.all(initialized_only=True):
        del connections[connection.alias]


async def forget_worker_connections() -> None:
    """Drop the connections of the worker thread that ``database_sync_to_async`` uses."""
    await sync_to_async(_forget_connections)()  # thread-sensitive: that same worker thread
