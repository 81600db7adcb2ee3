"""The audit log file: written by its thread, rotated when it grows, never holding up the loop."""

from __future__ import annotations

import json
from pathlib import Path

from controlplane.apiserver.audit.event import PendingEvent
from controlplane.apiserver.audit.log import AuditLog


def pending(n: int, padding: int = 0) -> PendingEvent:
    return PendingEvent({"kind": "Event", "auditID": f"id-{n}", "pad": "x" * padding})


def ids(path: Path) -> list[str]:
    return [json.loads(line)["auditID"] for line in path.read_text().splitlines()]


def sizes(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in directory.iterdir()}


async def test_events_are_written_in_order_once_flushed(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "audit.log"
    log = AuditLog(path)
    for n in range(5):
        assert log.write(pending(n))
    await log.flush()
    assert ids(path) == [f"id-{n}" for n in range(5)]
    assert path.stat().st_mode & 0o777 == 0o600
    await log.close()
    assert not log.write(pending(99))  # closed: dropped
    assert log.written == 5


async def test_the_log_is_rotated_keeping_only_its_backups(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    log = AuditLog(path, max_bytes=1000, backups=2)
    for n in range(40):
        log.write(pending(n, padding=150))  # ~200 bytes a line: a file holds 5
    await log.close()
    assert sizes(tmp_path).keys() == {"audit.log", "audit.log.1", "audit.log.2"}
    assert all(size <= 1000 + 300 for size in sizes(tmp_path).values())
    newest = ids(path.with_name("audit.log.2")) + ids(path.with_name("audit.log.1")) + ids(path)
    assert newest == [f"id-{n}" for n in range(40 - len(newest), 40)]  # the oldest went, in order


async def test_events_beyond_the_pending_limit_are_dropped_and_counted(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.log", max_pending=3)
    results = [log.write(pending(n)) for n in range(5)]  # nothing handed over yet: all wait on the loop
    assert results == [True, True, True, False, False]
    assert log.dropped == 2
    await log.close()
    assert ids(tmp_path / "audit.log") == ["id-0", "id-1", "id-2"]


async def test_an_event_that_cannot_be_encoded_is_counted_not_fatal(tmp_path: Path) -> None:
    def encoder(p: PendingEvent) -> bytes:
        if p.event["auditID"] == "id-1":
            raise ValueError("boom")
        return json.dumps(p.event).encode() + b"\n"

    log = AuditLog(tmp_path / "audit.log", encoder=encoder)
    for n in range(3):
        log.write(pending(n))
    await log.close()
    assert ids(tmp_path / "audit.log") == ["id-0", "id-2"]
    assert (log.written, log.errors) == (2, 1)


async def test_a_log_that_cannot_be_written_stops_and_counts_what_is_lost(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the log's directory should be")
    log = AuditLog(blocked / "audit.log")
    log.write(pending(1))
    await log.flush()  # the writer fails on its first event, and still answers the flush
    assert not log.write(pending(2))
    assert log.dropped == 1
    await log.close()
