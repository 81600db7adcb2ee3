"""The accounts routes, included by ``courses/urls.py`` into the ``courses`` namespace:
``courses:sign-up``, ``courses:sign-in``, ``courses:sign-out`` and ``courses:set-language`` (the
header's language switch)."""

from __future__ import annotations

from django.contrib.auth.views import LogoutView
from django.urls import path

from courses.accounts import views

urlpatterns = [
    path("accounts/sign-up/", views.sign_up, name="sign-up"),
    path("accounts/sign-in/", views.SignInView.as_view(), name="sign-in"),
    path("accounts/sign-out/", LogoutView.as_view(), name="sign-out"),
    path("accounts/language/", views.set_language, name="set-language"),
]
