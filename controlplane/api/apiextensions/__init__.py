"""API extensions: CustomResourceDefinitions and the custom resources they define.

A **CustomResourceDefinition** (``apiextensions.k8s.io/v1``) teaches a running API server a new
resource: its names (``crontabs``, ``CronTab``), its group and versions, its scope, and for each version
an OpenAPI v3 schema. Once the definition is *Established*, the server serves the new resource under
``/apis/<group>/<version>/`` like any built-in one, and kubectl finds it through discovery.

Upstream keeps this in its own server, ``k8s.io/apiextensions-apiserver``, chained in front of
kube-apiserver. Here the pieces live in two layers:

* ``controlplane.api.apiextensions.structural``: the schema rules (structural schemas, validation of
  objects against them, pruning of unknown fields, defaulting);
* ``controlplane.api.apiextensions.customresources``: the resource types a definition serves, the
  strategy of their objects and their ``kubectl get`` columns;
* ``controlplane.apiserver.apiextensions``: the controller inside the API server that installs and
  removes those resource types as definitions come and go, and empties a deleted definition.
"""
