"""Kubelab's benchmarks: where speed and memory targets are measured (never by timed tests).

``python -m bench NAME`` runs the benchmark module ``bench/NAME.py`` and prints one JSON object per
line and measurement (see ``bench.report``)::

    {"bench": "store", "metric": "sqlite.single_writer.commits_per_s", "value": 812.4,
     "unit": "commits/s", "baseline": 1003.2, "ratio": 0.81, "target": ">= 0.7", "met": true}

``--quick`` runs a smaller version for CI, ``--only METRIC`` runs only the measurements whose names
match. A benchmark module opens with a docstring saying what it measures and why, and defines:

- ``add_arguments(parser)`` (optional): its own command-line options;
- ``run(options, reporter)``: a function or coroutine function that measures and calls
  ``reporter.emit(...)`` once per measurement.

Shared pieces: ``bench.report`` (result lines, targets, ratios), ``bench.stats`` (percentiles,
summaries) and ``bench.timing`` (fixed-duration loops, alternating rounds).
"""
