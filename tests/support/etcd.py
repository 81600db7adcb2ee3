"""A real etcd server for the tests: one per test session, started on first use, stopped at exit.

The server listens on free loopback ports with its data in a temporary directory, and uses a short
election timeout so it is up in a fraction of a second (and accepts 1-second lease TTLs). Every
``make_store`` gets an etcd key namespace of its own (the cluster keeps the name the test gave it), so
tests never see each other's keys.

Compaction cannot be confined to one cluster: it throws away the history of the whole etcd. A server
that some store compacted is therefore retired once no store uses it any more, and the next store gets
a fresh server, so a test that compacts cannot make a later test fail.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from controlplane.store.etcd import EtcdStore
from tests.support.services import free_port, service_missing

START_TIMEOUT = 30.0


def etcd_binary() -> str | None:
    if os.access("/usr/bin/etcd", os.X_OK):
        return "/usr/bin/etcd"
    return shutil.which("etcd")


class EtcdServer:
    """One etcd process with its data directory."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.client_port = free_port()
        self.peer_port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.client_port}"
        self.users = 0
        self.dirty = False
        # In memory where the machine has it: etcd syncs its WAL to disk on every write (and etcd 3.4,
        # Debian's, has no --unsafe-no-fsync), which on a CI disk costs tens of milliseconds a write,
        # a minute for an API server's first start; on tmpfs a sync is free. Durability across a
        # machine's crash is not what these tests test.
        shm = Path("/dev/shm")
        self._dir = Path(tempfile.mkdtemp(prefix="kubelab-etcd-", dir=shm if shm.is_dir() else None))
        self._log = self._dir / "etcd.log"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        peer = f"http://127.0.0.1:{self.peer_port}"
        command = [
            self.binary,
            "--name=kubelab-test",
            f"--data-dir={self._dir / 'data'}",
            f"--listen-client-urls={self.endpoint}",
            f"--advertise-client-urls={self.endpoint}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=kubelab-test={peer}",
            "--heartbeat-interval=10",
            "--election-timeout=100",
            "--logger=zap",
            "--log-level=error",
        ]
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"etcd exited with {self._process.returncode}:\n{self.log()}")
            try:
                health = httpx.get(f"{self.endpoint}/health", timeout=1.0, trust_env=False).json()
                if health.get("health") in {"true", True}:
                    return
            except (httpx.HTTPError, ValueError, AttributeError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"etcd did not become healthy in {START_TIMEOUT} s:\n{self.log()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self._dir, ignore_errors=True)

    def log(self) -> str:
        try:
            return self._log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


_current: EtcdServer | None = None
_servers: list[EtcdServer] = []
_names = itertools.count(1)


def server() -> EtcdServer:
    """The session's etcd server, started on first use (a fresh one after a compaction)."""
    global _current
    if _current is not None and not _current.dirty:
        return _current
    binary = etcd_binary()
    if binary is None:
        service_missing("etcd (Debian package etcd-server)")
        raise AssertionError("unreachable")  # service_missing skips or fails
    if _current is not None and _current.users == 0:
        _retire(_current)
    fresh = EtcdServer(binary)
    _servers.append(fresh)
    fresh.start()
    _current = fresh
    return fresh


def _retire(old: EtcdServer) -> None:
    old.stop()
    if old in _servers:
        _servers.remove(old)


@atexit.register
def _stop_all() -> None:
    for each in list(_servers):
        _retire(each)


@contextlib.asynccontextmanager
async def make_store(cluster: str = "test", **options: Any) -> AsyncIterator[EtcdStore]:
    """A started ``EtcdStore`` on the session's etcd, under a cluster name used by no other store."""
    etcd = server()
    namespace = f"/kubelab-test/{os.getpid()}-{next(_names)}/{cluster}"
    store = EtcdStore(cluster, endpoint=etcd.endpoint, namespace=namespace, **options)
    etcd.users += 1
    try:
        await store.start()
        try:
            yield store
        finally:
            with contextlib.suppress(Exception):
                if await store.compact_revision() > 0:
                    etcd.dirty = True
            await store.close()
    finally:
        etcd.users -= 1
        if etcd.dirty and etcd.users == 0 and etcd is not _current:
            _retire(etcd)
