"""Request bodies read with Go's rules: what Python's parsers accept and Go's decoders do not."""

from __future__ import annotations

import pytest

from controlplane.api.requestbody import MAX_DEPTH, BodyError, depth, load_yaml, loads_json


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"a": NaN}', "invalid character 'N' looking for beginning of value"),
        (b'{"a": -Infinity}', "invalid character '-' looking for beginning of value"),
        (b'{"a": 1e400}', "json: cannot unmarshal number 1e400 into Go value of type float64"),
        (b'{"a":' * 5000 + b"1" + b"}" * 5000, "exceeded max depth"),
        (b"[" * 5000 + b"]" * 5000, "exceeded max depth"),
        # Deep enough for Python's parser, too deep for what walks the object later (a 500 before)
        (b'{"a":' * 600 + b"1" + b"}" * 600, "exceeded max depth"),
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "exceeded max depth"),
    ],
)
def test_json_go_refuses_is_a_body_error(raw: bytes, reason: str) -> None:
    with pytest.raises(BodyError) as refused:
        loads_json(raw)
    assert str(refused.value) == reason


def test_a_lone_surrogate_becomes_the_replacement_character_and_pairs_survive() -> None:
    document = loads_json(b'{"a\\udc00": ["x\\ud800y", "\\ud83d\\ude00"]}')
    assert document == {"a\ufffd": ["x\ufffdy", "\U0001f600"]}
    "".join(document["a\ufffd"]).encode()  # writable as UTF-8 now


def test_yaml_scalars_become_what_yaml_v2_makes_of_them() -> None:
    document = load_yaml(
        b"when: 2001-01-01\nblob: !!binary aGVsbG8=\nkeys: {2: a, true: b, 1.5: c}\nset: !!set {x}\n"
    )
    assert document == {
        "when": "2001-01-01",
        "blob": "hello",
        "keys": {"2": "a", "true": "b", "1.5": "c"},
        "set": {"x": None},
    }


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"replicas: .inf\n", "error converting YAML to JSON: json: unsupported value: +Inf"),
        (b"{null: a}\n", "error converting YAML to JSON: unsupported map key of type: NoneType"),
        (b"a: " + b"[" * 2000 + b"]" * 2000 + b"\n", "yaml: exceeded max depth"),
        (b"a: " + b"[" * 300 + b"]" * 300 + b"\n", "yaml: exceeded max depth"),
        (
            b"replicas: " + b"9" * 5000 + b"\n",
            "yaml: cannot decode number: Exceeds the limit (4300 digits) for integer string conversion",
        ),
    ],
)
def test_yaml_that_is_no_json_is_a_body_error(raw: bytes, reason: str) -> None:
    with pytest.raises(BodyError) as refused:
        load_yaml(raw)
    assert str(refused.value) == reason


def test_yaml_aliases_are_copied_and_a_billion_laughs_refused() -> None:
    shared = load_yaml(b"a: &x {k: v}\nb: *x\n")
    assert shared == {"a": {"k": "v"}, "b": {"k": "v"}} and shared["a"] is not shared["b"]
    lines = [b"l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    lines += [b"l%d: &l%d [%s]" % (i, i, b", ".join([b"*l%d" % (i - 1)] * 9)) for i in range(1, 8)]
    with pytest.raises(BodyError, match="excessive aliasing"):
        load_yaml(b"\n".join(lines) + b"\n")


def test_nesting_up_to_max_depth_decodes_and_depth_counts_it() -> None:
    document = loads_json(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
    assert depth(document) == MAX_DEPTH
    assert depth({"a": [1, {"b": {}}], "c": 2}) == 4  # the object, the array, {"b"}, {}
    assert depth("scalar") == 0
