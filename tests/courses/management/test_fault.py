"""``manage.py fault``: the catalogue with the chapters that use each kind, and faults applied to a
cluster of a running lab through the spool (the lab's inbox runs in this test's event loop, the
command in a thread, as two processes would)."""

from __future__ import annotations

import asyncio
import io
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from pytest_django import Settings

from controlplane.faults import inbox
from controlplane.faults.catalogue import CATALOGUE
from controlplane.faults.service import FaultService
from controlplane.runtime import Lab, LabConfig
from courses.engine import content
from tests.support.lab import active_lab

FIXTURES = Path(__file__).parents[1] / "engine" / "fixtures" / "valid"


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("fault", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_list_says_every_kind_its_parameters_and_the_chapters_that_use_it(
    tmp_path: Path, settings: Settings
) -> None:
    shutil.copytree(FIXTURES / "tiny", tmp_path / "tiny")
    chapter = tmp_path / "tiny" / "01-first" / "chapter.yaml"
    first_action = '      - {kubectl: "kubectl get configmap -w"}\n'
    text = chapter.read_text(encoding="utf-8")
    chapter.write_text(
        text.replace(first_action, first_action + "      - {fault: stop-kubelet, node: node-1}\n")
    )
    settings.KUBELAB_COURSE_CONTENT = tmp_path
    content.reload()
    try:
        said = run("list")
    finally:
        content.reload()
    kinds = [line.split()[0] for line in said.splitlines() if not line.startswith(" ")]
    assert kinds == list(CATALOGUE), "every kind, in the catalogue's order"
    assert kinds[:8] == [
        "compact-store",
        "restart-apiserver",
        "stop-kubelet",
        "stop-kube-proxy",
        "stop-scheduler",
        "stop-controller-manager",
        "crash-loop",
        "hot-loop-client",
    ]
    block = said[said.index("stop-kubelet  (") : said.index("stop-kube-proxy  (")]
    assert "--target node-1 ... node-N (or --param node=...)" in block
    assert "--for DURATION: how long it lasts (1 s to 1800 s)" in block
    assert "chapters: tiny/01-first" in block
    assert said.count("chapters: none yet") == len(CATALOGUE) - 1
    crash_loop = said[said.index("crash-loop  (") : said.index("hot-loop-client  (")]
    assert "crash-loop  (target {component}; lasts until cleared (at most 1800 s))" in crash_loop
    shape = "scheduler | controller-manager | kube-proxy:node-N"
    assert f"--target {shape} (or --param component=...)" in crash_loop


@pytest.fixture
async def lab(tmp_path: Path, settings: Settings) -> AsyncIterator[Lab]:
    """A running lab in the settings' data directory, its kubelets only, answering the spool."""
    settings.KUBELAB_DATA_DIR = tmp_path
    config = LabConfig(data_dir=tmp_path, demo_cluster="demo", components=("kubelet",))
    async with active_lab(config) as running:
        serving = asyncio.create_task(inbox.serve(running, tmp_path, interval=0.02))
        try:
            yield running
        finally:
            serving.cancel()
            with pytest.raises(asyncio.CancelledError):
                await serving


async def test_apply_and_clear_go_through_the_running_labs_fault_service(lab: Lab) -> None:
    faults = FaultService.of(lab)
    cluster = lab.cluster("demo")

    said = await asyncio.to_thread(
        run, "apply", "stop-kubelet", "--cluster", "demo", "--target", "node-2", "--for", "5m"
    )

    assert said.startswith(
        "stop-kubelet on kubelet:node-2 of cluster 'demo': applied, ends in 300 s unless cleared"
    )
    assert "  f1  stop-kubelet  kubelet:node-2  (node=node-2)  until " in said
    (fault,) = faults.in_force("demo")
    assert fault.reason.startswith("manage.py fault, by ")
    assert cluster.components_stopped == {"kubelet:node-2"}

    listed = await asyncio.to_thread(run, "list", "--cluster", "demo")
    assert "1 fault(s) in force on cluster 'demo'" in listed

    said = await asyncio.to_thread(
        run, "clear", "stop-kubelet", "--cluster", "demo", "--target", "kubelet:node-2"
    )
    assert said.strip() == "cleared 1 fault(s) of cluster 'demo'"
    assert faults.in_force() == [] and cluster.components_stopped == set()

    before = await cluster.store.current_revision()
    await asyncio.to_thread(run, "apply", "compact-store", "--cluster", "demo")
    # Compacted at the revision it found; the kubelets' Lease renewals may have written since.
    compacted = await cluster.store.compact_revision()
    assert before <= compacted <= await cluster.store.current_revision()
    said = await asyncio.to_thread(run, "clear", "--cluster", "demo", "--all")
    assert said.strip() == "cleared 0 fault(s) of cluster 'demo'; it is healed"


async def test_what_the_command_refuses(lab: Lab) -> None:
    async def refused(*args: str) -> str:
        with pytest.raises(CommandError) as error:
            await asyncio.to_thread(run, *args)
        return str(error.value)

    assert "'stop-node' is not a fault kind" in await refused("apply", "stop-node", "--cluster", "demo")
    assert "the lab in" in await refused("apply", "compact-store", "--cluster", "nope")
    assert "compact-store takes no for" in await refused(
        "apply", "compact-store", "--cluster", "demo", "--for", "1m"
    )
    assert "'5 min' is no duration" in await refused(
        "apply", "hot-loop-client", "--cluster", "demo", "--for", "5 min"
    )
    assert "nothing to clear" in await refused("clear", "restart-apiserver", "--cluster", "demo")
    # Checked again by the lab, which knows the cluster's nodes.
    assert "the cluster has 3 node(s)" in await refused(
        "apply", "stop-kubelet", "--cluster", "demo", "--target", "node-4"
    )
    assert FaultService.of(lab).in_force() == []


def test_target_is_the_parameter_or_the_diagram_id_that_names_it() -> None:
    from courses.management.commands.fault import Command

    def values(kind: str, target: str) -> dict[str, object]:
        return Command()._values(kind, {"param": [], "target": target})

    assert values("stop-kubelet", "kubelet:node-2") == {"node": "node-2"}
    assert values("stop-kube-proxy", "kube-proxy:node-2") == {"node": "node-2"}
    assert values("stop-kube-proxy", "node-3") == {"node": "node-3"}
    assert values("crash-loop", "kube-proxy:node-2") == {"component": "kube-proxy:node-2"}
    assert values("crash-loop", "scheduler") == {"component": "scheduler"}
    with pytest.raises(CommandError, match="stop-scheduler has no one parameter"):
        values("stop-scheduler", "scheduler")


def test_a_cluster_no_lab_serves_is_refused(tmp_path: Path, settings: Settings) -> None:
    settings.KUBELAB_DATA_DIR = tmp_path
    (tmp_path / "clusters.json").write_text('{"version": 1, "clusters": ["demo"]}\n')
    with pytest.raises(CommandError, match="no running lab serves cluster 'demo'"):
        run("apply", "compact-store", "--cluster", "demo")


def test_runlab_restarts_its_api_server_for_the_command_and_kubectl_goes_on(tmp_path: Path) -> None:
    """The whole way, in real processes: ``manage.py fault`` asks a ``runlab`` through its data
    directory, and the real kubectl, over HTTPS, is answered before and after."""
    import subprocess
    import sys

    from tests.support.lab import ROOT, LiveLab

    lab = LiveLab(tmp_path / "lab")
    try:
        before = lab.kubectl_json("get", "nodes")
        assert len(before["items"]) == 4  # three workers and the control-plane node
        command = [sys.executable, "manage.py", "fault", "apply", "restart-apiserver", "--cluster", "demo"]
        done = subprocess.run(
            [*command, "--data-dir", str(lab.data_dir)], cwd=ROOT, env=lab.env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("restart-apiserver on apiserver of cluster 'demo': applied")
        after = lab.kubectl_json("get", "nodes")
        names = sorted(n["metadata"]["name"] for n in after["items"])
        assert names == ["control-plane", "node-1", "node-2", "node-3"]
        lab.kubectl("create", "configmap", "after-restart", "--from-literal=a=b")
        assert lab.kubectl_json("get", "configmap", "after-restart")["data"] == {"a": "b"}
    finally:
        lab.stop()
    assert "Traceback" not in lab.log.read_text()
