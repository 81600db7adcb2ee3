"""A live lab for the real-client tests: ``manage.py runlab`` on free ports, and a kubeconfig for it.

The clients under test (kubectl 1.37, the official ``kubernetes`` client, lightkube) are unmodified and
talk HTTPS to the API port, exactly as a student's would.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.test import override_settings

from controlplane.runtime import Lab, LabConfig, activate
from tests.support.services import free_port

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = Path(sys.executable).parent / "kubectl"
START_TIMEOUT = 90.0


class LiveLab:
    """A running ``runlab`` with a kubeconfig for the demo cluster's admin."""

    def __init__(self, data_dir: Path, **settings: str) -> None:
        self.data_dir = data_dir
        self.web = free_port()
        self.api = free_port()
        self.log = data_dir / "runlab.log"
        self.kubeconfig = data_dir / "kubeconfig"
        self.cache_dir = data_dir / "kube-cache"
        data_dir.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBELAB_")}
        env.update(PYTHONUNBUFFERED="1", DJANGO_SETTINGS_MODULE="config.settings", **settings)
        self.env = env
        command = [
            sys.executable, "manage.py", "runlab",
            "--web", f"127.0.0.1:{self.web}", "--api", f"127.0.0.1:{self.api}", "--data-dir", str(data_dir),
        ]  # fmt: skip
        with self.log.open("w") as out:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        self._wait_for("Lab running.")
        # The command itself, in this process (Django is set up for the tests): a second process
        # would spend seconds importing what this one has imported already. It touches no database,
        # only the lab's files, so pointing the settings at the lab's directory is all it needs.
        made = io.StringIO()
        with override_settings(KUBELAB_DATA_DIR=data_dir.resolve()):
            call_command(
                "kubeconfig", "--cluster", "demo", "--user", "admin",
                "--server", f"https://127.0.0.1:{self.api}", stdout=made,
            )  # fmt: skip
        self.kubeconfig.write_text(made.getvalue())

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api}/clusters/demo"

    def _wait_for(self, text: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while text not in self.log.read_text():
            if self.process.poll() is not None:
                raise AssertionError(f"runlab exited with {self.process.returncode}:\n{self.log.read_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"runlab never printed {text!r}:\n{self.log.read_text()}")
            time.sleep(0.1)

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl 1.37 against the lab; fails the test (with output) if it fails."""
        result = subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
            )
        return result

    def eventually(self, check: Callable[[], Any], what: str, *, seconds: float = 60.0) -> Any:
        """Poll until ``check()`` is truthy and return it: the lab is another process, with nothing
        to await, so a test that cannot use kubectl's own waiting (``wait``, ``rollout status``)
        asks again every 0.2 s."""
        deadline = time.monotonic() + seconds
        while not (result := check()):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {seconds:g} s waiting for {what}")
            time.sleep(0.2)
        return result

    def kubectl_json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@asynccontextmanager
async def active_lab(config: LabConfig) -> AsyncIterator[Lab]:
    """A started in-process lab, made the active one (what the web side and the trace socket ask),
    stopped and deactivated afterwards: what ``manage.py runlab`` does, without its ports."""
    running = Lab(config)
    await running.start()
    activate(running)
    try:
        yield running
    finally:
        activate(None)
        await running.stop()
