"""A classroom in real browsers, against a real lab (``manage.py runlab``): the instructor's side.

An instructor (a user with the ``teach_classroom`` permission, granted as an admin would) signs in,
creates a classroom and reads its join code; a student follows the join link, joins, and opens
chapter 1, which starts their sandbox. On the dashboard the student's row shows their cluster running
(the table refreshes itself). The instructor ticks the student and stops the kubelet on node-2: the
student's open chapter page greys that kubelet on its live diagram, the dashboard counts what the
fault caused, and "clear all their faults" brings it back. The dashboard is shot in English, in
Chinese and on a narrow screen.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_chapter import PASSWORD, _artifacts, _sandbox_ready, _sign_up
from tests.support.lab import ROOT, LiveLab

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

#: An instructor, made in the lab's own database as an admin would (Django's admin grants the permission).
INSTRUCTOR = f"""
from django.contrib.auth.models import Permission, User
user = User.objects.create_user("teacher", password={PASSWORD!r})
user.user_permissions.add(Permission.objects.get(codename="teach_classroom"))
"""
KUBELET = 'g[data-node="kubelet:node-2"]'


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("browser-classroom")))
    try:
        env = {**live.env, "KUBELAB_DATA_DIR": str(live.data_dir)}
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", INSTRUCTOR],
            cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120,
        )  # fmt: skip
        yield live
    finally:
        live.stop()


def _sign_in(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/sign-in/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("form[action$='sign-in/'] button[type=submit]")
    page.wait_for_url(lambda url: "sign-in" not in url)


def test_an_instructor_breaks_a_students_cluster_from_the_dashboard(lab: LiveLab, browser: Any) -> None:
    base = f"http://127.0.0.1:{lab.web}"
    errors: list[str] = []
    teacher = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    student = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    for page in (teacher, student):
        page.on("pageerror", lambda error: errors.append(str(error)))

    _sign_in(teacher, base, "teacher")
    teacher.goto(f"{base}/classrooms/")
    teacher.fill("#classroom-name", "Kubernetes 101")
    teacher.check("input[name=chapter][value=one-hub]")
    teacher.click(".classroom-form button[type=submit]")
    teacher.wait_for_url(lambda url: url.rstrip("/").endswith("/classrooms/kubernetes-101"))
    link = teacher.text_content("[data-classroom-link]") or ""
    assert "/classrooms/join/" in link, link

    _sign_up(student, base, "ada")
    student.goto(link)
    student.click("form[action$='/classrooms/join/'] button[type=submit]")
    student.wait_for_selector('[data-classrooms="joined"]')
    student.goto(f"{base}/learn/control-plane/one-hub/")
    _sandbox_ready(student)
    student.wait_for_selector(f"{KUBELET}:not(.stopped)")

    # The dashboard's table refreshes itself: ada's cluster appears, running.
    teacher.wait_for_selector('tr[data-student="ada"] .state-running', timeout=30_000)
    teacher.check('tr[data-student="ada"] input[name=student]')
    teacher.select_option("#fault-kind", "stop-kubelet")
    teacher.select_option("#fault-node", "node-2")
    teacher.fill("#fault-for", "120")
    teacher.click("button[name=action][value=apply]")
    teacher.wait_for_selector("[data-fault-outcomes] li.ok")
    assert "ada" in (teacher.text_content("[data-fault-outcomes]") or "")

    # What the student's page shows is what the lab did: the kubelet on node-2 stopped.
    student.wait_for_selector(f"{KUBELET}.stopped", timeout=30_000)
    teacher.wait_for_selector('tr[data-student="ada"] [data-fault]', timeout=30_000)
    # What the fault caused is counted from ada's trace: `kubectl logs` would now fail, and so on.
    teacher.wait_for_selector('tr[data-student="ada"] [data-caused="stop-kubelet"]', timeout=30_000)
    # Its health line: once the node lifecycle controller gives up on node-2 (its grace period), one
    # node fewer is Ready.
    one_node_down = """() => {
        const health = document.querySelector('tr[data-student="ada"] [data-health]');
        return health !== null && Number(health.dataset.nodesReady) === Number(health.dataset.nodes) - 1;
    }"""
    teacher.wait_for_function(one_node_down, timeout=30_000)
    assert teacher.is_visible('tr[data-student="ada"] [data-health].unhealthy')
    assert teacher.is_checked('tr[data-student="ada"] input[name=student]')  # kept across refreshes
    teacher.screenshot(path=str(_artifacts() / "classroom-dashboard-en.png"), full_page=True)

    teacher.click("button[name=action][value=clear-all]")
    teacher.wait_for_selector("[data-fault-outcomes] li.ok")
    student.wait_for_selector(f"{KUBELET}:not(.stopped)", timeout=60_000)
    teacher.reload()  # the log is written by the page's own actions, and read on load
    log = teacher.text_content("[data-classroom-log]") or ""
    assert "applied a fault" in log and "cleared the faults of" in log, log

    teacher.click("button[name=language][value=zh-hans]")
    teacher.wait_for_load_state()
    assert teacher.get_attribute("html", "lang") == "zh-hans"
    assert "破坏他们的集群" in (teacher.text_content(".classroom-dashboard") or "")
    teacher.screenshot(path=str(_artifacts() / "classroom-dashboard-zh-hans.png"), full_page=True)
    teacher.set_viewport_size({"width": 390, "height": 844})
    teacher.reload()
    wide = teacher.evaluate("() => document.documentElement.scrollWidth")
    assert wide <= 390, f"the dashboard is {wide}px wide on a 390px screen"
    teacher.screenshot(path=str(_artifacts() / "classroom-dashboard-narrow.png"), full_page=True)
    assert not errors, errors
