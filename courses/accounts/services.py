"""Accounts' services and selectors: making an account, and the language a person chose.

Keyword-only functions over the models, called by the thin views and the middleware of this package;
nothing here reads a request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from courses.accounts.models import Preference

if TYPE_CHECKING:
    from courses.accounts.forms import SignUpForm


def supported_language(code: str | None) -> str | None:
    """``code`` if it is one of ``settings.LANGUAGES`` (``en``, ``zh-hans``), else None."""
    return code if code in dict(settings.LANGUAGES) else None


@transaction.atomic
def create_account(*, form: SignUpForm, language: str | None = None) -> User:
    """The account a valid sign-up form describes; ``language``, the language this browser chose
    before signing up, becomes its saved preference."""
    user: User = form.save()
    chosen = supported_language(language)
    if chosen is not None:
        Preference.objects.create(user=user, language=chosen)
    return user


def save_language(*, user: User, language: str) -> None:
    """Remember ``language`` as ``user``'s choice, for every browser they sign in from."""
    if supported_language(language) is None:
        raise ValueError(f"{language!r} is not one of settings.LANGUAGES")
    Preference.objects.update_or_create(user=user, defaults={"language": language})


def preferred_language(*, user_id: int) -> str | None:
    """The language ``user_id`` chose, if they chose one (and it is still offered)."""
    saved = Preference.objects.filter(user_id=user_id).values_list("language", flat=True).first()
    return supported_language(saved)


async def apreferred_language(*, user_id: int) -> str | None:
    """``preferred_language`` for asynchronous code: Django's async ORM, nothing on the event loop."""
    saved = await Preference.objects.filter(user_id=user_id).values_list("language", flat=True).afirst()
    return supported_language(saved)
