#!/usr/bin/env python
"""Django's command-line utility for Kubelab: ``python manage.py runlab`` starts the lab.

Settings are read once, when Django starts, so ``--data-dir DIR`` is turned into ``KUBELAB_DATA_DIR``
here, before that: the Django database, the secret key and the cluster stores then all move together.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def data_dir_option(argv: list[str]) -> str | None:
    """The value of ``--data-dir DIR`` or ``--data-dir=DIR`` in ``argv``, if given."""
    for i, arg in enumerate(argv):
        if arg == "--data-dir" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--data-dir="):
            return arg.removeprefix("--data-dir=")
    return None


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    data_dir = data_dir_option(sys.argv[1:])
    if data_dir:
        os.environ["KUBELAB_DATA_DIR"] = str(Path(data_dir).expanduser().resolve())
    try:
        from django.core.management import execute_from_command_line
    except ImportError as exc:
        raise ImportError(
            "Couldn't import Django. Run `make run` (it creates .venv and installs requirements.txt), "
            "or activate .venv first."
        ) from exc
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
