"""The console's policy: which command lines may run, decided before anything runs.

The console runs the real kubectl on the server. It is not a shell, and escaping it is the first thing
someone will try, so every line a student types goes through ``decide`` and is either ``Allowed`` (the
exact words kubectl will get) or ``Refused`` (a reason code and a message in the student's language
saying why). Nothing is ever run for a refused line. The rules, in the order they are checked:

1. **One plain line.** At most ``MAX_LENGTH`` characters; no control characters (a line break, NUL).
2. **Not a shell.** Pipes, redirections, command lists, substitutions (``| ; & < > ` $( ${``) and
   variables (``$NAME``) are refused wherever they are, even quoted: none of them would do here what
   they do in a shell, and saying so is kinder than letting kubectl fail on them. One exception: an
   ``&`` in the query of ``--raw``'s path, where it separates the parameters
   (``--raw "/api/v1/namespaces/default/configmaps?resourceVersion=5&resourceVersionMatch=Exact"``).
   The line is split into words here and never handed to a shell, so there it is a character of a
   URL and nothing else (``shell_syntax``); anywhere else it is refused as before.
3. **Words as a shell splits them**, with ``shlex`` in POSIX mode (quotes and backslashes work as in
   sh); at most ``MAX_WORDS`` of them.
4. **kubectl and only kubectl.** The first word is exactly ``kubectl``: no ``FOO=bar`` before it, no path
   to it, no other program.
5. **A command kubectl has, from the list.** The words are read as kubectl reads them (``cmdline.py``:
   the command and its sub-command, then its options in every form pflag accepts). A word kubectl would
   look up as a *plugin* (``kubectl foo`` runs ``kubectl-foo``) is refused, and so are the commands
   that need a terminal, an editor, the server's files or its network ports (``ALLOWED_COMMANDS``).
6. **Options that keep the console pointed at the student's own sandbox, as themselves.** Connection
   and credential options (``--kubeconfig``, ``--server``, ``--token``, ``--context`` ...) are refused;
   so is anything that reads or writes the server's files (``-f`` with anything but ``-``, ``-k``,
   ``--from-file``, ``-o jsonpath-file=``, ``--cache-dir`` ...). ``-f -`` reads the manifest in the
   chapter's editor. ``--as`` and ``--as-group`` may name only whom the chapter allows (the API server
   still decides). ``--raw`` takes a path on the sandbox's API server, nothing else.

Long options are checked in *every* word, not only where kubectl reads an option: kubectl reads a few
(``--kuberc``) from the raw words before it parses anything. The runner adds its own walls (an empty
environment and ``PATH``, an empty working directory, resource limits: ``runner.py``), so a rule this
module missed still meets them; but the policy is the front door, and it says why.

Pure: a string in, a decision out; the messages are translated in the language active when it runs.
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from django.utils.translation import gettext

from courses.console.cmdline import (
    BadSyntax,
    CommandLine,
    CommandLineError,
    CommandTree,
    MissingValue,
    Option,
    UnknownCommand,
    UnknownOption,
    default_tree,
    normalize,
    parse,
)

#: The longest line, and the most words after ``kubectl``, the console takes.
MAX_LENGTH = 4096
MAX_WORDS = 64

#: The commands a student may run (with all their sub-commands, except those in ``REFUSED_SUBCOMMANDS``).
ALLOWED_COMMANDS = frozenset(
    {
        "annotate", "api-resources", "api-versions", "apply", "auth", "cluster-info", "cordon", "create",
        "delete", "describe", "drain", "events", "explain", "expose", "get", "label", "logs", "patch",
        "rollout", "run", "scale", "set", "taint", "top", "uncordon", "version", "wait",
    }
)  # fmt: skip
#: Sub-commands of allowed commands that are not: they open an editor, read files, or rewrite RBAC.
REFUSED_SUBCOMMANDS = frozenset(
    {("apply", "edit-last-applied"), ("apply", "set-last-applied"), ("auth", "reconcile")}
)

#: Options that choose where kubectl connects and as whom: the console decides that, not the line.
CONNECTION_OPTIONS = frozenset(
    {
        "kubeconfig", "server", "token", "username", "password", "user", "cluster", "context",
        "client-certificate", "client-key", "certificate-authority", "insecure-skip-tls-verify",
        "tls-server-name", "proxy-url",
    }
)  # fmt: skip
#: Options that read or write files on the server (``-f`` is checked on its own: ``-f -`` is fine).
FILE_OPTIONS = frozenset(
    {
        "kustomize", "kuberc", "cache-dir", "profile", "profile-output", "from-file", "from-env-file",
        "cert", "key", "patch-file", "output-directory",
    }
)  # fmt: skip
#: Options that need a terminal, stdin or an editor the browser does not have.
INTERACTIVE_OPTIONS = frozenset({"edit", "stdin", "tty", "attach", "leave-stdin-open", "interactive"})
#: Impersonation options beyond ``--as`` and ``--as-group``, which the lesson never needs.
REFUSED_IMPERSONATION = frozenset({"as-uid", "as-user-extra"})
#: Options checked in every word, wherever it stands (see the module's docstring).
ANYWHERE = CONNECTION_OPTIONS | FILE_OPTIONS

#: What a shell would do with these, and the console will not: refused wherever they appear.
_SHELL = re.compile(r"[|;&<>`]|\$[({]")
_VARIABLE = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_VERBOSITY = re.compile(r"^[0-9]$")
_ENCODED_DOT_OR_SLASH = re.compile(r"%(2e|2f|5c)", re.IGNORECASE)


class Reason(StrEnum):
    """Why a line was refused (a stable code for the page and the tests; the message is for people)."""

    EMPTY = "empty"
    TOO_LONG = "too-long"
    TOO_MANY_WORDS = "too-many-words"
    CONTROL_CHARACTER = "control-character"
    SHELL = "shell"
    VARIABLE = "variable"
    QUOTES = "quotes"
    ENVIRONMENT = "environment"
    NOT_KUBECTL = "not-kubectl"
    KUBECTL_PATH = "kubectl-path"
    UNKNOWN_COMMAND = "unknown-command"
    COMMAND_NOT_ALLOWED = "command-not-allowed"
    UNKNOWN_OPTION = "unknown-option"
    BAD_OPTION = "bad-option"
    CONNECTION = "connection"
    LOCAL_FILE = "local-file"
    RAW_PATH = "raw-path"
    IMPERSONATION = "impersonation"
    INTERACTIVE = "interactive"
    VERBOSITY = "verbosity"


@dataclass(frozen=True, slots=True)
class Allowed:
    """A line that may run: ``argv`` is exactly what kubectl gets (``argv[0]`` is ``"kubectl"``)."""

    argv: tuple[str, ...]
    #: ``-f -``: kubectl reads the chapter editor's text on its stdin (otherwise stdin is empty).
    stdin_from_editor: bool = False
    #: It runs until stopped or done waiting (``-w``, ``logs -f``, ``rollout status``, ``wait``,
    #: ``drain``): the runner gives it the longer time limit.
    follows: bool = False
    #: The command's path, for the log and the page: ``"create configmap"``.
    command: str = ""


@dataclass(frozen=True, slots=True)
class Refused:
    """A line that may not run, and why."""

    reason: Reason
    message: str


Decision = Allowed | Refused


@cache
def _tree() -> CommandTree:
    return default_tree()


def decide(command: str, *, impersonate: Iterable[str] = (), tree: CommandTree | None = None) -> Decision:
    """Whether ``command`` (a line as typed) may run; ``impersonate``: whom ``--as`` may name here."""
    refused = _check_characters(command, tree or _tree())
    if refused is not None:
        return refused
    try:
        words = shlex.split(command, comments=False, posix=True)
    except ValueError:
        return Refused(
            Reason.QUOTES, gettext("A quotation mark is not closed, or the line ends with a backslash.")
        )
    if not words:
        return Refused(Reason.EMPTY, gettext("Type a kubectl command, for example: kubectl get pods"))
    refused = _check_program(words[0])
    if refused is not None:
        return refused
    if len(words) - 1 > MAX_WORDS:
        message = gettext("The command has more than %(limit)d words.") % {"limit": MAX_WORDS}
        return Refused(Reason.TOO_MANY_WORDS, message)
    refused = _check_anywhere(words[1:])
    if refused is not None:
        return refused
    try:
        line = parse(tree or _tree(), words[1:])
    except CommandLineError as error:
        return _refuse_command_line(error)
    refused = _check_command(line.path) or _check_options(line, frozenset(impersonate))
    if refused is not None:
        return refused
    return Allowed(
        argv=tuple(words),
        stdin_from_editor="-" in line.values("filename"),
        follows=follows(line),
        command=" ".join(line.path),
    )


# -- the line ----------------------------------------------------------------------------------------


def _check_characters(command: str, tree: CommandTree) -> Refused | None:
    if len(command) > MAX_LENGTH:
        message = gettext("The command is longer than %(limit)d characters.") % {"limit": MAX_LENGTH}
        return Refused(Reason.TOO_LONG, message)
    for character in command:
        if character != "\t" and unicodedata.category(character) in ("Cc", "Cs"):
            message = gettext(
                "The command contains a control character (%(code)s), such as a line break. "
                "Type one command on one line."
            ) % {"code": f"U+{ord(character):04X}"}
            return Refused(Reason.CONTROL_CHARACTER, message)
    shell = shell_syntax(command, tree=tree)
    if shell is not None:
        message = gettext(
            "This console runs kubectl itself, not a shell: %(what)s (a pipe, redirection, command list or "
            "substitution) would do nothing here. Run one kubectl command at a time."
        ) % {"what": shell}
        return Refused(Reason.SHELL, message)
    variable = _VARIABLE.search(command)
    if variable is not None:
        message = gettext(
            "This console runs kubectl itself, not a shell: it has no variables, so %(what)s would not be "
            "replaced. Type the value itself."
        ) % {"what": variable.group()}
        return Refused(Reason.VARIABLE, message)
    return None


def shell_syntax(command: str, *, tree: CommandTree | None = None) -> str | None:
    """The first piece of shell syntax in ``command`` that the console refuses (``|``, ``;``, ``&``,
    ``<``, ``>``, a backquote, ``$(``, ``${``), or None if it has none.

    An ``&`` passes only if every ``&`` of the line is in the query of a ``--raw`` path, as kubectl
    reads the line (``cmdline.parse``: ``--raw=/x?a&b`` or ``--raw "/x?a&b"``, not a word that only
    looks like one); the path itself is checked by ``_is_api_path``. A line that does not split or
    parse cannot show that, so its ``&`` is refused as shell syntax, as it always was.
    """
    in_raw_queries: bool | None = None
    for match in _SHELL.finditer(command):
        if match.group() == "&":
            if in_raw_queries is None:
                in_raw_queries = _ampersands_in_raw_queries(command, tree or _tree())
            if in_raw_queries:
                continue
        return match.group()
    return None


def _ampersands_in_raw_queries(command: str, tree: CommandTree) -> bool:
    """Whether every ``&`` of ``command`` is in the query of a value kubectl reads as ``--raw``'s."""
    try:
        words = shlex.split(command, comments=False, posix=True)
        line = parse(tree, words[1:]) if words and words[0] == "kubectl" else None
    except (ValueError, CommandLineError):
        return False
    if line is None:
        return False
    # shlex drops quotes and backslashes, never an ``&``: the words hold every one the line has. Each
    # ``--raw`` value is a part of one word of its own, so equal counts mean none is anywhere else.
    in_queries = sum(value.partition("?")[2].count("&") for value in line.values("raw") if value)
    return in_queries == sum(word.count("&") for word in words[1:])


def _check_program(program: str) -> Refused | None:
    if program == "kubectl":
        return None
    if _ASSIGNMENT.match(program):
        message = gettext(
            "Setting an environment variable (%(what)s) is not possible here: kubectl runs with your "
            "sandbox's kubeconfig and nothing else."
        ) % {"what": program}
        return Refused(Reason.ENVIRONMENT, message)
    if "/" in program and program.rsplit("/", 1)[1] == "kubectl":
        message = gettext("Type kubectl without a path (%(program)s): the console runs its own kubectl.") % {
            "program": program
        }
        return Refused(Reason.KUBECTL_PATH, message)
    message = gettext(
        "Only kubectl runs here, and %(program)s is not kubectl: start the command with kubectl."
    ) % {"program": program}
    return Refused(Reason.NOT_KUBECTL, message)


def _check_anywhere(words: Iterable[str]) -> Refused | None:
    """Long options that must not appear in any word, even where kubectl would take it as a value."""
    for word in words:
        if word.startswith("--"):
            name = normalize(word[2:].partition("=")[0])
            if name in ANYWHERE:
                return _refuse_option(Option(name, None, word))
    return None


# -- the command -------------------------------------------------------------------------------------


def _refuse_command_line(error: CommandLineError) -> Refused:
    if isinstance(error, UnknownCommand):
        if not error.path and error.known:
            message = gettext(
                "kubectl reads no command after --, so %(word)s is not read as one: put the command first."
            ) % {"word": error.word}
        elif not error.path:
            message = gettext(
                "kubectl has no command %(word)s. (kubectl would look for a plugin by that name; plugins "
                "are not available in the console.)"
            ) % {"word": error.word}
        else:
            message = gettext("%(command)s has no sub-command %(word)s.") % {
                "command": " ".join(("kubectl", *error.path)),
                "word": error.word,
            }
        return Refused(Reason.UNKNOWN_COMMAND, message)
    if isinstance(error, UnknownOption):
        message = gettext("%(command)s has no option %(option)s.") % {
            "command": " ".join(("kubectl", *error.path)),
            "option": error.written,
        }
        return Refused(Reason.UNKNOWN_OPTION, message)
    if isinstance(error, MissingValue):
        message = gettext("The option %(option)s needs a value.") % {"option": error.written}
        return Refused(Reason.BAD_OPTION, message)
    assert isinstance(error, BadSyntax)
    message = gettext("%(option)s is not an option kubectl can read.") % {"option": error.written}
    return Refused(Reason.BAD_OPTION, message)


def _command_messages() -> Mapping[str, str]:
    """Why the commands that are not available are not (in the active language)."""
    terminal = gettext("it needs an interactive terminal, which the browser console does not have")
    return {
        "edit": gettext(
            "it opens a text editor on the server. Change the object with the manifest form, or with "
            "kubectl patch, kubectl apply -f - (the editor's text), kubectl label or kubectl scale"
        ),
        "exec": terminal,
        "attach": terminal,
        "debug": terminal,
        "port-forward": gettext("it opens network ports on the server"),
        "proxy": gettext("it opens network ports on the server"),
        "cp": gettext("it copies files to and from the server's disk"),
        "config": gettext(
            "the console always uses your own sandbox's kubeconfig. Download your kubeconfig to use "
            "kubectl and its config command on your own machine"
        ),
        "kuberc": gettext("it reads and writes preference files on the server"),
        "kustomize": gettext("it reads directories on the server"),
        "plugin": gettext("plugins are not available in the console"),
        "diff": gettext("it runs another program on the server"),
        "help": gettext("type --help after a command instead, for example: kubectl get --help"),
    }


def _check_command(path: tuple[str, ...]) -> Refused | None:
    if not path or (path[0] in ALLOWED_COMMANDS and path[:2] not in REFUSED_SUBCOMMANDS):
        return None
    command = " ".join(("kubectl", *path[:2]))
    why = _command_messages().get(path[0])
    if path[:2] in REFUSED_SUBCOMMANDS:
        why = gettext("the console runs only what a chapter needs")
    if why is None:
        allowed = ", ".join(sorted(ALLOWED_COMMANDS))
        why = gettext("the console runs these commands: %(allowed)s") % {"allowed": allowed}
    message = gettext("%(command)s is not available here: %(why)s.") % {"command": command, "why": why}
    return Refused(Reason.COMMAND_NOT_ALLOWED, message)


# -- the options -------------------------------------------------------------------------------------


def _refuse_option(option: Option) -> Refused:
    """The refusal for one of the options the console never passes on."""
    if option.name in CONNECTION_OPTIONS:
        message = gettext(
            "%(option)s is not available: the console always connects to your own sandbox, as you. "
            "(Download your kubeconfig to use kubectl on your own machine.)"
        ) % {"option": option.shown}
        return Refused(Reason.CONNECTION, message)
    if option.name == "filename":
        message = gettext(
            "%(option)s: a file can only be -f - here, which reads the manifest in the editor. The "
            "console does not read the server's files or URLs."
        ) % {"option": option.shown}
        return Refused(Reason.LOCAL_FILE, message)
    message = gettext(
        "%(option)s would read or write files on the server, which the console does not do."
    ) % {"option": option.shown}
    return Refused(Reason.LOCAL_FILE, message)


def _check_options(line: CommandLine, impersonate: frozenset[str]) -> Refused | None:
    for option in line.options:
        refused = _check_option(option, impersonate)
        if refused is not None:
            return refused
    return None


def _check_option(option: Option, impersonate: frozenset[str]) -> Refused | None:
    name, value = option.name, option.value
    if name in ANYWHERE or (name == "filename" and value != "-"):
        return _refuse_option(option)
    if name in INTERACTIVE_OPTIONS:
        message = gettext(
            "%(option)s needs an interactive terminal or an editor, which the browser console does not have."
        ) % {"option": option.shown}
        return Refused(Reason.INTERACTIVE, message)
    if name == "output" and value is not None and value.split("=", 1)[0].strip().lower().endswith("file"):
        message = gettext(
            "-o %(format)s reads a template from a file on the server. Write the template in the command "
            "instead (-o jsonpath=…, -o go-template=…, -o custom-columns=…)."
        ) % {"format": value.split("=", 1)[0]}
        return Refused(Reason.LOCAL_FILE, message)
    if name == "raw" and not _is_api_path(value or ""):
        message = gettext(
            "--raw takes a path on your sandbox's API server, such as /api/v1/namespaces; "
            "%(value)s is not one."
        ) % {"value": value or ""}
        return Refused(Reason.RAW_PATH, message)
    if (name in ("as", "as-group") and value not in impersonate) or name in REFUSED_IMPERSONATION:
        return _refuse_impersonation(option, impersonate)
    if name == "v" and not _VERBOSITY.match(value or ""):
        return Refused(Reason.VERBOSITY, gettext("-v takes a number from 0 to 9."))
    return None


def _refuse_impersonation(option: Option, impersonate: frozenset[str]) -> Refused:
    what = option.shown
    if impersonate:
        message = gettext("%(option)s is not allowed in this chapter. You may act as: %(names)s.") % {
            "option": what,
            "names": ", ".join(sorted(impersonate)),
        }
    else:
        message = gettext("%(option)s is not allowed: this chapter lets you act only as yourself.") % {
            "option": what
        }
    return Refused(Reason.IMPERSONATION, message)


def _is_api_path(value: str) -> bool:
    """A path on the sandbox's own API server: absolute, no ``..``, no host, nothing encoded away."""
    if (
        not value.startswith("/")
        or value.startswith("//")
        or "\\" in value
        or any(c.isspace() for c in value)
    ):
        return False
    if _ENCODED_DOT_OR_SLASH.search(value):
        return False
    path = value.split("?", 1)[0]
    return all(segment not in (".", "..") for segment in path.split("/"))


# -- how long it runs --------------------------------------------------------------------------------


def _true(value: str | None) -> bool:
    """A boolean option's value as Go's ``strconv.ParseBool`` reads it (given bare: true)."""
    return value is None or value in ("1", "t", "T", "TRUE", "true", "True")


def follows(line: CommandLine) -> bool:
    """Whether the command runs until stopped or until what it waits for happens."""
    path = line.path
    if path in (("get",), ("events",)):
        return any(_true(v) for name in ("watch", "watch-only") for v in line.values(name))
    if path == ("logs",):
        return any(_true(v) for v in line.values("follow"))
    if path == ("rollout", "status"):
        return all(_true(v) for v in line.values("watch"))  # it watches unless told --watch=false
    return path in (("wait",), ("drain",))


__all__ = [
    "ALLOWED_COMMANDS",
    "MAX_LENGTH",
    "MAX_WORDS",
    "Allowed",
    "Decision",
    "Reason",
    "Refused",
    "decide",
    "follows",
    "shell_syntax",
]
