"""Presenter mode in a real browser, against a real lab (``manage.py runlab``), at a projector's 1920x1080.

A superuser (who may break any cluster) opens the demo cluster's presenter mode and drives it with the
keyboard alone, as a presentation clicker would: Space pauses; kubectl makes a request, whose events
wait; Right, PageDown and "l" play them one at a time, the narration saying one more line each; Left
goes back before the last one said (rewound) and Home back to live. "f" opens the fault panel, digits
choose stop-kubelet and node-2, Enter applies it: the diagram greys that kubelet; "f" then "c" clears
every fault and it comes back. "b" and "." black the screen and bring it back. The page is shot in
English and in Chinese (the language cookie), with the panel and the keys' help, and never scrolls
sideways.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_chapter import PASSWORD, _artifacts
from tests.browser.test_classrooms import _sign_in
from tests.support.lab import ROOT, LiveLab

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

#: A superuser, made in the lab's own database as ``manage.py createsuperuser`` would.
PRESENTER = f"""
from django.contrib.auth.models import User
User.objects.create_superuser("presenter", password={PASSWORD!r})
"""
KUBELET = 'g[data-node="kubelet:node-2"]'
SCREEN = {"width": 1920, "height": 1080}
LINES = "[data-topology=narration] li[data-seq]"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("browser-presenter")))
    try:
        env = {**live.env, "KUBELAB_DATA_DIR": str(live.data_dir)}
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", PRESENTER],
            cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120,
        )  # fmt: skip
        yield live
    finally:
        live.stop()


def _lines(page: Any) -> int:
    count: int = page.evaluate(f"() => document.querySelectorAll({LINES!r}).length")
    return count


def _step(page: Any, key: str) -> None:
    """Press ``key`` and see the narration say exactly one more line."""
    before = _lines(page)
    page.keyboard.press(key)
    page.wait_for_function(f"() => document.querySelectorAll({LINES!r}).length > {before}", timeout=10_000)
    page.wait_for_timeout(300)  # nothing more is played: paused, one event per key
    assert _lines(page) == before + 1, key


def _mode(page: Any, state: str) -> None:
    selector = f"[data-present=mode][data-state{'^' if state == 'past' else ''}={state}]"
    page.wait_for_selector(selector, timeout=15_000)


def _no_sideways_scroll(page: Any) -> None:
    wide = page.evaluate("() => document.documentElement.scrollWidth")
    assert wide <= SCREEN["width"], f"the page is {wide}px wide on a {SCREEN['width']}px screen"


def _break_node_2(page: Any) -> None:
    """f, the digit of stop-kubelet, the digit of node-2, Enter: as the panel numbers them."""
    page.keyboard.press("f")
    page.wait_for_selector("[data-present=faults]:not([hidden])")
    page.keyboard.press(page.get_attribute('[data-kind="stop-kubelet"]', "data-key"))
    page.wait_for_selector("[data-parameter=node]:not([hidden])")
    page.keyboard.press(page.get_attribute('[data-parameter=node] [data-value="node-2"]', "data-key"))
    assert "node-2" in (page.text_content("[data-present=chosen]") or "")


def _toast(page: Any, state: str) -> str:
    page.wait_for_function(
        f"""() => {{
          const toast = document.querySelector("[data-present=toast]");
          return !toast.hidden && toast.dataset.state === {state!r} && !toast.textContent.endsWith("…");
        }}""",
        timeout=30_000,
    )
    return page.text_content("[data-present=toast]") or ""


def test_a_presenter_drives_the_diagram_and_breaks_the_cluster_with_the_keyboard_alone(
    lab: LiveLab, browser: Any
) -> None:
    base = f"http://127.0.0.1:{lab.web}"
    context = browser.new_context(viewport=SCREEN)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    _sign_in(page, base, "presenter")
    page.goto(f"{base}/lab/demo/")
    page.click("a[data-present-link]")  # the cluster page links to presenter mode
    page.wait_for_url(f"{base}/lab/demo/present/")
    page.wait_for_selector("[data-topology=status][data-state=live]", timeout=30_000)
    page.wait_for_selector(f"{KUBELET}:not(.stopped)", timeout=30_000)
    _mode(page, "live")

    # Paused, a person's request waits; each key plays one event of it, and the narration says it.
    page.keyboard.press(" ")
    _mode(page, "paused")
    lab.kubectl("create", "configmap", "presenter-demo", "--from-literal=say=hello")
    page.wait_for_function("() => window.kubelabTopology.timeline.waiting() >= 4", timeout=20_000)
    for key in ("ArrowRight", "PageDown", "l"):
        _step(page, key)
    # Back: the diagram is rewound to before the last line said; Right replays from there.
    page.keyboard.press("ArrowLeft")
    _mode(page, "past")
    _step(page, "ArrowRight")
    before = page.evaluate("() => document.querySelectorAll('li.narration-note').length")
    page.keyboard.press("Home")
    _mode(page, "live")
    # The notes said since: the events that waited play now, and one of them may be the first of the
    # cluster's background traffic, whose one-time note then follows this one.
    notes = page.evaluate(
        "(n) => [...document.querySelectorAll('li.narration-note')].slice(n).map((li) => li.textContent)",
        before,
    )
    assert any("Back to live" in note and "they play now" in note for note in notes), notes
    page.keyboard.press("+")
    page.wait_for_function("() => window.kubelabTopology.timeline.speed === 2 ** 0.5")
    page.keyboard.press("-")

    # The fault panel: digits choose, Enter applies; the diagram shows what the lab did.
    _break_node_2(page)
    page.screenshot(path=str(_artifacts() / "presenter-faults-en.png"))
    page.keyboard.press("Enter")
    assert "Stop the kubelet on node-2" in _toast(page, "ok")
    page.wait_for_selector(f"{KUBELET}.stopped", timeout=30_000)
    assert page.is_hidden("[data-present=faults]")
    page.screenshot(path=str(_artifacts() / "presenter-en.png"))
    _no_sideways_scroll(page)

    page.keyboard.press("?")
    page.wait_for_selector("[data-present=help]:not([hidden])")
    page.screenshot(path=str(_artifacts() / "presenter-help-en.png"))
    page.keyboard.press("Escape")
    assert page.is_hidden("[data-present=help]")

    page.keyboard.press("f")
    page.keyboard.press("c")
    assert "Cleared" in _toast(page, "ok")
    page.wait_for_selector(f"{KUBELET}:not(.stopped)", timeout=60_000)

    page.keyboard.press("b")
    assert page.is_visible("[data-present=black]")
    page.keyboard.press(".")
    assert page.is_hidden("[data-present=black]")

    # In Chinese: the same page, the same keys.
    context.add_cookies([{"name": "django_language", "value": "zh-hans", "url": base}])
    assert page.url == f"{base}/lab/demo/present/"  # live: the address names no paused moment
    page.reload()
    assert page.get_attribute("html", "lang") == "zh-hans"
    page.wait_for_selector("[data-topology=status][data-state=live]", timeout=30_000)
    assert "实时" in (page.text_content("[data-present=mode]") or "")
    _break_node_2(page)
    assert "破坏集群" in (page.text_content("[data-present=faults]") or "")
    page.screenshot(path=str(_artifacts() / "presenter-faults-zh-hans.png"))
    page.keyboard.press("Enter")
    assert "停止 node-2 上的 kubelet" in _toast(page, "ok")
    page.wait_for_selector(f"{KUBELET}.stopped", timeout=30_000)
    page.screenshot(path=str(_artifacts() / "presenter-zh-hans.png"))
    _no_sideways_scroll(page)
    page.keyboard.press("?")
    page.wait_for_selector("[data-present=help]:not([hidden])")
    page.screenshot(path=str(_artifacts() / "presenter-help-zh-hans.png"))
    _no_sideways_scroll(page)
    page.keyboard.press("Escape")
    page.keyboard.press("f")
    page.keyboard.press("c")
    assert "已清除" in _toast(page, "ok")
    page.wait_for_selector(f"{KUBELET}:not(.stopped)", timeout=60_000)
    context.close()
    assert not errors, errors
