"""Label and field selectors: parsing, matching and the API server's refusals, as upstream.

Most tables are upstream's own: apimachinery ``pkg/labels/selector_test.go`` (TestSelectorParse,
TestSelectorMatches, TestSetSelectorParser, TestRequirementConstructor, TestToString) and
``pkg/fields/selector_test.go`` (TestSelectorParse, TestSplitTerms, TestEscapeValue,
TestSelectorMatches, TestRequiresExactMatch). Where upstream only asserts "an error", the exact
messages below were derived by hand from ``pkg/labels/selector.go`` and are cited case by case.
"""

from __future__ import annotations

import pytest

from controlplane.api.selectors import (
    DOES_NOT_EXIST,
    EXISTS,
    FIELD_LABELS,
    GREATER_THAN,
    NOT_IN,
    FieldSelector,
    LabelSelector,
    Requirement,
    SelectorError,
    bad_request_status,
    check_field_selector,
    escape_field_value,
    field_set,
    format_label_selector,
    format_labels,
    label_selector_from_object,
    parse_field_selector,
    parse_label_selector,
    unescape_field_value,
)

LABEL_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
LABEL_KEY_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


# -- label selectors: parse and print ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    # selector_test.go TestSelectorParse testGoodStrings: String() is the input without spaces.
    ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"],
)
def test_good_label_selectors_round_trip_without_spaces(text: str) -> None:
    assert str(parse_label_selector(text)) == text.replace(" ", "")


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        # TestSetSelectorParser: requirements come out sorted by key, values sorted and deduplicated.
        ("x notin (abc,def),bar,z in (),w", "bar,w,x notin (abc,def),z in ()"),
        ("x in (foo,,baz),y,z notin ()", "x in (,baz,foo),y,z notin ()"),
        ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),  # "in" inside a value list is a value
        ("x notin (, a)", "x notin (,a)"),
        ("x in (abc,)", "x in (,abc)"),
        ("x  notin\t\t\t(abc,def)", "x notin (abc,def)"),
        ("\rx", "x"),
        (
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)",
        ),
        ("x==a", "x==a"),
        ("notin=in", "notin=in"),
    ],
)
def test_label_selectors_print_in_upstream_canonical_form(text: str, canonical: str) -> None:
    assert str(parse_label_selector(text)) == canonical


def test_parse_is_deterministic() -> None:
    # TestDeterministicParse
    assert str(parse_label_selector("x=a,a=x")) == str(parse_label_selector("a=x,x=a")) == "a=x,x=a"


def test_requirements_carry_operators_and_values() -> None:
    selector = parse_label_selector("x notin (abc,def),bar,!z,n>3")
    assert selector.requirements == (
        Requirement("bar", EXISTS),
        Requirement("n", GREATER_THAN, ("3",)),
        Requirement("x", NOT_IN, ("abc", "def")),
        Requirement("z", DOES_NOT_EXIST),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # TestSelectorParse testBadStrings and TestSetSelectorParser's invalid rows; messages traced
        # through pkg/labels/selector.go (parse, parseRequirement, NewRequirement).
        ("x=a||y=b", f'unable to parse requirement: values[0][x]: Invalid value: "a||y": {LABEL_VALUE_RULE}'),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        (
            "x<a",
            'unable to parse requirement: values[0]: Invalid value: "a": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("x,y,", "found '', expected: identifier after ','"),
        ("app=myapp,", "found '', expected: identifier after ','"),
        (",x,y", "found ',', expected: !, identifier, or 'end of string'"),
        (
            "x nott in (y)",
            "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ("a in (xyz),", "found '', expected: identifier after ','"),
        ("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"),
        ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"),
        ("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ("a (", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("(", "found '(', expected: !, identifier, or 'end of string'"),
        ("a in", "unable to parse requirement: found '' expected: '('"),  # sic, no colon upstream
        ("!", "unable to parse requirement: found '', expected: identifier"),
        (
            "x/y/z",
            'unable to parse requirement: <nil>: Invalid value: "x/y/z": a valid label key '
            + LABEL_KEY_RULE
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ),
        ("-x", f'unable to parse requirement: <nil>: Invalid value: "-x": name part {LABEL_KEY_RULE}'),
        ("/x", 'unable to parse requirement: <nil>: Invalid value: "/x": prefix part must be non-empty'),
        (
            "k=" + "v" * 64,
            f'unable to parse requirement: values[0][k]: Invalid value: "{"v" * 64}": '
            "must be no more than 63 bytes",
        ),
    ],
)
def test_bad_label_selectors_fail_with_upstream_messages(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        parse_label_selector(text)
    assert caught.value.message == message
    assert str(caught.value) == message


# -- label selectors: matching ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        # TestSelectorMatches
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x", {"x": "z"}, True),
        ("!x", {"y": "z"}, True),
        ("x>1", {"x": "2"}, True),
        ("x<1", {"x": "0"}, True),
        ("x=z", {}, False),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x", {"y": "z"}, False),
        ("!x", {"x": "z"}, False),
        ("x>1", {"x": "0"}, False),
        ("x<1", {"x": "2"}, False),
        ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
        # TestRequirementSelectorMatching
        ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True),
        ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False),
        ("x notin (),y", {"y": ""}, True),
        ("!x,y", {"y": ""}, True),
        ("x notin (),!y", {"y": ""}, False),
        ("x in ()", {"y": "baz"}, False),
        ("z>1", {"z": "2"}, True),
        ("z>1", {"z": "v2"}, False),
        # != and notin also match objects that lack the key.
        ("env!=prod", {}, True),
        ("env notin (prod)", {"app": "web"}, True),
    ],
)
def test_label_selector_matching(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


def test_everything_and_nothing() -> None:
    # TestEverything; labels.Nothing() matches nothing and is not "empty"
    everything, nothing = LabelSelector.everything(), LabelSelector.nothing()
    assert everything.empty and everything.matches({"x": "y"})
    assert not nothing.empty and not nothing.matches({}) and str(nothing) == ""
    assert parse_label_selector("").empty
    assert not parse_label_selector("x").empty


def test_requires_exact_match() -> None:
    selector = parse_label_selector("app=web,tier in (a),env in (x,y),k!=v")
    assert selector.requires_exact_match("app") == "web"
    assert selector.requires_exact_match("tier") == "a"
    assert selector.requires_exact_match("env") is None
    assert selector.requires_exact_match("k") is None
    assert selector.requires_exact_match("missing") is None


# -- metav1.LabelSelector (LabelSelectorAsSelector) ------------------------------------------------


def test_nil_selector_matches_nothing_and_empty_matches_everything() -> None:
    assert label_selector_from_object(None).matches({"app": "web"}) is False
    assert label_selector_from_object({}).matches({"app": "web"}) is True
    assert label_selector_from_object({"matchLabels": {}, "matchExpressions": []}).empty


def test_match_labels_and_expressions_combine() -> None:
    selector = label_selector_from_object(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "edge"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "env", "operator": "NotIn", "values": ["dev"]},
                {"key": "zone", "operator": "Exists"},
            ],
        }
    )
    assert str(selector) == "app=web,!canary,env notin (dev),tier in (edge,front),zone"
    assert selector.matches({"app": "web", "tier": "edge", "zone": "a"})
    assert not selector.matches({"app": "web", "tier": "edge", "zone": "a", "canary": "1"})
    assert not selector.matches({"app": "web", "tier": "back", "zone": "a"})


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            '"Gt" is not a valid pod selector operator',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            'values: Invalid value: ["x"]: values set must be empty for exists and does not exist',
        ),
        ({"matchLabels": {"app": "a b"}}, f'values[0][app]: Invalid value: "a b": {LABEL_VALUE_RULE}'),
        ({"matchLabels": {"bad key": "x"}}, f'key: Invalid value: "bad key": name part {LABEL_KEY_RULE}'),
        (
            # Two problems aggregate as "[a, b]" (field.ErrorList.ToAggregate).
            {"matchExpressions": [{"key": "-k", "operator": "Exists", "values": ["x"]}]},
            f'[key: Invalid value: "-k": name part {LABEL_KEY_RULE}, '
            'values: Invalid value: ["x"]: values set must be empty for exists and does not exist]',
        ),
    ],
)
def test_invalid_metav1_selectors(selector: dict[str, object], message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        label_selector_from_object(selector)
    assert caught.value.message == message


def test_format_helpers() -> None:
    assert format_label_selector({"matchLabels": {"b": "2", "a": "1"}}) == "a=1,b=2"
    assert format_label_selector({}) == "<none>"
    assert format_label_selector({"matchExpressions": [{"key": "a", "operator": "Nope"}]}) == "<error>"
    assert format_labels({"b": "2", "a": "1"}) == "a=1,b=2"
    assert format_labels({}) == "<none>"


# -- field selectors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["x=a,y=b,z=c", "", "x!=a,y=b", r"x=a||y\=b", r"x=a\=\=b"])
def test_good_field_selectors_round_trip(text: str) -> None:
    # fields/selector_test.go TestSelectorParse testGoodStrings
    assert str(parse_field_selector(text)) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # TestSelectorParse testBadStrings, with the messages of parseSelector / UnescapeValue
        ("x=a||y=b", "invalid field selector: unescaped character in value: 61"),  # %v of '=' is 61
        ("x==a==b", "invalid field selector: unescaped character in value: 61"),
        ("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'"),
        ("x in (a)", "invalid selector: 'x in (a)'; can't understand 'x in (a)'"),
        ("x in (a,b,c)", "invalid selector: 'x in (a,b,c)'; can't understand 'b'"),
        ("x", "invalid selector: 'x'; can't understand 'x'"),
        (r"k=\a", r"invalid field selector: invalid escape sequence: \a"),
        ("k=\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_bad_field_selectors(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        parse_field_selector(text)
    assert caught.value.message == message


def test_field_selector_parts_are_sorted_and_double_equals_prints_as_equals() -> None:
    selector = parse_field_selector("x=a,a==x,m!=q")
    assert str(selector) == "a=x,m!=q,x=a"
    assert selector.requirements == [("a", "=", "x"), ("m", "!=", "q"), ("x", "=", "a")]


def test_field_selector_escaping() -> None:
    # TestEscapeValue
    for raw, escaped in {
        "": "",
        "a": "a",
        "=": r"\=",
        ",": r"\,",
        "\\": "\\\\",
        r"\=\,\ ": r"\\\=\\\,\\ ",
    }.items():
        assert escape_field_value(raw) == escaped
        assert unescape_field_value(escaped) == raw
    # TestSplitTerms: an escaped comma does not split
    # (and the terms are sorted: "k2=..." sorts before "k=...")
    assert parse_field_selector(r"k=\,,k2=v2").requirements == [("k2", "=", "v2"), ("k", "=", ",")]
    assert parse_field_selector("함=수,목=록").requirements == [("목", "=", "록"), ("함", "=", "수")]


def test_empty_terms_are_dropped() -> None:
    # Transform drops a term whose field and value are both empty; "" parses to Everything.
    assert parse_field_selector("=").empty
    assert parse_field_selector(",a=b,").requirements == [("a", "=", "b")]
    assert parse_field_selector("").empty


def test_field_selector_matching() -> None:
    # TestSelectorMatches, with the escaped complex value
    fields = {"foo": "bar", "baz": "blah", "complex": "=value\\,\\"}
    assert parse_field_selector("foo=bar,baz=blah").matches(fields)
    assert parse_field_selector(r"foo=bar,baz=blah,complex=\=value\\\,\\").matches(fields)
    assert not parse_field_selector("foo=blah").matches(fields)
    assert not parse_field_selector("foo=bar,foobar=bar,baz=blah").matches(fields)
    assert parse_field_selector("x!=y,z!=w").matches({"x": "z", "z": "a"})
    # A field the object does not have reads as "".
    assert parse_field_selector("missing=").matches(fields)
    assert parse_field_selector("missing!=x").matches(fields)


def test_exact_match() -> None:
    # TestRequiresExactMatch
    assert parse_field_selector("spec.nodeName=n1,status.phase!=Failed").exact_match("spec.nodeName") == "n1"
    assert parse_field_selector("status.phase!=Failed").exact_match("status.phase") is None
    assert parse_field_selector("test=").exact_match("test") == ""
    assert FieldSelector().exact_match("test") is None


# -- per-resource field labels ------------------------------------------------------------------------


def test_pod_field_selectors_accept_upstream_labels_and_convert_spec_host() -> None:
    selector = parse_field_selector("spec.host=node-1,status.phase!=Failed")
    converted = check_field_selector("/pods", selector)
    assert converted.requirements == [("spec.nodeName", "=", "node-1"), ("status.phase", "!=", "Failed")]
    assert {"spec.nodeName", "spec.hostNetwork", "status.nominatedNodeName"} <= FIELD_LABELS["/pods"]


@pytest.mark.parametrize(
    ("resource_key", "selector", "message"),
    [
        ("/pods", "spec.containers=x", "field label not supported: spec.containers"),
        ("/nodes", "metadata.namespace=x", "field label not supported: metadata.namespace"),
        ("/namespaces", "name=x", "field label not supported: name"),
        ("/events", "regarding.name=x", "field label not supported: regarding.name"),
        ("events.k8s.io/events", "involvedObject.name=x", "field label not supported: involvedObject.name"),
        (
            # No conversion registered for ReplicaSets: the default one refuses (kubernetes#135136).
            "apps/replicasets",
            "status.replicas=0",
            '"status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
        (
            "example.com/widgets",
            "spec.size=1",
            '"spec.size" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
    ],
)
def test_unsupported_field_labels(resource_key: str, selector: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        check_field_selector(resource_key, parse_field_selector(selector))
    assert caught.value.message == message


def test_bad_request_status_is_upstreams_shape() -> None:
    with pytest.raises(SelectorError) as caught:
        parse_label_selector("app=myapp,")
    assert bad_request_status(caught.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "found '', expected: identifier after ','",
        "reason": "BadRequest",
        "code": 400,
    }


def test_pod_field_set() -> None:
    pod = {
        "metadata": {"name": "web-1", "namespace": "default"},
        "spec": {
            "nodeName": "n1",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "serviceAccount": "legacy",
            "hostNetwork": True,
        },
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.7"}], "nominatedNodeName": ""},
    }
    assert field_set("/pods", pod) == {
        "metadata.name": "web-1",
        "metadata.namespace": "default",
        "spec.nodeName": "n1",
        "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler",
        "spec.serviceAccountName": "legacy",  # deprecated serviceAccount stands in (v1 conversion)
        "spec.hostNetwork": "true",
        "status.phase": "Running",
        "status.podIP": "10.0.0.7",
        "status.nominatedNodeName": "",
    }
    assert field_set("/pods", {"metadata": {"name": "p"}})["spec.hostNetwork"] == "false"


def test_kubelet_style_watch_selects_its_pods() -> None:
    selector = check_field_selector("/pods", parse_field_selector("spec.nodeName=n1"))
    assert selector.matches(field_set("/pods", {"metadata": {"name": "a"}, "spec": {"nodeName": "n1"}}))
    assert not selector.matches(field_set("/pods", {"metadata": {"name": "b"}, "spec": {"nodeName": "n2"}}))


@pytest.mark.parametrize(
    ("resource_key", "obj", "expected"),
    [
        (
            "/nodes",
            {"metadata": {"name": "n1"}, "spec": {"unschedulable": True}},
            {"metadata.name": "n1", "spec.unschedulable": "true"},
        ),
        (
            "/namespaces",
            {"metadata": {"name": "ns"}, "status": {"phase": "Active"}},
            {"metadata.name": "ns", "name": "ns", "status.phase": "Active"},
        ),
        (
            "/secrets",
            {"metadata": {"name": "s", "namespace": "d"}, "type": "Opaque"},
            {"metadata.name": "s", "metadata.namespace": "d", "type": "Opaque"},
        ),
        (
            "/services",
            {
                "metadata": {"name": "s", "namespace": "d"},
                "spec": {"clusterIP": "10.0.0.1", "type": "ClusterIP"},
            },
            {
                "metadata.name": "s",
                "metadata.namespace": "d",
                "spec.clusterIP": "10.0.0.1",
                "spec.type": "ClusterIP",
            },
        ),
        (
            "apps/replicasets",
            {"metadata": {"name": "r", "namespace": "d"}, "status": {"replicas": 3}},
            {"metadata.name": "r", "metadata.namespace": "d", "status.replicas": "3"},
        ),
        (
            "/configmaps",
            {"metadata": {"name": "c", "namespace": "d"}},
            {"metadata.name": "c", "metadata.namespace": "d"},
        ),
        (
            "rbac.authorization.k8s.io/clusterroles",
            {"metadata": {"name": "admin"}},
            {"metadata.name": "admin"},
        ),
    ],
)
def test_resource_field_sets(resource_key: str, obj: dict[str, object], expected: dict[str, str]) -> None:
    assert field_set(resource_key, obj) == expected


def test_event_field_sets_agree_across_both_event_apis() -> None:
    core = {
        "metadata": {"name": "e", "namespace": "d"},
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "d", "uid": "u1"},
        "reason": "Scheduled",
        "type": "Normal",
        "source": {"component": ""},
        "reportingComponent": "default-scheduler",
    }
    events_v1 = {
        "metadata": {"name": "e", "namespace": "d"},
        "regarding": {"kind": "Pod", "name": "web", "namespace": "d", "uid": "u1"},
        "reason": "Scheduled",
        "type": "Normal",
        "reportingController": "default-scheduler",
    }
    fields = field_set("/events", core)
    assert fields == field_set("events.k8s.io/events", events_v1)
    assert fields["source"] == "default-scheduler"  # source falls back to the reporting controller
    # kubectl describe pod's event query, in both APIs' field names
    for key, text in (
        ("/events", "involvedObject.name=web,involvedObject.kind=Pod"),
        ("events.k8s.io/events", "regarding.name=web,regarding.kind=Pod"),
    ):
        assert check_field_selector(key, parse_field_selector(text)).matches(fields)
