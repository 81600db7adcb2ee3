"""A student's first chapter in a real browser, against a real lab (``manage.py runlab``).

Sign up; open chapter 1 at its second step; submit a manifest with a mistake and see it marked at its
line; fix it; the step turns green without pressing Check; reload and the progress is still there;
run a kubectl command in the console and read its output; switch to Chinese and read the chapter in
Chinese. A second student cannot open the first one's sandbox: page, trace socket and etcd panel say
403, and their own console only ever reaches their own sandbox.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from courses.engine.content import load_course
from tests.support.lab import LiveLab

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

STEP = "configmap-to-etcd"
CHAPTER = f"/learn/control-plane/one-hub/?step={STEP}"
#: metadata.name on line 4 is not a DNS subdomain: the API server answers 422 naming that field.
WRONG = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: App_Config\ndata:\n  color: blue\n"
RIGHT = WRONG.replace("App_Config", "app-config")
PASSWORD = "a-long-Password-42"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("browser-course")))
    try:
        yield live
    finally:
        live.stop()


def _sign_up(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/sign-up/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password1]", PASSWORD)
    page.fill("input[name=password2]", PASSWORD)
    page.click("form[action$='sign-up/'] button[type=submit]")
    page.wait_for_url(lambda url: "sign-up" not in url)


def _sandbox_ready(page: Any) -> None:
    page.wait_for_function(
        "() => document.querySelector('[data-sandbox]')?.dataset.state === 'ready'", timeout=60_000
    )


def test_a_student_does_a_step_in_the_browser(lab: LiveLab, browser: Any) -> None:
    base = f"http://127.0.0.1:{lab.web}"
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    _sign_up(page, base, "ada")
    page.goto(base + CHAPTER)
    _sandbox_ready(page)
    page.wait_for_selector("svg.topology")

    # A mistake: marked at its line, in the result and in the editor's gutter.
    page.wait_for_function("() => window.kubelabEditor !== undefined")
    page.evaluate("text => window.kubelabEditor.setValue(text)", WRONG)
    page.click("button[name=action][value=apply]")
    page.wait_for_selector("#manifest-result [data-outcome]")
    diagnostics = json.loads(page.text_content("#manifest-diagnostics") or "[]")
    assert [d["line"] for d in diagnostics] == [4], diagnostics
    assert "metadata.name" in (page.text_content("#manifest-result") or "")
    page.wait_for_selector(".cm-lint-marker-error")

    # Fixed: applied, and the step's check turns green by itself.
    page.evaluate("text => window.kubelabEditor.setValue(text)", RIGHT)
    page.click("button[name=action][value=apply]")
    page.wait_for_selector("#manifest-result [data-outcome=ok]")
    page.wait_for_selector(f'article[data-step="{STEP}"] [data-check][data-status=passed]', timeout=30_000)

    # Reloaded, the progress is kept.
    page.reload()
    assert "passed" in (page.get_attribute(f'[data-step-item="{STEP}"]', "class") or "")

    # The console runs the real kubectl in the sandbox, as the student.
    _sandbox_ready(page)
    page.click("[data-tab=console]")
    page.wait_for_function("() => window.kubelabConsole !== undefined")
    page.fill("[data-console-input]", "kubectl get configmap app-config -o jsonpath={.data.color}")
    page.press("[data-console-input]", "Enter")
    page.wait_for_function(
        "() => document.querySelector('[data-console-output]').textContent.includes('blue')", timeout=30_000
    )
    # Meanwhile the chapter's socket has long been open: the passed step stayed passed (latched).
    status = page.get_attribute(f'article[data-step="{STEP}"] [data-check]', "data-status")
    assert status == "passed"

    # In Chinese: the header's switch, and the chapter's own text.
    page.click("button[name=language][value=zh-hans]")
    page.wait_for_load_state()
    assert page.get_attribute("html", "lang") == "zh-hans"
    assert "控制平面" in (page.text_content("h1") or "")
    page.screenshot(path=str(_artifacts() / "chapter-zh-hans.png"), full_page=True)
    context.close()
    assert not errors, errors


def test_another_student_cannot_open_a_sandbox_not_theirs(lab: LiveLab, browser: Any) -> None:
    base = f"http://127.0.0.1:{lab.web}"
    owner = browser.new_context()
    page = owner.new_page()
    _sign_up(page, base, "owner")
    page.goto(base + CHAPTER)
    _sandbox_ready(page)
    page.wait_for_selector("[data-topology=root][data-cluster]")
    cluster = page.evaluate("() => document.querySelector('[data-topology=root]').dataset.cluster")
    assert cluster and cluster.startswith("sb-")
    owner.close()

    other = browser.new_context()
    page = other.new_page()
    _sign_up(page, base, "other")
    assert page.goto(f"{base}/lab/{cluster}/").status == 403
    cookies = {c["name"]: c["value"] for c in other.cookies()}
    etcd = httpx.get(f"{base}/lab/{cluster}/etcd/?prefix=/registry/", cookies=cookies)
    assert etcd.status_code == 403
    # The trace socket refuses them (4403) before saying anything about the cluster.
    code = page.evaluate(
        """url => new Promise(resolve => {
            const socket = new WebSocket(url);
            socket.onclose = event => resolve(event.code);
        })""",
        f"ws://127.0.0.1:{lab.web}/ws/lab/{cluster}/trace/",
    )
    assert code == 4403
    # Their console names no cluster: it can only ever run in their own sandbox.
    code = page.evaluate(
        """url => new Promise(resolve => {
            const socket = new WebSocket(url);
            socket.onclose = event => resolve(event.code);
            setTimeout(() => { resolve('open'); socket.close(); }, 8000);
        })""",
        f"ws://127.0.0.1:{lab.web}/ws/course/control-plane/one-hub/console/?cluster={cluster}",
    )
    assert code == 4403
    other.close()


def test_every_chapter_reads_in_both_languages_beside_a_live_diagram(lab: LiveLab, browser: Any) -> None:
    """Each chapter, in English and in Chinese: its own title and step text in that language, the
    student's sandbox drawn beside it (components and nodes), nothing wider than the window."""
    base = f"http://127.0.0.1:{lab.web}"
    course = load_course("control-plane")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    _sign_up(page, base, "reader")
    problems: list[str] = []
    for language in ("en", "zh-hans"):
        context.add_cookies([{"name": "django_language", "value": language, "url": base}])
        for chapter in course.chapters:
            prose = chapter.prose_for(language)
            page.goto(f"{base}/learn/control-plane/{chapter.slug}/")
            _sandbox_ready(page)
            page.wait_for_function(
                "() => document.querySelectorAll('svg.topology [data-node]').length >= 8", timeout=30_000
            )
            where = f"{chapter.slug} ({language})"
            if prose.title not in (page.text_content("h1") or ""):
                problems.append(f"{where}: the title is not {prose.title!r}")
            for step in chapter.steps:
                text = page.text_content(f'article[data-step="{step.id}"]') or ""
                if prose.steps[step.id].title not in text:
                    problems.append(f"{where}: step {step.id} lacks its title {prose.steps[step.id].title!r}")
                if language == "zh-hans" and not _HAN.search(text):
                    problems.append(f"{where}: step {step.id} has no Chinese text")
            overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            if overflow > 0:
                problems.append(f"{where}: the page is {overflow}px wider than the window")
            # Nothing in the text column may reach under the diagram: wide tables scroll in place.
            spill = page.evaluate(
                """() => {
                    const column = document.querySelector('.chapter-text').getBoundingClientRect();
                    return [...document.querySelectorAll('.chapter-text .prose > *')]
                        .filter(el => !el.closest('[hidden]'))
                        .map(el => el.getBoundingClientRect().right - column.right)
                        .filter(px => px > 1).length;
                }"""
            )
            if spill:
                problems.append(f"{where}: {spill} block(s) of the text run past its column")
            page.screenshot(path=str(_artifacts() / f"chapter-{chapter.number:02d}-{language}.png"))
    context.close()
    assert not problems, problems
    assert not errors, errors


_HAN = re.compile(r"[\u4e00-\u9fff]")


def _artifacts() -> Path:
    import os

    path = Path(
        os.environ.get(
            "KUBELAB_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "var" / "test-artifacts"
        )
    )
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_each_step_keeps_its_own_manifest_in_the_form(lab: LiveLab, browser: Any) -> None:
    base = f"http://127.0.0.1:{lab.web}"
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    _sign_up(page, base, "grace")
    page.goto(f"{base}/learn/control-plane/core-components/?step=deployment-controllers")
    page.wait_for_function("() => window.kubelabEditor !== undefined")
    text = "() => window.kubelabEditor.getValue()"
    starting = page.evaluate(text)
    assert "kind: Deployment" in starting and "replicas: 3" in starting
    edited = starting.replace("replicas: 3", "replicas: 5")
    page.evaluate("value => window.kubelabEditor.setValue(value)", edited)

    # The next step brings its own manifest, whatever the student did with this one ...
    page.click("[data-nav=next]")
    assert "name: needs-ssd" in page.evaluate(text)
    # ... and coming back finds the student's version, also after a reload.
    page.click("[data-nav=previous]")
    assert page.evaluate(text) == edited
    page.reload()
    page.wait_for_function("() => window.kubelabEditor?.getValue().includes('replicas: 5')")
    context.close()
    assert not errors, errors
