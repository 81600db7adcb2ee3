"""Loading a course: a valid one becomes frozen values; lookups, languages and the cache behave."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from courses.engine import content
from courses.engine.checks import Check

FIXTURES = Path(__file__).parent / "fixtures" / "valid"


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    content.reload()


def test_a_valid_course_loads_with_every_part() -> None:
    course = content.load_course("tiny", root=FIXTURES)
    assert course.slug == "tiny"
    assert course.title == {"en": "A tiny course", "zh-hans": "一个小课程"}
    assert [(c.slug, c.number, c.nodes, c.course) for c in course.chapters] == [
        ("first", 1, 2, "tiny"),
        ("second", 2, 3, "tiny"),
    ]
    first = course.chapters[0]
    assert first.impersonate == ("jane",)
    assert [s.id for s in first.steps] == ["look", "create-configmap"]

    look = first.steps[0]
    assert look.highlight == content.Highlight(
        nodes=("apiserver", "etcd", "kubelet:node-2"),
        edges=(("user:$student", "apiserver"), ("apiserver", "etcd")),
    )
    assert look.narration == ("request.received", "store.txn")
    assert look.timeline == content.Timeline(speed=0.0, at=None)
    assert isinstance(look.check, Check) and look.wait is None
    assert look.solution.empty and look.editor is None and look.actions == ()

    step = first.steps[1]
    manifest = (FIXTURES / "tiny" / "01-first" / "manifests" / "configmap.yaml").read_text()
    assert step.editor == manifest  # the text as written, comments included
    assert step.actions == (
        content.Action(kind="kubectl", kubectl="kubectl get configmap -w"),
        content.Action(
            kind="request",
            request=content.Request("POST", "/api/v1/namespaces/default/configmaps", manifest),
            label={"en": "Create it", "zh-hans": "创建它"},
        ),
        content.Action(
            kind="request",
            request=content.Request(
                "PATCH", "/api/v1/namespaces/default/configmaps/app-config", "data:\n  color: green\n"
            ),
        ),
    )
    assert step.timeline == content.Timeline(speed=0.5, at="created")
    assert step.hints == (content.Hint("use-the-form", "created"), content.Hint("name-and-data", "stored"))
    assert step.solution == content.Solution(
        apply=(content.SolutionManifest(manifest),),
        kubectl=(content.SolutionCommand("kubectl get configmap app-config"),),
        background=("kubectl get configmap -w",),
    )
    assert not step.solution.apply[0].refused and not step.solution.kubectl[0].refused
    dry_run = "kubectl create configmap app-config --from-literal=color=blue --dry-run=server"
    assert step.mistake == content.Mistake(
        actions=content.Solution(kubectl=(content.SolutionCommand(dry_run),)), failing="created"
    )
    assert step.check.ids() == {"created", "stored"}

    second = course.chapters[1].steps[0]
    assert second.wait is not None and second.hints == () and second.timeline is None
    assert second.mistake is None


def test_a_solution_may_expect_the_cluster_to_refuse_a_manifest_or_a_command(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "tiny", tmp_path / "tiny")
    first = tmp_path / "tiny" / "01-first"
    invalid = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Name}\n"
    (first / "manifests" / "invalid.yaml").write_text(invalid, encoding="utf-8")
    chapter = first / "chapter.yaml"
    written = '      apply: [manifests/configmap.yaml]\n      kubectl: ["kubectl get configmap app-config"]\n'
    refusals = (
        "      apply: [manifests/configmap.yaml, {apply: manifests/invalid.yaml, expect: refused}]\n"
        "      kubectl:\n"
        '        - {kubectl: "kubectl delete configmap app-config --as=jane", expect: refused}\n'
        "        - kubectl get configmap app-config\n"
    )
    text = chapter.read_text(encoding="utf-8")
    assert written in text
    chapter.write_text(text.replace(written, refusals), encoding="utf-8")

    solution = content.load_course("tiny", root=tmp_path).chapters[0].steps[1].solution
    manifest = (first / "manifests" / "configmap.yaml").read_text(encoding="utf-8")
    assert solution.apply == (
        content.SolutionManifest(manifest, refused=False),
        content.SolutionManifest(invalid, refused=True),
    )
    assert solution.kubectl == (
        content.SolutionCommand("kubectl delete configmap app-config --as=jane", refused=True),
        content.SolutionCommand("kubectl get configmap app-config", refused=False),
    )


def test_the_prose_is_rendered_per_language() -> None:
    chapter = content.load_course("tiny", root=FIXTURES).chapters[0]
    assert set(chapter.prose) == {"en", "zh-hans"}
    en, zh = chapter.prose["en"], chapter.prose["zh-hans"]
    assert en.title == "The first chapter" and zh.title == "第一章"
    assert 'data-node="apiserver"' in en.intro_html
    step = en.steps["create-configmap"]
    assert step.title == "Create a ConfigMap"
    assert "<kbd>Ctrl+C</kbd>" in step.html
    assert 'data-kubectl="kubectl get configmap app-config"' in step.html
    assert set(step.hints) == {"use-the-form", "name-and-data"}
    assert step.solution_html == "<p>Applying the manifest creates the ConfigMap.</p>\n"
    assert zh.steps["create-configmap"].hints["use-the-form"] == "<p>使用右边的表单。</p>\n"


@pytest.mark.parametrize(
    ("lang", "title"),
    [
        ("en", "The first chapter"),
        ("zh-hans", "第一章"),
        ("zh-Hans", "第一章"),
        ("zh-cn", "第一章"),
        ("fr", "The first chapter"),
        (None, "The first chapter"),
    ],
)
def test_prose_for_a_language_falls_back_to_english(lang: str | None, title: str) -> None:
    chapter = content.load_course("tiny", root=FIXTURES).chapters[0]
    assert chapter.prose_for(lang).title == title


def test_lookups_by_slug_and_id() -> None:
    course = content.load_course("tiny", root=FIXTURES)
    chapter = course.chapter("first")
    assert chapter is not None and course.chapter("nope") is None
    assert chapter.step("look") is chapter.steps[0] and chapter.step("nope") is None
    assert chapter.index("create-configmap") == 1 and chapter.index("nope") is None
    assert course.title_for("zh-hans") == "一个小课程" and course.title_for("de") == "A tiny course"


def test_for_student_replaces_the_placeholder() -> None:
    assert content.for_student("user:$student", "student:alice") == "user:student:alice"


def test_a_course_is_loaded_once_until_reload() -> None:
    first = content.load_course("tiny", root=FIXTURES)
    assert content.load_course("tiny", root=FIXTURES) is first
    content.reload()
    again = content.load_course("tiny", root=FIXTURES)
    assert again is not first and again == first


def test_courses_lists_every_course_and_the_root_follows_the_setting(
    settings: object, tmp_path: Path
) -> None:
    shutil.copytree(FIXTURES / "tiny", tmp_path / "tiny")
    shutil.copytree(FIXTURES / "tiny", tmp_path / "another")
    (tmp_path / "another" / "course.yaml").write_text(
        (tmp_path / "another" / "course.yaml").read_text().replace("slug: tiny", "slug: another")
    )
    (tmp_path / "not-a-course").mkdir()
    settings.KUBELAB_COURSE_CONTENT = str(tmp_path)  # type: ignore[attr-defined]
    assert content.content_root() == tmp_path
    assert [c.slug for c in content.courses()] == ["another", "tiny"]
    assert content.course_slugs() == ["another", "tiny"]
    assert content.load_course("another").slug == "another"
    assert content.problems() == []


@pytest.mark.parametrize("slug", ["nope", "../valid", "tiny/01-first", "", "Tiny", "/etc"])
def test_an_unknown_or_impossible_slug_is_not_found(slug: str) -> None:
    with pytest.raises(content.CourseNotFound):
        content.load_course(slug, root=FIXTURES)


def test_a_missing_root_has_no_courses(tmp_path: Path) -> None:
    assert content.courses(root=tmp_path / "missing") == []


REAL = content.loader.DEFAULT_ROOT / "control-plane"


@pytest.mark.skipif(not REAL.is_dir(), reason="the control-plane course is not written yet")
def test_the_real_course_loads() -> None:
    course = content.load_course("control-plane", root=content.loader.DEFAULT_ROOT)
    assert course.chapters, "the course has chapters"
    for chapter in course.chapters:
        assert chapter.steps
        for step in chapter.steps:
            for lang in content.LANGUAGES:
                assert chapter.prose[lang].steps[step.id].html
