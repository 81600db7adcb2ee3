"""How kubectl reads its command line: which command runs, with which options and arguments.

kubectl is built on two Go libraries, and reads its words in two passes, exactly as this module does:

1. **Which command** (cobra's ``Command.Find``, ``cobra/command.go``). Starting at ``kubectl``, the words
   that are not options are collected (``stripFlags``); if the first of them names a sub-command (or
   one of its aliases: ``cm`` for ``configmap``), that word is removed and the search goes on below it.
   Options are skipped with the current command's options in mind: ``--name`` or ``-x`` without an
   ``=`` eats the next word as its value *unless* the option is a boolean (or has an optional value),
   and an option cobra does not know eats it too. ``--`` ends the search.
2. **Its options and arguments** (pflag's ``FlagSet.Parse``, ``pflag/flag.go``), with the options of the
   command found (its own and the global ones, plus ``-h``/``--help``): ``--name=value``, ``--name
   value``, ``-xVALUE``, ``-x=VALUE``, ``-x VALUE``, and short booleans run together (``-Aw``; the first
   letter that takes a value takes the rest of the word: ``-wf-`` is ``-w -f -``). Options and arguments
   may come in any order; ``--`` ends the options (what follows is arguments: a container's command).
   Option names are normalised as kubectl's ``WordSepNormalizeFunc`` does: ``--as_group`` is
   ``--as-group``.

Before either pass, kubectl looks for a *plugin* when the command is not its own: ``kubectl foo`` runs
``kubectl-foo`` from ``PATH``, and ``kubectl create foo`` runs ``kubectl-create-foo``
(``kubectl/pkg/cmd/cmd.go``, ``NewDefaultKubectlCommandWithArgs``). ``parse`` reports those as
``UnknownCommand``: a command with sub-commands given an argument that is none of them.

The facts about commands come from ``kubectl_commands.py``, read from the pinned binary's own help
(``helptext.py``). This module is pure: words in, a ``CommandLine`` or a ``CommandLineError`` out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

FlagKind = Literal["bool", "value", "optional"]
#: A boolean (``--watch``, ``--watch=false``); an option that needs a value (``-n default``); one whose
#: value is optional (``--dry-run`` alone is ``--dry-run=unchanged``: it never eats the next word).
BOOL: FlagKind = "bool"
VALUE: FlagKind = "value"
OPTIONAL: FlagKind = "optional"


class Flag(NamedTuple):
    """One option of a command: its one-letter form ("" if none) and whether it takes a value."""

    short: str
    kind: FlagKind


class Command(NamedTuple):
    """One kubectl command: its other names, its sub-commands' names, its own options by long name."""

    aliases: tuple[str, ...]
    children: tuple[str, ...]
    flags: Mapping[str, Flag]


#: cobra adds ``-h, --help`` to every command when it runs (not while it finds the command).
HELP = Flag("h", BOOL)


@dataclass(frozen=True, slots=True)
class Option:
    """One option as kubectl will read it."""

    #: Its long name, normalised (``as-group``), whatever form it was written in.
    name: str
    #: Its value; None when none was written (a boolean or an optional value, given bare).
    value: str | None
    #: The word it was written in (``-wf-`` for both ``watch`` and ``filename``).
    written: str
    #: Whether its value was the next word (``-n default``) rather than part of ``written``.
    separate: bool = False

    @property
    def shown(self) -> str:
        """The option as typed, with its value: ``-f /etc/passwd``, ``--server=https://...``."""
        return f"{self.written} {self.value}" if self.separate else self.written


@dataclass(frozen=True, slots=True)
class CommandLine:
    """A command line as kubectl reads it."""

    #: The command's path by canonical names: ``("create", "configmap")``; ``()`` for ``kubectl`` alone.
    path: tuple[str, ...]
    options: tuple[Option, ...]
    #: The arguments, in order, those after ``--`` included.
    arguments: tuple[str, ...]

    def values(self, name: str) -> list[str | None]:
        """The values given to option ``name``, in order (None for a bare boolean)."""
        return [option.value for option in self.options if option.name == name]


class CommandLineError(Exception):
    """kubectl would not run this command line (or would run a plugin instead)."""


class UnknownCommand(CommandLineError):
    """``word`` is not a sub-command of ``path`` (kubectl would look for a plugin, or fail).

    ``known``: it is the name of one, but came where kubectl no longer reads commands (after ``--``).
    """

    def __init__(self, word: str, path: tuple[str, ...], *, known: bool = False) -> None:
        super().__init__(f"{' '.join(('kubectl', *path))} has no command {word!r}")
        self.word = word
        self.path = path
        self.known = known


class UnknownOption(CommandLineError):
    """The command has no such option (``written`` is how it was written)."""

    def __init__(self, written: str, path: tuple[str, ...]) -> None:
        super().__init__(f"{' '.join(('kubectl', *path))} has no option {written!r}")
        self.written = written
        self.path = path


class MissingValue(CommandLineError):
    """An option that needs a value ended the line without one."""

    def __init__(self, written: str) -> None:
        super().__init__(f"option {written!r} needs a value")
        self.written = written


class BadSyntax(CommandLineError):
    """A word pflag refuses outright (``---x``, ``--=x``)."""

    def __init__(self, written: str) -> None:
        super().__init__(f"bad option syntax {written!r}")
        self.written = written


def normalize(name: str) -> str:
    """An option name as kubectl's ``WordSepNormalizeFunc`` sees it: ``_`` is ``-``."""
    return name.replace("_", "-")


@dataclass(frozen=True)
class CommandTree:
    """kubectl's commands (keyed by path: ``"create configmap"``, ``""`` for kubectl) and global options."""

    global_flags: Mapping[str, Flag]
    commands: Mapping[str, Command]

    def command(self, path: tuple[str, ...]) -> Command | None:
        return self.commands.get(" ".join(path))

    def child(self, path: tuple[str, ...], word: str) -> str | None:
        """The canonical name of the sub-command of ``path`` that ``word`` names (or an alias of it)."""
        command = self.command(path)
        if command is None:
            return None
        for name in command.children:
            child = self.command((*path, name))
            if word == name or (child is not None and word in child.aliases):
                return name
        return None

    def flags(self, path: tuple[str, ...], *, with_help: bool) -> dict[str, Flag]:
        """The options of command ``path``: its own and the global ones (and ``help`` once it runs)."""
        command = self.command(path)
        flags = dict(self.global_flags)
        if command is not None:
            flags.update(command.flags)
        if with_help:
            flags.setdefault("help", HELP)
        return flags


def _shorts(flags: Mapping[str, Flag]) -> dict[str, tuple[str, Flag]]:
    return {flag.short: (name, flag) for name, flag in flags.items() if flag.short}


def _eats_next(word: str, flags: Mapping[str, Flag], shorts: Mapping[str, tuple[str, Flag]]) -> bool:
    """cobra's rule while it finds the command: does option ``word`` take the next word as its value?

    ``--name`` (no ``=``) does unless it is a known boolean or optional; so does ``-x`` (exactly two
    characters) unless ``x`` is. An unknown option is taken to have no default, so it eats the next word.
    """
    if "=" in word:
        return False
    if word.startswith("--"):
        flag = flags.get(normalize(word[2:]))
        return flag is None or flag.kind == VALUE
    if word.startswith("-") and len(word) == 2:
        found = shorts.get(word[1])
        return found is None or found[1].kind == VALUE
    return False


def _strip_flags(words: Sequence[str], flags: Mapping[str, Flag]) -> list[str]:
    """cobra's ``stripFlags``: the words that are neither options nor option values, up to ``--``."""
    shorts = _shorts(flags)
    found: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            break
        if word.startswith("-") and _eats_next(word, flags, shorts):
            index += 1  # its value (cobra stops instead when that was the last word: the same)
        elif word and not word.startswith("-"):
            found.append(word)
    return found


def _minus_first(words: Sequence[str], name: str, flags: Mapping[str, Flag]) -> list[str]:
    """cobra's ``argsMinusFirstX``: the words without the first non-option ``name``, up to ``--``."""
    shorts = _shorts(flags)
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            break
        if word.startswith("-") and _eats_next(word, flags, shorts):
            index += 2
            continue
        if not word.startswith("-") and word == name:
            return [*words[:index], *words[index + 1 :]]
        index += 1
    return list(words)


def find(tree: CommandTree, words: Sequence[str]) -> tuple[tuple[str, ...], list[str]]:
    """cobra's ``Find``: the command ``words`` name, and the words left for it (command names removed)."""
    path: tuple[str, ...] = ()
    rest = list(words)
    while True:
        flags = tree.flags(path, with_help=False)
        candidates = _strip_flags(rest, flags)
        if not candidates:
            return path, rest
        child = tree.child(path, candidates[0])
        if child is None:
            return path, rest
        rest = _minus_first(rest, candidates[0], flags)
        path = (*path, child)


def _parse_long(word: str, following: list[str], flags: Mapping[str, Flag], path: tuple[str, ...]) -> Option:
    body = word[2:]
    if not body or body[0] in "-=":
        raise BadSyntax(word)
    raw_name, equals, value = body.partition("=")
    name = normalize(raw_name)
    flag = flags.get(name)
    if flag is None:
        raise UnknownOption(word, path)
    if equals:
        return Option(name, value, word)
    if flag.kind != VALUE:
        return Option(name, None, word)
    if not following:
        raise MissingValue(word)
    return Option(name, following.pop(0), word, separate=True)


def _parse_shorts(
    word: str, following: list[str], flags: Mapping[str, Flag], path: tuple[str, ...]
) -> list[Option]:
    """pflag's ``parseShortArg``: ``-abc`` letter by letter, until a letter takes the rest as its value."""
    shorts = _shorts(flags)
    options: list[Option] = []
    letters = word[1:]
    while letters:
        letter, rest = letters[0], letters[1:]
        found = shorts.get(letter)
        if found is None:
            raise UnknownOption(f"-{letter}" if len(word) > 2 else word, path)
        name, flag = found
        if len(letters) > 2 and letters[1] == "=":
            options.append(Option(name, letters[2:], word))
            return options
        if flag.kind != VALUE:
            options.append(Option(name, None, word))
            letters = rest
            continue
        if rest:
            options.append(Option(name, rest, word))
            return options
        if not following:
            raise MissingValue(word)
        options.append(Option(name, following.pop(0), word, separate=True))
        return options
    return options


def parse_options(
    words: Sequence[str], flags: Mapping[str, Flag], path: tuple[str, ...]
) -> tuple[list[Option], list[str]]:
    """pflag's ``Parse`` with options interspersed: the options and the arguments of ``words``."""
    options: list[Option] = []
    arguments: list[str] = []
    following = list(words)
    while following:
        word = following.pop(0)
        if len(word) < 2 or not word.startswith("-"):
            arguments.append(word)
        elif word == "--":
            arguments += following
            break
        elif word.startswith("--"):
            options.append(_parse_long(word, following, flags, path))
        else:
            options += _parse_shorts(word, following, flags, path)
    return options, arguments


def parse(tree: CommandTree, words: Sequence[str]) -> CommandLine:
    """Read ``words`` (what follows ``kubectl``) as kubectl will; raises ``CommandLineError``."""
    path, rest = find(tree, words)
    options, arguments = parse_options(rest, tree.flags(path, with_help=True), path)
    command = tree.command(path)
    if command is not None and command.children and arguments:
        # kubectl would look for a plugin (kubectl-<word>, kubectl-create-<word>) or refuse.
        raise UnknownCommand(arguments[0], path, known=tree.child(path, arguments[0]) is not None)
    return CommandLine(path=path, options=tuple(options), arguments=tuple(arguments))


def default_tree() -> CommandTree:
    """The pinned kubectl's tree (``kubectl_commands.py``)."""
    from courses.console.kubectl_commands import COMMANDS, GLOBAL_FLAGS

    return CommandTree(global_flags=GLOBAL_FLAGS, commands=COMMANDS)


__all__ = [
    "BOOL",
    "OPTIONAL",
    "VALUE",
    "BadSyntax",
    "Command",
    "CommandLine",
    "CommandLineError",
    "CommandTree",
    "Flag",
    "MissingValue",
    "Option",
    "UnknownCommand",
    "UnknownOption",
    "default_tree",
    "find",
    "normalize",
    "parse",
    "parse_options",
]
