"""Routing: the table serves every verb the resource types declare, and refuses the rest as upstream."""

from __future__ import annotations

import pytest

from controlplane.api.kinds import builtin_types
from controlplane.apiserver import errors, requestinfo, routing
from controlplane.apiserver.handlers import resources, subresources, watch

TYPES = builtin_types()


def route(method: str, path: str, query: dict[str, str] | None = None) -> routing.Route:
    return routing.resolve(TYPES, requestinfo.parse(method, path, query or {}))


def refusal(method: str, path: str) -> errors.StatusError:
    with pytest.raises(errors.StatusError) as refused:
        route(method, path)
    return refused.value


def test_every_verb_a_stored_resource_declares_has_a_route() -> None:
    """A verb that ``kinds.py`` gives a resource (or a subresource) without a handler in the table
    would be answered 405: a new subresource needs its route."""
    missing = []
    for rtype in TYPES:
        if rtype.storage_prefix is None:
            continue
        for verb in rtype.verbs:
            shapes = {
                "list": [routing.COLLECTION],
                "create": [routing.COLLECTION],
                "deletecollection": [routing.COLLECTION],
                "watch": [routing.COLLECTION, routing.OBJECT],
            }.get(verb, [routing.OBJECT])
            missing += [
                f"{rtype.plural} {shape} {verb}" for shape in shapes if (shape, verb) not in routing.ROUTES
            ]
        for sub in rtype.subresources:
            shape = f"{routing.OBJECT}/{sub.name}"
            missing += [
                f"{rtype.plural}/{sub.name} {verb}"
                for verb in sub.verbs
                if (shape, verb) not in routing.ROUTES
            ]
    assert not missing, f"declared but not routed: {missing}"


def test_paths_reach_their_handlers() -> None:
    pods = "/api/v1/namespaces/default/pods"
    assert route("GET", pods).handler is resources.list_
    assert route("GET", pods, {"watch": "true"}).handler is watch.watch
    assert route("POST", pods).handler is resources.create
    assert route("GET", f"{pods}/web").handler is resources.get
    assert route("PATCH", f"{pods}/web/status").handler is resources.patch
    assert route("POST", f"{pods}/web/binding").handler is subresources.bind
    logs = route("GET", f"{pods}/web/log")
    assert logs.handler is subresources.stream_log and logs.plain_text
    scale = route("PUT", "/apis/apps/v1/namespaces/default/deployments/web/scale")
    assert scale.handler is subresources.write_scale and scale.namespace == "default"
    namespace = route("DELETE", "/api/v1/namespaces/team")
    assert namespace.handler is resources.delete and namespace.rtype.plural == "namespaces"
    review = route("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
    assert review.handler is None, "a review is never stored: reviews.py answers it"


def test_what_upstream_has_no_route_for_is_refused_with_its_status() -> None:
    unknown = refusal("GET", "/api/v1/namespaces/default/widgets")
    assert unknown.code == 404 and unknown.details is not None and unknown.details["causes"]
    # Every router 404 carries details: kubectl debug reads Details.Name of the 404 for a subresource
    # the server lacks, and a Status without details made it crash.
    for path in (
        "/api/v1/namespaces/default/pods/web/widgets",
        "/api/v1/namespaces/default/nodes/node-1",  # cluster-scoped
        "/api/v1/pods/web",
    ):
        missing = refusal("GET", path)
        assert (missing.code, missing.reason) == (404, "NotFound"), path
        assert missing.details is not None and missing.details["causes"], path
    put_collection = refusal("PUT", "/api/v1/namespaces/default/pods")
    assert (
        put_collection.code == 405
        and put_collection.message == 'update is not supported on resources of kind "pods"'
    )
    post_named = refusal("POST", "/api/v1/namespaces/default/configmaps/web")
    assert (
        post_named.code == 405
        and post_named.message == 'create is not supported on resources of kind "configmaps"'
    )
    delete_log = refusal("DELETE", "/api/v1/namespaces/default/pods/web/log")
    assert delete_log.message == 'delete is not supported on resources of kind "pods/log"'
    no_namespace = refusal("POST", "/api/v1/pods")
    assert no_namespace.code == 400 and "namespace of the object must be set" in no_namespace.message
