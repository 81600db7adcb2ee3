"""The chapter page: a chapter's text beside the student's live sandbox, its steps and their checks.

- ``views``: the course list, a course's chapters with the student's progress, the chapter page, and
  the small htmx requests a step makes (a hint, the solution);
- ``hints``: which hint comes next, from what the check saw (a pure function);
- ``runner``: a step's check, run against the sandbox while the page is open (trace events in, state
  read as the read-only checker identity, a verdict out);
- ``consumer``: the chapter page's socket, which starts the sandbox, runs the checks and answers
  "check now", "run the solution" and "jump to step N".
"""
