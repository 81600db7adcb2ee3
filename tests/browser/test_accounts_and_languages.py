"""Accounts and languages in a real browser: the landing page in Simplified Chinese drawn with a Chinese
font (and a screenshot of it kept), and a student who signs up, signs out and signs in again, in
English and in Chinese, and whose language follows them to another browser.

The font check asks Chromium itself which font drew the heading's characters (the DevTools protocol's
``CSS.getPlatformFontsForNode``): a Han character that no font of the stack has would be drawn by a
fallback font as an empty box ("tofu"), and the check would name that font instead. Debian's
``fonts-noto-cjk`` provides "Noto Sans CJK SC" (Makefile, debian-packages).

The sign-up tests run the real server, ``manage.py runlab`` without clusters, on a fresh data
directory: the accounts live in its database, not in the test's.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_django import Settings

from controlplane.runtime import CLUSTER_LIST_FILE, activate
from tests.support.services import free_port

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
#: Where the screenshots are kept for a person to look at (var/ is the ignored data directory).
ARTIFACTS = Path(os.environ.get("KUBELAB_TEST_ARTIFACTS", ROOT / "var" / "test-artifacts"))
PASSWORD = "correct horse battery staple"
HAN = re.compile(r"[\u4e00-\u9fff]")


def new_page(browser: Any, *, locale: str) -> Any:
    """A page in a fresh browser context (its own cookies) whose browser prefers ``locale``; it fails
    the test if a script on it raises."""
    context = browser.new_context(locale=locale, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.errors = errors
    return page


def close(page: Any) -> None:
    errors = page.errors
    page.context.close()
    assert not errors, f"the page raised: {errors}"


# -- the Chinese page and its font ------------------------------------------------------------------------


@pytest.fixture
def data_dir(tmp_path: Path, settings: Settings) -> Iterator[Path]:
    settings.KUBELAB_DATA_DIR = tmp_path
    settings.KUBELAB_STORE = "sqlite"
    (tmp_path / CLUSTER_LIST_FILE).write_text(json.dumps({"clusters": ["demo"]}))
    activate(None)
    yield tmp_path
    activate(None)


def platform_fonts(page: Any, selector: str) -> dict[str, int]:
    """The fonts Chromium drew the text of ``selector`` with, and how many glyphs each drew."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    return {font["familyName"]: font["glyphCount"] for font in fonts}


def test_the_landing_page_in_chinese_is_drawn_with_a_chinese_font(
    browser: Any, web_server: str, data_dir: Path
) -> None:
    page = new_page(browser, locale="zh-CN")
    try:
        page.goto(f"{web_server}/")
        assert page.get_attribute("html", "lang") == "zh-hans"
        heading = page.locator("h1").inner_text()
        assert heading == "看着 Kubernetes 运转，学会 Kubernetes"  # noqa: RUF001
        family = page.evaluate("getComputedStyle(document.querySelector('h1')).fontFamily")
        assert '"Noto Sans CJK SC"' in family and '"PingFang SC"' in family
        # Every Han character of the heading drawn by the Chinese font, none by a fallback.
        fonts = platform_fonts(page, "h1")
        han = len(HAN.findall(heading))
        assert fonts.get("Noto Sans CJK SC", 0) >= han, f"the heading was drawn with {fonts}"
        # The switch names English in English, and Chinese in Chinese in a Chinese font on any page.
        assert page.locator("button[value=en]").inner_text() == "English"
        assert page.locator("button[value=zh-hans]").is_disabled()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "landing-zh-hans.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    finally:
        close(page)


def test_an_english_page_draws_the_switchs_chinese_name_with_the_chinese_font(
    browser: Any, web_server: str, data_dir: Path
) -> None:
    page = new_page(browser, locale="en-US")
    try:
        page.goto(f"{web_server}/")
        assert page.get_attribute("html", "lang") == "en"
        assert page.locator("h1").inner_text() == "Learn Kubernetes by watching it work"
        fonts = platform_fonts(page, "button[value=zh-hans]")
        assert fonts.get("Noto Sans CJK SC", 0) >= 4, f"简体中文 was drawn with {fonts}"
    finally:
        close(page)


# -- sign up, sign out, sign in -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``manage.py runlab`` with no cluster on a fresh data directory: the real server and database."""
    data = tmp_path_factory.mktemp("accounts-site")
    web, api = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBELAB_")}
    env.update(PYTHONUNBUFFERED="1", DJANGO_SETTINGS_MODULE="config.settings", KUBELAB_DEMO_CLUSTER="")
    log = data / "runlab.log"
    command = [
        sys.executable, "manage.py", "runlab",
        "--web", f"127.0.0.1:{web}", "--api", f"127.0.0.1:{api}", "--data-dir", str(data),
    ]  # fmt: skip
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while "Lab running." not in log.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"runlab did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{web}"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


#: What the pages say, per language: the header's links and buttons, and Django's own form labels.
WORDS = {
    "en": {"sign up": "Sign up", "sign in": "Sign in", "sign out": "Sign out", "username": "Username",
           "password": "Password", "confirm": "Password confirmation", "lang": "en",
           "wrong": "Please enter a correct username and password."},
    "zh-hans": {"sign up": "注册", "sign in": "登录", "sign out": "退出登录", "username": "用户名",
                "password": "密码", "confirm": "密码确认", "lang": "zh-hans",
                "wrong": "请输入一个正确的用户名和密码"},
}  # fmt: skip


@pytest.mark.parametrize(("locale", "language"), [("en-US", "en"), ("zh-CN", "zh-hans")])
def test_sign_up_sign_out_and_sign_in_again(browser: Any, site: str, locale: str, language: str) -> None:
    words = WORDS[language]
    username = f"student-{language}"
    page = new_page(browser, locale=locale)
    try:
        page.goto(f"{site}/")
        assert page.get_attribute("html", "lang") == words["lang"]
        header = page.locator("header.site-header")
        header.get_by_role("link", name=words["sign up"], exact=True).click()
        # Django's own labels, in the page's language.
        assert page.locator("label[for=id_username]").inner_text().startswith(words["username"])
        assert page.locator("label[for=id_password2]").inner_text().startswith(words["confirm"])
        page.locator("#id_username").fill(username)
        page.locator("#id_password1").fill(PASSWORD)
        page.locator("#id_password2").fill(PASSWORD)
        page.locator("main").get_by_role("button", name=words["sign up"]).click()
        page.wait_for_url(f"{site}/")
        assert header.locator("[data-account=username]").inner_text() == username

        header.get_by_role("button", name=words["sign out"]).click()
        page.wait_for_url(f"{site}/")
        assert header.locator("[data-account=username]").count() == 0

        # A wrong password first: the form says so, in the page's language.
        header.get_by_role("link", name=words["sign in"], exact=True).click()
        assert page.locator("label[for=id_password]").inner_text().startswith(words["password"])
        page.locator("#id_username").fill(username)
        page.locator("#id_password").fill("not the password")
        page.locator("main").get_by_role("button", name=words["sign in"]).click()
        assert words["wrong"] in page.locator("main").inner_text()

        page.locator("#id_password").fill(PASSWORD)
        page.locator("main").get_by_role("button", name=words["sign in"]).click()
        page.wait_for_url(f"{site}/")
        assert header.locator("[data-account=username]").inner_text() == username
        header.get_by_role("button", name=words["sign out"]).click()
        page.wait_for_url(f"{site}/")
    finally:
        close(page)


def test_the_language_chosen_follows_the_student_to_another_browser(browser: Any, site: str) -> None:
    first = new_page(browser, locale="en-US")
    try:
        first.goto(f"{site}/accounts/sign-up/")
        first.locator("#id_username").fill("polyglot")
        first.locator("#id_password1").fill(PASSWORD)
        first.locator("#id_password2").fill(PASSWORD)
        first.locator("main").get_by_role("button", name="Sign up").click()
        first.wait_for_url(f"{site}/")
        first.get_by_role("button", name="简体中文").click()
        first.wait_for_url(f"{site}/")
        assert first.get_attribute("html", "lang") == "zh-hans"
        assert first.locator("h1").inner_text() == "看着 Kubernetes 运转，学会 Kubernetes"  # noqa: RUF001
    finally:
        close(first)
    second = new_page(browser, locale="en-US")  # another browser that prefers English
    try:
        second.goto(f"{site}/accounts/sign-in/")
        assert second.get_attribute("html", "lang") == "en"
        second.locator("#id_username").fill("polyglot")
        second.locator("#id_password").fill(PASSWORD)
        second.locator("main").get_by_role("button", name="Sign in").click()
        second.wait_for_url(f"{site}/")
        assert second.get_attribute("html", "lang") == "zh-hans"
        assert second.locator("header [data-account=username]").inner_text() == "polyglot"
    finally:
        close(second)
