"""Validation of a pod's ``volumes`` and of the containers' ``volumeMounts``.

A volume belongs to the *pod* (it lives as long as the pod, whichever containers restart) and names
exactly one source: ``emptyDir``, ``hostPath``, ``configMap``, ``secret``, ``projected``,
``persistentVolumeClaim``... (``VOLUME_SOURCES``, in upstream's order). A container sees a volume only
where it *mounts* it, by name, at a ``mountPath``; ``subPath`` and projected ``items`` paths must stay
inside the volume (no ``..``), and file modes are octal ``0``-``0777``.

Upstream: ``pkg/apis/core/validation/validation.go`` (``ValidateVolumes``, ``validateVolumeSource``,
``validateProjectionSources``, ``validateKeyToPath``, ``ValidateVolumeMounts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.strategies.common import (
    as_dict,
    as_list,
    as_str,
    child,
    dns_label,
    index,
    is_int,
    not_found,
)
from controlplane.api.strategies.pods.qos import quantity_or_none
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
)

HOST_PATH_TYPES: Final = [
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
]

MOUNT_PROPAGATIONS: Final = ["Bidirectional", "HostToContainer", "None"]

FILE_MODE_ERROR: Final = "must be a number between 0 and 0777 (octal), both inclusive"

#: Every volume source upstream knows, in ``validateVolumeSource``'s order (only one may be set).
VOLUME_SOURCES: Final = (
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "projected",
    "scaleIO",
    "csi",
    "ephemeral",
    "image",
)


def _validate_mode(mode: Any, path: str) -> list[FieldError]:
    if mode is not None and (not is_int(mode) or mode < 0 or mode > 0o777):
        return [invalid(path, mode, FILE_MODE_ERROR)]
    return []


def _no_backsteps(target: str, path: str) -> list[FieldError]:
    if ".." in target.replace("\\", "/").split("/"):
        return [invalid(path, target, "must not contain '..'")]
    return []


def _local_descending_path(target: str, path: str) -> list[FieldError]:
    errors = []
    if target.startswith("/"):
        errors.append(invalid(path, target, "must be a relative path"))
    return errors + _no_backsteps(target, path)


def _local_non_reserved_path(target: str, path: str) -> list[FieldError]:
    errors = _local_descending_path(target, path)
    if target.startswith("..") and not target.startswith("../"):
        errors.append(invalid(path, target, "must not start with '..'"))
    return errors


def _validate_key_to_path(item: Mapping[str, Any], path: str) -> list[FieldError]:
    errors = []
    if not item.get("key"):
        errors.append(required(child(path, "key")))
    target = as_str(item.get("path"))
    if not target:
        errors.append(required(child(path, "path")))
    errors += _local_non_reserved_path(target, child(path, "path"))
    return errors + _validate_mode(item.get("mode"), child(path, "mode"))


def _validate_items(items: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, item in enumerate(as_list(items)):
        errors += _validate_key_to_path(as_dict(item), index(path, i))
    return errors


def _validate_source(name: str, body: Mapping[str, Any], path: str) -> list[FieldError]:
    """The checks of the sources the lab's kubelet supports; the others are accepted as they are."""
    errors: list[FieldError] = []
    if name == "emptyDir":
        size = body.get("sizeLimit")
        quantity = quantity_or_none(size) if size is not None else None
        if quantity is not None and quantity.sign() < 0:
            errors.append(
                forbidden(child(path, "sizeLimit"), "SizeLimit field must be a valid resource quantity")
            )
    elif name == "hostPath":
        target = as_str(body.get("path"))
        if not target:
            return [required(child(path, "path"))]
        errors += _no_backsteps(target, child(path, "path"))
        kind = body.get("type")
        if kind is not None and kind not in HOST_PATH_TYPES:
            errors.append(not_supported(child(path, "type"), kind, HOST_PATH_TYPES))
    elif name == "secret":
        if not body.get("secretName"):
            errors.append(required(child(path, "secretName")))
        errors += _validate_mode(body.get("defaultMode"), child(path, "defaultMode"))
        errors += _validate_items(body.get("items"), child(path, "items"))
    elif name == "configMap":
        if not body.get("name"):
            errors.append(required(child(path, "name")))
        errors += _validate_mode(body.get("defaultMode"), child(path, "defaultMode"))
        errors += _validate_items(body.get("items"), child(path, "items"))
    elif name == "persistentVolumeClaim":
        if not body.get("claimName"):
            errors.append(required(child(path, "claimName")))
    elif name == "downwardAPI":
        errors += _validate_mode(body.get("defaultMode"), child(path, "defaultMode"))
    elif name == "projected":
        errors += _validate_mode(body.get("defaultMode"), child(path, "defaultMode"))
        errors += _validate_projection_sources(body, path)
    return errors


def _validate_projection_sources(projection: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateProjectionSources``: each source one kind; file paths unique across sources."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, source in enumerate(as_list(projection.get("sources"))):
        source = as_dict(source)
        src_path = index(child(path, "sources"), i)
        count = 0
        for kind in ("secret", "configMap"):
            body = source.get(kind)
            if not isinstance(body, dict):
                continue
            count += 1
            if not body.get("name"):
                errors.append(required(child(child(src_path, kind), "name")))
            for j, item in enumerate(as_list(body.get("items"))):
                item = as_dict(item)
                errors += _validate_key_to_path(item, index(child(child(src_path, kind), "items"), j))
                target = as_str(item.get("path"))
                if target:
                    if target in seen:
                        errors.append(invalid(path, as_str(body.get("name")), "conflicting duplicate paths"))
                    seen.add(target)
        if isinstance(source.get("downwardAPI"), dict):
            count += 1
            for item in as_list(source["downwardAPI"].get("items")):
                target = as_str(as_dict(item).get("path"))
                if not target:
                    errors.append(required(child(child(src_path, "downwardAPI"), "path")))
                elif target in seen:
                    errors.append(invalid(path, target, "conflicting duplicate paths"))
                seen.add(target)
        token = source.get("serviceAccountToken")
        if isinstance(token, dict):
            count += 1
            token_path = child(src_path, "serviceAccountToken")
            seconds = token.get("expirationSeconds")
            if is_int(seconds) and seconds < 600:
                errors.append(
                    invalid(
                        child(token_path, "expirationSeconds"),
                        seconds,
                        "may not specify a duration less than 10 minutes",
                    )
                )
            if is_int(seconds) and seconds > 2**32:
                errors.append(
                    invalid(
                        child(token_path, "expirationSeconds"),
                        seconds,
                        "may not specify a duration larger than 2^32 seconds",
                    )
                )
            target = as_str(token.get("path"))
            if not target:
                errors.append(required(child(path, "path")))
            else:
                errors += _local_non_reserved_path(target, child(path, "path"))
        if isinstance(source.get("clusterTrustBundle"), dict):
            count += 1
        if count > 1:
            errors.append(forbidden(src_path, "may not specify more than 1 volume type per source"))
    return errors


def validate_volumes(volumes: Any, path: str) -> tuple[dict[str, dict[str, Any]], list[FieldError]]:
    """``ValidateVolumes``: unique DNS-label names and exactly one source; returns the valid volumes."""
    errors: list[FieldError] = []
    valid: dict[str, dict[str, Any]] = {}
    for i, volume in enumerate(as_list(volumes)):
        volume = as_dict(volume)
        item = index(path, i)
        name = as_str(volume.get("name"))
        volume_errors: list[FieldError] = []
        count = 0
        for source in VOLUME_SOURCES:
            body = volume.get(source)
            if body is None:
                continue
            if count > 0:
                volume_errors.append(
                    forbidden(child(item, source), "may not specify more than 1 volume type")
                )
                continue
            count += 1
            volume_errors += _validate_source(source, as_dict(body), child(item, source))
        if count == 0:
            volume_errors.append(required(item, "must specify a volume type"))
        if not name:
            volume_errors.append(required(child(item, "name")))
        else:
            volume_errors += dns_label(name, child(item, "name"))
        if name in valid:
            volume_errors.append(
                FieldError("Duplicate value", "FieldValueDuplicate", child(item, "name"), "", name, True)
            )
        if volume_errors:
            errors += volume_errors
        else:
            valid[name] = volume
    return valid, errors


def validate_volume_mounts(mounts: Any, volumes: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateVolumeMounts`` (note upstream's ``subPath`` errors carry no index)."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, mount in enumerate(as_list(mounts)):
        mount = as_dict(mount)
        item = index(path, i)
        name = as_str(mount.get("name"))
        if not name:
            errors.append(required(child(item, "name")))
        if name not in volumes:
            errors.append(not_found(child(item, "name"), name))
        mount_path = as_str(mount.get("mountPath"))
        if not mount_path:
            errors.append(required(child(item, "mountPath")))
        if mount_path in seen:
            errors.append(invalid(child(item, "mountPath"), mount_path, "must be unique"))
        seen.add(mount_path)
        sub_path = as_str(mount.get("subPath"))
        if sub_path:
            errors += _local_descending_path(sub_path, child(path, "subPath"))
        sub_path_expr = as_str(mount.get("subPathExpr"))
        if sub_path_expr:
            if sub_path:
                errors.append(
                    invalid(
                        child(item, "subPathExpr"),
                        sub_path_expr,
                        "subPathExpr and subPath are mutually exclusive",
                    )
                )
            errors += _local_descending_path(sub_path_expr, child(path, "subPathExpr"))
        propagation = mount.get("mountPropagation")
        if propagation is not None and propagation not in MOUNT_PROPAGATIONS:
            errors.append(not_supported(child(path, "mountPropagation"), propagation, MOUNT_PROPAGATIONS))
    return errors
