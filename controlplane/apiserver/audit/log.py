"""The audit log: a cluster's audit events as JSON lines in a file, written by a thread of its own.

The API server serves thousands of requests a second on one event loop; writing to a file there would
make every request wait for the disk. So ``AuditLog.write`` only appends the event to a list, which
is handed to a writer thread every ``HAND_OVER_SECONDS`` (or sooner, once ``BATCH`` events wait); the
thread encodes them (the bodies are decoded and checked there, not on the event loop:
``event.encode``) and appends them to ``<cluster dir>/audit/audit.log``. Handing over batches rather
than single events matters: waking a thread hands it Python's interpreter lock, and doing that for
every request cost the API server about a fifth of a millisecond each.

The file is **rotated** when it reaches ``max_bytes``: ``audit.log`` becomes ``audit.log.1``, the old
``audit.log.1`` becomes ``audit.log.2`` ... and only ``backups`` old files are kept, so a cluster's audit
log never takes more than ``(backups + 1) * max_bytes`` (upstream's ``--audit-log-maxsize`` and
``--audit-log-maxbackup``). If the writer falls more than ``max_pending`` events behind (a stalled
disk), new events are dropped and counted rather than piling up in memory, as upstream's buffered
backend does in its non-blocking mode; ``dropped`` and ``errors`` say how many were lost. A file that
cannot be written (a full disk, a read-only directory) is logged once and stops the writer; the API
server goes on serving, and every later event counts as dropped.

Upstream: ``k8s.io/apiserver/plugin/pkg/audit/log/backend.go`` and ``plugin/pkg/audit/buffered``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from controlplane.apiserver.audit.config import DEFAULT_BACKUPS, DEFAULT_MAX_BYTES
from controlplane.apiserver.audit.event import PendingEvent, encode

logger = logging.getLogger(__name__)

#: Events the writer may be behind before new ones are dropped.
DEFAULT_MAX_PENDING = 10_000
#: Events handed to the writer at once, at most; and how long an event waits on the loop before the
#: events so far are handed over anyway.
BATCH = 512
HAND_OVER_SECONDS = 0.05


class _Flush:
    """A marker: tell ``loop`` through ``future`` once everything before it is written."""

    def __init__(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> None:
        self.loop = loop
        self.future = future

    def done(self) -> None:
        def resolve() -> None:
            if not self.future.done():
                self.future.set_result(None)

        self.loop.call_soon_threadsafe(resolve)


_Item = list[PendingEvent] | _Flush | None


class AuditLog:
    """One cluster's audit log file and its writer thread."""

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        max_pending: int = DEFAULT_MAX_PENDING,
        encoder: Callable[[PendingEvent], bytes] = encode,
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self.max_pending = max_pending
        self._encode = encoder
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False
        #: Whether the writer stopped on an error (auditing is off from then on), and whether it ended.
        self._failed = False
        self._writer_done = False
        #: Events not yet handed to the writer, and the timer that will hand them over.
        self._buffer: list[PendingEvent] = []
        self._timer: asyncio.TimerHandle | None = None
        #: Events written, dropped (the writer was too far behind) and lost to errors (disk full).
        self.written = 0
        self.dropped = 0
        self.errors = 0

    def write(self, pending: PendingEvent) -> bool:
        """Queue an event for writing; False if it was dropped (closed, or the writer is behind).

        Called on the event loop (or, outside one, handed over at once).
        """
        if self._closed:
            if self._failed:
                self.dropped += 1
            return False
        if self._queue.qsize() * BATCH + len(self._buffer) >= self.max_pending:
            self.dropped += 1
            return False
        self._buffer.append(pending)
        if len(self._buffer) >= BATCH:
            self._hand_over()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._hand_over()
            else:
                self._timer = loop.call_later(HAND_OVER_SECONDS, self._hand_over)
        return True

    def _hand_over(self) -> None:
        """Give the events so far to the writer thread (started on first use)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._buffer:
            return
        batch, self._buffer = self._buffer, []
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"audit-log:{self.path}", daemon=True)
            self._thread.start()
        self._queue.put(batch)

    async def flush(self) -> None:
        """Wait until every event written so far is in the file."""
        self._hand_over()
        if self._thread is None or self._closed:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._queue.put(_Flush(loop, future))
        if self._writer_done:  # it stopped (on an error) and will not answer: answer for it
            self._release_flushes()
        await future

    async def close(self) -> None:
        """Write what is queued, then stop the writer. Later events are dropped."""
        if self._closed:
            return
        self._hand_over()
        self._closed = True
        thread = self._thread
        if thread is not None:
            self._queue.put(None)
            await asyncio.to_thread(thread.join)

    # -- the writer thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        out: BinaryIO | None = None
        size = 0
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    return
                if isinstance(item, _Flush):
                    if out is not None:
                        out.flush()
                    item.done()
                    continue
                for pending in item:
                    if out is None:
                        out, size = self._open()
                    size += self._write_one(out, pending)
                    if size >= self.max_bytes:
                        out.close()
                        self._rotate()
                        out, size = self._open()
                if out is not None and self._queue.empty():
                    out.flush()
        except OSError as error:
            logger.error("audit log %s: %s; auditing stops", self.path, error)
            self._failed = True
            self._closed = True
        finally:
            if out is not None:
                with contextlib.suppress(OSError):
                    out.close()
            self._writer_done = True  # before the last look at the queue: see ``flush``
            self._release_flushes()

    def _write_one(self, out: BinaryIO, pending: PendingEvent) -> int:
        try:
            line = self._encode(pending)
        except Exception:  # a bug in encoding must not stop the log
            self.errors += 1
            logger.exception("audit log %s: cannot encode an event", self.path)
            return 0
        out.write(line)
        self.written += 1
        return len(line)

    def _open(self) -> tuple[BinaryIO, int]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        out = self.path.open("ab")
        os.chmod(self.path, 0o600)  # who did what: for the lab's operator only
        return out, out.tell()

    def _rotate(self) -> None:
        """``audit.log`` -> ``audit.log.1`` -> ... -> ``audit.log.<backups>``, the oldest removed."""
        if self.backups <= 0:
            self.path.unlink(missing_ok=True)
            return
        oldest = self.path.with_name(f"{self.path.name}.{self.backups}")
        oldest.unlink(missing_ok=True)
        for n in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{n + 1}"))
        self.path.replace(self.path.with_name(f"{self.path.name}.1"))

    def _release_flushes(self) -> None:
        """Wake anyone waiting for a flush that will never come (the writer stopped)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Flush):
                item.done()
