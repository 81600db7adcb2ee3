"""Are the interface's translations complete? Lists every message that is not.

Kubelab's interface speaks English and Simplified Chinese. Every string a page shows goes through
Django's i18n (``{% translate %}``, ``{% blocktranslate %}``, ``gettext``); Django's ``makemessages``
collects them (with GNU gettext's ``xgettext``) into one catalog per language,
``locale/<locale>/LC_MESSAGES/django.po``, where a translator writes each ``msgstr``; ``make messages``
compiles them (``msgfmt``) into the ``.mo`` files Django reads.

What the page's scripts write (static/, but not the vendored libraries in static/vendor/) is a second
domain, ``djangojs``: the scripts call ``gettext``, ``ngettext`` and ``pgettext``
(static/topology/i18n.js), ``makemessages -d djangojs`` collects those calls into
``locale/<locale>/LC_MESSAGES/djangojs.po``, and Django's ``JavaScriptCatalog`` view (the
``javascript-catalog`` URL) hands the page its language's compiled catalog. The same rules hold for
both domains.

This tool runs ``makemessages`` on a copy of the sources (so the work tree is never touched) and
compares what the sources say today with the committed catalogs:

- *missing*: a message in the sources that a catalog lacks (the catalog is out of date);
- *obsolete*: a message a catalog still has that no source says any more;
- *untranslated* or *fuzzy* (zh_Hans only): a message without a translation, or with one that
  ``msgmerge`` guessed from a similar message and nobody checked. The English catalog needs no
  translations: an empty ``msgstr`` shows the English source text;
- *placeholders* (``djangojs`` only): a translation that names a ``%(name)s`` its message does not
  (the page would show ``undefined``), or leaves one out. ``msgfmt --check-format`` checks this for
  Python's messages; a script's ``%(name)s`` is no format ``msgfmt`` knows. A message that starts with
  a value may offer it twice, ``%(Name)s`` capitalised and ``%(name)s`` (static/topology/i18n.js
  ``capital``): a translation needs one of the two.

Usage (from the repository's root)::

    python tools/i18n_check.py            # check; exit status 1 and a list of problems if any
    python tools/i18n_check.py --update   # rewrite the catalogs from the sources, keeping every
                                          # translation (new messages come in untranslated)

After ``--update``, translate what the check lists, then ``make messages``. tests/courses/test_i18n.py
runs the check, so CI fails on any untranslated message.

The copy holds the directories the interface's strings live in (``SOURCES``); the rest of the
repository is linked in so that Django can start, and ``makemessages`` does not follow links.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What ``makemessages`` reads: the Python and the templates of the web application, and its scripts.
SOURCES = ("config", "courses", "templates", "manage.py", "static")
#: What Django needs to start but holds no interface strings (the control plane speaks Kubernetes'
#: English, as kube-apiserver does).
LINKED = ("controlplane",)
#: Each catalog, and whether every message needs a translation in it.
CATALOGS = {"zh_Hans": True, "en": False}
#: The domains, each with the options ``makemessages`` collects it with: the server's messages, and
#: the scripts' (``.js``, by default for this domain), without the vendored libraries.
DOMAINS: dict[str, tuple[str, ...]] = {
    "django": (),
    "djangojs": ("--ignore=static/vendor/*",),
}
#: Copied without: the vendored libraries hold no messages of ours (and makemessages skips them).
NOT_COPIED = ("static/vendor",)


@dataclass(frozen=True)
class Entry:
    """One message of a .po file."""

    msgid: str
    msgctxt: str | None = None
    msgid_plural: str | None = None
    msgstrs: tuple[str, ...] = ()
    fuzzy: bool = False

    @property
    def key(self) -> tuple[str | None, str]:
        return (self.msgctxt, self.msgid)

    @property
    def translated(self) -> bool:
        return bool(self.msgstrs) and all(self.msgstrs)

    def describe(self) -> str:
        context = f" (context {self.msgctxt!r})" if self.msgctxt is not None else ""
        return f"{self.msgid!r}{context}"


def parse_po(text: str) -> list[Entry]:
    """The messages of a .po file, without its header and its obsolete (``#~``) entries."""
    entries: list[Entry] = []
    fields: dict[str, str] = {}
    flags: set[str] = set()
    current: str | None = None

    def finish() -> None:
        nonlocal fields, flags, current
        if "msgid" in fields and fields["msgid"] != "":
            msgstrs = tuple(v for k, v in sorted(fields.items()) if k.startswith("msgstr"))
            entries.append(
                Entry(
                    msgid=fields["msgid"],
                    msgctxt=fields.get("msgctxt"),
                    msgid_plural=fields.get("msgid_plural"),
                    msgstrs=msgstrs,
                    fuzzy="fuzzy" in flags,
                )
            )
        fields, flags, current = {}, set(), None

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            finish()
        elif line.startswith("#,"):
            if current is not None:
                finish()
            flags.update(flag.strip() for flag in line[2:].split(","))
        elif line.startswith("#"):
            if current is not None and not line.startswith("#~"):
                finish()
        elif line.startswith('"'):
            if current is None:
                raise ValueError(f"line {number}: a string continues no keyword")
            fields[current] += _unquote(line, number)
        else:
            keyword, _, rest = line.partition(" ")
            if keyword not in ("msgctxt", "msgid", "msgid_plural", "msgstr") and not (
                keyword.startswith("msgstr[") and keyword.endswith("]")
            ):
                raise ValueError(f"line {number}: unknown keyword {keyword!r}")
            if keyword in ("msgctxt", "msgid") and "msgid" in fields and current != "msgctxt":
                finish()
            current = keyword
            fields[keyword] = _unquote(rest.strip(), number)
    finish()
    return entries


def _unquote(quoted: str, number: int) -> str:
    if len(quoted) < 2 or not (quoted.startswith('"') and quoted.endswith('"')):
        raise ValueError(f"line {number}: expected a quoted string, not {quoted!r}")
    # A .po string is a C string literal; its escapes (\n, \t, \", \\) are Python's too.
    value = ast.literal_eval(quoted)
    assert isinstance(value, str)
    return value


@dataclass(frozen=True)
class Problem:
    """What is wrong with one message of one catalog."""

    catalog: str
    kind: str  # missing, obsolete, untranslated, fuzzy, placeholders
    entry: Entry
    domain: str = "django"

    def __str__(self) -> str:
        where = self.catalog if self.domain == "django" else f"{self.catalog} ({self.domain})"
        return f"{where}: {self.kind}: {self.entry.describe()}"


_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def placeholders_differ(entry: Entry) -> bool:
    """Whether a translation of ``entry`` names a ``%(name)s`` its message does not, or (a message
    without plural) leaves one out; ``%(Name)s`` and ``%(name)s`` count as one value there."""
    said = set(_PLACEHOLDER.findall(entry.msgid + (entry.msgid_plural or "")))
    # The script that says %(Name)s offers %(name)s too (static/topology/i18n.js `capital`).
    offered = said | {name.lower() for name in said}
    for msgstr in entry.msgstrs:
        if not msgstr:
            continue
        used = set(_PLACEHOLDER.findall(msgstr))
        if used - offered:
            return True
        # A plural form may say its number in words ("one event"), as some languages' singular does.
        if entry.msgid_plural is None and {name.lower() for name in said} - {name.lower() for name in used}:
            return True
    return False


def compare(
    *,
    catalog: str,
    committed: Iterable[Entry],
    sources: Iterable[Entry],
    needs_translation: bool,
    domain: str = "django",
) -> list[Problem]:
    """What ``committed`` (a catalog) lacks or has too much of, given what the ``sources`` say."""
    have = {entry.key: entry for entry in committed}
    said = {entry.key: entry for entry in sources}
    problems = [Problem(catalog, "missing", said[key], domain) for key in said if key not in have]
    problems += [Problem(catalog, "obsolete", have[key], domain) for key in have if key not in said]
    for key, entry in have.items():
        if key not in said:
            continue
        if needs_translation and entry.fuzzy:
            problems.append(Problem(catalog, "fuzzy", entry, domain))
        elif needs_translation and not entry.translated:
            problems.append(Problem(catalog, "untranslated", entry, domain))
        elif domain == "djangojs" and placeholders_differ(entry):
            problems.append(Problem(catalog, "placeholders", entry, domain))
    return problems


def _catalog(root: Path, locale: str, domain: str = "django") -> Path:
    return root / "locale" / locale / "LC_MESSAGES" / f"{domain}.po"


def extract(*, root: Path, workdir: Path) -> Path:
    """Run ``makemessages`` over a copy of ``root``'s sources in ``workdir``; the copy's catalogs are
    the committed ones merged with today's sources. Returns the copy's root."""
    copy = workdir / "sources"
    copy.mkdir()
    skipped = {root / name for name in NOT_COPIED}
    patterns = shutil.ignore_patterns("__pycache__", "*.pyc", "*.mo")

    def ignore(directory: str, names: list[str]) -> set[str]:
        return set(patterns(directory, names)) | {n for n in names if Path(directory, n) in skipped}

    for name in SOURCES:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=ignore)
        elif source.exists():
            shutil.copy2(source, copy / name)
    for name in LINKED:
        if (root / name).exists():
            (copy / name).symlink_to(root / name)
    if (root / "locale").is_dir():
        shutil.copytree(root / "locale", copy / "locale", ignore=ignore)
    else:
        (copy / "locale").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBELAB_")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", KUBELAB_DATA_DIR=str(workdir / "data"))
    for domain, options in DOMAINS.items():
        command = [
            sys.executable, "manage.py", "makemessages", f"--domain={domain}", *options, "--keep-pot",
            "--no-obsolete", "--add-location=file", *(f"--locale={locale}" for locale in CATALOGS),
        ]  # fmt: skip
        made = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True)
        if made.returncode != 0:
            raise RuntimeError(
                f"makemessages -d {domain} failed ({made.returncode}):\n{made.stdout}\n{made.stderr}"
            )
    return copy


def _messages(pot: Path) -> list[Entry]:
    # A domain without a single message gets no .pot at all.
    return parse_po(pot.read_text(encoding="utf-8")) if pot.exists() else []


def check(*, root: Path = ROOT) -> list[Problem]:
    """Every problem of the committed catalogs of every domain against the sources of ``root``."""
    with tempfile.TemporaryDirectory(prefix="kubelab-i18n-") as workdir:
        copy = extract(root=root, workdir=Path(workdir))
        sources = {domain: _messages(copy / "locale" / f"{domain}.pot") for domain in DOMAINS}
    problems: list[Problem] = []
    for domain, said in sources.items():
        for locale, needs_translation in CATALOGS.items():
            path = _catalog(root, locale, domain)
            committed = parse_po(path.read_text(encoding="utf-8")) if path.exists() else []
            problems += compare(
                catalog=locale,
                committed=committed,
                sources=said,
                needs_translation=needs_translation,
                domain=domain,
            )
    return problems


def update(*, root: Path = ROOT) -> None:
    """Rewrite the committed catalogs of every domain from the sources, keeping their translations."""
    with tempfile.TemporaryDirectory(prefix="kubelab-i18n-") as workdir:
        copy = extract(root=root, workdir=Path(workdir))
        for domain in DOMAINS:
            for locale in CATALOGS:
                made = _catalog(copy, locale, domain)
                if not made.exists():
                    continue
                target = _catalog(root, locale, domain)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(made, target)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the catalogs from the sources first")
    options = parser.parse_args(argv)
    if options.update:
        update()
    problems = check()
    for problem in problems:
        print(problem)
    if problems:
        print(
            f"{len(problems)} problem(s): translate them in locale/*/LC_MESSAGES/{{django,djangojs}}.po",
            file=sys.stderr,
        )
        return 1
    print("The catalogs are complete and up to date.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
