"""The console's policy: every escape in the battery is refused with a message, and what a chapter
needs is allowed, word for word as typed."""

from __future__ import annotations

import pytest

from courses.console.policy import ALLOWED_COMMANDS, Allowed, Reason, Refused, decide
from tests.courses.console.escapes import ALLOWED, ESCAPES, IMPERSONATE


def test_the_battery_is_at_least_forty_escapes() -> None:
    assert len(ESCAPES) >= 40
    assert len({line for line, _ in ESCAPES}) == len(ESCAPES), "an escape is listed twice"


@pytest.mark.parametrize(("line", "reason"), ESCAPES, ids=[repr(line[:60]) for line, _ in ESCAPES])
def test_an_escape_is_refused_with_a_message(line: str, reason: Reason) -> None:
    decision = decide(line, impersonate=IMPERSONATE)
    assert isinstance(decision, Refused), f"{line!r} would run as {decision}"
    assert decision.reason == reason, decision.message
    assert decision.message.strip()


@pytest.mark.parametrize(
    ("line", "argv", "stdin_from_editor", "follows"), ALLOWED, ids=[repr(line[:60]) for line, *_ in ALLOWED]
)
def test_what_a_chapter_needs_is_allowed(
    line: str, argv: tuple[str, ...], stdin_from_editor: bool, follows: bool
) -> None:
    decision = decide(line, impersonate=IMPERSONATE)
    assert isinstance(decision, Allowed), decision
    assert decision.argv == argv
    assert decision.stdin_from_editor is stdin_from_editor
    assert decision.follows is follows


def test_impersonation_follows_the_chapter() -> None:
    assert isinstance(decide("kubectl get pods --as=jane", impersonate=["jane"]), Allowed)
    refused = decide("kubectl get pods --as=jane")
    assert isinstance(refused, Refused) and refused.reason == Reason.IMPERSONATION
    assert "only as yourself" in refused.message
    listed = decide("kubectl get pods --as=bob", impersonate=["jane", "kim"])
    assert isinstance(listed, Refused) and "jane, kim" in listed.message


def test_the_message_names_what_was_refused() -> None:
    cases = {
        "kubectl get -wf /etc/passwd": "-wf /etc/passwd",
        "kubectl get pods -s https://evil.example": "-s https://evil.example",
        "kubectl get pods --server=https://evil.example": "--server=https://evil.example",
        "kubectl get pods | sh": "|",
        "kubectl get pods -n $NAMESPACE": "$NAMESPACE",
        "sudo kubectl get pods": "sudo",
        "kubectl foo": "foo",
        "kubectl edit cm app": "kubectl edit",
        "kubectl get pods -o jsonpath-file=/etc/passwd": "jsonpath-file",
    }
    for line, named in cases.items():
        decision = decide(line)
        assert isinstance(decision, Refused)
        assert named in decision.message, (line, decision.message)


def test_every_allowed_command_exists_in_kubectl() -> None:
    from courses.console.kubectl_commands import COMMANDS

    assert set(COMMANDS[""].children) >= ALLOWED_COMMANDS


def test_every_option_that_sounds_like_a_file_or_a_connection_is_refused_or_was_reviewed() -> None:
    """A kubectl upgrade that adds such an option fails here until someone decides about it."""
    import re

    from courses.console.kubectl_commands import COMMANDS, GLOBAL_FLAGS
    from courses.console.policy import ANYWHERE, INTERACTIVE_OPTIONS

    suspicious = re.compile(r"file|dir|path|cert|key|config|server|token|socket|proxy|url|password|kube")
    #: Read and found harmless: what they name is in the cluster, or inline, not on the server's disk.
    reviewed = {
        "keys", "allow-missing-template-keys", "detach-keys",  # keys of a Secret, a template, a terminal
        "docker-server", "docker-password",  # strings written into a Secret
        "non-resource-url",  # a rule of a ClusterRole
        "server-side", "server-print", "match-server-version", "save-config",  # how to talk to the server
        "delete-emptydir-data", "insecure-skip-tls-verify-backend",  # what the cluster does
    }  # fmt: skip
    handled = ANYWHERE | INTERACTIVE_OPTIONS | {"filename"}
    names = set(GLOBAL_FLAGS)
    for key, command in COMMANDS.items():
        if key.split(" ")[0] in ALLOWED_COMMANDS:
            names |= set(command.flags)
    unreviewed = sorted(n for n in names if suspicious.search(n) and n not in handled | reviewed)
    assert unreviewed == []
