"""Classrooms in Django's admin (``/admin/``): staff set any classroom up here, and grant the
instructor's permission (``courses.teach_classroom``) to users or groups.

A classroom is edited on one page: its name, course and chapters, join code, its instructors and
students, and the clusters it owns (one row per cluster name; a cluster belongs to at most one
classroom). The list shows each classroom's course, join code, clusters and how many people it has;
the classrooms' logs are read-only. Django's admin finds this module through ``courses/admin.py``,
which imports it.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from courses.classrooms.models import Classroom, ClassroomCluster, ClassroomLogEntry


# Django's admin classes are generic only in django-stubs (not subscriptable at runtime): hence the ignores.
class ClassroomClusterInline(admin.TabularInline):  # type: ignore[type-arg]
    model = ClassroomCluster
    extra = 1


@admin.register(Classroom)
class ClassroomAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "name",
        "slug",
        "course",
        "join_code",
        "chapters_use",
        "cluster_names",
        "instructor_count",
        "student_count",
    )
    search_fields = ("name", "slug", "clusters__cluster", "instructors__username", "students__username")
    prepopulated_fields = {"slug": ("name",)}
    filter_horizontal = ("instructors", "students")
    inlines = (ClassroomClusterInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Classroom]:
        classrooms: QuerySet[Classroom] = super().get_queryset(request)
        return classrooms.annotate(
            instructor_total=Count("instructors", distinct=True),
            student_total=Count("students", distinct=True),
        ).prefetch_related("clusters")

    @admin.display(description="clusters")
    def cluster_names(self, classroom: Classroom) -> str:
        return ", ".join(c.cluster for c in classroom.clusters.all()) or "-"

    @admin.display(description="instructors", ordering="instructor_total")
    def instructor_count(self, classroom: Classroom) -> int:
        return int(getattr(classroom, "instructor_total", 0))

    @admin.display(description="students", ordering="student_total")
    def student_count(self, classroom: Classroom) -> int:
        return int(getattr(classroom, "student_total", 0))


@admin.register(ClassroomCluster)
class ClassroomClusterAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("cluster", "classroom")
    list_select_related = ("classroom",)
    list_filter = ("classroom",)
    search_fields = ("cluster", "classroom__name", "classroom__slug")
    ordering = ("cluster",)


@admin.register(ClassroomLogEntry)
class ClassroomLogEntryAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """The classrooms' logs, read-only: what instructors did, and who was refused."""

    list_display = ("at", "classroom", "actor", "action", "detail")
    list_select_related = ("classroom", "actor")
    list_filter = ("classroom", "action")
    search_fields = ("detail", "actor__username", "classroom__slug")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
