"""The table of kubectl's commands and options is the pinned kubectl's own, read from its help.

If kubectl is upgraded, these fail until ``python -m courses.console.helptext`` rewrites the table, so
the policy never reads a command line with an older kubectl's rules.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from courses.console import helptext
from courses.console.cmdline import BOOL, OPTIONAL, VALUE
from courses.console.kubectl_commands import COMMANDS, GLOBAL_FLAGS, KUBECTL_VERSION


def test_the_table_is_for_the_pinned_kubectl() -> None:
    assert helptext.version() == KUBECTL_VERSION


def test_help_agrees_with_the_table() -> None:
    global_options, commands = helptext.read_help()
    assert {n: (f.short, f.kind == BOOL) for n, f in GLOBAL_FLAGS.items()} == global_options
    assert commands.keys() == COMMANDS.keys()
    for key, command in commands.items():
        table = COMMANDS[key]
        assert (command.aliases, command.children) == (table.aliases, table.children), key
        help_says = {n: (f.short, f.kind == BOOL) for n, f in command.flags.items()}
        assert help_says == {n: (f.short, f.kind == BOOL) for n, f in table.flags.items()}, key


def test_the_options_with_an_optional_value_have_one() -> None:
    probes = [
        (tuple(k.split()), n) for k, c in COMMANDS.items() for n, f in c.flags.items() if f.kind == OPTIONAL
    ]
    assert probes, "kubectl has options with optional values (--dry-run): the table lost them"
    with ThreadPoolExecutor(max_workers=4) as pool:
        needed = list(pool.map(lambda probe: helptext.needs_value(helptext.KUBECTL, *probe), probes))
    assert not any(needed), [probe for probe, need in zip(probes, needed, strict=True) if need]
    # and a sample of those that need one does need it
    for key, name in [("get", "output"), ("apply", "filename"), ("logs", "container")]:
        assert COMMANDS[key].flags[name].kind == VALUE
        assert helptext.needs_value(helptext.KUBECTL, (key,), name)


@pytest.mark.slow
def test_the_generated_module_is_what_the_generator_writes_now() -> None:
    """Every option probed (a minute of kubectl runs): the whole table, byte for byte."""
    import subprocess
    import sys
    from pathlib import Path

    import courses.console.kubectl_commands as module

    written = helptext.render(*helptext.read_tree(), helptext.version())
    formatted = subprocess.run(
        [str(Path(sys.executable).parent / "ruff"), "format", "-"],
        input=written,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert formatted == Path(module.__file__).read_text()
