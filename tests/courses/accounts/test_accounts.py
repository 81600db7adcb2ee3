"""Sign up, sign in, sign out: Django's auth, with CSRF on every form, a limit on failed sign-ins that
says when to retry and tells nobody which accounts exist, and a switch that closes open sign-up.

A visitor without an account still reads the landing page and watches the demo cluster, and staff
keep Django's admin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.models import User
from django.test import Client
from pytest_django import Settings

from controlplane.runtime import CLUSTER_LIST_FILE, activate

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"
SIGN_UP = "/accounts/sign-up/"
SIGN_IN = "/accounts/sign-in/"
SIGN_OUT = "/accounts/sign-out/"


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice", password=PASSWORD)


def signed_in(client: Client) -> int | None:
    """The user id the client's session is signed in as, if any."""
    user_id = client.session.get(SESSION_KEY)
    return None if user_id is None else int(user_id)


def csrf_token(page: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert match, "the page's form carries a CSRF token"
    return match.group(1)


def fail_sign_in(client: Client, username: str = "alice", **extra: str) -> tuple[int, str]:
    response = client.post(SIGN_IN, {"username": username, "password": "wrong password"}, **extra)  # type: ignore[arg-type]
    return response.status_code, response.content.decode()


# -- sign up -------------------------------------------------------------------------------------------


def test_sign_up_asks_for_a_username_and_a_password_twice_and_no_e_mail(client: Client) -> None:
    page = client.get(SIGN_UP).content.decode()
    assert 'name="username"' in page and 'name="password1"' in page and 'name="password2"' in page
    assert 'name="email"' not in page
    assert 'name="csrfmiddlewaretoken"' in page


def test_sign_up_makes_the_account_and_signs_it_in(client: Client) -> None:
    response = client.post(
        SIGN_UP, {"username": "bob", "password1": PASSWORD, "password2": PASSWORD, "next": "/lab/demo/"}
    )
    assert (response.status_code, response["Location"]) == (302, "/lab/demo/")
    bob = User.objects.get(username="bob")
    assert bob.check_password(PASSWORD) and bob.email == ""
    assert signed_in(client) == bob.pk
    # The header now shows who is signed in and a sign-out form.
    page = client.get("/").content.decode()
    assert 'data-account="username">bob<' in page
    assert f'action="{SIGN_OUT}" method="post"' in page


@pytest.mark.parametrize(
    ("password1", "password2", "error"),
    [
        (PASSWORD, PASSWORD + "!", "The two password fields didn’t match."),  # noqa: RUF001
        ("short", "short", "This password is too short."),
        ("password", "password", "This password is too common."),
        ("83920174652", "83920174652", "This password is entirely numeric."),
    ],
)
def test_sign_up_checks_the_password_with_djangos_validators(
    client: Client, password1: str, password2: str, error: str
) -> None:
    response = client.post(SIGN_UP, {"username": "bob", "password1": password1, "password2": password2})
    assert response.status_code == 200
    assert error in response.content.decode()
    assert not User.objects.filter(username="bob").exists()


def test_sign_up_refuses_a_taken_username_in_any_case(client: Client, alice: User) -> None:
    response = client.post(SIGN_UP, {"username": "Alice", "password1": PASSWORD, "password2": PASSWORD})
    assert "A user with that username already exists." in response.content.decode()
    assert User.objects.filter(username__iexact="alice").count() == 1


def test_sign_up_never_follows_next_to_another_site(client: Client) -> None:
    response = client.post(
        SIGN_UP,
        {"username": "bob", "password1": PASSWORD, "password2": PASSWORD, "next": "https://evil.example/"},
    )
    assert (response.status_code, response["Location"]) == (302, "/")


def test_with_open_sign_up_off_the_page_says_where_accounts_come_from(
    client: Client, settings: Settings
) -> None:
    settings.KUBELAB_OPEN_SIGNUP = False
    response = client.get(SIGN_UP)
    assert response.status_code == 404
    page = response.content.decode()
    assert 'data-account="signup-closed"' in page
    assert "Accounts come from its administrators" in page and "join code" in page
    posted = client.post(SIGN_UP, {"username": "bob", "password1": PASSWORD, "password2": PASSWORD})
    assert posted.status_code == 404
    assert not User.objects.filter(username="bob").exists()
    # Neither the header nor the sign-in page offers it.
    assert f'href="{SIGN_UP}"' not in client.get("/").content.decode()
    assert SIGN_UP not in client.get(SIGN_IN).content.decode()


def test_with_open_sign_up_on_the_header_offers_it(client: Client) -> None:
    page = client.get("/").content.decode()
    assert f'href="{SIGN_UP}"' in page
    assert f'href="{SIGN_IN}?next=/"' in page


# -- sign in and out -------------------------------------------------------------------------------------


def test_sign_in_and_sign_out(client: Client, alice: User) -> None:
    response = client.post(SIGN_IN, {"username": "alice", "password": PASSWORD, "next": "/lab/demo/"})
    assert (response.status_code, response["Location"]) == (302, "/lab/demo/")
    assert signed_in(client) == alice.pk
    response = client.post(SIGN_OUT)
    assert (response.status_code, response["Location"]) == (302, "/")
    assert signed_in(client) is None


def test_sign_out_is_post_only(client: Client, alice: User) -> None:
    client.force_login(alice)
    assert client.get(SIGN_OUT).status_code == 405
    assert signed_in(client) == alice.pk


def test_a_wrong_password_and_an_unknown_name_get_the_same_answer(client: Client, alice: User) -> None:
    wrong_password = fail_sign_in(client, "alice")
    unknown_name = fail_sign_in(client, "nobody-by-this-name")
    assert wrong_password[0] == unknown_name[0] == 200
    message = "Please enter a correct username and password."
    assert message in wrong_password[1] and message in unknown_name[1]

    # Apart from the name typed and the CSRF tokens (new on every page), the pages are the same.
    def masked(page: str, name: str) -> str:
        return re.sub(
            r'(csrfmiddlewaretoken" value=|X-CSRFToken": )"[^"]+"', "TOKEN", page.replace(name, "X")
        )

    assert masked(wrong_password[1], "alice") == masked(unknown_name[1], "nobody-by-this-name")


@pytest.mark.parametrize(
    ("path", "data"),
    [
        (SIGN_IN, {"username": "alice", "password": PASSWORD}),
        (SIGN_UP, {"username": "bob", "password1": PASSWORD, "password2": PASSWORD}),
        (SIGN_OUT, {}),
        ("/accounts/language/", {"language": "zh-hans", "next": "/"}),
    ],
    ids=["sign in", "sign up", "sign out", "language"],
)
def test_every_form_needs_its_csrf_token(path: str, data: dict[str, str], alice: User) -> None:
    client = Client(enforce_csrf_checks=True)
    if path == SIGN_OUT:
        client.force_login(alice)
    assert client.post(path, data).status_code == 403
    assert not User.objects.filter(username="bob").exists()
    assert signed_in(client) == (alice.pk if path == SIGN_OUT else None)
    # With the token of the form the site served, the same post goes through.
    page = client.get("/").content.decode()
    assert client.post(path, {**data, "csrfmiddlewaretoken": csrf_token(page)}).status_code == 302


# -- the limit on failed sign-ins -----------------------------------------------------------------------


def test_the_sixth_attempt_after_five_failures_is_refused_even_with_the_right_password(
    client: Client, alice: User
) -> None:
    for _ in range(4):
        status, page = fail_sign_in(client)
        assert status == 200 and "Too many failed sign-ins" not in page
    status, page = fail_sign_in(client)  # the fifth: refused from now on, and said at once
    assert status == 429 and "Too many failed sign-ins" in page
    response = client.post(SIGN_IN, {"username": "alice", "password": PASSWORD})
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 300
    page = response.content.decode()
    assert re.search(r"Try again in [45] minutes\.", page)
    assert 'role="alert"' in page and 'value="alice"' in page  # the name stays in the form
    assert signed_in(client) is None


def test_the_refusal_is_the_same_for_a_name_that_does_not_exist(client: Client, alice: User) -> None:
    for _ in range(5):
        fail_sign_in(client, "ghost")
    status, page = fail_sign_in(client, "ghost")
    assert status == 429 and "Too many failed sign-ins for this username or from your network" in page


def test_a_success_clears_the_usernames_failures(client: Client, alice: User) -> None:
    for _ in range(4):
        fail_sign_in(client)
    assert client.post(SIGN_IN, {"username": "alice", "password": PASSWORD}).status_code == 302
    client.post(SIGN_OUT)
    for _ in range(4):
        assert fail_sign_in(client)[0] == 200  # four more are allowed: the count started again
    assert client.post(SIGN_IN, {"username": "alice", "password": PASSWORD}).status_code == 302


def test_a_name_is_one_name_whatever_its_case(client: Client, alice: User) -> None:
    for name in ("alice", "ALICE", "Alice", "aLiCe", "alicE"):
        fail_sign_in(client, name)
    assert client.post(SIGN_IN, {"username": "alice", "password": PASSWORD}).status_code == 429


def test_one_address_trying_many_names_is_refused_too(
    client: Client, alice: User, settings: Settings
) -> None:
    settings.KUBELAB_SIGNIN_FAILURES_PER_IP = 3
    for name in ("a1", "a2", "a3"):
        fail_sign_in(client, name, REMOTE_ADDR="10.0.0.7")
    status, page = fail_sign_in(client, "a4", REMOTE_ADDR="10.0.0.7")
    assert status == 429 and "Too many failed sign-ins" in page
    # Another address is not refused, and the limit on the address is not the account's.
    response = client.post(SIGN_IN, {"username": "alice", "password": PASSWORD}, REMOTE_ADDR="10.0.0.8")
    assert response.status_code == 302


def test_the_admins_sign_in_is_limited_too(client: Client) -> None:
    User.objects.create_superuser("root", password=PASSWORD)
    for _ in range(5):
        client.post("/admin/login/", {"username": "root", "password": "wrong", "next": "/admin/"})
    response = client.post("/admin/login/", {"username": "root", "password": PASSWORD, "next": "/admin/"})
    assert response.status_code == 200  # the form again, not the admin
    assert signed_in(client) is None


def test_staff_keep_the_admin(client: Client) -> None:
    User.objects.create_superuser("root", password=PASSWORD)
    response = client.post("/admin/login/", {"username": "root", "password": PASSWORD, "next": "/admin/"})
    assert (response.status_code, response["Location"]) == (302, "/admin/")
    assert client.get("/admin/").status_code == 200


def test_a_student_does_not_get_the_admin(client: Client, alice: User) -> None:
    client.force_login(alice)
    response = client.get("/admin/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


# -- visitors without an account ------------------------------------------------------------------------


@pytest.fixture
def demo(tmp_path: Path, settings: Settings) -> Iterator[Path]:
    settings.KUBELAB_DATA_DIR = tmp_path
    settings.KUBELAB_STORE = "sqlite"
    settings.KUBELAB_DEMO_CLUSTER = "demo"
    settings.KUBELAB_DEMO_ANONYMOUS = True
    (tmp_path / CLUSTER_LIST_FILE).write_text(json.dumps({"clusters": ["demo", "team-a"]}))
    activate(None)
    yield tmp_path
    activate(None)


def test_a_visitor_reads_the_landing_page_and_watches_the_demo(client: Client, demo: Path) -> None:
    landing = client.get("/")
    assert landing.status_code == 200
    assert '<a href="/lab/demo/">demo</a>' in landing.content.decode()
    assert client.get("/lab/demo/").status_code == 200
    refused = client.get("/lab/team-a/")
    assert refused.status_code == 403
    page = refused.content.decode()
    assert "Sign in to watch cluster &#x27;team-a&#x27;." in page
    assert f'href="{SIGN_IN}?next=/lab/team-a/"' in page
