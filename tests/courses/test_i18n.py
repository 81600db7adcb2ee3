"""The interface's catalogs are complete: every message of the templates and the code (the ``django``
domain) and of the page's scripts (``djangojs``, static/topology/) has a Simplified Chinese translation,
and the committed catalogs are those of today's sources (tools/i18n_check.py).

Also the check itself, on small catalogs: a .po file's entries, what counts as missing, obsolete,
untranslated, fuzzy or a script's translation with the wrong placeholders; and that Django's
JavaScriptCatalog hands a page its language's catalog.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from tools.i18n_check import DOMAINS, ROOT, Entry, Problem, check, compare, parse_po, placeholders_differ


def _gettext_missing() -> str | None:
    for program in ("xgettext", "msgmerge", "msgfmt"):
        if shutil.which(program) is None:
            return f"{program} is missing: sudo apt-get install gettext (make debian-packages)"
    return None


@pytest.fixture(scope="module")
def problems() -> Iterator[list[Problem]]:
    """Every problem of every catalog (``makemessages`` over a copy of the sources: run once)."""
    missing = _gettext_missing()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing)
    yield check()


@pytest.mark.parametrize("domain", list(DOMAINS))
def test_every_message_is_translated_and_the_catalogs_are_up_to_date(
    problems: list[Problem], domain: str
) -> None:
    found = [p for p in problems if p.domain == domain]
    assert not found, (
        f"{len(found)} catalog problem(s) in {domain}.po; run `python tools/i18n_check.py --update`, "
        "translate, then `make messages`:\n" + "\n".join(str(p) for p in found)
    )


def test_the_catalogs_are_where_django_looks() -> None:
    assert Path(settings.LOCALE_PATHS[0]) == ROOT / "locale"
    for domain in DOMAINS:
        assert (ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / f"{domain}.po").exists()
        assert (ROOT / "locale" / "en" / "LC_MESSAGES" / f"{domain}.po").exists()


def _catalog_served(client: Client, language: str) -> dict[str, str | list[str]]:
    """The messages JavaScriptCatalog's script defines for ``language`` (empty for English)."""
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    response = client.get(reverse("javascript-catalog"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    script = response.content.decode()
    assert "django.gettext = function" in script
    start = script.find("const newcatalog = ")
    if start < 0:
        return {}
    start += len("const newcatalog = ")
    catalog: dict[str, str | list[str]] = json.loads(script[start : script.index(";\n", start)])
    return catalog


@pytest.mark.django_db
def test_the_javascript_catalog_speaks_the_pages_language(client: Client) -> None:
    po = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "djangojs.po"
    mo = po.with_suffix(".mo")
    fresh = mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime
    assert fresh, f"{mo} is missing or stale: make messages"
    chinese = _catalog_served(client, "zh-hans")
    assert chinese["the scheduler"] == "调度器"
    assert chinese["pipeline stage\x04authentication"] == "身份认证"  # pgettext's key: context, EOT, msgid
    assert chinese["%(count)s node"] == ["%(count)s 个节点"]  # ngettext: one form in Chinese
    english = _catalog_served(client, "en")
    assert "the scheduler" not in english  # English is the messages themselves


@pytest.mark.parametrize("page", ["courses/lab/cluster.html", "courses/chapters/chapter.html"])
def test_pages_with_a_topology_load_the_catalog_before_its_modules(page: str) -> None:
    source = (ROOT / "templates" / page).read_text(encoding="utf-8")
    catalog = source.index("<script src=\"{% url 'javascript-catalog' %}\"></script>")
    assert catalog < source.index('<script type="module"'), "the modules must find globalThis.django"


PO = r"""# A comment.
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=1; plural=0;\n"

#: templates/base.html
msgid "Sign in"
msgstr "登录"

#: templates/courses/lab/_state.html
msgctxt "cluster state"
msgid "running"
msgstr "运行中"

#, python-format
msgid ""
"Cluster <code>%(name)s</code> is "
"\"here\"\n"
msgstr ""

#, fuzzy, python-format
msgid "Try again in %(count)d second."
msgid_plural "Try again in %(count)d seconds."
msgstr[0] "请在 %(count)d 秒后重试。"

#~ msgid "Gone"
#~ msgstr "已删除"
"""


def test_a_po_file_is_read_entry_by_entry() -> None:
    entries = parse_po(PO)
    assert entries == [
        Entry(msgid="Sign in", msgstrs=("登录",)),
        Entry(msgid="running", msgctxt="cluster state", msgstrs=("运行中",)),
        Entry(msgid='Cluster <code>%(name)s</code> is "here"\n', msgstrs=("",)),
        Entry(
            msgid="Try again in %(count)d second.",
            msgid_plural="Try again in %(count)d seconds.",
            msgstrs=("请在 %(count)d 秒后重试。",),
            fuzzy=True,
        ),
    ]
    assert [e.translated for e in entries] == [True, True, False, True]


def test_a_malformed_po_file_is_refused() -> None:
    with pytest.raises(ValueError, match="line 2"):
        parse_po('msgid "a"\nmsgtext "b"\n')


def test_compare_names_every_kind_of_problem() -> None:
    committed = parse_po(PO)
    sources = [
        Entry(msgid="Sign in"),
        Entry(msgid="running", msgctxt="cluster state"),
        Entry(msgid="running"),  # the same words in another context are another message
        Entry(msgid='Cluster <code>%(name)s</code> is "here"\n'),
        Entry(msgid="Try again in %(count)d second.", msgid_plural="Try again in %(count)d seconds."),
    ]
    found = {
        (p.kind, p.entry.msgid)
        for p in compare(catalog="zh_Hans", committed=committed, sources=sources, needs_translation=True)
    }
    assert found == {
        ("missing", "running"),
        ("untranslated", 'Cluster <code>%(name)s</code> is "here"\n'),
        ("fuzzy", "Try again in %(count)d second."),
    }
    # English needs no translations, only the same messages; a message no source says is obsolete.
    english = compare(catalog="en", committed=committed, sources=sources[:2], needs_translation=False)
    assert {(p.kind, p.entry.msgid) for p in english} == {
        ("obsolete", 'Cluster <code>%(name)s</code> is "here"\n'),
        ("obsolete", "Try again in %(count)d second."),
    }


def test_a_scripts_translation_names_the_values_its_message_names() -> None:
    def entry(msgid: str, msgstr: str, plural: str | None = None) -> Entry:
        return Entry(msgid=msgid, msgid_plural=plural, msgstrs=(msgstr,))

    assert not placeholders_differ(entry("%(a)s then %(b)s", "%(b)s 然后 %(a)s"))
    assert placeholders_differ(entry("%(a)s then %(b)s", "%(a)s 然后 %(c)s"))  # the page would say undefined
    assert placeholders_differ(entry("%(a)s then %(b)s", "%(a)s"))  # a value left out
    # %(Name)s offers %(name)s too: English capitalises the start of a sentence, Chinese has no capitals.
    assert not placeholders_differ(entry("%(Request)s passed %(stage)s.", "%(request)s 通过了%(stage)s。"))
    assert placeholders_differ(entry("%(request)s passed.", "%(Request)s 通过了。"))
    # A plural form may say its number in words; it may not name what its message does not.
    assert not placeholders_differ(entry("%(count)s node", "一个节点", plural="%(count)s nodes"))
    assert placeholders_differ(entry("%(count)s node", "%(n)s 个节点", plural="%(count)s nodes"))
    assert not placeholders_differ(entry("%(a)s", ""))  # untranslated: the English is shown


def test_placeholders_are_checked_in_the_scripts_catalogs_only() -> None:
    committed = [Entry(msgid="%(a)s", msgstrs=("%(b)s",))]
    sources = [Entry(msgid="%(a)s")]
    scripts = compare(
        catalog="zh_Hans", committed=committed, sources=sources, needs_translation=True, domain="djangojs"
    )
    assert [(p.kind, p.domain, str(p)) for p in scripts] == [
        ("placeholders", "djangojs", "zh_Hans (djangojs): placeholders: '%(a)s'")
    ]
    # msgfmt --check-format checks Python's formats in django.po.
    assert not compare(catalog="zh_Hans", committed=committed, sources=sources, needs_translation=True)
