"""What the lab's management commands share: the data directory they act on, and the cluster they name.

``manage.py`` turns ``--data-dir`` into ``KUBELAB_DATA_DIR`` before the settings load, so every command
acts on the settings' data directory; a caller that bypasses it (``call_command``) and passes another
would move the stores but not Django's database, and is refused. A cluster named on the command line
must exist in that lab.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError

from controlplane.runtime import InvalidClusterName, check_cluster_name, known_clusters


def data_dir(option: str | None) -> Path:
    """The lab's data directory; ``option`` (``--data-dir``) must name the same one if given."""
    directory: Path = settings.KUBELAB_DATA_DIR
    if option and Path(option).expanduser().resolve() != directory:
        raise CommandError(
            f"--data-dir {option} differs from the settings' data directory {directory}: "
            "pass it on the manage.py command line or set KUBELAB_DATA_DIR"
        )
    return directory


def known_cluster(directory: Path, name: str) -> str:
    """``name``, checked: a valid cluster name of the lab in ``directory``."""
    try:
        name = check_cluster_name(name)
    except InvalidClusterName as error:
        raise CommandError(str(error)) from error
    known = known_clusters(directory, store_url=settings.KUBELAB_STORE)
    if name not in known:
        if known:
            raise CommandError(f"unknown cluster {name!r}: the lab in {directory} has {', '.join(known)}")
        raise CommandError(
            f"unknown cluster {name!r}: the lab in {directory} has no clusters yet "
            "(start it once with `manage.py runlab`, which creates the demo cluster)"
        )
    return name
