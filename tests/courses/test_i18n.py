"""The interface's catalogs are complete: every message of the templates and the code has a Simplified
Chinese translation, and the committed catalogs are those of today's sources (tools/i18n_check.py).

Also the check itself, on small catalogs: a .po file's entries, what counts as missing, obsolete,
untranslated or fuzzy.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings

from tools.i18n_check import ROOT, Entry, check, compare, parse_po


def _gettext_missing() -> str | None:
    for program in ("xgettext", "msgmerge", "msgfmt"):
        if shutil.which(program) is None:
            return f"{program} is missing: sudo apt-get install gettext (make debian-packages)"
    return None


def test_every_message_is_translated_and_the_catalogs_are_up_to_date() -> None:
    missing = _gettext_missing()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing)
    problems = check()
    assert not problems, (
        f"{len(problems)} catalog problem(s); run `python tools/i18n_check.py --update`, translate, "
        "then `make messages`:\n" + "\n".join(str(p) for p in problems)
    )


def test_the_catalogs_are_where_django_looks() -> None:
    assert Path(settings.LOCALE_PATHS[0]) == ROOT / "locale"
    assert (ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po").exists()
    assert (ROOT / "locale" / "en" / "LC_MESSAGES" / "django.po").exists()


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
