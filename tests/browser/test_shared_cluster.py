"""A classroom's shared cluster in real browsers, against a real lab (``manage.py runlab``).

An instructor creates a classroom; two students join with its link. On the dashboard the instructor
switches the chapters to "the shared cluster": the answer says how many students have a namespace
there. A student's chapter page then says it works in the classroom's cluster, in their namespace, and
mounts that cluster's topology; their kubeconfig download is for it, their namespace the context's,
and real kubectl there lists their namespace's pods and is refused (403) another student's. The
dashboard with the new control is shot in English and in Chinese.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.browser.test_chapter import _artifacts, _sandbox_ready, _sign_up
from tests.browser.test_classrooms import INSTRUCTOR, _sign_in
from tests.support.lab import KUBECTL, ROOT, LiveLab

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("browser-shared")))
    try:
        env = {**live.env, "KUBELAB_DATA_DIR": str(live.data_dir)}
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", INSTRUCTOR],
            cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120,
        )  # fmt: skip
        yield live
    finally:
        live.stop()


def _kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(KUBECTL), "--kubeconfig", str(kubeconfig), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_an_instructor_has_the_chapters_use_the_shared_cluster(
    lab: LiveLab, browser: Any, tmp_path: Path
) -> None:
    base = f"http://127.0.0.1:{lab.web}"
    errors: list[str] = []
    teacher = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    ada = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    bob = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    for page in (teacher, ada, bob):
        page.on("pageerror", lambda error: errors.append(str(error)))

    _sign_in(teacher, base, "teacher")
    teacher.goto(f"{base}/classrooms/")
    teacher.fill("#classroom-name", "Kubernetes 101")
    teacher.check("input[name=chapter][value=one-hub]")
    teacher.click(".classroom-form button[type=submit]")
    teacher.wait_for_url(lambda url: url.rstrip("/").endswith("/classrooms/kubernetes-101"))
    link = teacher.text_content("[data-classroom-link]") or ""
    for page, name in ((ada, "ada"), (bob, "bob")):
        _sign_up(page, base, name)
        page.goto(link)
        page.click("form[action$='/classrooms/join/'] button[type=submit]")
        page.wait_for_selector('[data-classrooms="joined"]')

    # The switch: htmx swaps the control for the answer, the shared cluster made for both students.
    assert teacher.is_checked("#chapters-use input[value=sandbox]")
    teacher.check("#chapters-use input[value=shared]")
    teacher.click("#chapters-use button[type=submit]")
    teacher.wait_for_selector(
        '#chapters-use[data-chapters-use="shared"] [data-chapters-use-message].ok', timeout=60_000
    )
    said = teacher.text_content("[data-chapters-use-message]") or ""
    assert "2 students have a namespace each" in said, said
    cluster = said.split("shared cluster ")[1].split(",")[0]
    assert cluster.startswith("classroom-")
    teacher.reload()
    log = teacher.text_content("[data-classroom-log]") or ""
    assert "switched where the chapters work to" in log and "created the shared cluster" in log, log
    # The shared cluster is a row of the students' table: its health, and a fault can be for it.
    shared_row = f'tr[data-shared-cluster="{cluster}"]'
    teacher.wait_for_selector(f"{shared_row} [data-health]", timeout=30_000)
    teacher.check(f"{shared_row} input[name=student]")
    # A refresh that left before the tick (its answer has nothing ticked) does not undo it.
    teacher.evaluate(
        """() => {
          const table = document.querySelector('div[hx-trigger="every 5s"]');
          return htmx.ajax("GET", table.getAttribute("hx-get"),
                           {target: table, select: "#classroom-students", swap: "innerHTML", values: {}});
        }"""
    )
    assert teacher.is_checked(f"{shared_row} input[name=student]"), "a stale refresh undid the tick"
    teacher.select_option("#fault-kind", "stop-scheduler")
    teacher.click("button[name=action][value=apply]")
    teacher.wait_for_selector("[data-fault-outcomes] li", timeout=60_000)
    outcome = teacher.text_content("[data-fault-outcomes]") or ""
    assert teacher.query_selector("[data-fault-outcomes] li.ok") is not None, outcome
    assert "the shared cluster" in outcome, outcome
    teacher.wait_for_selector(f"{shared_row} [data-fault]", timeout=30_000)
    assert teacher.is_checked(f"{shared_row} input[name=student]")  # kept across refreshes
    teacher.screenshot(path=str(_artifacts() / "classroom-shared-switch-en.png"), full_page=True)
    teacher.click("button[name=action][value=clear-all]")
    teacher.wait_for_selector("[data-fault-outcomes] li.ok")
    teacher.wait_for_selector(f"{shared_row} [data-fault]", state="detached", timeout=30_000)

    # Ada's chapter page works in the shared cluster, in her namespace, and shows its topology.
    ada.goto(f"{base}/learn/control-plane/one-hub/")
    ada.wait_for_selector(f'[data-shared-cluster="{cluster}"][data-namespace="student-ada"]')
    _sandbox_ready(ada)
    ada.wait_for_selector(f'[data-topology-slot] [data-cluster="{cluster}"]', timeout=60_000)
    ada.screenshot(path=str(_artifacts() / "chapter-shared-cluster-en.png"), full_page=False)

    # Her kubeconfig is the shared cluster's, her namespace the context's; kubectl acts there as her.
    download = ada.request.get(f"{base}/sandbox/kubeconfig/")
    assert download.status == 200
    document = yaml.safe_load(download.body())
    assert document["contexts"][0]["context"]["namespace"] == "student-ada"
    kubeconfig = tmp_path / "ada.yaml"
    kubeconfig.write_bytes(download.body())
    mine = _kubectl(kubeconfig, "create", "configmap", "mine", "--from-literal=k=v")
    assert mine.returncode == 0 and "configmap/mine created" in mine.stdout, mine.stderr
    listed = _kubectl(kubeconfig, "get", "configmaps", "mine", "-o", "jsonpath={.metadata.namespace}")
    assert listed.stdout == "student-ada", listed.stderr
    theirs = _kubectl(kubeconfig, "get", "pods", "-n", "student-bob")
    assert theirs.returncode != 0 and "Forbidden" in theirs.stderr, theirs.stderr
    assert 'User "student:ada" cannot list resource "pods"' in theirs.stderr
    nodes = _kubectl(kubeconfig, "get", "nodes")
    assert nodes.returncode != 0 and "Forbidden" in nodes.stderr
    # Her diagram is scoped to her namespace (the server leaves her classmates' out) and says so.
    said = {
        "en": "Your classmates' namespaces and requests are left out",
        "zh-hans": "同学们的命名空间和请求不会显示",
    }
    for language, words in said.items():
        if language != "en":
            ada.click(f"button[name=language][value={language}]")
            ada.wait_for_load_state()
        ada.wait_for_selector('[data-scope="student-ada"]', timeout=30_000)
        narration = ada.text_content('[data-topology="narration"]') or ""
        assert words in narration, narration[-500:]
        ada.screenshot(
            path=str(_artifacts() / f"chapter-shared-cluster-scoped-{language}.png"), full_page=False
        )

    teacher.click("button[name=language][value=zh-hans]")
    teacher.wait_for_load_state()
    assert teacher.get_attribute("html", "lang") == "zh-hans"
    assert "各章节使用" in (teacher.text_content("#chapters-use") or "")
    teacher.screenshot(path=str(_artifacts() / "classroom-shared-switch-zh-hans.png"), full_page=True)
    # On a phone's width: the scoped page's narration and the dashboard's table stay on the screen.
    for page, name in ((ada, "chapter-shared-cluster-scoped-narrow"), (teacher, "classroom-shared-narrow")):
        page.set_viewport_size({"width": 390, "height": 900})
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{name}: the page is {width} px wide"
        page.screenshot(path=str(_artifacts() / f"{name}.png"), full_page=True)
    ada.locator("section.narration").screenshot(path=str(_artifacts() / "scoped-narration-narrow.png"))
    teacher.locator("[data-classroom-students]").screenshot(path=str(_artifacts() / "students-narrow.png"))
    assert not errors, errors
