"""The content linter: a check names nothing its step's text does not mention."""

from __future__ import annotations

import pytest

from controlplane.trace.schema import EVENT_TYPES
from courses.engine.checks import parse_check
from courses.engine.content.linter import TRACE_ALIASES, lint_words, mentions, unmentioned


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("Create a ConfigMap.", "ConfigMap"),
        ("create two configmaps", "ConfigMap"),
        ("a config map", "ConfigMap"),
        ("The ConfigMap app-config", "configmaps"),  # a resource by its kind's singular
        ("three pods", "Pod"),
        ("a Pod", "pods"),
        ("the ReplicaSet", "replicasets"),
        ("the network policies", "NetworkPolicy"),
        ("its available replicas", "availableReplicas"),
        ("its availableReplicas", "availableReplicas"),
        ("the `app-config` ConfigMap", "app-config"),
        ("Its status.phase becomes Running", "phase"),
        ("the store.txn in the narration", "store.txn"),
        ("one etcd transaction", "store.txn"),
        ("a watch event reaches you", "watch.event"),
        ("the watches", "watch.event"),
        ("the scheduler decides", "scheduler.decision"),
        ("it schedules the pod", "scheduler.decision"),
        ("RBAC allows it", "rbac.decision"),
        ("the controller reconciles", "reconcile"),
        ("reconciling", "reconcile"),
        ("the request was created", "create"),
        ("Creating it", "create"),
        ("the kube-proxy syncs", "proxy.sync"),
        ("AUTHENTICATION first", "authentication"),
        ("the mutating admission plugins", "mutating-admission"),
    ],
)
def test_a_word_is_mentioned(text: str, word: str) -> None:
    assert mentions(text, word)


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("a webhook", "web"),  # a word stands on its own
        ("the deployment", "ConfigMap"),
        ("etcd stores it", "store.txn"),  # etcd is not the transaction
        ("a podcast", "pod"),
        ("a request", "watch.event"),
        ("spec.replicas", "availableReplicas"),
        ("the app config", "app-configuration"),
    ],
)
def test_a_word_is_not_mentioned(text: str, word: str) -> None:
    assert not mentions(text, word)


def test_every_trace_type_has_aliases() -> None:
    assert set(TRACE_ALIASES) == set(EVENT_TYPES)


CHECK = {
    "all": [
        {
            "id": "created",
            "trace": {
                "sequence": [
                    {
                        "type": "request.completed",
                        "verb": "create",
                        "resource": "configmaps",
                        "user": "$student",
                    },
                    {
                        "type": "store.txn",
                        "op": "txn",
                        "writes": {"key": "/registry/configmaps/*/app-config"},
                    },
                ]
            },
        },
        {
            "state": {
                "get": {"apiVersion": "v1", "kind": "ConfigMap", "name": "app-config"},
                "conditions": [{"path": "data.color", "equals": "blue"}],
            }
        },
    ]
}


def test_a_check_whose_words_are_all_in_the_text_passes() -> None:
    check = parse_check(CHECK, where="test")
    text = "Create the ConfigMap app-config with a color; see the request and its etcd transaction."
    assert unmentioned(check, text) == []


def test_each_unmentioned_word_is_reported_with_its_leaf() -> None:
    check = parse_check(CHECK, where="test")
    found = unmentioned(check, "Create a ConfigMap and watch the request.")
    assert [(u.leaf, u.word) for u in found] == [
        ("leaf 'created'", "store.txn"),
        ("leaf 2 (state)", "app-config"),
        ("leaf 2 (state)", "color"),
    ]
    assert found[0].message("check") == (
        "leaf 'created' of the check names 'store.txn', which the step's English text never mentions "
        "(say 'store.txn' or 'transaction')"
    )


def test_globs_and_the_student_are_never_asked_for() -> None:
    check = parse_check(
        {"trace": {"sequence": [{"type": "request.completed", "user": "$student", "name": "web-*"}]}},
        where="t",
    )
    assert lint_words(check.mentions(), "a request") == []
