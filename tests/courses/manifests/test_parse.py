"""Parsing the form's text (courses/manifests/parse.py): what becomes objects, and what is refused.

Every refusal is its own error type, at its line and column in the whole text, with a message in
words; the hostile inputs (the billion laughs, a million brackets, 3 MiB) are refused quickly.
Refusals never reach the cluster: that is checked through the service in test_services.py.
"""

from __future__ import annotations

import time

import pytest

from courses.manifests import errors
from courses.manifests.parse import MAX_ALIASES, MAX_DEPTH, MAX_DOCUMENTS, parse

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: colours
data:
  sky: blue
"""


def head(kind: str = "ConfigMap", name: str = "x") -> str:
    return f"apiVersion: v1\nkind: {kind}\nmetadata:\n  name: {name}\n"


def test_documents_are_objects_with_their_lines_and_empty_ones_are_skipped() -> None:
    text = (
        "# a comment first\n"
        + CONFIGMAP
        + "---\n---\n# only a comment\n---\nnull\n---\n"  # empty documents, as kubectl skips them
        + "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: team}\n"
        + "spec:\n  replicas: 3\n  note: |\n    two\n    lines\n"
    )
    first, second = parse(text)
    assert (first.number, first.first_line, first.last_line) == (1, 2, 7)
    assert first.body == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "colours"},
        "data": {"sky": "blue"},
    }
    assert (first.api_version, first.kind, first.name, first.namespace) == (
        "v1",
        "ConfigMap",
        "colours",
        None,
    )
    assert (second.number, second.first_line, second.last_line) == (2, 14, 21)
    assert (second.kind, second.name, second.namespace) == ("Deployment", "web", "team")
    assert second.body["spec"] == {"replicas": 3, "note": "two\nlines\n"}


def test_values_are_decoded_as_the_api_server_decodes_them() -> None:
    text = head() + "data:\n  when: 2024-01-01\n  enabled: on\n  2: two\n  true: t\n  bin: !!binary aGk=\n"
    (document,) = parse(text)
    # A timestamp stays a string, number and boolean keys become strings (sigs.k8s.io/yaml).
    assert document.body["data"] == {
        "when": "2024-01-01",
        "enabled": True,
        "2": "two",
        "true": "t",
        "bin": "hi",
    }


def test_a_textarea_s_crlf_line_ends_count_as_one() -> None:
    text = CONFIGMAP.replace("\n", "\r\n") + "---\r\n" + head("Secret", "s").replace("\n", "\r\n")
    documents = parse(text)
    assert [(d.kind, d.first_line) for d in documents] == [("ConfigMap", 1), ("Secret", 8)]


def test_bytes_are_read_as_utf8() -> None:
    (document,) = parse((head() + "data:\n  greeting: 你好\n").encode())
    assert document.body["data"] == {"greeting": "你好"}


LAUGHS = "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)

REFUSALS = [
    # (name, text, error type, (line, column) or None, words of the message)
    (
        "syntax",
        head() + "data:\n  a: b\n    c: d\n",
        errors.YAMLSyntaxError,
        (7, 6),
        "mapping values are not allowed",
    ),
    ("unclosed flow", head() + "data: [a, b\n", errors.YAMLSyntaxError, (6, 1), "YAML syntax error"),
    ("NUL byte", head() + "data:\n  a: b\x00\n", errors.NotText, (6, 7), "NUL byte"),
    ("control character", head() + "\x07\n", errors.NotText, (5, 1), "U+0007"),
    ("replacement character", head() + "data: {a: \ufffd}\n", errors.NotUTF8, (5, 11), "not UTF-8"),
    (
        "not UTF-8 bytes",
        (head() + "data: {a: ").encode() + b"\xff\xfe}\n",
        errors.NotUTF8,
        (5, 11),
        "byte 61",
    ),
    ("too large", head() + "data:\n  a: " + "x" * (3 * 1024 * 1024) + "\n", errors.TooLarge, None, "3 MiB"),
    ("billion laughs", LAUGHS, errors.ExcessiveAliasing, None, "billion laughs"),
    (
        "many aliases",
        "a: &a x\nb: [" + ",".join(["*a"] * (MAX_ALIASES + 1)) + "]\n",
        errors.TooManyAliases,
        (2, 5 + 3 * MAX_ALIASES),
        "aliases",
    ),
    ("recursive alias", head() + "data: &d {a: [*d]}\n", errors.RecursiveAlias, (5, 15), "*d"),
    ("deep flow", "a: " + "[" * (MAX_DEPTH + 5), errors.TooDeep, (1, 3 + MAX_DEPTH), "200 levels"),
    (
        "deep block",
        "".join("  " * i + "a:\n" for i in range(MAX_DEPTH + 2)),
        errors.TooDeep,
        (MAX_DEPTH + 1, 2 * MAX_DEPTH + 1),
        "deep",
    ),
    (
        "deep through aliases",
        "a: &a " + "[" * 150 + "]" * 150 + "\nb: " + "[" * 60 + "*a" + "]" * 60 + "\n",
        errors.TooDeep,
        None,
        "deep",
    ),
    (
        "too many documents",
        "---\n".join([head(name=f"n{i}") for i in range(MAX_DOCUMENTS + 1)]),
        errors.TooManyDocuments,
        (MAX_DOCUMENTS * 5, 1),
        "more than 50 objects",
    ),
    ("too many empty documents", "---\n" * 60 + head(), errors.TooManyDocuments, None, "empty documents"),
    ("a list", "- a\n- b\n", errors.NotAnObject, (1, 1), "is a list"),
    ("a scalar", "just words\n", errors.NotAnObject, (1, 1), "single value"),
    ("no kind", "apiVersion: v1\nmetadata: {name: x}\n", errors.MissingField, (1, 1), "has no kind"),
    ("no apiVersion", "kind: Pod\nmetadata: {name: x}\n", errors.MissingField, (1, 1), "has no apiVersion"),
    (
        "kind not a string",
        "apiVersion: v1\nkind: [Pod]\nmetadata: {name: x}\n",
        errors.MissingField,
        (2, 1),
        "must be a non-empty string",
    ),
    ("no metadata", "apiVersion: v1\nkind: Pod\n", errors.MissingField, (1, 1), "no metadata.name"),
    (
        "metadata a list",
        "apiVersion: v1\nkind: Pod\nmetadata: [x]\n",
        errors.MissingField,
        (3, 1),
        "must be a mapping",
    ),
    (
        "no name",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: web-\n",
        errors.MissingField,
        (4, 3),
        "generateName",
    ),
    (
        "name a number",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: 5\n",
        errors.MissingField,
        (4, 3),
        "metadata.name must be",
    ),
    ("name with a slash", head(name="a/b"), errors.InvalidName, (4, 3), "URL"),
    ("namespace ..", head() + "  namespace: ..\n", errors.InvalidName, (5, 3), "metadata.namespace"),
    (
        "duplicate key",
        head() + "  name: y\n",
        errors.DuplicateKey,
        (5, 3),
        'The key "name" is already set in this mapping (line 4)',
    ),
    ("duplicate after conversion", head() + "data:\n  1: a\n  '1': b\n", errors.DuplicateKey, (7, 3), '"1"'),
    ("unknown tag", head() + "data: !vault {a: b}\n", errors.UnsupportedTag, (5, 7), "!vault"),
    (
        "python tag",
        head() + "x: !!python/object:os.system {}\n",
        errors.UnsupportedTag,
        (5, 4),
        "python/object",
    ),
    ("infinity", head() + "spec:\n  replicas: .inf\n", errors.UnsupportedValue, (6, 13), "+Inf"),
    ("not a number", head() + "spec: [1, .nan]\n", errors.UnsupportedValue, (5, 11), "NaN"),
    (
        "enormous integer",
        head() + "spec: {n: " + "9" * 5000 + "}\n",
        errors.UnsupportedValue,
        (5, 11),
        "cannot decode number",
    ),
    ("null key", head() + "data:\n  ~: x\n", errors.UnsupportedValue, (6, 3), "unsupported map key"),
    (
        "mapping key",
        head() + "data:\n  ? {a: b}\n  : x\n",
        errors.UnsupportedValue,
        (6, 5),
        "unsupported map key",
    ),
    ("only comments", "# nothing here\n---\n# nor here\n", errors.NothingToSubmit, None, "nothing to submit"),
    ("empty", "", errors.NothingToSubmit, None, "nothing to submit"),
]


@pytest.mark.parametrize(
    ("text", "error", "where", "words"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_refused_with_its_own_message_at_its_place(
    text: str | bytes, error: type[errors.ManifestError], where: tuple[int, int] | None, words: str
) -> None:
    started = time.monotonic()
    with pytest.raises(error) as refused:
        parse(text)
    assert time.monotonic() - started < 2.0  # hostile input is refused early, not after the work
    problem = refused.value
    assert words in problem.message
    if where is not None:
        assert (problem.line, problem.column) == where, str(problem)
        assert str(problem).startswith(f"Line {where[0]}, column {where[1]}: ")
    assert problem.problems() == (problem,)


def test_a_million_brackets_stop_at_the_depth_limit_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(errors.TooDeep):
        parse("[" * 1_000_000)
    assert time.monotonic() - started < 1.0


def test_the_billion_laughs_stop_before_they_expand() -> None:
    started = time.monotonic()
    with pytest.raises(errors.ExcessiveAliasing) as refused:
        parse(LAUGHS)
    assert time.monotonic() - started < 0.5
    assert refused.value.line == 4  # "d" is the first level that expands past the text's own size


def test_a_few_aliases_are_fine() -> None:
    text = head() + "data: &d\n  a: b\nbinaryData: {}\nspec:\n  one: *d\n  two: *d\n"
    (document,) = parse(text)
    assert document.body["spec"] == {"one": {"a": "b"}, "two": {"a": "b"}}
    assert document.body["spec"]["one"] is not document.body["spec"]["two"]  # copies, not one shared


def test_problems_of_several_documents_are_reported_together() -> None:
    text = "apiVersion: v1\nmetadata: {name: a}\n---\n" + CONFIGMAP + "---\n- a list\n"
    with pytest.raises(errors.SeveralProblems) as refused:
        parse(text)
    problems = refused.value.problems()
    assert [(type(p), p.document, p.line) for p in problems] == [
        (errors.MissingField, 1, 1),
        (errors.NotAnObject, 3, 11),
    ]
    assert refused.value.message == "2 problems were found in the text."
    assert str(refused.value).splitlines()[1].startswith("Line 11, column 1: Document 3 is a list")


def test_a_syntax_error_is_placed_in_the_whole_text_across_documents() -> None:
    text = CONFIGMAP + "---\n" + CONFIGMAP + "---\n" + head() + "data:\n  key: [unclosed\n"
    with pytest.raises(errors.YAMLSyntaxError) as refused:
        parse(text)
    assert refused.value.line == 21


def test_bytes_that_are_not_utf8_are_placed_in_characters() -> None:
    with pytest.raises(errors.NotUTF8) as refused:
        parse("data:\n  greeting: 你好 ".encode() + b"\xff\n")
    assert (refused.value.line, refused.value.column, refused.value.offset) == (2, 16, 25)


def test_the_size_is_that_of_the_text_as_written() -> None:
    # 3 MiB with LF line ends, posted by a browser with CRLF: still under the limit.
    text = head() + "data:\n  k: |\n" + "    x\n" * 520_000
    assert len(text.encode()) < 3 * 1024 * 1024 < len(text.replace("\n", "\r\n").encode())
    (document,) = parse(text.replace("\n", "\r\n"))
    assert document.body["data"]["k"] == "x\n" * 520_000
