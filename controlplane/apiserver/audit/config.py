"""Where a cluster's audit policy comes from, and where its audit log goes.

kube-apiserver is told ``--audit-policy-file`` and ``--audit-log-path`` (with ``--audit-log-maxsize``
and ``--audit-log-maxbackup`` for rotation). A Kubelab cluster finds its policy, first found wins:

1. ``<cluster dir>/audit-policy.yaml``: that cluster's own policy;
2. ``KUBELAB_AUDIT_POLICY_FILE``: the lab's policy for every cluster;
3. ``default-policy.yaml`` beside this module: the lab's default.

and writes ``<cluster dir>/audit/audit.log``, rotated to ``audit.log.1`` ... when it outgrows
``KUBELAB_AUDIT_LOG_MAXSIZE`` MiB, keeping ``KUBELAB_AUDIT_LOG_MAXBACKUP`` old files.

``load_policy`` reads and checks a policy file (blocking file I/O: call it off the event loop); a
policy that does not parse raises ``InvalidPolicy`` and the cluster does not start, as
kube-apiserver would not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from controlplane.apiserver.audit.policy import InvalidPolicy, Policy, parse_policy

#: The lab's default policy.
DEFAULT_POLICY_FILE = Path(__file__).with_name("default-policy.yaml")
#: A cluster's own policy, in its directory.
CLUSTER_POLICY_FILE = "audit-policy.yaml"
#: The audit log, in ``<cluster dir>/audit/``.
LOG_DIR = "audit"
LOG_FILE = "audit.log"
#: Rotation: the log's size before it is rotated, and the old files kept (upstream's flags default to
#: no rotation; a lab's disk is smaller).
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_BACKUPS = 2


@dataclass(frozen=True, slots=True)
class AuditSettings:
    """The lab's audit settings (``KUBELAB_AUDIT_*``), the same for every cluster."""

    #: The lab's policy file; None: the default policy.
    policy_file: Path | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    backups: int = DEFAULT_BACKUPS


def policy_file_for(cluster_dir: Path, lab_policy: Path | None = None) -> Path:
    """The policy file of the cluster in ``cluster_dir`` (see the module docstring)."""
    own = cluster_dir / CLUSTER_POLICY_FILE
    if own.is_file():
        return own
    return lab_policy if lab_policy is not None else DEFAULT_POLICY_FILE


def log_path_for(cluster_dir: Path) -> Path:
    return cluster_dir / LOG_DIR / LOG_FILE


def load_policy(path: Path) -> Policy:
    """The policy in the YAML or JSON file ``path``; ``InvalidPolicy`` if it cannot be used."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise InvalidPolicy([f"cannot read the file: {error.strerror or error}"], str(path)) from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise InvalidPolicy([f"not YAML: {error}"], str(path)) from None
    return parse_policy(document, str(path))
