"""Which language a page speaks: the browser's Accept-Language, the switch in the header (a cookie), and a
signed-in person's saved choice, which follows them to any browser (courses/accounts/middleware.py).

The order is: the switch's cookie, then the saved choice, then Accept-Language, then English.
"""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import AsyncClient, Client

from courses.accounts.services import preferred_language
from courses.models import Preference
from tools.i18n_check import ROOT

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"
SWITCH = "/accounts/language/"
#: The landing page's heading in each language.
HEADING = {"en": "Learn Kubernetes by watching it work", "zh-hans": "看着 Kubernetes 运转，学会 Kubernetes"}  # noqa: RUF001


@pytest.fixture(autouse=True, scope="module")
def compiled_catalogs() -> None:
    """The pages need the compiled catalogs (``make messages``); say so rather than fail obscurely."""
    for locale in ("en", "zh_Hans"):
        po = ROOT / "locale" / locale / "LC_MESSAGES" / "django.po"
        mo = po.with_suffix(".mo")
        assert mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime, (
            f"{mo} is missing or stale: make messages"
        )


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice", password=PASSWORD)


def language_of(page: str) -> str:
    """The language a page is in: its ``<html lang>``, checked against its heading's text."""
    start = page.index('<html lang="') + len('<html lang="')
    language = page[start : page.index('"', start)]
    assert HEADING[language] in page, f"the page says lang={language} but its heading is not in it"
    return language


def landing(client: Client, accept: str | None = None) -> str:
    extra = {"HTTP_ACCEPT_LANGUAGE": accept} if accept else {}
    response = client.get("/", **extra)  # type: ignore[arg-type]
    assert response.status_code == 200
    return response.content.decode()


def test_the_languages_are_english_and_simplified_chinese() -> None:
    assert settings.LANGUAGES == [("en", "English"), ("zh-hans", "简体中文")]


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, "en"),
        ("zh-CN,zh;q=0.9,en;q=0.8", "zh-hans"),
        ("zh-Hans", "zh-hans"),
        ("zh", "zh-hans"),
        ("en-GB,en;q=0.9,zh-CN;q=0.8", "en"),
        ("fr-FR,fr;q=0.9", "en"),  # not offered: English
        ("de,zh-CN;q=0.5", "zh-hans"),  # the first one offered
    ],
)
def test_the_language_follows_accept_language(client: Client, accept: str | None, expected: str) -> None:
    response = client.get("/", HTTP_ACCEPT_LANGUAGE=accept) if accept else client.get("/")
    assert language_of(response.content.decode()) == expected
    assert response["Content-Language"] == expected
    assert "Accept-Language" in response["Vary"]


def test_the_header_offers_each_language_in_its_own_name_and_marks_the_current_one(client: Client) -> None:
    page = landing(client, "zh-CN")
    assert f'action="{SWITCH}" method="post"' in page
    assert 'value="en" lang="en">English</button>' in page
    assert 'value="zh-hans" lang="zh-hans" aria-current="true" disabled>简体中文</button>' in page
    assert '<input type="hidden" name="next" value="/">' in page
    # And the rest of the header in Chinese.
    assert ">登录</a>" in page and ">注册</a>" in page


def test_the_switch_sets_this_browsers_language_over_accept_language(client: Client) -> None:
    response = client.post(SWITCH, {"language": "zh-hans", "next": "/lab/demo/"})
    assert (response.status_code, response["Location"]) == (302, "/lab/demo/")
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    assert language_of(landing(client, "en-US,en")) == "zh-hans"


def test_the_switch_is_post_only_and_ignores_a_language_not_offered(client: Client) -> None:
    assert client.get(SWITCH, {"language": "zh-hans"}).status_code == 405
    client.post(SWITCH, {"language": "fr", "next": "/"})
    assert language_of(landing(client)) == "en"


def test_a_signed_in_switch_is_saved_and_follows_the_person_to_a_new_browser(alice: User) -> None:
    first = Client()
    first.force_login(alice)
    first.post(SWITCH, {"language": "zh-hans", "next": "/"})
    assert preferred_language(user_id=alice.pk) == "zh-hans"
    # Another browser, never switched, signed in: the saved choice, whatever it accepts.
    second = Client()
    second.force_login(alice)
    assert language_of(landing(second, "en-US,en;q=0.9")) == "zh-hans"
    # Signed out there, the browser's own languages again.
    second.post("/accounts/sign-out/")
    assert language_of(landing(second, "en-US,en;q=0.9")) == "en"


def test_signing_in_gives_this_browser_the_persons_language(alice: User) -> None:
    Preference.objects.create(user=alice, language="zh-hans")
    shared = Client()
    shared.post(SWITCH, {"language": "en", "next": "/"})  # the last person here chose English
    response = shared.post("/accounts/sign-in/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    assert language_of(landing(shared)) == "zh-hans"


def test_the_browsers_choice_before_signing_in_is_saved_when_nothing_was(alice: User) -> None:
    client = Client()
    client.post(SWITCH, {"language": "zh-hans", "next": "/"})
    client.post("/accounts/sign-in/", {"username": "alice", "password": PASSWORD})
    assert preferred_language(user_id=alice.pk) == "zh-hans"


def test_the_browsers_choice_before_signing_up_becomes_the_new_accounts(client: Client) -> None:
    client.post(SWITCH, {"language": "zh-hans", "next": "/"})
    client.post("/accounts/sign-up/", {"username": "bob", "password1": PASSWORD, "password2": PASSWORD})
    assert preferred_language(user_id=User.objects.get(username="bob").pk) == "zh-hans"


def test_a_cookie_choice_in_this_browser_wins_over_the_saved_one(client: Client, alice: User) -> None:
    Preference.objects.create(user=alice, language="zh-hans")
    client.force_login(alice)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    assert language_of(landing(client, "zh-CN")) == "en"


def test_no_saved_choice_leaves_accept_language(client: Client, alice: User) -> None:
    client.force_login(alice)
    assert language_of(landing(client, "zh-CN")) == "zh-hans"
    assert language_of(landing(client, "en")) == "en"
    assert not Preference.objects.filter(user=alice).exists()


def test_a_pages_messages_from_python_are_translated_too(client: Client) -> None:
    response = client.get("/lab/team-a/", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert response.status_code == 403
    assert "登录后才能观看集群 &#x27;team-a&#x27;。" in response.content.decode()


@pytest.mark.django_db(transaction=True)  # committed: the async ORM reads in a worker thread
async def test_an_async_view_gets_the_saved_language_too(alice: User) -> None:
    # The etcd panel's reads are an async view: the middleware's async path reads the user and the
    # preference without blocking the event loop, and the view's refusal speaks the saved language.
    await Preference.objects.acreate(user=alice, language="zh-hans")
    client = AsyncClient()
    await client.aforce_login(alice)
    response = await client.get("/lab/team-a/etcd/", HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 403
    assert json.loads(response.content) == {"error": "你无权查看集群 'team-a' 的存储内容"}
