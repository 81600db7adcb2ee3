"""The accounts' forms: Django's own, which already do what a sign-up and a sign-in need.

- ``SignUpForm`` is Django's ``UserCreationForm``: a username (letters, digits and ``@.+-_``, unique
  without regard to case) and a password typed twice, checked by ``AUTH_PASSWORD_VALIDATORS`` (not too
  short, not too common, not all digits, not like the username). No e-mail address: Kubelab sends no
  mail, so it asks for none.
- ``SignInForm`` is Django's ``AuthenticationForm``: it asks ``authenticate``, and says the same thing
  for a wrong password and for a name that does not exist.

Their labels, help texts and errors come translated in Django's own catalogs (zh-Hans included).
"""

from __future__ import annotations

from django.contrib.auth.forms import AuthenticationForm, UserCreationForm


class SignUpForm(UserCreationForm):  # type: ignore[type-arg]
    """A username and a password twice; nothing else (``UserCreationForm.Meta``: the ``User`` model,
    its ``username`` field)."""


class SignInForm(AuthenticationForm):
    """A username and a password."""
