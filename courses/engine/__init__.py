"""The course engine: the course itself, apart from its pages.

A course is content in the repository (docs/course-format.md). The engine turns it into what the
pages and the checks use, without I/O of its own beyond reading those files once:

- ``content/``: ``load_course(slug)`` and ``courses()``, the loaded and validated course (``Course``,
  ``Chapter``, ``Step`` ...), every problem reported at once with its file and place, and the content
  linter (a check names nothing its step's text does not mention); ``manage.py checkcontent`` runs it;
- ``prose.py``: a chapter's Markdown, one file per language, cut into its title, introduction, steps,
  hints and solutions, and rendered on the server to sanitised HTML (diagram links, kubectl "run"
  commands, keys);
- ``checks/``: the pure core that decides whether a step is done, from trace events and state reads.

The runner that feeds a check from a student's sandbox (through ``courses.gateway``) and each
student's progress (``courses/progress/``) are built on top of it; a chapter page
(``courses/chapters/``) composes the lab's pieces (``{% topology %}``, ``{% etcd_panel %}`` from
``courses/templatetags/lab.py``) beside the chapter's text.
"""
