"""Encryption at rest in a live lab: kubectl sees plaintext, nothing at rest does (store, trace, logs),
and a key rotation on the running lab keeps every Secret readable."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import websocket  # websocket-client

from controlplane.store.factory import store_path
from controlplane.store.sqlite import read_latest
from tests.support.lab import ROOT, LiveLab


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("encrypted-lab")), KUBELAB_TRACE_RECORD="true")
    try:
        yield live
    finally:
        live.stop()


def needles(value: str) -> list[bytes]:
    raw = value.encode()
    return [raw, base64.b64encode(raw), base64.b64encode(raw).rstrip(b"=")]


def trace_text(lab: LiveLab) -> str:
    """Every event the demo cluster's recorder holds, as the trace websocket streams them."""
    socket = websocket.create_connection(
        f"ws://127.0.0.1:{lab.web}/ws/lab/demo/trace/", origin=f"http://127.0.0.1:{lab.web}", timeout=15
    )
    try:
        hello = json.loads(socket.recv())
        assert hello["type"] == "hello", hello
        socket.send(json.dumps({"action": "subscribe", "since": 0}))
        frames, last = [], 0
        while last < hello["last_seq"]:
            frame = json.loads(socket.recv())
            assert frame["type"] == "frame", frame
            frames.append(json.dumps(frame))
            last = frame["last"]
        return "\n".join(frames)
    finally:
        socket.close()


def manage(lab: LiveLab, *args: str) -> str:
    command = [sys.executable, "manage.py", *args, "--data-dir", str(lab.data_dir)]
    done = subprocess.run(command, cwd=ROOT, env=lab.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def password(lab: LiveLab, name: str, key: str = "password") -> str:
    secret = lab.kubectl_json("get", "secret", name)
    return base64.b64decode(secret["data"][key]).decode()


def test_no_secret_value_at_rest_anywhere_in_the_lab_and_rotation_while_it_runs(lab: LiveLab) -> None:
    literal = f"literal-{os.urandom(12).hex()}"
    string_data = f"stringdata-{os.urandom(12).hex()}"
    lab.kubectl("create", "secret", "generic", "db", f"--from-literal=password={literal}")
    manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "api"},
        "stringData": {"token": string_data},
    }
    lab.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    # An authorized client reads the plaintext, as with upstream.
    shown = lab.kubectl("get", "secret", "db", "-o", "yaml").stdout
    assert f"password: {base64.b64encode(literal.encode()).decode()}" in shown
    assert password(lab, "api", "token") == string_data
    stored = read_latest(store_path(lab.data_dir, "demo"), "/registry/secrets/default/")
    assert {kv.key: kv.value[:23] for kv in stored} == {
        "/registry/secrets/default/api": b"k8s:enc:aescbc:v1:key1:",
        "/registry/secrets/default/db": b"k8s:enc:aescbc:v1:key1:",
    }
    trace = trace_text(lab)
    assert "/registry/secrets/default/db" in trace  # the trace shows the write, not the value
    for value in (literal, string_data):
        for needle in needles(value):
            assert needle.decode() not in trace, f"{needle!r} is in the trace"

    # Upstream's rotation while the lab runs: the rewrite goes through the API server.
    said = manage(
        lab, "encryption", "--cluster", "demo", "rotate", "--server", f"https://127.0.0.1:{lab.api}"
    )
    assert "added key key2" in said and "removed key key1" in said, said
    stored = read_latest(store_path(lab.data_dir, "demo"), "/registry/secrets/")
    assert stored and all(kv.value.startswith(b"k8s:enc:aescbc:v1:key2:") for kv in stored)
    assert password(lab, "db") == literal and password(lab, "api", "token") == string_data
    assert "stored secrets: " in manage(lab, "encryption", "--cluster", "demo", "status")

    lab.stop()
    for path in sorted(lab.data_dir.rglob("*")):
        if path.is_file():
            content = path.read_bytes()
            for value in (literal, string_data):
                for needle in needles(value):
                    assert needle not in content, f"{needle!r} is in {path}"
