"""The trace socket's access check: it asks the rule the settings name, off the event loop.

The rule itself (classrooms) is tested in tests/courses/test_access.py; here, that the consumers'
layer calls whatever ``KUBELAB_CLUSTER_ACCESS`` names, in a worker thread (the rule may use the ORM),
takes only a real ``True`` for a yes, and refuses to run without a rule.
"""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ImproperlyConfigured
from pytest_django import Settings

from controlplane.consumers.access import may_view

#: What the test rule saw: (user, cluster, thread id) per call.
calls: list[tuple[object, str, int]] = []


def only_team_a(user: object, cluster: str) -> bool:
    calls.append((user, cluster, threading.get_ident()))
    return cluster == "team-a"


def says_yes_loosely(user: object, cluster: str) -> object:
    return "yes"


@pytest.fixture(autouse=True)
def no_calls() -> None:
    calls.clear()


async def test_the_named_rule_decides_and_runs_off_the_event_loop(settings: Settings) -> None:
    settings.KUBELAB_CLUSTER_ACCESS = f"{__name__}.only_team_a"
    user = AnonymousUser()
    assert await may_view(user, "team-a") is True
    assert await may_view(None, "team-b") is False
    assert [(u, c) for u, c, _ in calls] == [(user, "team-a"), (None, "team-b")]
    assert all(thread != threading.get_ident() for _, _, thread in calls), "the rule ran on the event loop"


async def test_only_true_lets_a_socket_in(settings: Settings) -> None:
    settings.KUBELAB_CLUSTER_ACCESS = f"{__name__}.says_yes_loosely"
    assert await may_view(None, "team-a") is False


async def test_without_a_rule_nobody_is_let_in(settings: Settings) -> None:
    settings.KUBELAB_CLUSTER_ACCESS = ""
    with pytest.raises(ImproperlyConfigured, match="KUBELAB_CLUSTER_ACCESS"):
        await may_view(None, "demo")
