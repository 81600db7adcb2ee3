"""Every kind of content error is reported, with its file and its place, and all of them at once.

Each case copies the valid fixture course, breaks one thing, and expects a problem naming the file,
the place (a path into the YAML or a line of the prose) and what is wrong.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from courses.engine import content

FIXTURES = Path(__file__).parent / "fixtures" / "valid"
FIRST = "tiny/01-first"


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    content.reload()


@pytest.fixture
def course(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "tiny", tmp_path / "tiny")
    return tmp_path


def edit(relative: str, old: str, new: str) -> Callable[[Path], None]:
    """A change: replace ``old`` (which must be there) by ``new`` in the file at ``relative``."""

    def change(root: Path) -> None:
        path = root / relative
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{old!r} is not in {relative}"
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    return change


def write(relative: str, text: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")

    return change


def remove(relative: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        (root / relative).unlink()

    return change


@dataclass(frozen=True)
class Case:
    name: str
    change: Callable[[Path], None]
    file: str
    place: str
    message: str


C = f"{FIRST}/chapter.yaml"
EN = f"{FIRST}/en.md"
ZH = f"{FIRST}/zh-Hans.md"

CASES = [
    # course.yaml
    Case(
        "course unknown key",
        edit("tiny/course.yaml", "slug: tiny", "slug: tiny\ncolour: red"),
        "tiny/course.yaml",
        "colour",
        "unknown key",
    ),
    Case(
        "course slug",
        edit("tiny/course.yaml", "slug: tiny", "slug: other"),
        "tiny/course.yaml",
        "slug",
        "must be the directory's name, 'tiny'",
    ),
    Case(
        "course title language",
        edit("tiny/course.yaml", ', zh-Hans: "一个小课程"', ""),
        "tiny/course.yaml",
        "title.zh-Hans",
        "missing",
    ),
    Case(
        "course without a title",
        edit("tiny/course.yaml", 'title: {en: "A tiny course", zh-Hans: "一个小课程"}\n', ""),
        "tiny/course.yaml",
        "title",
        "missing",
    ),
    Case(
        "course title type",
        edit("tiny/course.yaml", 'title: {en: "A tiny course", zh-Hans: "一个小课程"}', "title: 3"),
        "tiny/course.yaml",
        "title",
        "must be a mapping",
    ),
    Case(
        "chapter order",
        edit("tiny/course.yaml", "[01-first, 02-second]", "[02-second, 01-first]"),
        "tiny/course.yaml",
        "chapters",
        "in the order of their numbers",
    ),
    Case(
        "chapter not listed",
        edit("tiny/course.yaml", "[01-first, 02-second]", "[01-first]"),
        "tiny/course.yaml",
        "chapters",
        "does not list the chapter directory '02-second'",
    ),
    Case(
        "chapter listed, not there",
        edit("tiny/course.yaml", "02-second]", "02-second, 03-third]"),
        "tiny/course.yaml",
        "chapters[2]",
        "there is no directory tiny/03-third",
    ),
    Case(
        "chapter name",
        edit("tiny/course.yaml", "02-second]", "02-second, third]"),
        "tiny/course.yaml",
        "chapters[2]",
        "not a chapter directory's name",
    ),
    Case("stray directory", write("tiny/notes/todo.txt", "x"), "tiny/notes", "", "not a chapter directory"),
    Case(
        "same chapter number",
        write("tiny/01-again/chapter.yaml", "x: 1"),
        "tiny/course.yaml",
        "chapters",
        "does not list the chapter directory '01-again'",
    ),
    Case(
        "course YAML syntax",
        write("tiny/course.yaml", "slug: [tiny\n"),
        "tiny/course.yaml",
        "line 2, column 1",
        "not valid YAML",
    ),
    # chapter.yaml: the chapter
    Case("chapter YAML syntax", edit(C, "nodes: 2", "nodes: : 2"), C, "line 2, column 8", "not valid YAML"),
    Case("chapter not a mapping", write(C, "- 1\n"), C, "", "must be a mapping, not a list"),
    Case(
        "chapter slug",
        edit(C, "slug: first", "slug: premier"),
        C,
        "slug",
        "must be the slug of the directory",
    ),
    Case("chapter missing nodes", edit(C, "nodes: 2\n", ""), C, "nodes", "missing"),
    Case("nodes range", edit(C, "nodes: 2", "nodes: 0"), C, "nodes", "must be from 1 to 10, not 0"),
    Case("nodes type", edit(C, "nodes: 2", "nodes: two"), C, "nodes", "must be a whole number, not a string"),
    Case("impersonate", edit(C, "[jane]", "[jane doe]"), C, "impersonate[0]", "must match"),
    Case("no steps", edit(C, "steps:\n", "steps: []\nx:\n"), C, "steps", "at least one step"),
    # steps
    Case("step id syntax", edit(C, "id: look", "id: Look_Around"), C, "steps[0].id", "must match"),
    Case(
        "step id twice",
        edit(C, "id: create-configmap", "id: look"),
        C,
        "steps[look].id",
        "a second step with id 'look'",
    ),
    Case(
        "step unknown key",
        edit(C, "  - id: look\n", "  - id: look\n    hint: []\n"),
        C,
        "steps[look].hint",
        "unknown key",
    ),
    Case(
        "step without check",
        edit(C, "    check:\n      id: seen", "    wait:\n      id: seen"),
        C,
        "steps[look].check",
        "missing",
    ),
    Case(
        "highlight node",
        edit(C, "[apiserver, etcd, kubelet:node-2]", "[apiserver, database]"),
        C,
        "steps[look].highlight.nodes[1]",
        "'database' is not a diagram node id",
    ),
    Case(
        "highlight node of another node count",
        edit(C, "kubelet:node-2]", "kubelet:node-3]"),
        C,
        "steps[look].highlight.nodes[2]",
        "this chapter's nodes are node-1, node-2",
    ),
    Case(
        "highlight edge",
        edit(C, "[[user:$student, apiserver], ", "[[user:$student], "),
        C,
        "steps[look].highlight.edges[0]",
        "a pair of node ids",
    ),
    Case(
        "highlight edge end",
        edit(C, "[apiserver, etcd]]", "[apiserver, store]]"),
        C,
        "steps[look].highlight.edges[1][1]",
        "'store' is not a diagram node id",
    ),
    Case(
        "highlight unknown key",
        edit(C, "    highlight:\n", "    highlight:\n      arrows: []\n"),
        C,
        "steps[look].highlight.arrows",
        "unknown key",
    ),
    Case(
        "narration type",
        edit(C, "[request.received, store.txn]", "[request.received, store.write]"),
        C,
        "steps[look].narration[1]",
        "'store.write' is not a trace event type",
    ),
    Case(
        "narration twice",
        edit(C, "[request.received, store.txn]", "[store.txn, store.txn]"),
        C,
        "steps[look].narration[1]",
        "listed twice",
    ),
    Case(
        "timeline speed", edit(C, "{speed: 0}", "{speed: 5}"), C, "steps[look].timeline.speed", "from 0 to 4"
    ),
    Case(
        "timeline at a state leaf",
        edit(C, "at: created", "at: stored"),
        C,
        "steps[create-configmap].timeline.at",
        "'stored' names no trace leaf",
    ),
    Case(
        "editor file missing",
        edit(C, "editor: manifests/configmap.yaml", "editor: manifests/nope.yaml"),
        C,
        "steps[create-configmap].editor",
        "there is no file tiny/01-first/manifests/nope.yaml",
    ),
    Case(
        "editor outside manifests",
        edit(C, "editor: manifests/configmap.yaml", "editor: ../course.yaml"),
        C,
        "steps[create-configmap].editor",
        "under the chapter's manifests/ directory",
    ),
    Case(
        "manifest without kind",
        edit(f"{FIRST}/manifests/configmap.yaml", "kind: ConfigMap\n", ""),
        C,
        "steps[create-configmap].editor",
        "document 1 has no kind",
    ),
    Case(
        "manifest not YAML",
        write(f"{FIRST}/manifests/configmap.yaml", "a: [b\n"),
        C,
        "steps[create-configmap].editor",
        "not valid YAML at line 2",
    ),
    Case(
        "manifest not a mapping",
        write(f"{FIRST}/manifests/configmap.yaml", "apiVersion: v1\nkind: X\n---\n- 1\n"),
        C,
        "steps[create-configmap].editor",
        "document 2 is not a mapping",
    ),
    Case(
        "action both",
        edit(
            C,
            '{kubectl: "kubectl get configmap -w"}',
            '{kubectl: "kubectl get configmap -w", request: {method: GET, path: /api}}',
        ),
        C,
        "steps[create-configmap].actions[0]",
        "either a kubectl command or a request",
    ),
    Case(
        "action shell syntax",
        edit(C, '"kubectl get configmap -w"', '"kubectl get configmap | head"'),
        C,
        "steps[create-configmap].actions[0].kubectl",
        "no pipes",
    ),
    Case(
        "action not kubectl",
        edit(C, '"kubectl get configmap -w"', '"rm -rf /"'),
        C,
        "steps[create-configmap].actions[0].kubectl",
        "not a kubectl command line",
    ),
    Case(
        "action label",
        edit(C, 'label: {en: "Create it", zh-Hans: "创建它"}', 'label: {en: "Create it"}'),
        C,
        "steps[create-configmap].actions[1].label.zh-Hans",
        "missing",
    ),
    Case(
        "request method",
        edit(C, "method: POST", "method: FETCH"),
        C,
        "steps[create-configmap].actions[1].request.method",
        "must be one of GET, POST",
    ),
    Case(
        "request path",
        edit(C, "path: /api/v1/namespaces/default/configmaps,", "path: http://evil/api,"),
        C,
        "steps[create-configmap].actions[1].request.path",
        "must be an API path",
    ),
    Case(
        "request without body",
        edit(C, "configmaps, body: manifests/configmap.yaml}", "configmaps}"),
        C,
        "steps[create-configmap].actions[1].request.body",
        "a POST needs a body",
    ),
    Case(
        "patch not a mapping",
        write(f"{FIRST}/manifests/patch.yaml", "- op: add\n"),
        C,
        "steps[create-configmap].actions[2].request.body",
        "a patch is one mapping",
    ),
    Case(
        "check spec",
        edit(C, "kind: ConfigMap, namespace", "kind: Gadget, namespace"),
        C,
        "steps[create-configmap].check",
        "Gadget",
    ),
    Case(
        "wait spec",
        edit("tiny/02-second/chapter.yaml", "count: {at_least: 3}\n    check", "count: 3\n    check"),
        "tiny/02-second/chapter.yaml",
        "steps[three-pods].wait",
        "count",
    ),
    Case(
        "hint id twice",
        edit(C, "{id: name-and-data, when: stored}", "{id: use-the-form}"),
        C,
        "steps[create-configmap].hints[use-the-form].id",
        "a second hint 'use-the-form'",
    ),
    Case(
        "hint called solution",
        edit(C, "{id: name-and-data, when: stored}", "{id: solution}"),
        C,
        "steps[create-configmap].hints[solution].id",
        "names the solution's section",
    ),
    Case(
        "hint when",
        edit(C, "when: stored}", "when: stord}"),
        C,
        "steps[create-configmap].hints[name-and-data].when",
        "'stord' names no part of the step's check",
    ),
    Case(
        "hint unknown key",
        edit(C, "{id: name-and-data, when: stored}", "{id: name-and-data, if: stored}"),
        C,
        "steps[create-configmap].hints[1].if",
        "unknown key",
    ),
    Case(
        "solution watches",
        edit(C, '["kubectl get configmap app-config"]', '["kubectl get configmap -w"]'),
        C,
        "steps[create-configmap].solution.kubectl[0]",
        "-w would never finish",
    ),
    Case(
        "background waits for a person",
        edit(C, '["kubectl get configmap -w"]', '["kubectl run x --image=busybox -it"]'),
        C,
        "steps[create-configmap].solution.background[0]",
        "-it waits for a person",
    ),
    Case(
        "solution edits",
        edit(C, '["kubectl get configmap app-config"]', '["kubectl edit configmap x"]'),
        C,
        "steps[create-configmap].solution.kubectl[0]",
        "'kubectl edit' waits for a person",
    ),
    Case(
        "solution follows logs",
        edit(C, '["kubectl get configmap app-config"]', '["kubectl logs -f web"]'),
        C,
        "steps[create-configmap].solution.kubectl[0]",
        "-f would never finish",
    ),
    Case(
        "solution manifest",
        edit(C, "apply: [manifests/configmap.yaml]", "apply: [manifests/gone.yaml]"),
        C,
        "steps[create-configmap].solution.apply[0]",
        "there is no file",
    ),
    Case(
        "solution expects nonsense",
        edit(
            C,
            '["kubectl get configmap app-config"]',
            '[{kubectl: "kubectl get configmap app-config", expect: success}]',
        ),
        C,
        "steps[create-configmap].solution.kubectl[0].expect",
        "'success': the one expectation is 'refused'",
    ),
    Case(
        "solution expectation missing",
        edit(C, '["kubectl get configmap app-config"]', '[{kubectl: "kubectl get configmap app-config"}]'),
        C,
        "steps[create-configmap].solution.kubectl[0].expect",
        "missing",
    ),
    Case(
        "solution expectation is no string",
        edit(
            C,
            '["kubectl get configmap app-config"]',
            '[{kubectl: "kubectl get configmap app-config", expect: [refused]}]',
        ),
        C,
        "steps[create-configmap].solution.kubectl[0].expect",
        "must be a non-empty string, not a list",
    ),
    Case(
        "solution expectation unknown key",
        edit(
            C,
            '["kubectl get configmap app-config"]',
            '[{kubectl: "kubectl get configmap app-config", expect: refused, code: 403}]',
        ),
        C,
        "steps[create-configmap].solution.kubectl[0].code",
        "unknown key (known: kubectl, expect)",
    ),
    Case(
        "refused command still runs unattended",
        edit(
            C,
            '["kubectl get configmap app-config"]',
            '[{kubectl: "kubectl get configmap -w", expect: refused}]',
        ),
        C,
        "steps[create-configmap].solution.kubectl[0].kubectl",
        "-w would never finish",
    ),
    Case(
        "refused command is shell",
        edit(
            C,
            '["kubectl get configmap app-config"]',
            '[{kubectl: "kubectl get configmap | sh", expect: refused}]',
        ),
        C,
        "steps[create-configmap].solution.kubectl[0].kubectl",
        "the console runs kubectl alone",
    ),
    Case(
        "refused manifest file",
        edit(
            C, "apply: [manifests/configmap.yaml]", "apply: [{apply: manifests/gone.yaml, expect: refused}]"
        ),
        C,
        "steps[create-configmap].solution.apply[0].apply",
        "there is no file",
    ),
    Case(
        "refused manifest under another key",
        edit(
            C,
            "apply: [manifests/configmap.yaml]",
            "apply: [{kubectl: manifests/configmap.yaml, expect: refused}]",
        ),
        C,
        "steps[create-configmap].solution.apply[0].apply",
        "missing",
    ),
    Case(
        "background cannot expect a refusal",
        edit(
            C,
            '["kubectl get configmap -w"]',
            '[{kubectl: "kubectl get configmap -w", expect: refused}]',
        ),
        C,
        "steps[create-configmap].solution.background[0]",
        "nothing can expect it to be refused",
    ),
    # the prose
    Case("prose file missing", remove(ZH), ZH, "", "the file is missing"),
    Case(
        "no section for a step",
        edit(ZH, "## 四处看看 {#look}\n\n列出 Pod。\n\n", ""),
        ZH,
        "",
        "no section for step 'look'",
    ),
    Case(
        "section for no step",
        edit(ZH, "## 四处看看 {#look}", "## 四处看看 {#look}\n\n## 多余 {#extra}"),
        ZH,
        "line 7",
        "a section for step 'extra', which chapter.yaml does not have",
    ),
    Case(
        "a new step without prose",
        edit(
            "tiny/02-second/chapter.yaml",
            "steps:\n",
            "steps:\n  - id: first-step\n    check: {state: {list: {apiVersion: v1, kind: Node}}}\n",
        ),
        "tiny/02-second/en.md",
        "",
        "no section for step 'first-step'",
    ),
    Case(
        "hint without a section",
        edit(ZH, "### 名字和数据 {#name-and-data}\n\n把它命名为 `app-config`。\n\n", ""),
        ZH,
        "line 9",
        "has no section for its hint 'name-and-data'",
    ),
    Case(
        "section for no hint",
        edit(EN, "### Why {#solution}", "### Other {#other}\n\nx\n\n### Why {#solution}"),
        EN,
        "line 32",
        "a section for hint 'other', which step 'create-configmap' does not have",
    ),
    Case(
        "solution not explained",
        edit(ZH, "### 原因 {#solution}\n\n应用清单就会创建 ConfigMap。\n", ""),
        ZH,
        "line 9",
        "has no section explaining its solution",
    ),
    Case(
        "diagram link",
        edit(EN, "(diagram:etcd)", "(diagram:kubelet:node-7)"),
        EN,
        "line 16",
        "diagram link: 'kubelet:node-7': this chapter's nodes are node-1, node-2",
    ),
    Case(
        "kubectl block line",
        edit(EN, "kubectl get pods\n", "kubectl get pods > pods.txt\n"),
        EN,
        "line 10",
        "no pipes, redirections",
    ),
    Case(
        "step heading without id",
        edit(EN, "## Look around {#look}", "## Look around"),
        EN,
        "line 5",
        "must end with its id",
    ),
    Case(
        "mistake fails at no node of the check",
        edit(C, "failing: created", "failing: written"),
        C,
        "steps[create-configmap].mistake.failing",
        "'written' is no id in the step's check (its ids: created, stored)",
    ),
    Case(
        "mistake does nothing",
        edit(C, "failing: created\n      kubectl:", "failing: created\n      kubectl: []\n      x:"),
        C,
        "steps[create-configmap].mistake.x",
        "unknown key",
    ),
    Case(
        "mistake without a failing node",
        edit(C, "      failing: created\n", ""),
        C,
        "steps[create-configmap].mistake.failing",
        "missing",
    ),
    Case(
        "mistake with no action",
        edit(C, '["kubectl create configmap app-config --from-literal=color=blue --dry-run=server"]', "[]"),
        C,
        "steps[create-configmap].mistake",
        "a mistake does something",
    ),
    Case(
        "mistake watches",
        edit(C, "--from-literal=color=blue --dry-run=server", "-w"),
        C,
        "steps[create-configmap].mistake.kubectl[0]",
        "would never finish",
    ),
    Case("title", edit(ZH, "# 第一章\n", ""), ZH, "line 1", "no '# ' title"),
    Case(
        "linter",
        edit(EN, "as a transaction", "as a write"),
        EN,
        "line 13",
        "step 'create-configmap': leaf 'created' of the check names 'store.txn', which the step's English "
        "text never mentions (say 'store.txn' or 'transaction')",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_problem_is_reported_with_its_file_and_place(course: Path, case: Case) -> None:
    case.change(course)
    with pytest.raises(content.ContentError) as raised:
        content.load_course("tiny", root=course)
    found = raised.value.problems
    matching = [
        p for p in found if p.file == case.file and p.place == case.place and case.message in p.message
    ]
    assert matching, (
        "expected a problem "
        + repr((case.file, case.place, case.message))
        + ", got:\n"
        + "\n".join(str(p) for p in found)
    )
    assert str(raised.value).startswith("the course content has ")


def test_the_sections_must_follow_the_order_of_chapter_yaml(course: Path) -> None:
    zh = course / ZH
    text = zh.read_text(encoding="utf-8")
    look = "## 四处看看 {#look}\n\n列出 Pod。\n\n"
    zh.write_text(text.replace(look, "") + "\n" + look, encoding="utf-8")
    with pytest.raises(content.ContentError) as raised:
        content.load_course("tiny", root=course)
    assert [str(p) for p in raised.value.problems] == [
        f"{ZH}: the steps' sections must come in chapter.yaml's order: look, create-configmap"
    ]


def test_every_problem_is_reported_at_once(course: Path) -> None:
    for change in (
        edit("tiny/course.yaml", "slug: tiny", "slug: tiny\ncolour: red"),
        edit(C, "nodes: 2", "nodes: 0"),
        edit(C, "when: stored}", "when: stord}"),
        edit(EN, "(diagram:etcd)", "(diagram:disk)"),
        remove("tiny/02-second/zh-Hans.md"),
    ):
        change(course)
    with pytest.raises(content.ContentError) as raised:
        content.load_course("tiny", root=course)
    places = [(p.file, p.place) for p in raised.value.problems]
    assert places == [
        ("tiny/course.yaml", "colour"),
        (C, "nodes"),
        (C, "steps[create-configmap].hints[name-and-data].when"),
        (EN, "line 16"),
        ("tiny/02-second/zh-Hans.md", ""),
    ]
    assert content.problems(root=course) == raised.value.problems


def test_a_broken_course_is_not_cached_and_reloads_once_fixed(course: Path) -> None:
    remove(ZH)(course)
    with pytest.raises(content.ContentError):
        content.load_course("tiny", root=course)
    shutil.copy(FIXTURES / ZH, course / ZH)
    assert content.load_course("tiny", root=course).slug == "tiny"


def test_courses_raises_for_any_broken_course(course: Path) -> None:
    remove(EN)(course)
    with pytest.raises(content.ContentError) as raised:
        content.courses(root=course)
    assert [p.file for p in raised.value.problems] == [EN]
