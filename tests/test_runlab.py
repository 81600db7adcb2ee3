"""``manage.py runlab`` for real: a subprocess on free ports, stopped with signals, started again.

What a student sees with ``make run``: the landing page answers as soon as the ports are open (the
clusters start behind it), Ctrl-C stops the lab cleanly with exit status 0 and the stores closed
(SQLite's WAL checkpointed into the store file), and the next start resumes the same clusters.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from config.settings import BASE_DIR
from controlplane.management.commands.runlab import Address, parse_address
from controlplane.runtime import read_cluster_list
from controlplane.store.factory import store_path
from tests.support.services import free_port

START_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0

pytestmark = pytest.mark.slow


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Runlab:
    """One ``manage.py runlab`` process, its output in a file."""

    def __init__(self, data_dir: Path, log: Path, *extra: str, sigint_ignored: bool = False) -> None:
        self.web = free_port()
        self.api = free_port()
        self.log = log
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBELAB_")}
        env.update(PYTHONUNBUFFERED="1", DJANGO_SETTINGS_MODULE="config.settings")
        command = [
            sys.executable,
            "manage.py",
            "runlab",
            "--web",
            f"127.0.0.1:{self.web}",
            "--api",
            f"127.0.0.1:{self.api}",
            "--data-dir",
            str(data_dir),
            *extra,
        ]
        with log.open("w") as out:
            self.process = subprocess.Popen(
                command,
                cwd=BASE_DIR,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                # As a shell without job control starts a background command (`make run &`).
                preexec_fn=_ignore_sigint if sigint_ignored else None,
            )

    def output(self) -> str:
        return self.log.read_text()

    def url(self, path: str = "/", port: int | None = None) -> str:
        return f"http://127.0.0.1:{port or self.web}{path}"

    def get(self, path: str = "/", port: int | None = None) -> tuple[int, str]:
        with urllib.request.urlopen(self.url(path, port), timeout=10) as response:
            return response.status, response.read().decode()

    def wait_for_http(self) -> tuple[int, str]:
        """The first answer of the web port."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            self.assert_alive()
            try:
                return self.get()
            except (TimeoutError, urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        raise AssertionError(f"the web port never answered:\n{self.output()}")

    def wait_for_output(self, text: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while text not in self.output():
            self.assert_alive()
            if time.monotonic() > deadline:
                raise AssertionError(f"runlab never printed {text!r}:\n{self.output()}")
            time.sleep(0.1)

    def assert_alive(self) -> None:
        if self.process.poll() is not None:
            raise AssertionError(f"runlab exited with {self.process.returncode}:\n{self.output()}")

    def stop(self, sig: signal.Signals = signal.SIGINT) -> int:
        self.process.send_signal(sig)
        try:
            return self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"runlab did not stop on {sig.name}:\n{self.output()}") from None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def runlabs(tmp_path: Path) -> Iterator[list[Runlab]]:
    """Every runlab a test starts is killed at the end, whatever happened."""
    started: list[Runlab] = []
    yield started
    for runlab in started:
        runlab.kill()


def start(
    runlabs: list[Runlab], data_dir: Path, tmp_path: Path, *extra: str, sigint_ignored: bool = False
) -> Runlab:
    runlab = Runlab(data_dir, tmp_path / f"runlab-{len(runlabs)}.log", *extra, sigint_ignored=sigint_ignored)
    runlabs.append(runlab)
    return runlab


def test_runlab_serves_stops_cleanly_and_resumes(
    runlabs: list[Runlab], data_dir: Path, tmp_path: Path
) -> None:
    first = start(runlabs, data_dir, tmp_path)

    # The landing page answers from the start, whatever state the clusters are in.
    status, page = first.wait_for_http()
    assert status == 200
    assert "Learn Kubernetes by watching it work" in page

    first.wait_for_output("Lab running.")
    out = first.output()
    assert f"http://127.0.0.1:{first.web}/" in out
    assert f"https://127.0.0.1:{first.api}/clusters/" in out
    assert str(data_dir) in out
    assert "Store backend:   sqlite" in out
    assert "cluster demo: running" in out

    status, page = first.get()
    assert '<a href="/lab/demo/">demo</a>' in page
    assert "state-running" in page
    assert first.get("/static/vendor/htmx/htmx.min.js")[0] == 200
    assert first.get("/lab/demo/")[0] == 200

    assert first.stop(signal.SIGINT) == 0
    assert "Lab stopped." in first.output()
    store = store_path(data_dir, "demo")
    wal = store.with_name(store.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0, "the store was not closed (WAL not checkpointed)"
    assert read_cluster_list(data_dir) == ["demo"]
    inode = store.stat().st_ino

    # The second start finds the same cluster, in the same file, and SIGTERM stops it as cleanly.
    second = start(runlabs, data_dir, tmp_path)
    second.wait_for_output("Lab running.")
    assert "cluster demo: running" in second.output()
    assert "creating the demo cluster" not in second.output()
    assert store.stat().st_ino == inode
    assert second.stop(signal.SIGTERM) == 0
    assert "Lab stopped." in second.output()


def test_the_landing_page_answers_while_clusters_start(
    runlabs: list[Runlab], data_dir: Path, tmp_path: Path
) -> None:
    # Hold the demo store's write lock, so that the cluster cannot finish starting until we let go.
    path = store_path(data_dir, "demo")
    path.parent.mkdir(parents=True)
    lock = sqlite3.connect(path, isolation_level=None)
    try:
        lock.execute("PRAGMA journal_mode=WAL")
        lock.execute("BEGIN EXCLUSIVE")
        runlab = start(runlabs, data_dir, tmp_path)
        runlab.wait_for_output("Starting clusters")
        status, page = runlab.get()
        assert status == 200
        assert "state-starting" in page, "the store lock did not hold the cluster in 'starting'"
        assert 'hx-trigger="load delay:1s"' in page  # the list polls until the cluster runs
        assert "Lab running." not in runlab.output()
    finally:
        lock.rollback()
        lock.close()
    runlab.wait_for_output("Lab running.")
    assert "state-running" in runlab.get()[1]
    assert runlab.stop() == 0


def test_ctrl_c_while_clusters_start_still_stops_cleanly(
    runlabs: list[Runlab], data_dir: Path, tmp_path: Path
) -> None:
    # Started with SIGINT ignored, as by `make run &`: Ctrl-C must stop the lab all the same.
    runlab = start(runlabs, data_dir, tmp_path, sigint_ignored=True)
    runlab.wait_for_output("Starting clusters")
    assert runlab.stop(signal.SIGINT) == 0
    assert "Lab stopped." in runlab.output()


def test_a_busy_port_is_an_error(data_dir: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "runlab",
                "--web",
                f"127.0.0.1:{port}",
                "--data-dir",
                str(data_dir),
            ],
            cwd=BASE_DIR,
            env={k: v for k, v in os.environ.items() if not k.startswith("KUBELAB_")},
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT,
        )
    assert result.returncode != 0
    assert "could not listen" in result.stderr
    assert not (data_dir / "clusters").exists(), "no cluster may start when the lab cannot serve"


def test_a_lab_that_cannot_start_exits_non_zero(data_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBELAB_")}
    env["KUBELAB_STORE"] = "nosuchbackend://x"
    web, api = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    result = subprocess.run(
        [sys.executable, "manage.py", "runlab", "--web", web, "--api", api, "--data-dir", str(data_dir)],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT,
    )
    assert result.returncode == 1
    assert "unsupported store URL 'nosuchbackend://x'" in result.stderr
    assert "Lab stopped." in result.stdout


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("127.0.0.1:8000", Address("127.0.0.1", 8000)),
        ("0.0.0.0:80", Address("0.0.0.0", 80)),
        ("[::1]:6443", Address("::1", 6443)),
        (":9000", Address("127.0.0.1", 9000)),
        ("9000", Address("127.0.0.1", 9000)),
        ("lab.local:8080", Address("lab.local", 8080)),
    ],
)
def test_addresses(text: str, address: Address) -> None:
    assert parse_address(text) == address


def test_ipv6_endpoints_escape_colons() -> None:
    assert Address("::1", 6443).endpoint() == r"tcp:port=6443:interface=\:\:1"
    assert Address("::1", 6443).url() == "http://[::1]:6443/"
    assert Address("0.0.0.0", 8000).url() == "http://127.0.0.1:8000/"


@pytest.mark.parametrize("text", ["localhost", "host:port", "1:99999"])
def test_bad_addresses(text: str) -> None:
    import argparse

    with pytest.raises(argparse.ArgumentTypeError):
        parse_address(text)


def test_the_api_port_serves_https_with_the_serving_ca_and_the_web_port_http(
    runlabs: list[Runlab], data_dir: Path, tmp_path: Path
) -> None:
    runlab = start(runlabs, data_dir, tmp_path)
    assert runlab.wait_for_http()[0] == 200  # the web port: plain HTTP
    runlab.wait_for_output("Lab running.")
    assert f"https://127.0.0.1:{runlab.api}/clusters/<cluster>" in runlab.output()
    ca = data_dir / "pki" / "serving-ca.crt"
    assert str(ca) in runlab.output()

    # The handshake verifies against the serving CA, and the certificate names 127.0.0.1.
    trust = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection(("127.0.0.1", runlab.api), timeout=10) as raw,
        trust.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        peer = tls.getpeercert()
    assert peer is not None
    assert ("IP Address", "127.0.0.1") in peer["subjectAltName"]
    with httpx.Client(verify=trust, timeout=10) as client:
        response = client.get(f"https://127.0.0.1:{runlab.api}/")
    assert response.status_code == 200

    # Nothing but the serving CA vouches for it; and the API port speaks no plain HTTP.
    with httpx.Client(timeout=10) as client, pytest.raises(httpx.ConnectError):
        client.get(f"https://127.0.0.1:{runlab.api}/")
    with httpx.Client(timeout=10) as client, pytest.raises(httpx.HTTPError):
        client.get(f"http://127.0.0.1:{runlab.api}/")

    # The web port is still plain HTTP.
    with httpx.Client(timeout=10) as client:
        assert client.get(f"http://127.0.0.1:{runlab.web}/").status_code == 200
    assert runlab.stop() == 0


def test_catalogs_without_a_current_mo_are_stale(tmp_path: Path) -> None:
    from controlplane.management.commands.runlab import stale_catalogs

    messages = tmp_path / "zh_Hans" / "LC_MESSAGES"
    messages.mkdir(parents=True)
    django_po, js_po = messages / "django.po", messages / "djangojs.po"
    for po in (django_po, js_po):
        po.write_text('msgid ""\nmsgstr ""\n')
    assert stale_catalogs([tmp_path]) == [django_po, js_po], "no .mo yet"
    (messages / "django.mo").write_bytes(b"compiled")
    os.utime(messages / "django.mo", (django_po.stat().st_mtime + 10,) * 2)
    assert stale_catalogs([tmp_path]) == [js_po]
    os.utime(messages / "django.mo", (django_po.stat().st_mtime - 10,) * 2)
    assert stale_catalogs([tmp_path]) == [django_po, js_po], "a .po edited after its .mo was built"
