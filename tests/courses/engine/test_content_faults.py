"""A step's faults: buttons that apply a fault of the catalogue to the student's sandbox (or clear it),
and a solution's faults, checked against the fault catalogue when the course loads (docs/course-format.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from controlplane.faults.catalogue import FaultSpec
from courses.engine import content
from courses.engine.content import FaultAction

FIXTURES = Path(__file__).parent / "fixtures" / "valid"
C = "tiny/01-first/chapter.yaml"
ACTIONS = """    actions:
      - {kubectl: "kubectl get configmap -w"}
"""
SOLUTION = '      background: ["kubectl get configmap -w"]\n'


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    content.reload()


def course(tmp_path: Path, *, actions: str = "", solution: str = "") -> Path:
    """The valid fixture course (its first chapter has 2 nodes), with fault actions added to the second
    step's actions (after its first one) and fault items to its solution."""
    shutil.copytree(FIXTURES / "tiny", tmp_path / "tiny")
    chapter = tmp_path / C
    text = chapter.read_text(encoding="utf-8")
    assert ACTIONS in text and SOLUTION in text
    text = text.replace(ACTIONS, ACTIONS + actions).replace(SOLUTION, solution + SOLUTION)
    chapter.write_text(text, encoding="utf-8")
    return tmp_path


def problems(root: Path) -> list[tuple[str, str, str]]:
    return [(p.file, p.place, p.message) for p in content.problems(root=root)]


def test_fault_buttons_and_a_solutions_faults_load_checked(tmp_path: Path) -> None:
    root = course(
        tmp_path,
        actions=(
            "      - {fault: stop-kubelet, node: node-2}\n"
            "      - {fault: hot-loop-client, for: 60}\n"
            "      - {clear: stop-kubelet, node: node-2, label: {en: Bring it back, zh-Hans: 恢复}}\n"
            "      - {fault: compact-store}\n"
        ),
        solution="      faults: [{fault: stop-kubelet, node: node-1}, {clear: hot-loop-client}]\n",
    )
    step = content.load_course("tiny", root=root).chapters[0].steps[1]
    faults = [a for a in step.actions if a.kind == "fault"]
    assert [a.fault for a in faults] == [
        FaultAction(FaultSpec("stop-kubelet", (("node", "node-2"),))),
        FaultAction(FaultSpec("hot-loop-client", (), 60.0)),
        FaultAction(FaultSpec("stop-kubelet", (("node", "node-2"),)), clear=True),
        FaultAction(FaultSpec("compact-store")),
    ]
    assert [a.kind for a in step.actions][:5] == ["kubectl"] + ["fault"] * 4, "in the order written"
    assert faults[2].label == {"en": "Bring it back", "zh-hans": "恢复"}
    assert [a.fault.label("en") for a in faults if a.fault] == [
        "Stop the kubelet on node-2",
        "Start a controller that hot-loops (user hot-loop) for 60 s",
        "Start the kubelet on node-2 again",
        "Compact etcd's history now",
    ]
    assert faults[0].fault is not None and faults[0].fault.label("zh-hans") == "停止 node-2 上的 kubelet"
    assert step.solution.faults == (
        FaultAction(FaultSpec("stop-kubelet", (("node", "node-1"),))),
        FaultAction(FaultSpec("hot-loop-client"), clear=True),
    )
    assert not step.solution.empty


@pytest.mark.parametrize(
    ("actions", "solution", "place", "message"),
    [
        ("      - {fault: stop-node}\n", "", "actions[1].fault", "'stop-node' is not a fault kind"),
        ("      - {fault: stop-kubelet}\n", "", "actions[1].node", "stop-kubelet needs 'node'"),
        (
            "      - {fault: stop-kubelet, node: node-3}\n",
            "",
            "actions[1].node",
            "'node-3': the cluster has 2 node(s), node-1 to node-2",
        ),
        (
            "      - {fault: stop-kubelet, node: node-1, nodes: 2}\n",
            "",
            "actions[1].nodes",
            "stop-kubelet has no parameter 'nodes'",
        ),
        ("      - {fault: compact-store, for: 60}\n", "", "actions[1].for", "compact-store takes no for"),
        ("      - {fault: hot-loop-client, for: 301}\n", "", "actions[1].for", "from 1 to 300 seconds"),
        (
            "      - {clear: restart-apiserver}\n",
            "",
            "actions[1].clear",
            "happens at once: there is nothing to clear",
        ),
        ("      - {clear: hot-loop-client, for: 5}\n", "", "actions[1].for", "it is cleared, not applied"),
        ("      - {fault: compact-store, clear: compact-store}\n", "", "actions[1]", "not both"),
        (
            '      - {fault: compact-store, kubectl: "kubectl get pods"}\n',
            "",
            "actions[1].kubectl",
            "an action is a kubectl command, a request or a fault",
        ),
        ("      - {fault: compact-store, label: Compact}\n", "", "actions[1].label", "must be a mapping"),
        ("", "      faults: [compact-store]\n", "solution.faults[0]", "a solution's fault is {fault: <kind>"),
        ("", "      faults: [{fault: stop-kubelet, node: node-9}]\n", "solution.faults[0].node", "node-9"),
        (
            "",
            "      faults: [{fault: compact-store, label: {en: a, zh-Hans: b}}]\n",
            "solution.faults[0].label",
            "a solution's fault has no button",
        ),
    ],
)
def test_what_a_chapter_cannot_say_about_faults(
    tmp_path: Path, actions: str, solution: str, place: str, message: str
) -> None:
    found = problems(course(tmp_path, actions=actions, solution=solution))
    assert len(found) == 1, found
    ((file, where, said),) = found
    assert (file, where) == (C, f"steps[create-configmap].{place}")
    assert message in said
