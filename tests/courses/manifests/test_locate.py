"""Finding the field an API answer names in the student's text (courses/manifests/locate.py).

Field paths in both of the API server's notations (apimachinery's ``spec.containers[0].image`` and
server-side apply's ``.spec.containers[name="web"].image``), found at the key's line and column in
the whole text; a field that is missing is pointed at through its nearest part that exists.
"""

from __future__ import annotations

import pytest

from courses.manifests.locate import (
    Field,
    FieldPathError,
    Location,
    Match,
    Member,
    Subscript,
    locate,
    parse_field_path,
)
from courses.manifests.parse import parse

PATHS = [
    ("metadata.name", (Field("metadata"), Field("name"))),
    ("spec.containers[0].image", (Field("spec"), Field("containers"), Subscript("0"), Field("image"))),
    ("data[config.yaml]", (Field("data"), Subscript("config.yaml"))),
    (
        "metadata.labels[app.kubernetes.io/name]",
        (Field("metadata"), Field("labels"), Subscript("app.kubernetes.io/name")),
    ),
    ("metadata.annotations[a]b]", (Field("metadata"), Field("annotations"), Subscript("a]b"))),
    (".spec.replicas", (Field("spec"), Field("replicas"))),
    (
        '.spec.containers[name="web"].image',
        (Field("spec"), Field("containers"), Match((("name", "web"),)), Field("image")),
    ),
    (
        '.ports[containerPort=80,protocol="TCP"]',
        (Field("ports"), Match((("containerPort", 80), ("protocol", "TCP")))),
    ),
    (
        '.metadata.finalizers[="example.com/x"]',
        (Field("metadata"), Field("finalizers"), Member("example.com/x")),
    ),
    ("", ()),
    ("<nil>", ()),
]


@pytest.mark.parametrize(("path", "steps"), PATHS, ids=[p[0] or "empty" for p in PATHS])
def test_field_paths_in_both_notations(path: str, steps: tuple[object, ...]) -> None:
    assert parse_field_path(path) == steps


@pytest.mark.parametrize("path", ["spec..x", "spec[0", "[0]x", "a.[0]"])
def test_a_path_that_is_neither_notation(path: str) -> None:
    with pytest.raises(FieldPathError):
        parse_field_path(path)


TEXT = """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app.kubernetes.io/name: web}
data:
  config.yaml: |
    a: 1
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  finalizers: [example.com/x]
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx
        ports:
        - containerPort: 80
      - name: sidecar
        image: ""
        ports:
        - containerPort: 8080
        - name: metrics
          containerPort: 9090
          protocol: UDP
---
apiVersion: v1
kind: Pod
metadata: &meta
  name: merged
spec: {containers: [{name: c}]}
extra:
  <<: *meta
"""

# (document number, field path, (line, column, exact))
LOCATIONS = [
    (1, "metadata.name", (4, 3, True)),
    (1, "data[config.yaml]", (7, 3, True)),
    (1, "metadata.labels[app.kubernetes.io/name]", (5, 12, True)),
    (1, "metadata.namespace", (3, 1, False)),  # missing: at metadata
    (2, "metadata.name", (13, 3, True)),  # the second document's, in the whole text
    (2, "spec.template.spec.containers[1].image", (24, 9, True)),
    (2, "spec.template.spec.containers[1].ports[1].containerPort", (28, 11, True)),
    (2, "spec.template.spec.containers[0].resources.limits[cpu]", (19, 9, False)),  # at the container
    (2, "spec.template.spec.containers[5].image", (18, 7, False)),  # no such item: at the list's key
    (2, '.spec.template.spec.containers[name="sidecar"].image', (24, 9, True)),
    (
        2,
        '.spec.template.spec.containers[name="sidecar"].ports[containerPort=8080,protocol="TCP"]',
        (26, 11, True),
    ),
    (
        2,
        '.spec.template.spec.containers[name="sidecar"].ports[containerPort=9090,protocol="UDP"].name',
        (27, 11, True),
    ),
    (
        2,
        '.spec.template.spec.containers[name="sidecar"].ports[containerPort=9090,protocol="TCP"]',
        (25, 9, False),
    ),
    (2, '.metadata.finalizers[="example.com/x"]', (14, 16, True)),
    (2, "spec.containers[0].image", (15, 1, False)),  # at spec, the part that exists
    (2, "", (10, 1, True)),
    (2, "not a [path", (10, 1, False)),
    (3, "spec.containers[0].image", (35, 21, False)),  # inside a flow mapping
    (3, "extra.name", (34, 3, True)),  # merged in: found where the merged mapping has it
]


@pytest.mark.parametrize(("number", "path", "where"), LOCATIONS, ids=[f"{n}:{p}" for n, p, _ in LOCATIONS])
def test_a_field_is_found_at_its_line_in_the_whole_text(
    number: int, path: str, where: tuple[int, int, bool]
) -> None:
    document = parse(TEXT)[number - 1]
    assert locate(document.node, path) == Location(*where)
