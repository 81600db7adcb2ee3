"""List and watch options: upstream's own table, ``TestValidateListOptions`` (staging/src/k8s.io/
apimachinery/pkg/apis/meta/internalversion/validation/validation_test.go), with the WatchList
feature on, as it is in the lab."""

from __future__ import annotations

import pytest

from controlplane.apiserver import errors, pagination

REQUIRES_NOT_OLDER_THAN = (
    "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
)

CASES: list[tuple[str, dict[str, object], list[str]]] = [
    ("valid-default", {}, []),
    ("valid-resourceversionmatch-exact", {"resource_version": "1", "match": "Exact"}, []),
    (
        "invalid-resourceversionmatch-exact",
        {"resource_version": "0", "match": "Exact"},
        [
            "resourceVersionMatch: Forbidden: "
            'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
        ],
    ),
    ("valid-resourceversionmatch-notolderthan", {"resource_version": "0", "match": "NotOlderThan"}, []),
    (
        "invalid-resourceversionmatch",
        {"resource_version": "0", "match": "foo"},
        ['resourceVersionMatch: Unsupported value: "foo": supported values: "Exact", "NotOlderThan", ""'],
    ),
    (
        "list-sendInitialEvents-forbidden",
        {"send_initial_events": "true"},
        ["sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"],
    ),
    ("valid-watch-default", {"watch": True}, []),
    (
        "valid-watch-sendInitialEvents-on",
        {"watch": True, "send_initial_events": "true", "match": "NotOlderThan"},
        [],
    ),
    (
        "valid-watch-sendInitialEvents-off",
        {"watch": True, "send_initial_events": "false", "match": "NotOlderThan"},
        [],
    ),
    (
        "watch-resourceversionmatch-without-sendInitialEvents-forbidden",
        {"watch": True, "match": "NotOlderThan"},
        [
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless "
            "sendInitialEvents is provided"
        ],
    ),
    (
        "watch-sendInitialEvents-with-exact-resourceversionmatch-forbidden",
        {"watch": True, "send_initial_events": "true", "match": "Exact"},
        [
            REQUIRES_NOT_OLDER_THAN,
            'resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"',
        ],
    ),
    (
        "watch-sendInitialEvents-on-with-empty-resourceversionmatch-forbidden",
        {"watch": True, "send_initial_events": "true"},
        [REQUIRES_NOT_OLDER_THAN],
    ),
    (
        "watch-sendInitialEvents-with-incorrect-resourceversionmatch-forbidden",
        {"watch": True, "send_initial_events": "true", "match": "incorrect"},
        [
            REQUIRES_NOT_OLDER_THAN,
            'resourceVersionMatch: Unsupported value: "incorrect": supported values: "NotOlderThan"',
        ],
    ),
    # "validating allowWatchBookmarks would break backward compatibility" (upstream's note)
    (
        "watch-sendInitialEvents-no-allowWatchBookmark",
        {"watch": True, "send_initial_events": "true", "match": "NotOlderThan"},
        [],
    ),
    (
        "watch-sendInitialEvents-with-continue",
        {"watch": True, "send_initial_events": "true", "match": "NotOlderThan", "continue_": "123"},
        ["resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"],
    ),
]


@pytest.mark.parametrize(
    ("options", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_list_options_are_validated_as_upstream_validates_them(
    options: dict[str, object], expected: list[str]
) -> None:
    arguments: dict[str, object] = {
        "resource_version": None,
        "match": None,
        "continue_": None,
        "watch": False,
        "send_initial_events": None,
        **options,
    }
    if not expected:
        pagination.validate_list_options(**arguments)  # type: ignore[arg-type]
        return
    with pytest.raises(errors.StatusError) as raised:
        pagination.validate_list_options(**arguments)  # type: ignore[arg-type]
    status = raised.value.status()
    assert status["code"] == 422
    causes = status["details"]["causes"]
    assert [f"{c['field']}: {c['message']}" for c in causes] == expected
