"""Conversion: one stored object, served in more than one API version.

A Kubernetes resource can be served by several group-versions at once. Events are the classic case:
``/api/v1/.../events`` (the old core API) and ``/apis/events.k8s.io/v1/.../events`` (the newer one)
are two views of **the same objects**. kube-apiserver keeps one form in etcd and converts on the way
in and out: a request's object is converted to the stored form before it is written, and every object
read (get, list, watch) is converted to the version the client asked for. Upstream goes through an
*internal* version (``pkg/apis/<group>/types.go``) with generated and hand-written conversion
functions (``pkg/apis/<group>/<version>/conversion.go``); the storage version is chosen per resource
(``pkg/kubeapiserver/default_storage_factory_builder.go``, where ``events.k8s.io`` events cohabit with
core ``events``).

Here, each converting resource type carries a ``StorageConversion`` (``controlplane.api.resources``):
two pure functions between the version it serves and the stored form. Types without one are stored
exactly as they are served. The registry applies them where objects are encoded and decoded, and the
watch cache where it decodes what it keeps, so every path a client can read through sees its version.
"""

from __future__ import annotations
