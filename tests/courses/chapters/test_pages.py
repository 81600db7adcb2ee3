"""The course pages: a visitor reads every chapter; a student's progress, hints and solutions."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django import Settings

from controlplane.runtime import activate
from courses.progress.models import ChapterPosition, StepProgress

CHAPTER = "/learn/control-plane/one-hub/"


@pytest.fixture(autouse=True)
def no_lab(tmp_path: Path, settings: Settings) -> Iterator[None]:
    settings.KUBELAB_DATA_DIR = tmp_path
    settings.KUBELAB_STORE = "sqlite"
    activate(None)
    yield
    activate(None)


@pytest.mark.django_db
def test_a_visitor_reads_the_course_list_and_a_chapter_without_an_account(client: Client) -> None:
    listing = client.get("/learn/")
    assert listing.status_code == 200
    assert "How the control plane talks" in listing.content.decode()
    page = client.get(CHAPTER)
    assert page.status_code == 200
    text = page.content.decode()
    assert "find-the-hub" in text, "every step of the chapter is on the page"
    assert 'id="manifest-input"' not in text, "a visitor gets no form: the form acts on a sandbox"
    assert "Sign in" in text


@pytest.mark.django_db
def test_the_chapter_follows_the_browser_language(client: Client) -> None:
    english = client.get(CHAPTER, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    chinese = client.get(CHAPTER, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert 'lang="zh-hans"' in chinese
    assert "控制平面" in chinese and "控制平面" not in english


@pytest.mark.django_db
def test_unknown_courses_chapters_and_steps(client: Client) -> None:
    assert client.get("/learn/no-such-course/").status_code == 404
    assert client.get("/learn/control-plane/no-such-chapter/").status_code == 404
    # An unknown step opens the first one rather than failing.
    page = client.get(CHAPTER + "?step=nope").content.decode()
    first = re.search(r'<article[^>]*data-step="find-the-hub"[^>]*>', page)
    assert first is not None and " hidden" not in first.group(0)


@pytest.mark.django_db
def test_opening_a_step_remembers_where_the_student_is(client: Client) -> None:
    user = User.objects.create_user("ada", password="pw-for-tests-1")
    client.force_login(user)
    response = client.get(CHAPTER + "?step=configmap-to-etcd")
    assert response.status_code == 200
    assert ChapterPosition.objects.get(user=user, chapter="one-hub").step == "configmap-to-etcd"
    detail = client.get("/learn/control-plane/").content.decode()
    assert "?step=configmap-to-etcd" in detail, "the course page offers to resume there"
    assert client.get(CHAPTER).content.decode().count('aria-current="step"') == 1


@pytest.mark.django_db
def test_the_first_hint_answers_the_failing_condition(client: Client) -> None:
    user = User.objects.create_user("bob", password="pw-for-tests-1")
    client.force_login(user)
    url = "/learn/control-plane/one-hub/watch-a-change/hint/"
    from courses.engine.content import load_course

    step = load_course("control-plane").chapters[0].step("watch-a-change")
    assert step is not None
    tied = next(h for h in step.hints if h.when is not None)
    response = client.post(url, {"failing": tied.when, "shown": ""}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert f'data-hint="{tied.id}"' in response.content.decode()
    assert StepProgress.objects.get(user=user, step="watch-a-change").hints == 1


@pytest.mark.django_db
def test_asking_for_the_solution_is_recorded(client: Client) -> None:
    user = User.objects.create_user("cy", password="pw-for-tests-1")
    client.force_login(user)
    response = client.post("/learn/control-plane/one-hub/find-the-hub/solution/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "kubectl get leases -n kube-system" in response.content.decode()
    assert StepProgress.objects.get(user=user, step="find-the-hub").solution is True


def test_the_solution_marks_what_the_cluster_is_expected_to_refuse() -> None:
    from django.template.loader import render_to_string

    from courses.engine.content import Solution, SolutionCommand, SolutionManifest

    solution = Solution(
        apply=(SolutionManifest("kind: ConfigMap\n", refused=True),),
        kubectl=(
            SolutionCommand("kubectl delete configmap app-config --as=jane", refused=True),
            SolutionCommand("kubectl get configmap app-config"),
        ),
    )
    html = render_to_string("courses/chapters/_solution.html", {"why": "", "solution": solution})
    assert "The cluster refuses this manifest: the refusal is the lesson." in html
    assert html.count("The cluster refuses this command: the refusal is the lesson.") == 1
    assert (
        '<pre class="command refused" data-kubectl="kubectl delete configmap app-config --as=jane">' in html
    )
    assert '<pre class="command" data-kubectl="kubectl get configmap app-config">' in html
    assert '<pre class="manifest refused"><code>kind: ConfigMap\n</code></pre>' in html


@pytest.mark.django_db
def test_hints_and_solutions_need_an_account_and_a_post(client: Client) -> None:
    url = "/learn/control-plane/one-hub/find-the-hub/solution/"
    assert client.post(url).status_code == 302, "anonymous: sent to sign in"
    user = User.objects.create_user("dee", password="pw-for-tests-1")
    client.force_login(user)
    assert client.get(url).status_code == 405
