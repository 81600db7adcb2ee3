"""The runner: the real kubectl 1.37, against a live lab, inside the walls ``runner.py`` describes."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from courses.console import runner
from courses.console.runner import ExitReason, Limits, Slots, open_workspace, run_once, start
from tests.support.lab import LiveLab

#: A kubeconfig kubectl can read but that leads nowhere: enough for commands that stay on the client.
NOWHERE = b"""apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""


def admin_kubeconfig(lab: LiveLab) -> bytes:
    return lab.kubeconfig.read_bytes()


def gone(pid: int) -> bool:
    """Whether no process ``pid`` exists any more (it was killed and reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def first_output(process: runner.KubectlProcess) -> tuple[str, object]:
    """The first chunk kubectl writes, and the generator to read the rest from."""
    chunks = process.output()
    return await anext(chunks), chunks


async def test_kubectl_runs_inside_its_limits() -> None:
    """The address-space limit is generous enough for Go's runtime (it reserves ~900 MiB at start)."""
    result = await run_once(kubeconfig=NOWHERE, argv=["kubectl", "version", "--client"], timeout=30)
    assert result.exit_code == 0, result.output
    assert "Client Version: v1.37.1" in result.output
    assert result.reason == ExitReason.EXITED


async def test_too_small_an_address_space_stops_kubectl_before_it_runs(tmp_path: Path) -> None:
    """The limits do reach the child: with 256 MiB, Go cannot even start."""
    async with (
        open_workspace(NOWHERE) as workspace,
        start(
            workspace=workspace,
            argv=["kubectl", "version", "--client"],
            timeout=30,
            limits=Limits(address_space=256 << 20),
        ) as process,
    ):
        output = "".join([chunk async for chunk in process.output()])
    assert process.result is not None and process.result.exit_code != 0
    assert "Client Version" not in output


async def test_get_namespaces_from_the_lab_with_the_kubeconfig_from_the_environment(lab: LiveLab) -> None:
    """No --kubeconfig, an empty HOME: the answer can only come from KUBECONFIG in the environment."""
    result = await run_once(kubeconfig=admin_kubeconfig(lab), argv=["kubectl", "get", "ns"], timeout=60)
    assert result.exit_code == 0, result.output
    assert "default" in result.output and "kube-system" in result.output


async def test_the_process_sees_nothing_but_its_three_variables_an_empty_directory_and_its_limits(
    lab: LiveLab,
) -> None:
    async with (
        open_workspace(admin_kubeconfig(lab)) as workspace,
        start(workspace=workspace, argv=["kubectl", "get", "ns", "-w"], timeout=60) as process,
    ):
        chunk, rest = await first_output(process)
        assert "default" in chunk or "NAME" in chunk
        proc = Path(f"/proc/{process.pid}")
        environ = dict(
            item.split("=", 1) for item in (proc / "environ").read_bytes().decode().split("\0") if item
        )
        assert environ == {
            "PATH": str(workspace.bin),
            "HOME": str(workspace.root),
            "KUBECONFIG": str(workspace.kubeconfig),
        }
        assert os.readlink(proc / "cwd") == str(workspace.work)
        assert list(workspace.work.iterdir()) == [] and list(workspace.bin.iterdir()) == []
        assert not os.access(workspace.work, os.W_OK) or os.geteuid() == 0  # root ignores modes
        limits = (proc / "limits").read_text()
        assert "Max core file size        0                    0" in limits
        assert f"Max cpu time              {Limits().cpu_seconds}" in limits
        assert f"Max address space         {Limits().address_space}" in limits
        assert os.getpgid(process.pid) == process.pid  # its own session: killed as a group
        await process.stop()
        async for _ in rest:  # type: ignore[attr-defined]
            pass
    assert process.result is not None
    assert process.result.reason == ExitReason.STOPPED
    assert gone(process.pid)


async def test_the_workspace_is_private_and_goes_away() -> None:
    async with open_workspace(b"secret") as workspace:
        assert stat.S_IMODE(workspace.root.stat().st_mode) == 0o700
        assert stat.S_IMODE(workspace.kubeconfig.stat().st_mode) == 0o600
        assert workspace.kubeconfig.read_bytes() == b"secret"
    assert not workspace.root.exists()


async def test_no_plugin_can_be_found_on_its_path() -> None:
    """Even a command the policy would refuse finds nothing to execute: PATH is an empty directory."""
    result = await run_once(kubeconfig=NOWHERE, argv=["kubectl", "plugin", "list"], timeout=30)
    assert result.exit_code != 0
    assert "unable to find any kubectl plugins" in result.output


async def test_a_command_past_its_time_is_killed(lab: LiveLab) -> None:
    result = await run_once(
        # Long enough for kubectl to start and list on a busy machine, short enough to be cut.
        kubeconfig=admin_kubeconfig(lab),
        argv=["kubectl", "get", "ns", "-w"],
        timeout=5,
    )
    assert result.reason == ExitReason.TIMEOUT
    assert result.exit_code == -9
    assert "default" in result.output  # what it wrote before is kept


async def test_output_past_the_cap_is_cut_and_the_command_killed() -> None:
    async with (
        open_workspace(NOWHERE) as workspace,
        start(
            workspace=workspace,
            argv=["kubectl", "version", "--client", "-o", "yaml"],
            timeout=30,
            limits=Limits(output_bytes=40),
        ) as process,
    ):
        output = "".join([chunk async for chunk in process.output()])
    assert process.result is not None and process.result.reason == ExitReason.OUTPUT_LIMIT
    assert len(output.encode()) == 40
    assert output.startswith("clientVersion:")


async def test_the_editor_text_is_its_stdin(lab: LiveLab) -> None:
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-the-editor\ndata:\n  color: blue\n"
    argv = ["kubectl", "apply", "-f", "-", "--dry-run=server", "-o", "name"]
    result = await run_once(kubeconfig=admin_kubeconfig(lab), argv=argv, timeout=60, stdin=manifest)
    assert result.exit_code == 0, result.output
    assert "configmap/from-the-editor" in result.output


async def test_leaving_the_block_kills_a_running_command(lab: LiveLab) -> None:
    async with open_workspace(admin_kubeconfig(lab)) as workspace:
        async with start(workspace=workspace, argv=["kubectl", "get", "ns", "-w"], timeout=60) as process:
            await first_output(process)
            pid = process.pid
        assert process.process.returncode == -9
        assert gone(pid)


async def test_two_runs_at_a_time_per_student_and_a_third_is_refused(lab: LiveLab) -> None:
    slots = Slots()
    async with open_workspace(admin_kubeconfig(lab)) as workspace:
        with slots.hold("alice", limit=2), slots.hold("alice", limit=2):
            async with (
                start(workspace=workspace, argv=["kubectl", "get", "ns", "-w"], timeout=60) as one,
                start(workspace=workspace, argv=["kubectl", "get", "ns", "-w"], timeout=60) as two,
            ):
                await asyncio.gather(first_output(one), first_output(two))
                with pytest.raises(runner.Busy), slots.hold("alice", limit=2):
                    pass
                with slots.hold("bob", limit=2):  # another student is not held up
                    pass
        assert slots.running == {}
    with slots.hold("alice", limit=2):  # and once they end, alice may run again
        assert slots.running == {"alice": 1}
