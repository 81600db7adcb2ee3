"""The sign-in limit's rule, on plain numbers: when a window refuses, until when, and which keys count."""

from __future__ import annotations

from courses.accounts.ratelimit import (
    Limit,
    Refusal,
    Window,
    address_key,
    latest,
    refusal,
    username_key,
)

FIVE_IN_FIVE_MINUTES = Limit(failures=5, window=300)


def test_nothing_counted_refuses_nothing() -> None:
    assert refusal(None, limit=FIVE_IN_FIVE_MINUTES, now=1000) is None


def test_failures_below_the_limit_refuse_nothing() -> None:
    assert refusal(Window(failures=4, opened=1000), limit=FIVE_IN_FIVE_MINUTES, now=1010) is None


def test_the_limit_refuses_until_the_window_that_the_first_failure_opened_closes() -> None:
    window = Window(failures=5, opened=1000)
    assert refusal(window, limit=FIVE_IN_FIVE_MINUTES, now=1010) == Refusal(retry_at=1300)
    assert refusal(window, limit=FIVE_IN_FIVE_MINUTES, now=1299.5) == Refusal(retry_at=1300)
    assert refusal(window, limit=FIVE_IN_FIVE_MINUTES, now=1300) is None


def test_retry_after_is_whole_seconds_and_at_least_one() -> None:
    assert Refusal(retry_at=1300).retry_after(now=1010) == 290
    assert Refusal(retry_at=1300).retry_after(now=1299.2) == 1
    assert Refusal(retry_at=1300).retry_after(now=1300) == 1


def test_a_sign_in_waits_for_the_longest_refusal() -> None:
    assert latest(None, None) is None
    assert latest(Refusal(1300), None, Refusal(1200)) == Refusal(1300)


def test_a_username_is_one_key_whatever_its_case_or_unicode_form() -> None:
    assert username_key("Alice") == username_key("alice") == username_key("ＡＬＩＣＥ")  # noqa: RUF001
    assert username_key("alice") != username_key("alice2")
    # Any typed name makes a short key without the name in it.
    long_key = username_key("x y " * 10_000)
    assert len(long_key) < 100 and " " not in long_key
    assert "alice" not in username_key("alice")


def test_an_address_and_a_username_never_share_a_key() -> None:
    assert address_key("127.0.0.1") != username_key("127.0.0.1")
