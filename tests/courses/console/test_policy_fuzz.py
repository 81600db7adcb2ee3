"""Fuzzing the policy (hypothesis): any text at all gets a decision, never an exception; and whatever is
allowed, however its words are arranged, keeps kubectl on the student's sandbox, off the server's files
and within the chapter's impersonation, with no ``&`` but in the query of a ``--raw`` path."""

from __future__ import annotations

import shlex

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from courses.console.cmdline import default_tree, parse
from courses.console.policy import (
    ALLOWED_COMMANDS,
    ANYWHERE,
    INTERACTIVE_OPTIONS,
    MAX_LENGTH,
    Allowed,
    Refused,
    decide,
)

IMPERSONATE = ("jane",)
#: Words an attacker would combine: commands, the options that matter in every form, values.
WORDS = [
    "get", "pods", "create", "configmap", "cm", "x", "apply", "delete", "logs", "run", "auth", "can-i",
    "rollout", "status", "top", "edit", "exec", "foo", "secret", "generic", "set", "env", "help",
    "-f", "-", "-f-", "-wf", "-Rf", "-fk", "--filename", "--filename=-", "--filename=/etc/passwd",
    "/etc/passwd", "https://evil.example", "-k", "--kustomize", "-s", "-shttps://evil.example",
    "--server", "--kubeconfig", "--kube_config", "--kubeconfig=/etc/passwd", "--token=t", "--context",
    "--as", "--as=jane", "--as=admin", "--as_group=system:masters", "admin", "jane", "-n", "-nx",
    "-o", "-ojsonpath-file=/etc/passwd", "jsonpath-file=/etc/passwd", "yaml", "--template=/x",
    "--raw", "/api", "/../x", "-w", "-A", "-it", "--edit", "--", "-v", "9", "--kuberc", "--from-file=/x",
    "--from-literal=a=b", "--cache-dir=/tmp", "--dry-run", "server", "-h", "--help", "-e", "-p",
    "&", "a&b", "/api?a=1&b=2", "/api&x?a=1", "--raw=/api?a=1&b=2", "-l=a&b",
]  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_any_text_gets_a_decision(text: str) -> None:
    decision = decide(text, impersonate=IMPERSONATE)
    assert isinstance(decision, Allowed | Refused)
    if isinstance(decision, Refused):
        assert decision.message


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=MAX_LENGTH - 10, max_size=MAX_LENGTH + 10))
def test_length_is_checked_before_anything_else(text: str) -> None:
    decision = decide("kubectl get " + text)
    if len("kubectl get " + text) > MAX_LENGTH:
        assert isinstance(decision, Refused) and decision.reason == "too-long"


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(WORDS), max_size=8))
def test_whatever_is_allowed_stays_inside(words: list[str]) -> None:
    line = shlex.join(["kubectl", *words])
    decision = decide(line, impersonate=IMPERSONATE)
    if isinstance(decision, Refused):
        return
    assert decision.argv == ("kubectl", *words)
    parsed = parse(default_tree(), list(decision.argv[1:]))
    assert not parsed.path or parsed.path[0] in ALLOWED_COMMANDS, line
    for option in parsed.options:
        assert option.name not in ANYWHERE and option.name not in INTERACTIVE_OPTIONS, line
        if option.name == "filename":
            assert option.value == "-", line
        if option.name in ("as", "as-group"):
            assert option.value in IMPERSONATE, line
        if option.name == "output":
            assert not (option.value or "").lower().split("=")[0].endswith("file"), line
        if option.name == "raw":
            assert (option.value or "").startswith("/") and ".." not in (option.value or ""), line
    # an & only where it is a character of --raw's query, never a word or another option's value
    in_raw_queries = sum((v or "").partition("?")[2].count("&") for v in parsed.values("raw"))
    assert sum(word.count("&") for word in words) == in_raw_queries, line
    for word in words:  # not even where kubectl would read it as a value
        if word.startswith("--"):
            assert word[2:].split("=")[0].replace("_", "-") not in ANYWHERE, line
    assert decision.stdin_from_editor == ("-" in parsed.values("filename"))
