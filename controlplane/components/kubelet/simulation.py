"""How a container spec becomes simulated behaviour: the conventions a course author writes pods with.

A Kubelab node runs no containers. Its kubelet reads each container's ``image``, ``command``, ``args``
and ``env`` and turns them into a ``Behaviour``: how long the image pull takes and whether it fails,
what the process prints and when, whether and how it exits, how it answers SIGTERM and its probes.
The lifecycle (``lifecycle.py``) then plays that behaviour out on the cluster clock exactly as the real
kubelet would react to a real container. docs/kubelet-simulation.md is the author's table of the rules;
this module is their one implementation. Keep the two in step.

The rules, in order:

* Image pull. An image whose name contains ``doesnotexist`` fails to pull (repository not found); a
  ``:bad`` tag fails too (manifest not found). Everything else pulls after a configurable delay.
* Command. The process is ``command + args`` (or ``args`` alone, or the image's default). A shell
  (``sh -c``/``bash -c``) script is interpreted by a tiny shell: ``echo``, ``printf``, ``sleep N``,
  ``exit N``, ``true``, ``false``, ``touch F``, ``rm F``, ``cat F``/``test -f F``, ``date``, ``NAME=value``,
  ``$NAME``, ``$((NAME+1))``, ``$(date)``, ``&&`` and one ``while true; do ...; done`` loop. Bare
  ``sleep N``, ``echo X``, ``true`` and ``false`` work too. Any other program runs forever.
* Shell images (busybox, alpine, ubuntu, ...) with no command run ``sh`` without a terminal, which
  exits 0 at once: under ``restartPolicy: Always`` that is the classic CrashLoopBackOff lesson.
* Crashes. A ``crash`` word in the command or args, or env ``KUBELAB_CRASH_AFTER=N``, makes the
  process exit 1 (``KUBELAB_EXIT_CODE`` to change it) N seconds after it starts (5 s by default).
* Probes succeed unless: an exec probe's command fails in the same tiny shell (``cat /tmp/healthy``
  after the container ran ``rm /tmp/healthy``); an httpGet path contains ``fail``; or env
  ``KUBELAB_READY_AFTER``, ``KUBELAB_UNREADY_AFTER``, ``KUBELAB_LIVENESS_FAIL_AFTER`` or
  ``KUBELAB_STARTUP_SECONDS`` say otherwise (seconds since the container started).
* SIGTERM. Shell images and scripts run as PID 1, which ignores SIGTERM, so they are killed after the
  grace period (exit 137); servers exit 0 at once. ``KUBELAB_IGNORE_SIGTERM=true|false`` overrides.

Everything here is pure: times are offsets in seconds from the container's start.
"""

from __future__ import annotations

import hashlib
import random
import re
import shlex
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

#: Images whose default command is a shell (``sh`` with no terminal exits 0 at once).
SHELL_IMAGES = frozenset(
    {"busybox", "alpine", "ubuntu", "debian", "centos", "fedora", "bash", "curlimages/curl"}
)
SHELLS = frozenset({"sh", "/bin/sh", "bash", "/bin/bash", "ash", "/bin/ash", "/usr/bin/env"})
DEFAULT_CRASH_AFTER = 5.0
#: A loop whose body takes no time would print forever in zero time; we stop it after this many turns.
MAX_INSTANT_LOOP_TURNS = 1
#: A script still running after this many events is taken to run forever (a ``while true`` loop).
MAX_EVENTS_SCANNED = 10_000

#: What well-known servers print when they start (the first lines of their real logs).
BANNERS: Mapping[str, tuple[str, ...]] = {
    "nginx": (
        "/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform configuration",
        "/docker-entrypoint.sh: Configuration complete; ready for start up",
        "start worker processes",
    ),
    "httpd": ("AH00558: httpd: Could not reliably determine the server's fully qualified domain name",),
    "redis": ("* Ready to accept connections tcp",),
}


# --- image references --------------------------------------------------------------------------


@dataclass(frozen=True)
class ImageRef:
    """A parsed image reference, normalised as containerd reports it (``docker.io/library/nginx:latest``)."""

    registry: str
    repository: str
    tag: str
    digest: str = ""

    @property
    def name(self) -> str:
        """The short repository name: ``nginx`` for ``docker.io/library/nginx:1.25``."""
        return self.repository.removeprefix("library/")

    @property
    def full(self) -> str:
        base = f"{self.registry}/{self.repository}"
        return f"{base}@{self.digest}" if self.digest else f"{base}:{self.tag}"

    @property
    def image_id(self) -> str:
        """``docker.io/library/nginx@sha256:<hex>``: a digest that is a deterministic function of the name."""
        digest = self.digest or "sha256:" + hashlib.sha256(self.full.encode()).hexdigest()
        return f"{self.registry}/{self.repository}@{digest}"


def parse_image(image: str) -> ImageRef:
    """Normalise like containerd (github.com/distribution/reference ``ParseNormalizedNamed``)."""
    rest, _, digest = image.partition("@")
    first, sep, remainder = rest.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, remainder
    else:
        registry, path = "docker.io", rest
    tag = "latest"
    last = path.rsplit("/", 1)[-1]
    if ":" in last:
        path, tag = path.rsplit(":", 1)
    if registry == "docker.io" and "/" not in path:
        path = "library/" + path
    return ImageRef(registry=registry, repository=path, tag=tag, digest=digest)


def pull_error(image: str) -> str | None:
    """The runtime's error for an image that cannot be pulled, or None if it pulls (containerd's words)."""
    ref = parse_image(image)
    if "doesnotexist" in image:
        return (
            f'rpc error: code = Unknown desc = failed to pull and unpack image "{ref.full}": failed to '
            f'resolve reference "{ref.full}": pull access denied, repository does not exist or may require '
            "authorization: server message: insufficient_scope: authorization failed"
        )
    if ref.tag == "bad" and not ref.digest:
        return (
            f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref.full}": failed to '
            f'resolve reference "{ref.full}": {ref.full}: not found'
        )
    return None


def image_size(image: str) -> int:
    """A plausible, deterministic image size in bytes (for the "Successfully pulled" event)."""
    return 2_000_000 + int(hashlib.sha256(image.encode()).hexdigest()[:8], 16) % 50_000_000


# --- the tiny shell ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Output:
    """The process printed ``text`` at ``offset`` seconds after it started."""

    offset: float
    text: str


@dataclass(frozen=True)
class FileChange:
    """The process created (``exists``) or removed a file at ``offset``: exec probes can look for it."""

    offset: float
    path: str
    exists: bool


@dataclass(frozen=True)
class Exit:
    offset: float
    code: int


Event = Output | FileChange | Exit


def go_date(epoch: float) -> str:
    """``date`` as busybox prints it in UTC: ``Tue Nov 14 22:13:20 UTC 2023``."""
    t = time.gmtime(epoch)
    return time.strftime("%a %b ", t) + f"{t.tm_mday:2d}" + time.strftime(" %H:%M:%S UTC %Y", t)


_LOOP = re.compile(r"^(?P<pre>.*?)\bwhile\s+(?:true|:)\s*;?\s*do\b(?P<body>.*?);?\s*\bdone\b", re.S)
_ARITH = re.compile(r"\$\(\(\s*(\w+)\s*([+-])\s*(\d+)\s*\)\)")
_VAR = re.compile(r"\$\{?(\w+)\}?")


def _split(script: str) -> list[tuple[str, str]]:
    """Split a script into (separator-before, simple command): separators are ``;``, newline and ``&&``."""
    parts: list[tuple[str, str]] = []
    sep = ";"
    for token in re.split(r"(&&|\|\||;|\n)", script):
        if token in ("&&", "||", ";", "\n"):
            sep = token if token in ("&&", "||") else ";"
        elif token.strip():
            parts.append((sep, token.strip()))
            sep = ";"
    return parts


@dataclass
class _Shell:
    """State of one run of a script: variables, files, the clock offset and the last exit status."""

    start: float
    env: dict[str, str]
    files: set[str] = field(default_factory=set)
    now: float = 0.0
    status: int = 0

    def expand(self, word: str) -> str:
        word = word.replace("$(date)", go_date(self.start + self.now))

        def arith(m: re.Match[str]) -> str:
            value = int(self.env.get(m.group(1), "0") or 0)
            n = int(m.group(3))
            return str(value + n if m.group(2) == "+" else value - n)

        word = _ARITH.sub(arith, word)
        return _VAR.sub(lambda m: self.env.get(m.group(1), ""), word)

    def run(self, commands: Sequence[tuple[str, str]]) -> Iterator[Event]:
        for sep, command in commands:
            if (sep == "&&" and self.status != 0) or (sep == "||" and self.status == 0):
                continue
            yield from self.run_one(command)

    def run_one(self, command: str) -> Iterator[Event]:
        redirect = None
        if ">" in command:
            command, _, target = command.partition(">")
            redirect = target.strip().lstrip(">").strip()
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        if not words:
            return
        verb, args = words[0], [self.expand(w) for w in words[1:]]
        self.status = 0
        assignment = re.fullmatch(r"(\w+)=(.*)", words[0])
        if assignment and len(words) == 1:
            self.env[assignment.group(1)] = self.expand(assignment.group(2))
        elif verb in ("echo", "printf"):
            if args and args[0] == "-n":
                args = args[1:]
            text = " ".join(args).replace("\\n", "\n").rstrip("\n") if verb == "printf" else " ".join(args)
            if redirect:
                self.files.add(redirect)
                yield FileChange(self.now, redirect, True)
            else:
                for line in text.split("\n"):
                    yield Output(self.now, line)
        elif verb == "date":
            yield Output(self.now, go_date(self.start + self.now))
        elif verb == "sleep":
            self.now += parse_seconds(args[0] if args else "0")
        elif verb == "exit":
            yield Exit(self.now, int(args[0]) if args and args[0].isdigit() else self.status)
        elif verb == "false":
            self.status = 1
        elif verb == "touch" or redirect:
            for path in args or [redirect or ""]:
                self.files.add(path)
                yield FileChange(self.now, path, True)
        elif verb == "rm":
            for path in (a for a in args if not a.startswith("-")):
                self.files.discard(path)
                yield FileChange(self.now, path, False)
        elif verb in ("cat", "test", "[", "ls"):
            path = next((a for a in args if not a.startswith("-") and a != "]"), "")
            if path not in self.files:
                self.status = 1
                if verb == "cat":
                    yield Output(self.now, f"cat: can't open '{path}': No such file or directory")


def parse_seconds(text: str) -> float:
    """``sleep``'s argument: ``30``, ``1.5``, ``2m``, ``1h``, ``infinity``."""
    if text == "infinity":
        return float("inf")
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    unit = units.get(text[-1:], 0)
    try:
        return float(text[:-1]) * unit if unit else float(text)
    except ValueError:
        return 0.0


@dataclass(frozen=True)
class Script:
    """A parsed shell script: commands run once, then an optional body repeated forever."""

    prefix: tuple[tuple[str, str], ...]
    loop: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> Script:
        m = _LOOP.match(text)
        if m is None:
            return cls(tuple(_split(text)))
        return cls(tuple(_split(m.group("pre"))), tuple(_split(m.group("body"))))

    def events(self, start: float, env: Mapping[str, str]) -> Iterator[Event]:
        """Everything the script does, in order, until it exits (or forever for a loop with a sleep)."""
        shell = _Shell(start=start, env=dict(env))
        for event in shell.run(self.prefix):
            yield event
            if isinstance(event, Exit):
                return
        if not self.loop:
            yield Exit(shell.now, shell.status)
            return
        turns_without_time = 0
        while shell.now != float("inf"):
            before = shell.now
            silent = True
            for event in shell.run(self.loop):
                silent = False
                yield event
                if isinstance(event, Exit):
                    return
            if silent:
                return  # ``while true; do sleep 1; done``: every turn alike, runs forever in silence
            if shell.now == before:
                turns_without_time += 1
                if turns_without_time >= MAX_INSTANT_LOOP_TURNS:
                    return  # a busy loop: it runs forever but prints nothing more


@dataclass(frozen=True)
class PullTiming:
    """How long pulling an image takes: per image (short or full name), else the default, +/- jitter.

    Tests use the default of 0 s; the classroom profile sets a few seconds so students see ``Pulling``.
    """

    default: float = 0.0
    per_image: Mapping[str, float] = field(default_factory=dict)
    jitter: float = 0.0  # a fraction: 0.2 draws the delay from [0.8, 1.2] times the base

    def delay(self, image: str, rng: Uniform) -> float:
        ref = parse_image(image)
        base = self.per_image.get(image, self.per_image.get(ref.name, self.default))
        return base * (1 + rng.uniform(-self.jitter, self.jitter)) if self.jitter else base


class Uniform(Protocol):
    """What a pod's simulation draws its randomness with (``random.Random`` has it)."""

    def uniform(self, a: float, b: float) -> float: ...


class SeededRandom:
    """``random.Random(seed)``, made the first time it is drawn from.

    Every pod gets its own seeded generator, so a scenario replays the same way; most pods never draw
    (no pull jitter), and a ``random.Random`` holds 2.5 KB of state: with ten thousand pods that was
    25 MB for nothing.
    """

    __slots__ = ("_random", "seed")

    def __init__(self, seed: str) -> None:
        self.seed = seed
        self._random: random.Random | None = None

    def uniform(self, a: float, b: float) -> float:
        if self._random is None:
            self._random = random.Random(self.seed)
        return self._random.uniform(a, b)


# --- behaviour ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Behaviour:
    """What one container will do when it runs. ``events(start)`` is its timeline, lazily generated."""

    image: str
    pull_error: str | None
    script: Script | None  # None: a program that runs forever
    banner: tuple[str, ...] = ()
    crash_after: float | None = None
    crash_code: int = 1
    ignores_sigterm: bool = False
    ready_after: float | None = None
    unready_after: float | None = None
    liveness_fails_after: float | None = None
    startup_seconds: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)

    def events(self, start: float) -> Iterator[Event]:
        """What the process does from its start, in offset order; ends with an ``Exit`` if it exits."""
        for line in self.banner:
            yield Output(0.0, line)
        inner: Iterator[Event] = self.script.events(start, self.env) if self.script else iter(())
        for event in inner:
            if self.crash_after is not None and event.offset >= self.crash_after:
                break
            yield event
            if isinstance(event, Exit):
                return
        if self.crash_after is not None:
            yield Output(self.crash_after, f"kubelab: simulated crash, exiting with code {self.crash_code}")
            yield Exit(self.crash_after, self.crash_code)

    def exit(self, start: float = 0.0) -> Exit | None:
        """When and how the process exits on its own, or None if it runs until killed."""
        for seen, event in enumerate(self.events(start)):
            if seen > MAX_EVENTS_SCANNED:
                return None  # a loop that prints forever
            if isinstance(event, Exit):
                return None if event.offset == float("inf") else event
        return None

    def file_exists(self, path: str, offset: float, start: float = 0.0) -> bool:
        exists = False
        for event in self.events(start):
            if event.offset > offset:
                break
            if isinstance(event, FileChange) and event.path == path:
                exists = event.exists
        return exists


def _env(container: Mapping[str, Any]) -> dict[str, str]:
    return {
        str(e.get("name")): str(e.get("value", ""))
        for e in container.get("env") or []
        if isinstance(e, Mapping) and e.get("name")
    }


def _seconds(env: Mapping[str, str], name: str) -> float | None:
    value = env.get(name)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def behaviour_of(container: Mapping[str, Any], *, pod_name: str = "") -> Behaviour:
    """Read a container spec (a ``spec.containers[i]`` dict) into its simulated behaviour."""
    image = str(container.get("image", ""))
    ref = parse_image(image)
    env = {"HOSTNAME": pod_name, **_env(container)}
    argv = [str(a) for a in (container.get("command") or [])] + [
        str(a) for a in (container.get("args") or [])
    ]
    shell_image = ref.name in SHELL_IMAGES
    script: Script | None
    if not argv:
        script = Script(()) if shell_image else None  # `sh` with no terminal exits 0 at once
    elif argv[0] in SHELLS and "-c" in argv:
        script = Script.parse(argv[argv.index("-c") + 1] if argv.index("-c") + 1 < len(argv) else "")
    elif argv[0].rsplit("/", 1)[-1] in ("sleep", "echo", "true", "false", "printf", "date"):
        script = Script.parse(shlex.join([argv[0].rsplit("/", 1)[-1], *argv[1:]]))
    else:
        script = None
    crash_after = _seconds(env, "KUBELAB_CRASH_AFTER")
    if crash_after is None and "crash" in argv:
        crash_after = DEFAULT_CRASH_AFTER
    ignore = env.get("KUBELAB_IGNORE_SIGTERM")
    ignores_sigterm = ignore.lower() == "true" if ignore is not None else script is not None
    return Behaviour(
        image=image,
        pull_error=pull_error(image),
        script=script,
        banner=BANNERS.get(ref.name, ()) if script is None else (),
        crash_after=crash_after,
        crash_code=int(env.get("KUBELAB_EXIT_CODE", "1") or 1),
        ignores_sigterm=ignores_sigterm,
        ready_after=_seconds(env, "KUBELAB_READY_AFTER"),
        unready_after=_seconds(env, "KUBELAB_UNREADY_AFTER"),
        liveness_fails_after=_seconds(env, "KUBELAB_LIVENESS_FAIL_AFTER"),
        startup_seconds=_seconds(env, "KUBELAB_STARTUP_SECONDS"),
        env=env,
    )


def probe_succeeds(
    kind: str, probe: Mapping[str, Any], behaviour: Behaviour, offset: float
) -> tuple[bool, str]:
    """Whether a probe of ``kind`` (readiness/liveness/startup) passes ``offset`` s after start, and why not.

    The failure messages are the ones upstream's prober reports (pkg/kubelet/prober/prober.go).
    """
    if kind == "readiness":
        if behaviour.ready_after is not None and offset < behaviour.ready_after:
            return False, "HTTP probe failed with statuscode: 503"
        if behaviour.unready_after is not None and offset >= behaviour.unready_after:
            return False, "HTTP probe failed with statuscode: 503"
    fails_after = behaviour.liveness_fails_after
    if kind == "liveness" and fails_after is not None and offset >= fails_after:
        return False, "HTTP probe failed with statuscode: 500"
    if kind == "startup" and behaviour.startup_seconds is not None and offset < behaviour.startup_seconds:
        return False, "HTTP probe failed with statuscode: 503"
    if "exec" in probe:
        command = [str(c) for c in (probe["exec"] or {}).get("command") or []]
        shell_script = bool(command) and command[0] in SHELLS and "-c" in command
        text = command[-1] if shell_script else shlex.join(command)
        shell = _Shell(start=0.0, env=dict(behaviour.env))
        shell.files = {p for p in _files_at(behaviour, offset)}
        printed = [e.text for e in shell.run(tuple(_split(text))) if isinstance(e, Output)]
        exits = shell.status
        if exits != 0:
            return False, "\n".join(printed)
    if "httpGet" in probe and "fail" in str((probe["httpGet"] or {}).get("path", "")):
        return False, "HTTP probe failed with statuscode: 500"
    return True, ""


def _files_at(behaviour: Behaviour, offset: float) -> set[str]:
    files: set[str] = set()
    for event in behaviour.events(0.0):
        if event.offset > offset:
            break
        if isinstance(event, FileChange):
            (files.add if event.exists else files.discard)(event.path)
    return files
