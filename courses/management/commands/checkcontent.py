"""``manage.py checkcontent``: load every course, check all of it, print every problem.

The course content is code (docs/course-format.md), and this is its compiler's error output: it
loads each course under the content root exactly as the web application does
(``courses.engine.content``), with every check the loader makes (the YAML schema, ids, diagram node
ids, trace types, manifests, checks, one section per step and hint in every language, the content
linter), and prints each problem on a line of its own, ``file: place: problem``. It exits with
status 0 when all is well and 1 when there is a problem, so ``make test`` fails on broken content.

    python manage.py checkcontent                      # every course under courses/content/
    python manage.py checkcontent --root some/dir      # the courses under another directory
    python manage.py checkcontent control-plane        # one course
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from courses.engine import content


class Command(BaseCommand):
    help = "Load every course (or the ones named), check all of it, and print every problem found."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "courses", nargs="*", metavar="COURSE", help="course slugs (default: all of them)"
        )
        parser.add_argument("--root", type=Path, help="the content root (default: the one the lab reads)")

    def handle(self, *args: Any, **options: Any) -> None:
        root: Path = options["root"] or content.content_root()
        if not root.is_dir():
            raise CommandError(f"there is no content directory {root}")
        available = content.course_slugs(root=root)
        wanted: list[str] = options["courses"] or available
        unknown = [slug for slug in wanted if slug not in available]
        if unknown:
            raise CommandError(
                f"no course {', '.join(unknown)} under {root} (there are: {', '.join(available)})"
            )
        problems: list[content.Problem] = []
        for slug in wanted:
            content.reload()
            try:
                course = content.load_course(slug, root=root)
            except content.ContentError as error:
                problems.extend(error.problems)
                continue
            steps = sum(len(chapter.steps) for chapter in course.chapters)
            self.stdout.write(f"{slug}: {len(course.chapters)} chapters, {steps} steps: ok")
        for problem in problems:
            self.stderr.write(str(problem))
        if problems:
            count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
            raise CommandError(f"the course content has {count}", returncode=1)
        if not wanted:
            self.stdout.write(f"no courses under {root}")
