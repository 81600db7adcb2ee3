"""The course engine, to come: nothing lives here yet.

It will hold the course itself, apart from its pages: loading the course content (chapters and their
steps), the automatic checks that decide whether a step is done (reading the student's cluster
through ``courses.gateway``), and each student's progress (models of the ``courses`` app, imported by
``courses/models.py``). A chapter page composes the lab's pieces (``{% topology %}``,
``{% etcd_panel %}`` from ``courses/templatetags/lab.py``) beside the chapter's text.
"""
