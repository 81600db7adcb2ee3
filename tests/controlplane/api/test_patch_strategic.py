"""Strategic merge patch, applied as kube-apiserver applies it.

Most cases are ported from apimachinery ``pkg/util/strategicpatch/patch_test.go``, which tests
against a ``MergeItem`` struct (and the same schema as OpenAPI, ``testdata/swagger-merge-item.json``);
:data:`MERGE_ITEM` is that schema in the JSON Schema form :mod:`controlplane.api.schema` reads.
Upstream's tables give, per case, an ``original`` and the ``twoWay`` patch that yields ``modified``
(or ``twoWayResult``), and a live ``current`` object that the ``threeWay`` patch turns into
``result``. We check both applications, in order (upstream's raw cases compare exact bytes).

Then the same machinery on built-in kinds with upstream's real schemas, including the exact patch
kubectl 1.37's client-side apply sends for a Deployment update.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from controlplane.api.patch import (
    InvalidPatch,
    ListOfListsNotSupported,
    MissingMergeKey,
    PatchError,
    StrategicMergePatchFailed,
    UnknownPatchField,
    UnsupportedStrategicMergePatch,
    apply_strategic_merge_patch,
)
from controlplane.api.patch.strategic import apply_with_definition
from controlplane.api.strategies.workloads import DeploymentStrategy

# -- upstream's MergeItem test type ---------------------------------------------------------------


def _list_of(ref: str, **extensions: str) -> dict[str, Any]:
    return {"type": "array", "items": {"$ref": f"#/$defs/{ref}"}, **extensions}


MERGE = {"x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"}
MERGE_ITEM: dict[str, Any] = {
    "MergeItem": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "value": {"type": "string"},
            "other": {"type": "string"},
            "mergingList": _list_of("MergeItem", **MERGE),
            "nonMergingList": _list_of("MergeItem"),
            "mergingIntList": {
                "type": "array",
                "items": {"type": "integer"},
                "x-kubernetes-patch-strategy": "merge",
            },
            "nonMergingIntList": {"type": "array", "items": {"type": "integer"}},
            "mergeItemPtr": _list_of("MergeItem", **MERGE),
            "simpleMap": {"type": "object", "additionalProperties": {"type": "string"}},
            "replacingItem": {"$ref": "#/$defs/RawExtension", "x-kubernetes-patch-strategy": "replace"},
            "retainKeysMap": {
                "$ref": "#/$defs/RetainKeysMergeItem",
                "x-kubernetes-patch-strategy": "retainKeys",
            },
            "retainKeysMergingList": _list_of(
                "MergeItem", **{**MERGE, "x-kubernetes-patch-strategy": "merge,retainKeys"}
            ),
        },
    },
    "RetainKeysMergeItem": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "value": {"type": "string"},
            "other": {"type": "string"},
            "simpleMap": {"type": "object", "additionalProperties": {"type": "string"}},
            "mergingIntList": {
                "type": "array",
                "items": {"type": "integer"},
                "x-kubernetes-patch-strategy": "merge",
            },
            "mergingList": _list_of("MergeItem", **MERGE),
            "nonMergingList": _list_of("MergeItem"),
        },
    },
    "RawExtension": {"type": "object"},
}


def merge_item_patch(doc: Any, patch: Any) -> Any:
    return apply_with_definition(doc, patch, definition="MergeItem", definitions=MERGE_ITEM)


def cases(text: str) -> list[Any]:
    return [pytest.param(case, id=case["description"]) for case in yaml.safe_load(text)]


# -- patch_test.go: customStrategicMergePatchTestCaseData (two-way only) ---------------------------

CUSTOM_CASES = cases("""
- description: unique scalars when merging lists
  original: {mergingIntList: [1, 2]}
  twoWay: {mergingIntList: [2, 3]}
  modified: {mergingIntList: [1, 2, 3]}
- description: delete map from nested map
  original: {simpleMap: {key1: 1, key2: 1}}
  twoWay: {simpleMap: {$patch: delete}}
  modified: {simpleMap: {}}
- description: delete all items from merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  twoWay: {mergingList: [{$patch: replace}]}
  modified: {mergingList: []}
- description: merge empty merging lists
  original: {mergingList: []}
  twoWay: {mergingList: []}
  modified: {mergingList: []}
- description: delete all keys from map
  original: {name: 1, value: 1}
  twoWay: {$patch: replace}
  modified: {}
- description: add key and delete all keys from map
  original: {name: 1, value: 1}
  twoWay: {other: a, $patch: replace}
  modified: {other: a}
- description: delete all duplicate entries in a merging list
  original: {mergingList: [{name: 1}, {name: 1}, {name: 2, value: a}, {name: 3}, {name: 3}]}
  twoWay: {mergingList: [{name: 1, $patch: delete}, {name: 3, $patch: delete}]}
  modified: {mergingList: [{name: 2, value: a}]}
- description: retainKeys map can add a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo}}
  twoWay: {retainKeysMap: {value: bar}}
  modified: {retainKeysMap: {name: foo, value: bar}}
- description: retainKeys map can change a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo, value: a}}
  twoWay: {retainKeysMap: {value: b}}
  modified: {retainKeysMap: {name: foo, value: b}}
- description: retainKeys map can delete a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo, value: a}}
  twoWay: {retainKeysMap: {value: null}}
  modified: {retainKeysMap: {name: foo}}
- description: retainKeys map merge an empty map
  original: {retainKeysMap: {name: foo, value: a}}
  twoWay: {retainKeysMap: {}}
  modified: {retainKeysMap: {name: foo, value: a}}
- description: retainKeys list can add a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo}]}
  twoWay: {retainKeysMergingList: [{name: foo, value: a}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
- description: retainKeys list can change a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  twoWay: {retainKeysMergingList: [{name: foo, value: b}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo, value: b}]}
- description: retainKeys list can delete a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  twoWay: {retainKeysMergingList: [{name: foo, value: null}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo}]}
- description: preserve the order from the patch in a merging list
  original: {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  twoWay: {mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, other: x}]}
  modified: {mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, value: b, other: x}]}
- description: preserve the order from the patch in a merging list 2
  original: {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  twoWay: {mergingList: [{name: 3, value: c}, {name: 1, value: a}]}
  modified: {mergingList: [{name: 2, value: b}, {name: 3, value: c}, {name: 1, value: a}]}
- description: preserve the order from the patch in a merging int list
  original: {mergingIntList: [1, 2, 3]}
  twoWay: {mergingIntList: [3, 1, 2]}
  modified: {mergingIntList: [3, 1, 2]}
- description: preserve the order from the patch in a merging int list 2
  original: {mergingIntList: [1, 2, 3]}
  twoWay: {mergingIntList: [3, 1]}
  modified: {mergingIntList: [2, 3, 1]}
- description: $setElementOrder contains item that is not present in the list to be merged
  original: {mergingList: [{name: 1}, {name: 3}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 3}, {name: 2}, {name: 1}]
    mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]
  modified: {mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}
- description: $setElementOrder contains item that is not present in the int list to be merged
  original: {mergingIntList: [1, 3]}
  twoWay: {$setElementOrder/mergingIntList: [3, 2, 1]}
  modified: {mergingIntList: [3, 1]}
- description: $deleteFromPrimitiveList of nonexistent item in primitive list should not add the item
  original: {mergingIntList: [1, 2]}
  twoWay: {$deleteFromPrimitiveList/mergingIntList: [3]}
  modified: {mergingIntList: [1, 2]}
- description: $deleteFromPrimitiveList on nonexistent primitive list should not add the primitive list
  original: {foo: [bar]}
  twoWay: {$deleteFromPrimitiveList/mergingIntList: [3]}
  modified: {foo: [bar]}
- description: $deleteFromPrimitiveList should delete item from a list with merge patch strategy
  original: {mergingIntList: [1, 2, 3]}
  twoWay: {$deleteFromPrimitiveList/mergingIntList: [2]}
  modified: {mergingIntList: [1, 3]}
- description: $deleteFromPrimitiveList should delete item from a list without merge patch strategy
  original: {nonMergingIntList: [1, 2, 3]}
  twoWay: {$deleteFromPrimitiveList/nonMergingIntList: [2]}
  modified: {nonMergingIntList: [1, 3]}
""")


@pytest.mark.parametrize("case", CUSTOM_CASES)
def test_upstream_custom_cases(case: dict[str, Any]) -> None:
    assert merge_item_patch(case["original"], case["twoWay"]) == case["modified"]


@pytest.mark.parametrize(
    ("original", "patch"),
    [
        (
            {"mergingList": [{"name": 1}, {"name": 3}, {"name": 2}]},
            {
                "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}, {"name": 3}],
                "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}],
            },
        ),
        (
            {"mergingIntList": [1, 3, 2]},
            {"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3, 1]},
        ),
    ],
    ids=["maps", "ints"],
)
def test_upstream_set_element_order_must_agree_with_the_patch_order(original: Any, patch: Any) -> None:
    with pytest.raises(StrategicMergePatchFailed, match="doesn't match") as failure:
        merge_item_patch(original, patch)
    assert failure.value.status_code == 500


def test_upstream_missing_merge_key_should_error_out() -> None:
    with pytest.raises(MissingMergeKey) as failure:
        merge_item_patch({"mergingList": [{"name": 1, "value": "a"}]}, {"mergingList": [{"value": "b"}]})
    assert failure.value.detail == "map: map[value:b] does not contain declared merge key: name"
    assert failure.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "map: map[value:b] does not contain declared merge key: name",
        "code": 500,
    }


# -- patch_test.go: createStrategicMergePatchTestCaseData and strategicMergePatchRawTestCases ----------

RAW_CASES = cases("""
- description: nil original
  twoWay: {name: 1, value: 1}
  modified: {name: 1, value: 1}
  current: {name: 1, other: a}
  threeWay: {value: 1}
  result: {name: 1, value: 1, other: a}
- description: add field and delete field from map with conflict
  original: {name: 1}
  twoWay: {name: null, value: 1}
  modified: {value: 1}
  current: {name: a, other: a}
  threeWay: {name: null, value: 1}
  result: {value: 1, other: a}
- description: delete field from nested map with conflict
  original: {simpleMap: {key1: 1, key2: 1}}
  twoWay: {simpleMap: {key2: null}}
  modified: {simpleMap: {key1: 1}}
  current: {simpleMap: {key1: a, key2: 1, other: a}}
  threeWay: {simpleMap: {key1: 1, key2: null}}
  result: {simpleMap: {key1: 1, other: a}}
- description: replace list of scalars with conflict
  original: {nonMergingIntList: [1, 2]}
  twoWay: {nonMergingIntList: [2, 3]}
  modified: {nonMergingIntList: [2, 3]}
  current: {nonMergingIntList: [1, 4]}
  threeWay: {nonMergingIntList: [2, 3]}
  result: {nonMergingIntList: [2, 3]}
- description: delete all maps from merging list with conflict
  original: {mergingList: [{name: 1}, {name: 2}]}
  twoWay: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  modified: {mergingList: []}
  current: {mergingList: [{name: 1, other: a}, {name: 2, other: b}]}
  threeWay: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  result: {mergingList: []}
- description: defined null values should propagate overwrite current fields (with conflict)
  original: {name: 2}
  twoWay: {name: 1, value: 1, other: null}
  twoWayResult: {name: 1, value: 1}
  current: {name: a, other: a}
  threeWay: {name: 1, value: 1, other: null}
  result: {name: 1, value: 1}
- description: nil patch with retainKeys map
  original: {name: a, retainKeysMap: {name: foo}}
  twoWay: {}
  modified: {name: a, retainKeysMap: {name: foo}}
  current: {name: a, value: b, retainKeysMap: {name: foo}}
  threeWay: {}
  result: {name: a, value: b, retainKeysMap: {name: foo}}
- description: retainKeys map with no change should not be present
  original: {name: a, retainKeysMap: {name: foo}}
  current: {name: a, other: c, retainKeysMap: {name: foo}}
  modified: {name: a, value: b, retainKeysMap: {name: foo}}
  twoWay: {value: b}
  threeWay: {value: b}
  result: {name: a, value: b, other: c, retainKeysMap: {name: foo}}
- description: nested patch merge with empty list
  original: {name: hi}
  twoWay: {mergingList: [{name: hello}, {$patch: delete, name: doesntexist}]}
  twoWayResult: {name: hi, mergingList: [{name: hello}]}
  current: {name: hi, mergingList: [{name: hello2}]}
  threeWay:
    $setElementOrder/mergingList: [{name: hello}, {name: doesntexist}]
    mergingList: [{name: hello}, {$patch: delete, name: doesntexist}]
  result: {name: hi, mergingList: [{name: hello}, {name: hello2}]}
- description: delete items in lists of scalars
  original: {mergingIntList: [1, 2, 3]}
  twoWay:
    $setElementOrder/mergingIntList: [1, 2]
    $deleteFromPrimitiveList/mergingIntList: [3]
  modified: {mergingIntList: [1, 2]}
  current: {mergingIntList: [1, 2, 3, 4]}
  threeWay:
    $setElementOrder/mergingIntList: [1, 2]
    $deleteFromPrimitiveList/mergingIntList: [3]
  result: {mergingIntList: [1, 2, 4]}
- description: delete all duplicate items in lists of scalars
  original: {mergingIntList: [1, 2, 3, 3]}
  twoWay:
    $setElementOrder/mergingIntList: [1, 2]
    $deleteFromPrimitiveList/mergingIntList: [3]
  modified: {mergingIntList: [1, 2]}
  current: {mergingIntList: [1, 2, 3, 3, 4]}
  threeWay:
    $setElementOrder/mergingIntList: [1, 2]
    $deleteFromPrimitiveList/mergingIntList: [3]
  result: {mergingIntList: [1, 2, 4]}
- description: add and delete items in lists of scalars
  original: {mergingIntList: [1, 2, 3]}
  twoWay:
    $setElementOrder/mergingIntList: [1, 2, 4]
    $deleteFromPrimitiveList/mergingIntList: [3]
    mergingIntList: [4]
  modified: {mergingIntList: [1, 2, 4]}
  current: {mergingIntList: [1, 2, 3, 4]}
  threeWay:
    $setElementOrder/mergingIntList: [1, 2, 4]
    $deleteFromPrimitiveList/mergingIntList: [3]
  result: {mergingIntList: [1, 2, 4]}
- description: merge lists of maps
  original: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  modified: {mergingList: [{name: 4, value: 4}, {name: 1}, {name: 2, value: 2}, {name: 3, value: 3}]}
  current: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  result:
    mergingList:
    - {name: 4, value: 4}
    - {name: 1, other: a}
    - {name: 2, value: 2, other: b}
    - {name: 3, value: 3}
- description: merge lists of maps with conflict
  original: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 3, value: 3}]
  modified: {mergingList: [{name: 1}, {name: 2, value: 2}, {name: 3, value: 3}]}
  current: {mergingList: [{name: 1, other: a}, {name: 2, value: 3, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 2, value: 2}, {name: 3, value: 3}]
  result: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]}
- description: add field to map in merging list with conflict
  original: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, value: 1}]
  modified: {mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]}
  current: {mergingList: [{name: 1, other: a}, {name: 3, value: 2, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]
  result: {mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2}, {name: 3, value: 2, other: b}]}
- description: add an item that already exists in current object in merging list
  original: {mergingList: [{name: 1, value: a}, {name: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 3}]
  modified: {mergingList: [{name: 1, value: a}, {name: 2}, {name: 3}]}
  current: {mergingList: [{name: 1, value: a, other: x}, {name: 2}, {name: 3}]}
  threeWay: {}
  result: {mergingList: [{name: 1, value: a, other: x}, {name: 2}, {name: 3}]}
- description: replace map field value in merging list with conflict
  original: {mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, value: a}]
  modified: {mergingList: [{name: 1, value: a}, {name: 2, value: 2}]}
  current: {mergingList: [{name: 1, value: 3, other: a}, {name: 2, value: 2, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, value: a}]
  result: {mergingList: [{name: 1, value: a, other: a}, {name: 2, value: 2, other: b}]}
- description: delete map from merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 2}]
    mergingList: [{name: 1, $patch: delete}]
  modified: {mergingList: [{name: 2}]}
  current: {mergingList: [{name: 1}, {name: 2, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 2}]
    mergingList: [{name: 1, $patch: delete}]
  result: {mergingList: [{name: 2, other: b}]}
- description: delete missing map from merging list with conflict
  original: {mergingList: [{name: 1}, {name: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 2}]
    mergingList: [{name: 1, $patch: delete}]
  modified: {mergingList: [{name: 2}]}
  current: {mergingList: [{name: 3, other: a}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 2}]
    mergingList: [{name: 2}, {name: 1, $patch: delete}]
  result: {mergingList: [{name: 2}, {name: 3, other: a}]}
- description: add map and delete map from merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 2}, {name: 3}]
    mergingList: [{name: 3}, {name: 1, $patch: delete}]
  modified: {mergingList: [{name: 2}, {name: 3}]}
  current: {mergingList: [{name: 1}, {name: 2, other: b}, {name: 4, other: c}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 2}, {name: 3}]
    mergingList: [{name: 3}, {name: 1, $patch: delete}]
  result: {mergingList: [{name: 2, other: b}, {name: 4, other: c}, {name: 3}]}
- description: add map and delete map from merging list with conflict
  original: {mergingList: [{name: 1}, {name: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 2}, {name: 3}]
    mergingList: [{name: 3}, {name: 1, $patch: delete}]
  modified: {mergingList: [{name: 2}, {name: 3}]}
  current: {mergingList: [{name: 1, other: a}, {name: 4, other: c}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 2}, {name: 3}]
    mergingList: [{name: 2}, {name: 3}, {name: 1, $patch: delete}]
  result: {mergingList: [{name: 4, other: c}, {name: 2}, {name: 3}]}
- description: delete missing field from map in merging list with conflict
  original: {mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, value: null}]
  modified: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  current: {mergingList: [{name: 1, other: a}, {name: 2, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, value: null}, {name: 2, value: 2}]
  result: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
- description: replace non merging list nested in merging list
  original: {mergingList: [{name: 1, nonMergingList: [{name: 1}, {name: 2, value: 2}]}, {name: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, nonMergingList: [{name: 1, value: 1}]}]
  modified: {mergingList: [{name: 1, nonMergingList: [{name: 1, value: 1}]}, {name: 2}]}
  current:
    mergingList: [{name: 1, other: a, nonMergingList: [{name: 1}, {name: 2, value: 2}]}, {name: 2, other: b}]
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, nonMergingList: [{name: 1, value: 1}]}]
  result: {mergingList: [{name: 1, other: a, nonMergingList: [{name: 1, value: 1}]}, {name: 2, other: b}]}
- description: retainKeys list of maps changes a field and clear a field with conflict
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: old}]}
  current: {retainKeysMergingList: [{name: bar}, {name: foo, value: modified, other: x}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo, value: new}]}
  twoWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo, value: new}]
  threeWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo, value: new}]
  result: {retainKeysMergingList: [{name: bar}, {name: foo, value: new}]}
- description: retainKeys list of maps deletes a field and clear a field
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  current: {retainKeysMergingList: [{name: bar}, {name: foo, value: a, other: x}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo}]}
  twoWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name], name: foo, value: null}]
  threeWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name], name: foo, value: null}]
  result: {retainKeysMergingList: [{name: bar}, {name: foo}]}
- description: delete and reorder in one list, reorder in another
  original:
    mergingList: [{name: a, value: a}, {name: b, value: b}]
    mergeItemPtr: [{name: c, value: c}, {name: d, value: d}]
  current:
    mergingList: [{name: a, value: a}, {name: b, value: b}]
    mergeItemPtr: [{name: c, value: c}, {name: d, value: d}]
  modified: {mergingList: [{name: b, value: b}], mergeItemPtr: [{name: d, value: d}, {name: c, value: c}]}
  twoWay:
    $setElementOrder/mergingList: [{name: b}]
    $setElementOrder/mergeItemPtr: [{name: d}, {name: c}]
    mergingList: [{$patch: delete, name: a}]
  threeWay:
    $setElementOrder/mergingList: [{name: b}]
    $setElementOrder/mergeItemPtr: [{name: d}, {name: c}]
    mergingList: [{$patch: delete, name: a}]
  result: {mergingList: [{name: b, value: b}], mergeItemPtr: [{name: d, value: d}, {name: c, value: c}]}
- description: replace RawExtension field and merge list
  original:
    name: my-object
    mergingList: [{name: 1}]
    replacingItem: {Some: Generic, Yaml: Inside, Field: Period}
  current:
    name: my-object
    mergingList: [{name: 1}, {name: 3}]
    replacingItem: {Some: Generic, Field: Period}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 2}]
    replacingItem: {Newly: Modified, Yaml: Inside}
  modified:
    name: my-object
    mergingList: [{name: 1}, {name: 2}]
    replacingItem: {Newly: Modified, Yaml: Inside}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 2}]
    replacingItem: {Newly: Modified, Yaml: Inside}
  result:
    name: my-object
    mergingList: [{name: 1}, {name: 2}, {name: 3}]
    replacingItem: {Newly: Modified, Yaml: Inside}
""")


# patch_test.go's retainKeys cases (strategicMergePatchRawTestCases). A retainKeys map or list
# element lists, in ``$retainKeys``, every field the client's new config sets; the server clears the
# others. kubectl builds the directive (diffMaps) when the patch for that map is not empty, *or* when
# the live map has a field the new config does not ("retainKeys map should clear defaulted field",
# "retainKeys map clears a field"): then the three-way patch is not ``{}`` even though the config did
# not change, and ``kubectl apply`` says ``configured``. That is why re-applying a Deployment whose
# ``strategy`` omits ``type`` (defaulted to RollingUpdate on the server) is "configured" every time,
# upstream as here; the server's result is the live object again, so nothing is written.

RETAIN_KEYS_CASES = cases("""
- description: retainKeys map should clear defaulted field
  original: {}
  current: {retainKeysMap: {value: foo}}
  modified: {retainKeysMap: {other: bar}}
  twoWay: {retainKeysMap: {other: bar}}
  threeWay: {retainKeysMap: {$retainKeys: [other], other: bar}}
  result: {retainKeysMap: {other: bar}}
- description: retainKeys map should clear defaulted field with conflict (discriminated union)
  original: {}
  current: {retainKeysMap: {name: type1, value: foo}}
  modified: {retainKeysMap: {name: type2, other: bar}}
  twoWay: {retainKeysMap: {name: type2, other: bar}}
  threeWay: {retainKeysMap: {$retainKeys: [name, other], name: type2, other: bar}}
  result: {retainKeysMap: {name: type2, other: bar}}
- description: retainKeys map adds a field
  original: {retainKeysMap: {name: foo}}
  current: {retainKeysMap: {name: foo}}
  modified: {retainKeysMap: {name: foo, value: bar}}
  twoWay: {retainKeysMap: {$retainKeys: [name, value], value: bar}}
  threeWay: {retainKeysMap: {$retainKeys: [name, value], value: bar}}
  result: {retainKeysMap: {name: foo, value: bar}}
- description: retainKeys map adds a field and clear a field
  original: {retainKeysMap: {name: foo}}
  current: {retainKeysMap: {name: foo, other: a}}
  modified: {retainKeysMap: {name: foo, value: bar}}
  twoWay: {retainKeysMap: {$retainKeys: [name, value], value: bar}}
  threeWay: {retainKeysMap: {$retainKeys: [name, value], value: bar}}
  result: {retainKeysMap: {name: foo, value: bar}}
- description: retainKeys map deletes a field
  original: {retainKeysMap: {name: foo, value: bar}}
  current: {retainKeysMap: {name: foo, value: bar}}
  modified: {retainKeysMap: {name: foo}}
  twoWay: {retainKeysMap: {$retainKeys: [name], value: null}}
  threeWay: {retainKeysMap: {$retainKeys: [name], value: null}}
  result: {retainKeysMap: {name: foo}}
- description: retainKeys map deletes a field and clears a field
  original: {retainKeysMap: {name: foo, value: bar}}
  current: {retainKeysMap: {name: foo, value: bar, other: a}}
  modified: {retainKeysMap: {name: foo}}
  twoWay: {retainKeysMap: {$retainKeys: [name], value: null}}
  threeWay: {retainKeysMap: {$retainKeys: [name], value: null}}
  result: {retainKeysMap: {name: foo}}
- description: retainKeys map clears a field
  original: {retainKeysMap: {name: foo, value: bar}}
  current: {retainKeysMap: {name: foo, value: bar, other: a}}
  modified: {retainKeysMap: {name: foo, value: bar}}
  twoWay: {}
  threeWay: {retainKeysMap: {$retainKeys: [name, value]}}
  result: {retainKeysMap: {name: foo, value: bar}}
- description: retainKeys map nested map with no change
  original: {retainKeysMap: {name: foo, simpleMap: {key1: a}}}
  current: {retainKeysMap: {name: foo, simpleMap: {key1: a}}}
  modified: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a}}}
  twoWay: {retainKeysMap: {$retainKeys: [name, simpleMap, value], value: bar}}
  threeWay: {retainKeysMap: {$retainKeys: [name, simpleMap, value], value: bar}}
  result: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a}}}
- description: retainKeys map adds a field in a nested map
  original: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a}}}
  current: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key3: c}}}
  modified: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key2: b}}}
  twoWay: {retainKeysMap: {$retainKeys: [name, simpleMap, value], simpleMap: {key2: b}}}
  threeWay: {retainKeysMap: {$retainKeys: [name, simpleMap, value], simpleMap: {key2: b}}}
  result: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key2: b, key3: c}}}
- description: retainKeys map deletes a field in a nested map
  original: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key2: b}}}
  current: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key2: b, key3: c}}}
  modified: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a}}}
  twoWay: {retainKeysMap: {$retainKeys: [name, simpleMap, value], simpleMap: {key2: null}}}
  threeWay: {retainKeysMap: {$retainKeys: [name, simpleMap, value], simpleMap: {key2: null}}}
  result: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key3: c}}}
- description: retainKeys map changes a field in a nested map
  original: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key2: b}}}
  current: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: a, key2: b, key3: c}}}
  modified: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: x, key2: b}}}
  twoWay: {retainKeysMap: {$retainKeys: [name, simpleMap, value], simpleMap: {key1: x}}}
  threeWay: {retainKeysMap: {$retainKeys: [name, simpleMap, value], simpleMap: {key1: x}}}
  result: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: x, key2: b, key3: c}}}
- description: retainKeys map changes a field in a nested map with conflict
  original: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: old, key2: b}}}
  current: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: new, key2: b, key3: c}}}
  modified: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: modified, key2: b}}}
  twoWay: {retainKeysMap: {$retainKeys: [name, simpleMap, value], simpleMap: {key1: modified}}}
  threeWay: {retainKeysMap: {$retainKeys: [name, simpleMap, value], simpleMap: {key1: modified}}}
  result: {retainKeysMap: {name: foo, value: bar, simpleMap: {key1: modified, key2: b, key3: c}}}
- description: retainKeys map replaces non-merging list
  original: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: b}]}}
  modified: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: c}, {name: b}]}}
  twoWay:
    retainKeysMap:
      $retainKeys: [name, nonMergingList, value]
      nonMergingList: [{name: a}, {name: c}, {name: b}]
  threeWay:
    retainKeysMap:
      $retainKeys: [name, nonMergingList, value]
      nonMergingList: [{name: a}, {name: c}, {name: b}]
  result: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: c}, {name: b}]}}
- description: retainKeys map nested non-merging list with no change
  original: {retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}]}}
  modified: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: b}]}}
  twoWay: {retainKeysMap: {$retainKeys: [name, nonMergingList, value], value: bar}}
  threeWay: {retainKeysMap: {$retainKeys: [name, nonMergingList, value], value: bar}}
  result: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: b}]}}
- description: retainKeys map nested non-merging list with no change with conflict
  original: {retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}, {name: c}]}}
  modified: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: b}]}}
  twoWay: {retainKeysMap: {$retainKeys: [name, nonMergingList, value], value: bar}}
  threeWay:
    retainKeysMap:
      $retainKeys: [name, nonMergingList, value]
      value: bar
      nonMergingList: [{name: a}, {name: b}]
  result: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: b}]}}
- description: retainKeys map deletes nested non-merging list
  original: {retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}]}}
  modified: {retainKeysMap: {name: foo, value: bar}}
  twoWay: {retainKeysMap: {$retainKeys: [name, value], value: bar, nonMergingList: null}}
  threeWay: {retainKeysMap: {$retainKeys: [name, value], value: bar, nonMergingList: null}}
  result: {retainKeysMap: {name: foo, value: bar}}
- description: retainKeys map delete nested non-merging list with conflict
  original: {retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}, {name: c}]}}
  modified: {retainKeysMap: {name: foo, value: bar}}
  twoWay: {retainKeysMap: {$retainKeys: [name, value], value: bar, nonMergingList: null}}
  threeWay: {retainKeysMap: {$retainKeys: [name, value], value: bar, nonMergingList: null}}
  result: {retainKeysMap: {name: foo, value: bar}}
- description: retainKeys map nested merging int list with no change
  original: {retainKeysMap: {name: foo, mergingIntList: [1, 2]}}
  current: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}}
  modified: {retainKeysMap: {name: foo, value: bar, mergingIntList: [1, 2]}}
  twoWay: {retainKeysMap: {$retainKeys: [mergingIntList, name, value], value: bar}}
  threeWay:
    retainKeysMap:
      $retainKeys: [mergingIntList, name, value]
      $setElementOrder/mergingIntList: [1, 2]
      value: bar
  result: {retainKeysMap: {name: foo, value: bar, mergingIntList: [1, 2, 3]}}
- description: retainKeys map adds an item in nested merging int list
  original: {retainKeysMap: {name: foo, mergingIntList: [1, 2]}}
  current: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}}
  modified: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 4]}}
  twoWay:
    retainKeysMap:
      $setElementOrder/mergingIntList: [1, 2, 4]
      $retainKeys: [mergingIntList, name]
      mergingIntList: [4]
  threeWay:
    retainKeysMap:
      $setElementOrder/mergingIntList: [1, 2, 4]
      $retainKeys: [mergingIntList, name]
      mergingIntList: [4]
  result: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 4, 3]}}
- description: retainKeys map deletes an item in nested merging int list
  original: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}}
  current: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3, 4]}}
  modified: {retainKeysMap: {name: foo, mergingIntList: [1, 3]}}
  twoWay:
    retainKeysMap:
      $retainKeys: [mergingIntList, name]
      $deleteFromPrimitiveList/mergingIntList: [2]
      $setElementOrder/mergingIntList: [1, 3]
  threeWay:
    retainKeysMap:
      $retainKeys: [mergingIntList, name]
      $deleteFromPrimitiveList/mergingIntList: [2]
      $setElementOrder/mergingIntList: [1, 3]
  result: {retainKeysMap: {name: foo, mergingIntList: [1, 3, 4]}}
- description: retainKeys map adds an item and deletes an item in nested merging int list
  original: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}}
  current: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3, 4]}}
  modified: {retainKeysMap: {name: foo, mergingIntList: [1, 3, 5]}}
  twoWay:
    retainKeysMap:
      $retainKeys: [mergingIntList, name]
      mergingIntList: [5]
      $deleteFromPrimitiveList/mergingIntList: [2]
      $setElementOrder/mergingIntList: [1, 3, 5]
  threeWay:
    retainKeysMap:
      $retainKeys: [mergingIntList, name]
      mergingIntList: [5]
      $deleteFromPrimitiveList/mergingIntList: [2]
      $setElementOrder/mergingIntList: [1, 3, 5]
  result: {retainKeysMap: {name: foo, mergingIntList: [1, 3, 5, 4]}}
- description: retainKeys map deletes nested merging int list
  original: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}}
  current: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}}
  modified: {retainKeysMap: {name: foo}}
  twoWay: {retainKeysMap: {$retainKeys: [name], mergingIntList: null}}
  threeWay: {retainKeysMap: {$retainKeys: [name], mergingIntList: null}}
  result: {retainKeysMap: {name: foo}}
- description: retainKeys map nested merging list with no change
  original: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: c}]}}
  modified: {retainKeysMap: {name: foo, value: bar, mergingList: [{name: a}, {name: b}]}}
  twoWay: {retainKeysMap: {$retainKeys: [mergingList, name, value], value: bar}}
  threeWay:
    retainKeysMap:
      $retainKeys: [mergingList, name, value]
      $setElementOrder/mergingList: [{name: a}, {name: b}]
      value: bar
  result: {retainKeysMap: {name: foo, value: bar, mergingList: [{name: a}, {name: b}, {name: c}]}}
- description: retainKeys map adds an item in nested merging list
  original: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: x}]}}
  modified: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: c}]}}
  twoWay:
    retainKeysMap:
      $retainKeys: [mergingList, name]
      $setElementOrder/mergingList: [{name: a}, {name: b}, {name: c}]
      mergingList: [{name: c}]
  threeWay:
    retainKeysMap:
      $retainKeys: [mergingList, name]
      $setElementOrder/mergingList: [{name: a}, {name: b}, {name: c}]
      mergingList: [{name: c}]
  result: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: c}, {name: x}]}}
- description: retainKeys map changes an item in nested merging list
  original: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b, value: foo}]}}
  current: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b, value: foo}, {name: x}]}}
  modified: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b, value: bar}]}}
  twoWay:
    retainKeysMap:
      $retainKeys: [mergingList, name]
      $setElementOrder/mergingList: [{name: a}, {name: b}]
      mergingList: [{name: b, value: bar}]
  threeWay:
    retainKeysMap:
      $retainKeys: [mergingList, name]
      $setElementOrder/mergingList: [{name: a}, {name: b}]
      mergingList: [{name: b, value: bar}]
  result: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b, value: bar}, {name: x}]}}
- description: retainKeys map deletes nested merging list
  original: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}]}}
  modified: {retainKeysMap: {name: foo, value: bar}}
  twoWay: {retainKeysMap: {$retainKeys: [name, value], value: bar, mergingList: null}}
  threeWay: {retainKeysMap: {$retainKeys: [name, value], value: bar, mergingList: null}}
  result: {retainKeysMap: {name: foo, value: bar}}
- description: retainKeys map deletes an item in nested merging list
  original: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: x}]}}
  modified: {retainKeysMap: {name: foo, mergingList: [{name: a}]}}
  twoWay:
    retainKeysMap:
      $retainKeys: [mergingList, name]
      $setElementOrder/mergingList: [{name: a}]
      mergingList: [{name: b, $patch: delete}]
  threeWay:
    retainKeysMap:
      $retainKeys: [mergingList, name]
      $setElementOrder/mergingList: [{name: a}]
      mergingList: [{name: b, $patch: delete}]
  result: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: x}]}}
- description: retainKeys list of maps clears a field
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  current: {retainKeysMergingList: [{name: bar}, {name: foo, value: a, other: x}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  twoWay: {}
  threeWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo}]
  result: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
- description: retainKeys list of maps clears a field with conflict
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: old}]}
  current: {retainKeysMergingList: [{name: bar}, {name: foo, value: new, other: x}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo, value: modified}]}
  twoWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo, value: modified}]
  threeWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo, value: modified}]
  result: {retainKeysMergingList: [{name: bar}, {name: foo, value: modified}]}
- description: retainKeys list of maps changes a field and clear a field
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: old}]}
  current: {retainKeysMergingList: [{name: bar}, {name: foo, value: old, other: x}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo, value: new}]}
  twoWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo, value: new}]
  threeWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo, value: new}]
  result: {retainKeysMergingList: [{name: bar}, {name: foo, value: new}]}
- description: retainKeys list of maps adds a field
  original: {retainKeysMergingList: [{name: bar}, {name: foo}]}
  current: {retainKeysMergingList: [{name: bar}, {name: foo}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  twoWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo, value: a}]
  threeWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo, value: a}]
  result: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
- description: retainKeys list of maps adds a field and clear a field
  original: {retainKeysMergingList: [{name: bar}, {name: foo}]}
  current: {retainKeysMergingList: [{name: bar}, {name: foo, other: x}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  twoWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo, value: a}]
  threeWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo, value: a}]
  result: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
- description: retainKeys list of maps deletes a field
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  current: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo}]}
  twoWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name], name: foo, value: null}]
  threeWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name], name: foo, value: null}]
  result: {retainKeysMergingList: [{name: bar}, {name: foo}]}
""")


@pytest.mark.parametrize("case", RAW_CASES + RETAIN_KEYS_CASES)
def test_upstream_cases_two_way(case: dict[str, Any]) -> None:
    expected = case.get("twoWayResult", case.get("modified"))
    assert merge_item_patch(case.get("original"), case["twoWay"]) == expected


@pytest.mark.parametrize("case", RAW_CASES + RETAIN_KEYS_CASES)
def test_upstream_cases_three_way(case: dict[str, Any]) -> None:
    current = case["current"]
    kept = copy.deepcopy(current)
    result = merge_item_patch(current, case["threeWay"])
    assert result == case["result"]
    assert json.dumps(result, sort_keys=True) == json.dumps(case["result"], sort_keys=True), "same list order"
    assert current == kept, "the live object must not change"


# -- patch_test.go: TestUnknownField (the application half) ----------------------------------------

UNKNOWN_FIELD_CASES = [
    (
        {"complex": {"nested": True}},
        {"complex_nullable": {"key": None}},
        {"complex": {"nested": True}, "complex_nullable": {}},
    ),
    (
        {},
        {"complex_nullable": {"key": {"keynotnull": "value", "keynull": None}}},
        {"complex_nullable": {"key": {"keynotnull": "value"}}},
    ),
    ({}, {"complex": {"nested": None, "nested2": "foo"}}, {"complex": {"nested2": "foo"}}),
    ({"thing": None}, {"nested": {"value": 5}}, {"thing": None, "nested": {"value": 5}}),
    ({"name": "foo"}, {"complex_nullable": []}, {"name": "foo", "complex_nullable": []}),
    (
        {},
        {"complex_nullable": [{"inner_one": {"key_one": "foo", "key_two": None}}]},
        {"complex_nullable": [{"inner_one": {"key_one": "foo"}}]},
    ),
    (
        {},
        {"complex_nullable": [{"inner_one": {"key_one": None, "key_two": None}}]},
        {"complex_nullable": [{"inner_one": {}}]},
    ),
    ({}, {"complex_nullable": ["key1", None, "key2"]}, {"complex_nullable": ["key1", None, "key2"]}),
    (
        {"name": "foo", "scalar": True, "complex": {"nested": True}, "array": [1, 2, 3]},
        {"complex": None, "scalar": None},
        {"name": "foo", "array": [1, 2, 3]},
    ),
]


@pytest.mark.parametrize(("doc", "patch", "result"), UNKNOWN_FIELD_CASES)
def test_upstream_unknown_fields_are_copied_in_with_their_nulls_dropped(
    doc: Any, patch: Any, result: Any
) -> None:
    assert merge_item_patch(doc, patch) == result


def test_upstream_an_unknown_field_cannot_be_merged_into() -> None:
    # TestUnknownField "diff": both sides hold an object under a field MergeItem does not have.
    with pytest.raises(UnknownPatchField) as failure:
        merge_item_patch({"complex": {"nested": True}}, {"complex": {"nested": False}})
    assert failure.value.detail == 'unable to find api field in struct MergeItem for the json field "complex"'
    assert failure.value.status_code == 500


# -- directives and failures -----------------------------------------------------------------------------


def test_retain_keys_clears_the_fields_it_does_not_list() -> None:
    doc = {"retainKeysMap": {"name": "foo", "value": "a", "other": "x"}}
    patch = {"retainKeysMap": {"$retainKeys": ["name", "value"], "value": "b"}}
    assert merge_item_patch(doc, patch) == {"retainKeysMap": {"name": "foo", "value": "b"}}


@pytest.mark.parametrize(
    "patch",
    [
        {"retainKeysMap": {"$retainKeys": ["name"], "value": "b"}},
        {"retainKeysMap": {"$retainKeys": "name"}},
    ],
    ids=["sets a field it does not retain", "not a list"],
)
def test_a_bad_retain_keys_directive_is_a_400(patch: Any) -> None:
    with pytest.raises(InvalidPatch) as failure:
        merge_item_patch({"retainKeysMap": {"name": "foo"}}, patch)
    assert failure.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "invalid patch format of retainKeys",
        "reason": "BadRequest",
        "code": 400,
    }


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"$setElementOrderX/mergingList": []}, "invalid patch format of setElementOrder list"),
        ({"$deleteFromPrimitiveList": [1]}, "invalid patch format of primitive list"),
    ],
)
def test_a_directive_with_a_bad_prefix_is_a_400(patch: Any, message: str) -> None:
    with pytest.raises(InvalidPatch, match=message):
        merge_item_patch({"mergingList": [{"name": 1}], "mergingIntList": [1]}, patch)


def test_a_list_of_lists_cannot_be_merged_422() -> None:
    with pytest.raises(ListOfListsNotSupported) as failure:
        merge_item_patch({"mergingIntList": [[1]]}, {"mergingIntList": [[2]]})
    assert failure.value.detail == "lists of lists are not supported"
    assert (failure.value.status_code, failure.value.reason) == (422, "Invalid")


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (
            {"mergingList": [{"name": 1, "$patch": "merge"}]},
            "merging lists cannot yet be specified in the patch",
        ),
        (
            {"mergingList": [{"name": 1, "$patch": "nope"}]},
            "unknown patch type: nope in map: map[$patch:nope name:1]",
        ),
        ({"simpleMap": {"$patch": "merge"}}, "unknown patch type: merge in map: map[$patch:merge]"),
        ({"$setElementOrder/mergingList": "1"}, "expected a []interface {}, but received a string"),
        (
            {"mergingList": [{"name": 1}, "x"]},
            "list element types are not identical: [[map[name:1]] [map[name:1] x]]",
        ),
    ],
)
def test_other_failures_are_upstreams_plain_errors_500(patch: Any, message: str) -> None:
    with pytest.raises(StrategicMergePatchFailed) as failure:
        merge_item_patch({"mergingList": [{"name": 1}], "simpleMap": {"a": "b"}}, patch)
    assert failure.value.detail == message
    assert failure.value.status()["code"] == 500


def test_patch_replace_on_a_map_keeps_nested_directives_as_sent() -> None:
    # handleDirectiveInMergeMap returns the patch itself: nothing inside it is interpreted.
    doc = {"retainKeysMap": {"name": "a", "value": "b"}}
    result = merge_item_patch(doc, {"retainKeysMap": {"$patch": "replace", "other": "c", "value": None}})
    assert result == {"retainKeysMap": {"other": "c", "value": None}}


def test_a_new_element_is_appended_as_sent() -> None:
    # mergeSliceWithoutSpecialElements appends the patch element itself, nulls included; then
    # mergeSortedSlice puts a patch element before a server-only one unless the live list had
    # both and the server's came first: without $setElementOrder, the new element leads.
    result = merge_item_patch({"mergingList": [{"name": 1}]}, {"mergingList": [{"name": 2, "value": None}]})
    assert result == {"mergingList": [{"name": 2, "value": None}, {"name": 1}]}


def test_a_delete_list_with_null_deletes_the_list() -> None:
    assert merge_item_patch(
        {"mergingIntList": [1], "name": "a"}, {"$deleteFromPrimitiveList/mergingIntList": None}
    ) == {"name": "a"}


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ([], "json: cannot unmarshal array into Go value of type map[string]interface {}"),
        ("x", "json: cannot unmarshal string into Go value of type map[string]interface {}"),
    ],
)
def test_a_patch_that_is_not_an_object_is_a_400(patch: Any, message: str) -> None:
    with pytest.raises(InvalidPatch) as failure:
        merge_item_patch({}, patch)
    assert failure.value.message == message


def test_a_null_patch_changes_nothing() -> None:
    assert merge_item_patch({"name": "a"}, None) == {"name": "a"}


def test_a_map_field_cannot_be_recursed_into() -> None:
    # JSONSchemaProps.properties is map[string]JSONSchemaProps: upstream's lookup needs a struct.
    props = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
    with pytest.raises(StrategicMergePatchFailed) as failure:
        apply_with_definition(
            {"properties": {"spec": {"type": "object"}}},
            {"properties": {"spec": {"type": "string"}}},
            definition=props,
        )
    assert failure.value.detail == "merging an object in json but data type is not struct, instead is: map"
    # Scalars in a map merge fine: a new key, a changed key, a null.
    assert apply_with_definition(
        {"properties": {"a": {"type": "string"}}},
        {"properties": {"b": {"type": "integer"}, "a": None}},
        definition=props,
    ) == {"properties": {"b": {"type": "integer"}}}


def test_a_field_whose_type_changes_takes_the_patch_value_without_directives() -> None:
    assert merge_item_patch(
        {"name": "a", "value": "b"}, {"name": {"$patch": "delete"}, "value": {"x": 1}}
    ) == {"value": {"x": 1}}


def test_set_element_order_for_a_list_on_neither_side_is_ignored() -> None:
    assert merge_item_patch({"name": "a"}, {"$setElementOrder/mergingList": [{"name": 1}]}) == {"name": "a"}


def test_set_element_order_for_a_new_list_drops_its_directives() -> None:
    patch = {
        "$setElementOrder/mergingList": [{"name": 2}, {"name": 1}],
        "mergingList": [{"name": 2}, {"name": 1, "value": None}, {"name": 3, "$patch": "delete"}],
    }
    # Taken as sent apart from the $patch element: mergePatchIntoOriginal does not drop nulls.
    assert merge_item_patch({}, patch) == {"mergingList": [{"name": 2}, {"name": 1, "value": None}]}


def test_set_element_order_on_a_list_without_merge_strategy_keeps_the_replacement() -> None:
    patch = {"$setElementOrder/nonMergingIntList": [3, 1], "nonMergingIntList": [3, 1]}
    assert merge_item_patch({"nonMergingIntList": [1, 2]}, patch) == {"nonMergingIntList": [3, 1]}


def test_set_element_order_must_name_the_merge_key() -> None:
    with pytest.raises(StrategicMergePatchFailed) as failure:
        merge_item_patch(
            {"mergingList": [{"name": 1}]},
            {"$setElementOrder/mergingList": ["x"], "mergingList": [{"name": 1, "value": "v"}]},
        )
    assert failure.value.detail == "expected a map[string]interface {}, but received a string"


def test_schema_problems_are_upstreams_plain_errors() -> None:
    own = {
        "Thing": {
            "type": "object",
            "properties": {
                "keyless": {
                    "type": "array",
                    "items": {"$ref": "#/$defs/Thing"},
                    "x-kubernetes-patch-strategy": "merge",
                },
                "odd": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-patch-strategy": "merge,replace",
                },
                "nested": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
                "notList": {"type": "string"},
            },
        }
    }

    def run(doc: Any, patch: Any) -> Any:
        return apply_with_definition(doc, patch, definition="Thing", definitions=own)

    with pytest.raises(StrategicMergePatchFailed, match=r"^cannot merge lists without merge key for struct$"):
        run({"keyless": [{"a": 1}]}, {"keyless": [{"a": 2}]})
    with pytest.raises(StrategicMergePatchFailed, match=r"^unexpected patch strategy: \[merge replace\]$"):
        run({"odd": ["a"]}, {"odd": ["b"]})
    with pytest.raises(StrategicMergePatchFailed, match=r"^unexpected slice of slice$"):
        run({"nested": [["a"]]}, {"nested": [["b"]]})
    with pytest.raises(StrategicMergePatchFailed, match=r"^expected slice or array type, but got: struct$"):
        run({"notList": ["a"]}, {"notList": ["b"]})


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"b": [1, None, "x"], "a": True}, "map[a:true b:[1 <nil> x]]"),
        (1.0, "1"),
        (0.5, "0.5"),
        (123456.0, "123456"),
        (1e6, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (1e-05, "1e-05"),
        (-2.5, "-2.5"),
    ],
)
def test_values_in_messages_print_as_go_prints_them(value: Any, text: str) -> None:
    # mergepatch.ErrNoMergeKey prints the element with %v.
    with pytest.raises(MissingMergeKey) as failure:
        merge_item_patch({"mergingList": [{"name": 1}]}, {"mergingList": [{"value": value}]})
    assert failure.value.detail == f"map: map[value:{text}] does not contain declared merge key: name"


# -- built-in kinds with upstream's schemas --------------------------------------------------------------


def pod() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load("""
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  labels: {app: web, tier: frontend}
  finalizers: [example.com/a, example.com/b]
spec:
  containers:
  - name: web
    image: nginx:1.25
    ports:
    - {containerPort: 80, protocol: TCP}
    - {containerPort: 443, protocol: TCP}
    env:
    - {name: A, value: "1"}
  - name: istio-proxy
    image: istio/proxyv2:1.24
  tolerations:
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
  volumes:
  - name: config
    emptyDir: {}
""")
    return doc


def pod_patch(patch: Any) -> dict[str, Any]:
    return apply_strategic_merge_patch(pod(), patch, group="", version="v1", kind="Pod")


def test_containers_merge_by_name_and_an_injected_sidecar_survives() -> None:
    result = pod_patch({"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}})
    containers = result["spec"]["containers"]
    assert [c["name"] for c in containers] == ["web", "istio-proxy"]
    assert containers[0]["image"] == "nginx:1.27"
    assert containers[0]["ports"] == pod()["spec"]["containers"][0]["ports"]


def test_ports_merge_by_container_port_and_env_by_name() -> None:
    result = pod_patch(
        {
            "spec": {
                "containers": [
                    {
                        "name": "web",
                        "ports": [
                            {"containerPort": 8080, "name": "alt"},
                            {"containerPort": 80, "name": "http"},
                        ],
                        "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "x"}],
                    }
                ]
            }
        }
    )
    web = result["spec"]["containers"][0]
    # The patch's elements in the patch's order; 443, only on the server, was after 80 there.
    assert web["ports"] == [
        {"containerPort": 8080, "name": "alt"},
        {"containerPort": 80, "protocol": "TCP", "name": "http"},
        {"containerPort": 443, "protocol": "TCP"},
    ]
    assert web["env"] == [{"name": "A", "value": "2"}, {"name": "B", "value": "x"}]


def test_a_merge_key_matches_only_the_same_json_type() -> None:
    result = pod_patch({"spec": {"containers": [{"name": "web", "ports": [{"containerPort": "80"}]}]}})
    assert [p["containerPort"] for p in result["spec"]["containers"][0]["ports"]] == ["80", 80, 443]


def test_tolerations_have_no_merge_key_so_the_patch_replaces_them() -> None:
    mine = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    assert pod_patch({"spec": {"tolerations": mine}})["spec"]["tolerations"] == mine


def test_finalizers_merge_as_a_set_and_are_deleted_from_a_parallel_list() -> None:
    added = pod_patch({"metadata": {"finalizers": ["example.com/b", "example.com/c"]}})
    assert added["metadata"]["finalizers"] == ["example.com/a", "example.com/b", "example.com/c"]
    removed = pod_patch({"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}})
    assert removed["metadata"]["finalizers"] == ["example.com/b"]


def test_null_deletes_a_label_and_a_container_can_be_deleted_by_key() -> None:
    result = pod_patch(
        {
            "metadata": {"labels": {"tier": None}},
            "spec": {"containers": [{"name": "istio-proxy", "$patch": "delete"}]},
        }
    )
    assert result["metadata"]["labels"] == {"app": "web"}
    assert [c["name"] for c in result["spec"]["containers"]] == ["web"]


def test_patch_replace_as_a_list_element_replaces_the_list() -> None:
    containers = [{"name": "only", "image": "busybox"}]
    result = pod_patch({"spec": {"containers": [*containers, {"$patch": "replace"}]}})
    assert result["spec"]["containers"] == containers


def test_a_volume_changes_source_with_retain_keys() -> None:
    # PodSpec.volumes is merge,retainKeys: kubectl sends $retainKeys so the old source is dropped.
    result = pod_patch(
        {
            "spec": {
                "volumes": [
                    {"$retainKeys": ["configMap", "name"], "name": "config", "configMap": {"name": "cfg"}}
                ]
            }
        }
    )
    assert result["spec"]["volumes"] == [{"name": "config", "configMap": {"name": "cfg"}}]


def test_an_unknown_field_of_a_built_in_kind() -> None:
    # Copied in where there is nothing to merge with (the decoder then rejects or drops it)...
    assert pod_patch({"spec": {"bogus": {"a": 1}}})["spec"]["bogus"] == {"a": 1}
    # ...and a plain upstream error where the patch must recurse into it.
    with pytest.raises(UnknownPatchField) as failure:
        apply_strategic_merge_patch(
            {"spec": {"bogus": {"a": 1}}}, {"spec": {"bogus": {"b": 2}}}, group="", version="v1", kind="Pod"
        )
    assert failure.value.detail == 'unable to find api field in struct PodSpec for the json field "bogus"'


def test_a_kind_without_a_schema_is_refused_with_400() -> None:
    with pytest.raises(UnsupportedStrategicMergePatch) as failure:
        apply_strategic_merge_patch(
            {}, {"spec": {}}, group="stable.example.com", version="v1", kind="CronTab"
        )
    assert isinstance(failure.value, PatchError)
    assert failure.value.status()["message"] == "strategic merge patch format is not supported"
    assert failure.value.status_code == 400


def test_the_inputs_are_not_modified() -> None:
    doc, patch = pod(), {"spec": {"containers": [{"name": "web", "$setElementOrder/env": [{"name": "A"}]}]}}
    doc_before, patch_before = copy.deepcopy(doc), copy.deepcopy(patch)
    apply_strategic_merge_patch(doc, patch, group="", version="v1", kind="Pod")
    assert (doc, patch) == (doc_before, patch_before)


# -- kubectl 1.37 client-side apply ----------------------------------------------------------------------

LIVE_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  uid: 2b3c7d9e-5b6f-4d8a-9c1e-0f1a2b3c4d5e
  resourceVersion: "1042"
  generation: 3
  labels: {app: web}
  annotations:
    deployment.kubernetes.io/revision: "3"
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"labels":{"app":"web"},"name":"web","namespace":"default"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"env":[{"name":"GREETING","value":"hello"},{"name":"DEBUG","value":"1"}],"image":"nginx:1.25","name":"web","ports":[{"containerPort":80}]},{"image":"fluent/fluent-bit:3.0","name":"log-shipper"}]}}}}
spec:
  replicas: 2
  revisionHistoryLimit: 10
  progressDeadlineSeconds: 600
  selector: {matchLabels: {app: web}}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        imagePullPolicy: IfNotPresent
        env:
        - {name: GREETING, value: hello}
        - {name: DEBUG, value: "1"}
        - {name: POD_IP, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: status.podIP}}}
        ports:
        - {containerPort: 80, protocol: TCP}
        resources: {}
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
      - name: log-shipper
        image: fluent/fluent-bit:3.0
        imagePullPolicy: IfNotPresent
        resources: {}
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
      dnsPolicy: ClusterFirst
      restartPolicy: Always
      schedulerName: default-scheduler
      securityContext: {}
      terminationGracePeriodSeconds: 30
status:
  observedGeneration: 3
  replicas: 2
  readyReplicas: 2
"""

NEW_LAST_APPLIED = (
    '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"labels":{"app":"web"},'
    '"name":"web","namespace":"default"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},'
    '"strategy":{"type":"Recreate"},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":'
    '[{"env":[{"name":"GREETING","value":"hello"}],"image":"nginx:1.27","name":"web","ports":'
    '[{"containerPort":80}]},{"image":"fluent/fluent-bit:3.0","name":"log-shipper"}]}}}}\n'
)

# What `kubectl apply -f web.yaml` (1.37, client-side) PATCHes after the manifest changed the image,
# dropped the DEBUG env var and switched to the Recreate strategy: CreateThreeWayMergePatch of
# (last-applied, new manifest, live), marshalled with sorted keys. The live object's POD_IP env var
# came from elsewhere (never applied), so the patch does not touch it.
KUBECTL_APPLY_PATCH: dict[str, Any] = {
    "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": NEW_LAST_APPLIED}},
    "spec": {
        "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
        "template": {
            "spec": {
                "$setElementOrder/containers": [{"name": "web"}, {"name": "log-shipper"}],
                "containers": [
                    {
                        "$setElementOrder/env": [{"name": "GREETING"}],
                        "env": [{"$patch": "delete", "name": "DEBUG"}],
                        "image": "nginx:1.27",
                        "name": "web",
                    }
                ],
            }
        },
    },
}


def test_kubectl_client_side_apply_of_a_deployment_update() -> None:
    live = yaml.safe_load(LIVE_DEPLOYMENT)
    result = apply_strategic_merge_patch(
        live, KUBECTL_APPLY_PATCH, group="apps", version="v1", kind="Deployment"
    )

    expected = yaml.safe_load(LIVE_DEPLOYMENT)
    expected["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = NEW_LAST_APPLIED
    # $retainKeys drops rollingUpdate, which the patch never mentions.
    expected["spec"]["strategy"] = {"type": "Recreate"}
    web = expected["spec"]["template"]["spec"]["containers"][0]
    web["image"] = "nginx:1.27"
    # DEBUG deleted by its merge key; POD_IP (server-only) keeps its place after GREETING.
    web["env"] = [
        {"name": "GREETING", "value": "hello"},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
    ]
    assert result == expected
    assert json.dumps(result) == json.dumps(expected), "same list and key order as the live object"


def test_kubectl_apply_adding_an_env_var_places_it_by_set_element_order() -> None:
    live = yaml.safe_load(LIVE_DEPLOYMENT)
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "web"}, {"name": "log-shipper"}],
                    "containers": [
                        {
                            "$setElementOrder/env": [
                                {"name": "GREETING"},
                                {"name": "LANG"},
                                {"name": "DEBUG"},
                            ],
                            "env": [{"name": "LANG", "value": "C"}],
                            "name": "web",
                        }
                    ],
                }
            }
        }
    }
    result = apply_strategic_merge_patch(live, patch, group="apps", version="v1", kind="Deployment")
    env = result["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env] == ["GREETING", "LANG", "DEBUG", "POD_IP"]


# What kubectl 1.37 PATCHes when re-applying, unchanged, a Deployment whose ``strategy`` leaves out
# ``type`` (or ``rollingUpdate``): the live object has the server's default there, so diffMaps finds a
# field to clear and the three-way patch is ``$retainKeys`` alone (upstream's "retainKeys map clears a
# field"). Upstream's kubectl sends it too and says "configured". Applied, it drops the defaulted
# field, and SetDefaults_Deployment puts it back: the result is the live object again, so the store
# writes nothing (no new resourceVersion, no new generation).
@pytest.mark.parametrize(
    ("applied", "retain"),
    [
        ({"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}, ["rollingUpdate"]),
        ({"type": "RollingUpdate"}, ["type"]),
        ({"rollingUpdate": {"maxSurge": 2}}, ["rollingUpdate"]),
    ],
    ids=["rollingUpdate without type", "type without rollingUpdate", "maxSurge alone"],
)
def test_kubectl_reapplying_a_strategy_with_defaults(applied: dict[str, Any], retain: list[str]) -> None:
    defaults = DeploymentStrategy()
    live = yaml.safe_load(LIVE_DEPLOYMENT)
    live["spec"]["strategy"] = copy.deepcopy(applied)
    defaults.default(live)
    assert sorted(live["spec"]["strategy"]) == ["rollingUpdate", "type"]

    patch = {"spec": {"strategy": {"$retainKeys": retain}}}
    result = apply_strategic_merge_patch(live, patch, group="apps", version="v1", kind="Deployment")
    assert result["spec"]["strategy"] == {key: live["spec"]["strategy"][key] for key in retain}
    defaults.default(result)
    assert result == live
