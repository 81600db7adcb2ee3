"""Crash test: SIGKILL a writing process at random moments; no acknowledged write may be lost.

A child process writes continuously and reports each write the store acknowledged. The test kills it
at random moments (at least 20 times), then reopens the store and checks that every acknowledged write
is there, that the revision never went backwards, and that SQLite's integrity check passes. This is
what "a write is acknowledged only once durable" means.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from controlplane.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[3]
KILLS = 20


def run_until_killed(path: Path, generation: int, rng: random.Random) -> tuple[int, list[tuple[str, int]]]:
    """Start a writer, let it acknowledge some writes, SIGKILL it; return its start revision and acks."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.controlplane.store.crash_writer", str(path), str(generation)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert child.stdout is not None
    ready = child.stdout.readline().split()
    assert ready and ready[0] == "ready", f"writer did not start: {ready}"
    acks: list[tuple[str, int]] = []
    # Kill after a random number of acknowledged writes, from "almost at once" to a few hundred.
    goal = rng.choice([1, 5, 20, 100, 300])

    def kill_later() -> None:
        threading.Event().wait(rng.uniform(0.0, 0.05))
        child.send_signal(signal.SIGKILL)

    killer: threading.Thread | None = None
    for line in child.stdout:
        key, revision = line.split()
        acks.append((key, int(revision)))
        if len(acks) == goal and killer is None:
            killer = threading.Thread(target=kill_later)
            killer.start()
    child.wait()
    if killer is not None:
        killer.join()
    assert child.returncode == -signal.SIGKILL, f"writer exited by itself: {child.returncode}"
    return int(ready[1]), acks


@pytest.mark.slow
async def test_no_acknowledged_write_is_lost_when_the_writer_is_killed(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    rng = random.Random(20261130)
    previous = 0
    acknowledged: list[tuple[str, int]] = []
    for generation in range(KILLS):
        start, acks = run_until_killed(path, generation, rng)
        assert start >= previous, f"revision went backwards after kill {generation}: {previous} -> {start}"
        assert acks, f"kill {generation}: the writer acknowledged nothing"
        acknowledged.extend(acks)
        async with SqliteStore("crash", path=path) as store:
            current = await store.current_revision()
            assert current >= max(rev for _, rev in acks), f"kill {generation}: revision behind an ack"
            present = {kv.key: kv.mod_revision for kv in (await store.range("/registry/crash/")).kvs}
        lost = [(key, rev) for key, rev in acknowledged if present.get(key) != rev]
        assert not lost, f"kill {generation}: {len(lost)} acknowledged writes lost, e.g. {lost[:3]}"
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        finally:
            conn.close()
        previous = current
