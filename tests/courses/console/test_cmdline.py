"""Reading a command line as kubectl does: cobra finds the command, pflag reads its options.

A small tree of our own pins down each rule of cobra and pflag (``cmdline.py`` cites them); a few cases
on the real table show the rules meet kubectl's own commands.
"""

from __future__ import annotations

import pytest

from courses.console.cmdline import (
    BOOL,
    OPTIONAL,
    VALUE,
    BadSyntax,
    Command,
    CommandTree,
    Flag,
    MissingValue,
    Option,
    UnknownCommand,
    UnknownOption,
    default_tree,
    find,
    parse,
)

TREE = CommandTree(
    global_flags={"namespace": Flag("n", VALUE), "as-group": Flag("", VALUE), "v": Flag("v", VALUE)},
    commands={
        "": Command((), ("create", "get"), {}),
        "get": Command(
            (), (), {"watch": Flag("w", BOOL), "filename": Flag("f", VALUE), "all": Flag("A", BOOL)}
        ),
        "create": Command((), ("configmap",), {"filename": Flag("f", VALUE), "dry-run": Flag("", OPTIONAL)}),
        "create configmap": Command(
            ("cm",), (), {"from-literal": Flag("", VALUE), "dry-run": Flag("", OPTIONAL)}
        ),
    },
)


def test_the_command_is_found_past_global_options_and_by_alias() -> None:
    assert find(TREE, ["-n", "web", "create", "cm", "x"]) == (("create", "configmap"), ["-n", "web", "x"])
    assert find(TREE, ["--namespace=web", "get", "pods"]) == (("get",), ["--namespace=web", "pods"])


def test_an_option_cobra_does_not_know_eats_the_next_word_while_the_command_is_found() -> None:
    # cobra's stripFlags: "--unknown get" is an option and its value, so "pods" is the command word.
    assert find(TREE, ["--unknown", "get", "pods"]) == ((), ["--unknown", "get", "pods"])
    # A boolean, or an option whose value is optional, does not.
    assert find(TREE, ["create", "--dry-run", "configmap", "x"])[0] == ("create", "configmap")


def test_nothing_after_the_double_dash_is_a_command() -> None:
    with pytest.raises(UnknownCommand) as refused:
        parse(TREE, ["--", "get", "pods"])
    assert refused.value.known and refused.value.word == "get"


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["-f", "-"], [Option("filename", "-", "-f", separate=True)]),
        (["-f-"], [Option("filename", "-", "-f-")]),
        (["-f=-"], [Option("filename", "-", "-f=-")]),
        (["-f="], [Option("filename", "=", "-f=")]),  # pflag's own quirk: the value is "="
        (["--filename=-"], [Option("filename", "-", "--filename=-")]),
        (["--filename", "-"], [Option("filename", "-", "--filename", separate=True)]),
        (["-wf", "/x"], [Option("watch", None, "-wf"), Option("filename", "/x", "-wf", separate=True)]),
        (
            ["-wAf/x"],
            [
                Option("watch", None, "-wAf/x"),
                Option("all", None, "-wAf/x"),
                Option("filename", "/x", "-wAf/x"),
            ],
        ),
        (["-w=false"], [Option("watch", "false", "-w=false")]),
        (["--as_group=x"], [Option("as-group", "x", "--as_group=x")]),  # kubectl's WordSepNormalizeFunc
        (["-v6"], [Option("v", "6", "-v6")]),
    ],
)
def test_option_forms(words: list[str], expected: list[Option]) -> None:
    line = parse(TREE, ["get", "pods", *words])
    assert list(line.options) == expected
    assert line.arguments == ("pods",)


def test_options_and_arguments_mix_and_the_double_dash_ends_the_options() -> None:
    line = parse(TREE, ["get", "-w", "pods", "-n", "x", "web", "--", "-f", "/etc/passwd"])
    assert line.path == ("get",)
    assert line.arguments == ("pods", "web", "-f", "/etc/passwd")
    assert [o.name for o in line.options] == ["watch", "namespace"]


def test_a_lone_dash_is_an_argument() -> None:
    assert parse(TREE, ["get", "-"]).arguments == ("-",)


def test_errors() -> None:
    with pytest.raises(UnknownOption):
        parse(TREE, ["get", "--kubeconfig=/x"])
    with pytest.raises(UnknownOption):
        parse(TREE, ["get", "-wZ"])
    with pytest.raises(MissingValue):
        parse(TREE, ["get", "-f"])
    with pytest.raises(BadSyntax):
        parse(TREE, ["get", "---f"])
    with pytest.raises(BadSyntax):
        parse(TREE, ["get", "--=x"])
    with pytest.raises(UnknownCommand) as plugin:
        parse(TREE, ["evil", "x"])
    assert plugin.value.word == "evil" and plugin.value.path == () and not plugin.value.known
    with pytest.raises(UnknownCommand) as create_plugin:  # kubectl would run kubectl-create-evil
        parse(TREE, ["create", "evil"])
    assert create_plugin.value.path == ("create",)


def test_an_option_of_the_sub_command_may_come_before_it() -> None:
    line = parse(TREE, ["create", "--from-literal=a=b", "configmap", "x"])
    assert line.path == ("create", "configmap")
    assert line.values("from-literal") == ["a=b"]


def test_help_is_an_option_of_every_command() -> None:
    assert parse(TREE, ["get", "-h"]).values("help") == [None]


def test_the_real_table() -> None:
    tree = default_tree()
    assert parse(tree, ["logs", "-f", "web"]).values("follow") == [None]  # -f is --follow in logs
    assert parse(tree, ["apply", "-f", "-"]).values("filename") == ["-"]
    assert parse(tree, ["top", "pods"]).path == ("top", "pod")
    assert parse(tree, ["create", "secret", "generic", "x", "--from-literal=a=b"]).path == (
        "create",
        "secret",
        "generic",
    )
    # --dry-run's value is optional: "server" is an argument, as kubectl reads it.
    assert parse(tree, ["create", "cm", "x", "--dry-run", "server"]).arguments == ("x", "server")
    with pytest.raises(UnknownOption):  # create's -f is not its sub-commands'
        parse(tree, ["create", "secret", "generic", "x", "-f", "-"])
