"""The accounts pages: sign up, sign in, sign out, and the language switch. Thin views over Django's
auth views and forms and this package's services.

- Sign up (``KUBELAB_OPEN_SIGNUP``, on by default): a username and a password twice; the new account
  is signed in at once. Switched off, the page says where accounts come from instead (404: there is
  no sign-up here).
- Sign in: Django's ``LoginView``. Failed attempts are limited (``courses.accounts.ratelimit``, applied
  by ``courses.accounts.backends``); a refused attempt gets 429 with ``Retry-After`` and a page that
  says how long to wait, the same for every username.
- Sign out: Django's ``LogoutView``, POST only (a link could be followed by any page the student
  visits; a form needs this site's CSRF token).
- The language switch: Django's ``set_language`` (POST with CSRF, back to ``next``), which also saves a
  signed-in person's choice (``Preference``), so it follows them to every browser they sign in from.

Every form here carries Django's CSRF token, and ``next`` is followed only to this site.
"""

from __future__ import annotations

import math
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import ngettext
from django.views import i18n
from django.views.decorators.http import require_http_methods, require_POST

from courses.accounts import ratelimit, services
from courses.accounts.backends import RateLimitedModelBackend
from courses.accounts.forms import SignInForm, SignUpForm

_BACKEND = f"{RateLimitedModelBackend.__module__}.{RateLimitedModelBackend.__qualname__}"


def refusal_message(refusal: ratelimit.Refusal, *, now: float) -> str:
    """What a refused sign-in says: how long to wait, and nothing about whether the account exists."""
    seconds = refusal.retry_after(now=now)
    if seconds < 60:
        return ngettext(
            "Too many failed sign-ins for this username or from your network. Try again in %(count)d second.",
            "Too many failed sign-ins for this username or from your network. "
            "Try again in %(count)d seconds.",
            seconds,
        ) % {"count": seconds}
    minutes = math.ceil(seconds / 60)
    return ngettext(
        "Too many failed sign-ins for this username or from your network. Try again in %(count)d minute.",
        "Too many failed sign-ins for this username or from your network. Try again in %(count)d minutes.",
        minutes,
    ) % {"count": minutes}


def _browser_language(request: HttpRequest) -> str | None:
    """The language this browser chose with the switch (its cookie), if any."""
    return services.supported_language(request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME))


def _set_language_cookie(response: HttpResponseBase, language: str) -> None:
    # The cookie Django's set_language writes, with the same settings.
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        language,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        path=settings.LANGUAGE_COOKIE_PATH,
        domain=settings.LANGUAGE_COOKIE_DOMAIN,
        secure=settings.LANGUAGE_COOKIE_SECURE,
        httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,
    )


def _safe_next(request: HttpRequest) -> str | None:
    """``next`` from the form or the query string, if it stays on this site."""
    target = request.POST.get("next") or request.GET.get("next")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return None


@require_http_methods(["GET", "POST"])
def sign_up(request: HttpRequest) -> HttpResponse:
    """Make an account (username, password twice) and sign in with it."""
    if not settings.KUBELAB_OPEN_SIGNUP:
        return render(request, "courses/accounts/sign_up_closed.html", status=404)
    target = _safe_next(request)
    if request.user.is_authenticated:
        return redirect(target or settings.LOGIN_REDIRECT_URL)
    form = SignUpForm(request.POST if request.method == "POST" else None)
    if form.is_valid():
        user = services.create_account(form=form, language=_browser_language(request))
        login(request, user, backend=_BACKEND)
        return redirect(target or settings.LOGIN_REDIRECT_URL)
    return render(request, "courses/accounts/sign_up.html", {"form": form, "next": target or ""})


class SignInView(LoginView):
    """Django's sign-in, which says how long to wait once failures are limited."""

    template_name = "courses/accounts/sign_in.html"
    authentication_form = SignInForm
    redirect_authenticated_user = True

    def _refusal(self) -> ratelimit.Refusal | None:
        return ratelimit.signin_refusal(
            username=self.request.POST.get("username", ""), ip=ratelimit.client_ip(self.request)
        )

    def _refused(self, form: AuthenticationForm, refusal: ratelimit.Refusal) -> HttpResponse:
        now = time.time()
        context = self.get_context_data(form=form, refusal=refusal_message(refusal, now=now))
        response = self.render_to_response(context, status=429)
        response["Retry-After"] = str(refusal.retry_after(now=now))
        return response

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        refusal = self._refusal()
        if refusal is not None:
            # Not validated: that would ask the backend, which refuses without a reason to show.
            form = SignInForm(request, initial={"username": request.POST.get("username", "")})
            return self._refused(form, refusal)
        response: HttpResponse = super().post(request, *args, **kwargs)
        return response

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        refusal = self._refusal()  # this failure may have been the last one allowed
        if refusal is not None:
            return self._refused(form, refusal)
        response: HttpResponse = super().form_invalid(form)
        return response

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        browser = _browser_language(self.request)
        response: HttpResponse = super().form_valid(form)
        user = form.get_user()
        saved = services.preferred_language(user_id=user.pk)
        if saved is not None:
            # The person now at this browser gets their own language, not the last person's.
            _set_language_cookie(response, saved)
        elif browser is not None:
            services.save_language(user=user, language=browser)
        return response


@require_POST
def set_language(request: HttpRequest) -> HttpResponseBase:
    """Django's language switch (the cookie, back to ``next``); a signed-in person's choice is saved."""
    response = i18n.set_language(request)
    language = services.supported_language(request.POST.get("language"))
    if language is not None and request.user.is_authenticated:
        services.save_language(user=request.user, language=language)
    return response
