"""The kubectl console in the browser: the real kubectl, run on the server in the student's own sandbox.

A student types ``kubectl`` commands beside the chapter; they run against their sandbox's API server as
``student:<username>``, through the same pipeline as any client, and the requests they make animate on
the topology beside it. It is not a shell, and it is built to be escaped from by nobody:

- ``policy.py`` decides, before anything runs, whether a line may run (and says why not);
  ``cmdline.py`` reads a line exactly as kubectl will, with the facts about kubectl's commands and
  options in ``kubectl_commands.py``, generated from the pinned binary by ``helptext.py``;
- ``runner.py`` runs what passes: the absolute kubectl, an empty environment, an empty directory,
  resource limits, a time limit, an output cap, two at a time per student (``run_once`` for a step's
  solution);
- ``consumer.py`` is the page's websocket, ``ws/course/<course>/<chapter>/console/``;
- the page: ``templates/courses/console/_console.html`` and ``static/courses/console.js``.
"""
