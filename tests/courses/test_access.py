"""Who may see a cluster: the pure rule over every kind of viewer, then its database adapter.

The matrix is the rule of courses/classrooms/access.py written out as a table: each row a viewer, a
cluster (with the classroom that owns it) and whether anonymous visitors may see the demo; the rule
must answer every row as the table says. The adapter's tests save real users and classrooms and check that
it asks the rule the right question, with one query at most and none when classrooms do not matter.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, User
from pytest_django import DjangoAssertNumQueries, Settings

from controlplane.consumers.access import access_rule
from courses.classrooms.access import (
    ANONYMOUS,
    Viewer,
    classroom_of,
    depends_on_classrooms,
    may_view,
    user_may_view,
)
from courses.models import Classroom, ClassroomCluster
from tests.support.classrooms import make_classrooms

DEMO = "demo"

STAFF = Viewer(signed_in=True, staff=True)
INSTRUCTOR = Viewer(signed_in=True, teaches=frozenset({"k8s-101"}))
OTHER_INSTRUCTOR = Viewer(signed_in=True, teaches=frozenset({"k8s-201"}))
STUDENT = Viewer(signed_in=True, attends=frozenset({"k8s-101"}))
OTHER_STUDENT = Viewer(signed_in=True, attends=frozenset({"k8s-201"}))
#: Signed in, in no classroom at all.
NOBODY = Viewer(signed_in=True)

VIEWERS = {
    "staff": STAFF,
    "instructor": INSTRUCTOR,
    "other instructor": OTHER_INSTRUCTOR,
    "student": STUDENT,
    "other student": OTHER_STUDENT,
    "nobody": NOBODY,
    "anonymous": ANONYMOUS,
}

#: The clusters of the matrix: name and owning classroom. "team-a" is k8s-101's; "loose" nobody's.
CLUSTERS = {"team-a": "k8s-101", "loose": None, DEMO: None}

#: Who sees what: (viewer, cluster) -> (with anonymous demo visitors allowed, with them not allowed).
MATRIX: dict[tuple[str, str], tuple[bool, bool]] = {
    ("staff", "team-a"): (True, True),
    ("staff", "loose"): (True, True),
    ("staff", DEMO): (True, True),
    ("instructor", "team-a"): (True, True),
    ("instructor", "loose"): (False, False),
    ("instructor", DEMO): (True, True),
    ("other instructor", "team-a"): (False, False),
    ("other instructor", "loose"): (False, False),
    ("other instructor", DEMO): (True, True),
    ("student", "team-a"): (True, True),
    ("student", "loose"): (False, False),
    ("student", DEMO): (True, True),
    ("other student", "team-a"): (False, False),
    ("other student", "loose"): (False, False),
    ("other student", DEMO): (True, True),
    ("nobody", "team-a"): (False, False),
    ("nobody", "loose"): (False, False),
    ("nobody", DEMO): (True, True),
    ("anonymous", "team-a"): (False, False),
    ("anonymous", "loose"): (False, False),
    ("anonymous", DEMO): (True, False),
}


def test_the_matrix_covers_every_viewer_and_cluster() -> None:
    assert set(MATRIX) == {(v, c) for v in VIEWERS for c in CLUSTERS}


@pytest.mark.parametrize("demo_anonymous", [True, False], ids=["anonymous demo on", "anonymous demo off"])
@pytest.mark.parametrize(("viewer", "cluster"), list(MATRIX), ids=[f"{v} -> {c}" for v, c in MATRIX])
def test_the_rule_answers_as_the_matrix_says(viewer: str, cluster: str, demo_anonymous: bool) -> None:
    expected = MATRIX[viewer, cluster][0 if demo_anonymous else 1]
    answer = may_view(
        VIEWERS[viewer], cluster, owner=CLUSTERS[cluster], demo=DEMO, demo_anonymous=demo_anonymous
    )
    assert answer is expected, f"{viewer} {'may' if expected else 'may not'} see {cluster}"


def test_the_demo_cluster_is_for_everyone_even_when_a_classroom_owns_it() -> None:
    assert may_view(OTHER_STUDENT, DEMO, owner="k8s-101", demo=DEMO, demo_anonymous=False)
    assert may_view(ANONYMOUS, DEMO, owner="k8s-101", demo=DEMO, demo_anonymous=True)


def test_without_a_demo_cluster_anonymous_visitors_see_nothing() -> None:
    for cluster in (DEMO, ""):
        assert not may_view(ANONYMOUS, cluster, owner=None, demo="", demo_anonymous=True)
    assert not may_view(NOBODY, DEMO, owner=None, demo="", demo_anonymous=True)


@pytest.mark.parametrize("viewer", list(VIEWERS))
@pytest.mark.parametrize("cluster", list(CLUSTERS))
def test_classrooms_matter_only_when_the_rule_says_they_do(viewer: str, cluster: str) -> None:
    """Where ``depends_on_classrooms`` says no, the adapter reads nothing: the answer must not change."""
    if depends_on_classrooms(VIEWERS[viewer], cluster, demo=DEMO):
        return
    signed_in = VIEWERS[viewer].signed_in
    stripped = Viewer(signed_in=signed_in, staff=VIEWERS[viewer].staff)
    member = Viewer(
        signed_in=signed_in,
        staff=VIEWERS[viewer].staff,
        teaches=frozenset({"k8s-101"}),
        attends=frozenset({"k8s-101"}),
    )
    answers = {
        may_view(v, cluster, owner=owner, demo=DEMO, demo_anonymous=on)
        for v in (stripped, member)
        for owner in (None, "k8s-101")
        for on in ([True] if not signed_in else [True, False])
    }
    assert len(answers) == 1, f"{viewer} -> {cluster} depends on classrooms after all"


# -- the database adapter ----------------------------------------------------------------------------


@pytest.fixture
def people(db: None, settings: Settings) -> dict[str, User]:
    """The classrooms of tests/support/classrooms.py (k8s-101 owns team-a: bob teaches, alice attends;
    k8s-201 owns team-b: carol teaches, dave attends; erin is in none), root (staff) and super."""
    settings.KUBELAB_DEMO_CLUSTER = DEMO
    settings.KUBELAB_DEMO_ANONYMOUS = True
    users = make_classrooms()
    users["root"] = User.objects.create_user("root", is_staff=True)
    users["super"] = User.objects.create_user("super", is_superuser=True)
    return users


@pytest.mark.parametrize(
    ("user", "visible"),
    [
        ("alice", {"team-a", DEMO}),
        ("bob", {"team-a", DEMO}),
        ("carol", {"team-b", DEMO}),
        ("dave", {"team-b", DEMO}),
        ("erin", {DEMO}),
        ("root", {"team-a", "team-b", "loose", "nope", DEMO}),
        ("super", {"team-a", "team-b", "loose", "nope", DEMO}),
    ],
)
def test_users_see_the_clusters_of_their_classrooms(
    people: dict[str, User], user: str, visible: set[str]
) -> None:
    clusters = {"team-a", "team-b", "loose", "nope", DEMO}
    seen = {cluster for cluster in clusters if user_may_view(people[user], cluster)}
    assert seen == visible


def test_anonymous_visitors_see_the_demo_while_the_setting_allows(
    people: dict[str, User], settings: Settings
) -> None:
    for anonymous in (None, AnonymousUser()):
        assert user_may_view(anonymous, DEMO)
        assert not user_may_view(anonymous, "team-a")
    settings.KUBELAB_DEMO_ANONYMOUS = False
    assert not user_may_view(AnonymousUser(), DEMO)
    assert user_may_view(people["erin"], DEMO)  # signed-in users still see it


def test_the_classroom_of_a_cluster_is_read_in_one_query(
    people: dict[str, User], django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    with django_assert_num_queries(1):
        assert classroom_of("team-a", user_id=people["bob"].pk) == ("k8s-101", True, False)
    with django_assert_num_queries(1):
        assert classroom_of("team-a", user_id=people["alice"].pk) == ("k8s-101", False, True)
    assert classroom_of("team-a", user_id=people["dave"].pk) == ("k8s-101", False, False)
    assert classroom_of("loose", user_id=people["dave"].pk) == (None, False, False)


def test_nothing_is_read_when_classrooms_do_not_matter(
    people: dict[str, User], django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    with django_assert_num_queries(0):
        assert user_may_view(people["erin"], DEMO)
        assert user_may_view(people["root"], "team-b")
        assert not user_may_view(AnonymousUser(), "team-a")
        assert not user_may_view(User(username="unsaved"), "team-a")


def test_moving_a_cluster_to_another_classroom_moves_who_sees_it(people: dict[str, User]) -> None:
    assert user_may_view(people["alice"], "team-a")
    ClassroomCluster.objects.filter(cluster="team-a").update(classroom=Classroom.objects.get(slug="k8s-201"))
    assert not user_may_view(people["alice"], "team-a")
    assert user_may_view(people["dave"], "team-a")


def test_the_trace_socket_is_handed_this_rule() -> None:
    assert access_rule() is user_may_view


def test_a_sandbox_is_seen_by_its_student_and_the_instructors_of_their_classrooms() -> None:
    def sees(viewer: Viewer, owner: str | None = None) -> bool:
        return may_view(viewer, "sb-7", owner=owner, demo=DEMO, demo_anonymous=True)

    sandbox = "sb-7"
    assert sees(Viewer(signed_in=True, user_id=7))
    assert sees(Viewer(signed_in=True, user_id=1, teaches_students=frozenset({7})))
    assert not sees(Viewer(signed_in=True, user_id=1, teaches_students=frozenset({8})))
    # A classroom claiming the sandbox as one of its clusters changes nothing.
    assert not sees(INSTRUCTOR, owner="k8s-101")
    assert not depends_on_classrooms(Viewer(signed_in=True, user_id=7), sandbox, demo=DEMO)
    assert depends_on_classrooms(Viewer(signed_in=True, user_id=1), sandbox, demo=DEMO)


def test_instructors_see_the_sandboxes_of_their_own_students_only(
    people: dict[str, User], django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    alice = f"sb-{people['alice'].pk}"  # attends k8s-101, which bob teaches
    seen = {name for name, user in people.items() if user_may_view(user, alice)}
    assert seen == {"alice", "bob", "root", "super"}
    with django_assert_num_queries(0):
        assert user_may_view(people["alice"], alice)  # one's own: nothing to read
    with django_assert_num_queries(1):
        assert not user_may_view(people["carol"], alice)


def test_who_may_break_a_cluster(people: dict[str, User]) -> None:
    from courses.classrooms.access import user_may_break

    alice = f"sb-{people['alice'].pk}"
    breakers = {name for name, user in people.items() if user_may_break(user, alice)}
    assert breakers == {"bob", "root", "super"}  # not alice herself: she may only see it
    assert {n for n, u in people.items() if user_may_break(u, "team-a")} == {"bob", "root", "super"}
    assert {n for n, u in people.items() if user_may_break(u, DEMO)} == {"root", "super"}
    assert not user_may_break(AnonymousUser(), "team-a")
