"""The API server of one cluster: an ASGI application running upstream's request pipeline.

``APIServer`` is mounted at ``/clusters/<cluster>/`` (see ``config/asgi.py``). For each request it
reads the request info, then runs the stages in kube-apiserver's order (``DefaultBuildHandlerChain``):

    authentication -> audit -> impersonation -> flow control -> authorization -> handler
                                                              (decode, admission, validation, storage)

Every stage reports on the trace (``request.stage``) what it decided, so the diagram can light it up
as the request passes, and stop a denied request at the stage that denied it. ``request.received``
comes once authentication has said who sent the request (its ``from`` is that user's diagram node; a
request without valid credentials comes from ``user:anonymous``), ``request.completed`` last, with the
store revision the request wrote, if it wrote one. Each of them names what the request is about (user,
verb, resource, namespace, name), worked out once per request. Failures are always a
Status with upstream's code; an unexpected exception is logged and answered as 500 InternalError,
never as a dropped connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import operator
import time
from functools import partial
from typing import Any

from controlplane.api.resources import ResourceRegistry, ResourceType
from controlplane.api.strategies.common import UndecodableObject
from controlplane.apiserver import admission, errors, health, pipeline, requestinfo
from controlplane.apiserver.admission.setup import AdmissionOptions
from controlplane.apiserver.admission.setup import build as build_admission
from controlplane.apiserver.authz import escalation
from controlplane.apiserver.authz.authorizer import Attributes
from controlplane.apiserver.authz.policy import Authorization
from controlplane.apiserver.encryption.config import ResourceTransformers
from controlplane.apiserver.filters import audit, authentication, authorization, flowcontrol, impersonation
from controlplane.apiserver.filters.x509 import X509Authenticator
from controlplane.apiserver.flowcontrol.metrics import FlowControlMetrics
from controlplane.apiserver.handlers import discovery, finalize, resources, watch
from controlplane.apiserver.http import (
    Accept,
    Receive,
    Request,
    Scope,
    Send,
    dumps,
    negotiate,
    respond,
    respond_error,
)
from controlplane.apiserver.kubeletclient import KubeletConnections
from controlplane.apiserver.kubernetesservice import KubernetesServiceController, KubernetesServiceOptions
from controlplane.apiserver.metrics import APIServerMetrics
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.watchcache import WatchCache
from controlplane.clock import SYSTEM_CLOCK, Clock
from controlplane.identity import UserInfo
from controlplane.metrics import MetricsRegistry
from controlplane.serviceaccount import TokenIssuer
from controlplane.store import Store
from controlplane.trace import NULL_SINK, TraceSink, nodes, recording_revisions, request_context

logger = logging.getLogger(__name__)

#: Paths anyone may read without credentials (upstream: system:public-info-viewer). ``/version/`` is
#: what the official Python client's ``VersionApi.get_code`` asks for.
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})

#: The steps of ``APIServer.start``, named as kube-apiserver's post-start hooks that do the same.
SYSTEM_NAMESPACES_HOOK = "start-system-namespaces-controller"
FLOWCONTROL_HOOK = "apiserver/bootstrap-system-flowcontrol-configuration"
RBAC_HOOK = "rbac/bootstrap-roles"
#: The ``kubernetes`` Service, its Endpoints and EndpointSlice (``kubernetesservice.py``).
BOOTSTRAP_CONTROLLER_HOOK = "bootstrap-controller"
POST_START_HOOKS = (SYSTEM_NAMESPACES_HOOK, FLOWCONTROL_HOOK, RBAC_HOOK, BOOTSTRAP_CONTROLLER_HOOK)

#: Namespaces every cluster has (upstream's metav1.NamespaceDefault, NamespaceSystem, NamespacePublic,
#: and the node lease namespace).
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


#: The topology diagram's node for a user (``trace.nodes.for_user``), by the name tests know it by.
diagram_node = nodes.for_user


def _with_warnings(headers: dict[str, str] | None, warnings: list[str]) -> dict[str, str]:
    """``headers`` with admission's warnings added to any ``Warning`` header already there."""
    merged = dict(headers or {})
    values = [f"299 - {json.dumps(w)}" for w in warnings]
    if merged.get("Warning"):
        values.insert(0, merged["Warning"])
    merged["Warning"] = ", ".join(values)
    return merged


class APIServer:
    """One cluster's API server."""

    def __init__(
        self,
        cluster: str,
        store: Store,
        *,
        resource_types: ResourceRegistry,
        tokens: authentication.TokenAuthenticator,
        clock: Clock = SYSTEM_CLOCK,
        trace: TraceSink = NULL_SINK,
        server_address: str = "127.0.0.1:6443",
        watch_cache_window: int = 10_000,
        kubelets: KubeletConnections | None = None,
        service_account_issuer: TokenIssuer | None = None,
        client_certificates: X509Authenticator | None = None,
        anonymous: bool = False,
        flow_control: flowcontrol.FlowControlOptions | None = None,
        metrics_registry: MetricsRegistry | None = None,
        auditor: audit.Auditor | None = None,
        encryption: ResourceTransformers | None = None,
        admission_options: AdmissionOptions | None = None,
        kubernetes_service: KubernetesServiceOptions | None = None,
    ) -> None:
        self.cluster = cluster
        self.store = store
        self.types = resource_types
        self.tokens = tokens
        self.clock = clock
        self.trace = trace
        self.server_address = server_address
        self.registries: dict[tuple[str, str, str], Registry] = {}
        self.caches: dict[str, WatchCache] = {}
        for t in resource_types:
            if t.storage_prefix is None:
                continue
            self.registries[(t.group, t.version, t.plural)] = finalize.registry_for(store, t, clock)
            cache_key = t.cache_key or t.storage_prefix
            if cache_key not in self.caches:
                self.caches[cache_key] = WatchCache(store, t, window=watch_cache_window)
        self.set_encryption(encryption or ResourceTransformers({}))
        #: Signs TokenRequests and checks ServiceAccount tokens (None: this server has neither).
        self.service_account_issuer = service_account_issuer
        self.authenticator = authentication.Authenticator(
            tokens,
            service_accounts=None
            if service_account_issuer is None
            else authentication.ServiceAccountTokenAuthenticator(
                service_account_issuer, authentication.ClusterObjects(self.registries, self.caches), clock
            ),
            x509=client_certificates,
            anonymous=anonymous,
        )
        #: The authorizers (Node, RBAC) over the caches, the bootstrap policy, the escalation checks.
        self.authorization = Authorization(resource_types, self.caches, self.registries)
        #: How ``pods/log`` reaches the kubelets (the runtime registers the in-process ones).
        self.kubelets = kubelets if kubelets is not None else KubeletConnections()
        #: API Priority and Fairness, or max-in-flight (``filters/flowcontrol.py``).
        self.flow_control = flowcontrol.build(
            flow_control or flowcontrol.FlowControlOptions(),
            caches=self.caches,
            registries=self.registries,
            types=resource_types,
            trace=trace,
            cluster=cluster,
        )
        #: The cluster's metrics (``/metrics``), and this server's own among them.
        self.metrics_registry = metrics_registry if metrics_registry is not None else MetricsRegistry()
        self.metrics = APIServerMetrics.for_server(self.metrics_registry, store, resource_types, self.caches)
        #: Records who did what (None: no audit policy, nothing is recorded).
        self.auditor = auditor
        # Flow control's counts as upstream's apiserver_flowcontrol_* series.
        self.metrics_registry.register(FlowControlMetrics(self.flow_control.snapshot))
        #: The admission chain (``admission/``) and the client that calls its webhooks.
        self.admission_options = admission_options or AdmissionOptions()
        self.admission, self.webhook_client = build_admission(
            self.admission_options,
            registries=self.registries,
            caches=self.caches,
            trace=trace,
            cluster=cluster,
            authorize=self._may,  # SecretsPolicy asks RBAC whether a ServiceAccount may get a Secret
        )
        #: Keeps the ``kubernetes`` Service and its endpoints (None: this server serves no Services).
        self.kubernetes_service = self._kubernetes_service(kubernetes_service or KubernetesServiceOptions())
        self.started = False
        #: The steps of ``start`` done so far, by their upstream post-start hook names (``/readyz``).
        self.start_steps: set[str] = set()
        self.caches_synced = False
        self.stopping = False

    def _kubernetes_service(self, options: KubernetesServiceOptions) -> KubernetesServiceController | None:
        services = self.registries.get(("", "v1", "services"))
        endpoints = self.registries.get(("", "v1", "endpoints"))
        if services is None or endpoints is None:
            return None
        return KubernetesServiceController(
            services=services,
            endpoints=endpoints,
            endpoint_slices=self.registries.get(("discovery.k8s.io", "v1", "endpointslices")),
            store=self.store,
            clock=self.clock,
            options=options,
            cache_for=lambda registry: self.caches.get(
                registry.rtype.cache_key or registry.rtype.storage_prefix or ""
            ),
        )

    def set_encryption(self, encryption: ResourceTransformers) -> None:
        """Encrypt at rest as ``encryption`` says, from the next read or write on (a reload is this call).

        Each registry and watch cache gets the transformer of its resource, or None (stored as is).
        A type stored as another's (``events.k8s.io`` Events are core Events) follows the owner of its
        storage, as upstream's configuration names it (``events``, never ``events.events.k8s.io``).
        """
        owners = {t.storage_prefix: t for t in self.types if t.storage_prefix and t.conversion is None}
        owner: ResourceType | None
        for (group, _, plural), registry in self.registries.items():
            rtype = registry.rtype
            owner = None
            if rtype.conversion is not None and rtype.storage_prefix is not None:
                owner = owners.get(rtype.storage_prefix)
            if owner is not None:
                group, plural = owner.group, owner.plural
            registry.transformer = encryption.for_resource(group, plural)
        for cache in self.caches.values():
            served = self.registries.get((cache.rtype.group, cache.rtype.version, cache.rtype.plural))
            cache.transformer = served.transformer if served is not None else None
        self.encryption = encryption

    async def _may(
        self, user: UserInfo, verb: str, group: str, resource: str, namespace: str, name: str
    ) -> bool:
        """The authorizer's answer for an admission plugin's question (as a SubjectAccessReview)."""
        attrs = Attributes(user, verb, api_group=group, resource=resource, namespace=namespace, name=name)
        return (await self.authorization.authorize_consistently(attrs)).allowed

    async def start(self) -> None:
        """Create the system namespaces, fill every watch cache (list, then watch), bootstrap APF's
        configuration, the RBAC policy and the ``kubernetes`` Service, then serve."""
        self.stopping = False
        await self._ensure_system_namespaces()
        self.start_steps.add(SYSTEM_NAMESPACES_HOOK)
        # A cache that holds another version of shared objects (events.k8s.io's Events, stored as
        # core/v1 ones) is filled on its first use: most clusters never ask, and it would double
        # the memory of the most numerous objects.
        await asyncio.gather(
            *(cache.start() for cache in self.caches.values() if cache.rtype.conversion is None)
        )
        self.caches_synced = True
        await self.flow_control.start()
        self.start_steps.add(FLOWCONTROL_HOOK)
        await self.authorization.start()  # upstream's rbac/bootstrap-roles post-start hook
        self.start_steps.add(RBAC_HOOK)
        if self.kubernetes_service is not None:
            # Its first reconciliation before the server is ready: nothing else can take 10.96.0.1.
            await self.kubernetes_service.start()
        self.start_steps.add(BOOTSTRAP_CONTROLLER_HOOK)
        self.started = True

    async def _ensure_system_namespaces(self) -> None:
        """kube-apiserver's system-namespaces controller: these four always exist.

        (``pkg/controlplane/controller/systemnamespaces``; the API server recreates them if deleted.)
        """
        registry = self.registries.get(("", "v1", "namespaces"))
        if registry is None:
            return
        for name in SYSTEM_NAMESPACES:
            obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            with contextlib.suppress(errors.StatusError):  # already there
                await registry.create(obj, "")

    async def _cache_for(self, rtype: ResourceType) -> WatchCache | None:
        """The watch cache serving ``rtype``, started (and so filled) if this is its first use."""
        cache = self.caches.get(rtype.cache_key or "")
        if cache is not None and not cache.ready:
            await cache.start()  # starts it once; every caller waits until it is filled
        return cache

    async def stop(self) -> None:
        self.started = False
        self.stopping = True
        if self.kubernetes_service is not None:  # upstream's stop-kubernetes-service-controller hook
            await self.kubernetes_service.stop()
        await self.flow_control.stop()
        if self.store.observer is self.metrics:
            self.store.observer = None
        await self.authorization.stop()
        await asyncio.gather(*(cache.stop() for cache in self.caches.values()))
        if self.auditor is not None:
            await self.auditor.close()
        await self.kubelets.aclose()
        await self.webhook_client.aclose()

    # -- ASGI ------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request.from_scope(scope, receive, scope.get("path", "/") or "/")
        started = time.perf_counter()
        inflight = self.metrics.started(request)
        send = audit.observing(request, send, self.auditor)
        code = 500
        with request_context(request.audit_id), recording_revisions() as written:
            try:
                code = await self._serve(request, send)
            except errors.StatusError as error:
                code = error.code
                await respond_error(send, error, request.audit_id)
            except Exception as error:  # a bug: answer like upstream's panic recovery, and log it
                logger.exception("API request %s %s failed", request.method, request.path)
                code = 500
                audit.record_panic(request, error)
                with contextlib.suppress(Exception):
                    await respond_error(send, errors.internal_error(error), request.audit_id)
            finally:
                if not request.received_traced:  # refused before authentication (a malformed path)
                    self._received(request)
                duration = time.perf_counter() - started
                self.metrics.finished(inflight, request, code, duration)
                audit_level = audit.record_completed(request, code)
                if self.trace.enabled:
                    completed: dict[str, Any] = {"code": code, "duration": round(duration, 6)}
                    if written:
                        completed["revision"] = written[-1]
                    if audit_level:  # its audit event's auditID is this event's id
                        completed["audit"] = audit_level
                    self._trace("request.completed", request, **self._identity(request), **completed)

    def _trace(self, type: str, request: Request, **fields: Any) -> None:
        if self.trace.enabled:
            self.trace.emit(
                type,
                cluster=self.cluster,
                id=request.audit_id,
                **{"from": request.source or nodes.ANONYMOUS, "to": nodes.APISERVER},
                **fields,
            )

    @staticmethod
    def _identity(request: Request) -> dict[str, Any]:
        """What ``request`` is about, for each of its ``request.*`` events: its user (as authenticated)
        and what it asks for. Built once, by its first event, and kept on the request."""
        identity = request.trace_identity
        if identity is None:
            identity = {}
            if request.user is not None:
                identity["user"] = request.user.username
            info = request.info
            if info is not None:
                identity["verb"] = info.verb
                for name in ("resource", "namespace", "name", "subresource"):
                    if value := getattr(info, name):
                        identity[name] = value
            request.trace_identity = identity
        return identity

    def _received(self, request: Request) -> None:
        """``request.received``: who sent it (once authentication has said) and what it asks for."""
        request.received_traced = True
        if not self.trace.enabled:
            return
        fields: dict[str, Any] = {"method": request.method, "path": request.path, **self._identity(request)}
        if agent := request.headers.get("user-agent"):
            fields["user_agent"] = agent
        self._trace("request.received", request, **fields)

    def _stage(self, request: Request, stage: str, outcome: str, detail: str, /, **fields: str | int) -> None:
        self._trace(
            "request.stage",
            request,
            stage=stage,
            outcome=outcome,
            detail=detail,
            **self._identity(request),
            **fields,
        )

    # -- the pipeline ----------------------------------------------------------------------------

    async def _serve(self, request: Request, send: Send) -> int:
        info = requestinfo.parse(request.method, request.path, request.query)
        request.info = info

        if request.path in PUBLIC_PATHS and request.method == "GET":
            self._received(request)
            return await self._public(request, send)

        # The stages are trace events only: with nobody watching, no stage is reported at all.
        reporter = partial(self._stage, request) if self.trace.enabled else None
        with pipeline.reporting(reporter):
            try:
                authenticated = await authentication.authenticate(request, self.authenticator)
            except authentication.Unauthenticated as refused:
                self._received(request)  # from user:anonymous: the diagram shows the bounce
                pipeline.stage("authentication", "deny", refused.why)
                audit.record_unauthenticated(request, self.auditor)
                raise
            request.user = authenticated.user
            request.source = nodes.for_user(request.user.username, request.headers.get("user-agent", ""))
            self._received(request)
            pipeline.stage("authentication", "pass", authenticated.how)
            audit.record_received(request, self.auditor)
            await impersonation.impersonate(request, self.authorization)
            async with self.flow_control.admit(request, send) as send:
                try:
                    reason = await authorization.authorize(
                        request,
                        self.authorization,
                        (lambda **fields: self._trace("rbac.decision", request, **fields))
                        if self.trace.enabled
                        else None,
                    )
                except errors.StatusError as refused:
                    audit.record_authorization(request, False, refused.message)
                    raise
                audit.record_authorization(request, True, reason)

                if not info.is_resource_request:
                    return await self._non_resource(request, send)
                with escalation.requesting(request.user):  # RBAC writes check the writer's permissions
                    return await self._resource(request, send)

    async def _public(self, request: Request, send: Send) -> int:
        if request.path in ("/version", "/version/"):
            await respond(send, 200, dumps(discovery.version()), audit_id=request.audit_id)
            return 200
        endpoint = request.path.strip("/")
        answer = await health.run_all(
            endpoint,
            self._health_checks(endpoint),
            verbose="verbose" in request.query,
            exclude=request.query_values("exclude"),
        )
        return await self._health_answer(request, send, answer)

    async def _health_answer(self, request: Request, send: Send, answer: health.Answer) -> int:
        await respond(
            send,
            answer.status,
            answer.body.encode(),
            content_type="text/plain; charset=utf-8",
            headers={"X-Content-Type-Options": "nosniff"},
            audit_id=request.audit_id,
        )
        return answer.status

    def _health_checks(self, endpoint: str) -> list[health.Named]:
        """kube-apiserver's checks, in its order: ``/readyz`` adds informer-sync and shutdown."""
        checks = [
            health.Named("ping", health.passing),
            health.Named("log", health.passing),
            health.Named("etcd", health.store_check(self.store.get)),
        ]
        if endpoint == "readyz":
            synced = health.flag_check(lambda: self.caches_synced, "the watch caches are not filled yet")
            checks.append(health.Named("informer-sync", synced))
        for step in sorted(POST_START_HOOKS):
            done = health.flag_check(partial(operator.contains, self.start_steps, step), "not finished")
            checks.append(health.Named(f"poststarthook/{step}", done))
        if endpoint == "readyz":
            up = health.flag_check(lambda: not self.stopping, "process is shutting down")
            checks.append(health.Named("shutdown", up))
        return checks

    async def _non_resource(self, request: Request, send: Send) -> int:
        path = request.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        body: Any = None
        if path == "/api":
            body = discovery.api_versions(self.server_address)
        elif path == "/apis":
            body = discovery.api_group_list(self.types)
        elif len(parts) == 2 and parts[0] == "api":
            body = discovery.api_resource_list(self.types, "", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            body = discovery.api_group(self.types, parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            body = discovery.api_resource_list(self.types, parts[1], parts[2])
        elif parts[:2] == ["openapi", "v3"]:
            from controlplane.apiserver.handlers import openapi

            reply = openapi.serve(self.types, parts[2:], request)  # cached bytes, ETag, immutable caching
            await respond(send, reply.status, reply.body, headers=reply.headers, audit_id=request.audit_id)
            return reply.status
        elif path in ("/healthz", "/livez", "/readyz"):
            return await self._public(request, send)
        elif parts[0] in health.ENDPOINTS and len(parts) > 1:  # /readyz/etcd, /livez/poststarthook/...
            named = {c.name: c for c in self._health_checks(parts[0])}.get("/".join(parts[1:]))
            if named is not None:
                return await self._health_answer(request, send, await health.run_one(named))
        elif path == "/metrics":  # Prometheus' text format (OpenMetrics if asked for)
            text, content_type = self.metrics_registry.exposition(request.headers.get("accept", ""))
            await respond(send, 200, text, content_type=content_type, audit_id=request.audit_id)
            return 200
        if body is None:
            raise errors.StatusError(
                404,
                "NotFound",
                "the server could not find the requested resource",
                {"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]},
            )
        await respond(send, 200, dumps(body), audit_id=request.audit_id)
        return 200

    async def _resource(self, request: Request, send: Send) -> int:
        info = request.info
        assert info is not None
        rtype = self.types.lookup(info.api_group, info.api_version, info.resource)
        if rtype is None:
            raise errors.StatusError(
                404,
                "NotFound",
                "the server could not find the requested resource",
                {"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]},
            )
        verb = info.verb
        if info.subresource and rtype.subresource(info.subresource) is None:
            raise errors.StatusError(404, "NotFound", "the server could not find the requested resource")
        if not rtype.namespaced and info.namespace and info.resource != "namespaces":
            raise errors.StatusError(404, "NotFound", "the server could not find the requested resource")
        allowed_verbs = rtype.verbs
        sub = rtype.subresource(info.subresource) if info.subresource else None
        if sub is not None:
            allowed_verbs = sub.verbs
        if verb not in allowed_verbs:
            raise errors.method_not_supported(
                info.resource + (f"/{info.subresource}" if info.subresource else ""), rtype.group, verb
            )
        # A collection takes no PUT or PATCH, and a named object no POST (except its subresources):
        # upstream has no route for them, so 405.
        if (verb in ("update", "patch") and not info.name) or (
            verb == "create" and info.name and not info.subresource and rtype.storage_prefix is not None
        ):
            raise errors.method_not_supported(rtype.plural, rtype.group, verb)
        registry = self.registries.get((rtype.group, rtype.version, rtype.plural))
        if registry is None:
            return await self._virtual(request, send, rtype)
        namespace = info.namespace if rtype.namespaced else ""
        if rtype.namespaced and not namespace and verb not in ("list", "watch"):
            if verb == "create":
                raise errors.bad_request("the namespace of the object must be set for namespaced resources")
            raise errors.StatusError(404, "NotFound", "the server could not find the requested resource")
        name = info.name
        if info.resource == "namespaces" and verb not in ("list", "watch", "create", "deletecollection"):
            name = info.name
        # pods/log answers text/plain whatever the client accepts (upstream: ProducesMIMETypes).
        accept = Accept() if info.subresource == "log" else negotiate(request)
        ctx = resources.Context(
            rtype=rtype,
            registry=registry,
            cache=await self._cache_for(rtype),
            store=self.store,
            request=request,
            namespace=namespace,
            name=name,
            subresource=info.subresource,
            accept=accept,
        )
        if verb == "watch":
            await watch.watch(ctx, send, trace=self.trace)
            return 200
        if info.subresource == "log":
            from controlplane.apiserver.handlers import subresources

            return await subresources.stream_log(
                ctx, send, self.kubelets, self.registries.get(("", "v1", "nodes"))
            )
        handler = {
            "get": resources.get,
            "list": resources.list_,
            "create": resources.create,
            "update": resources.update,
            "patch": resources.patch,
            "delete": resources.delete,
            "deletecollection": resources.delete_collection,
        }.get(verb)
        if handler is None:
            raise errors.method_not_supported(rtype.plural, rtype.group, verb)
        with admission.admitting(
            self.admission, self._admission_attributes(request, rtype, namespace)
        ) as scope:
            try:
                if info.subresource == "token" and verb == "create":  # serviceaccounts/token
                    from controlplane.apiserver.handlers import tokenrequest

                    reply = await tokenrequest.create(ctx, self.service_account_issuer, self.registries)
                elif info.subresource and info.subresource != "status":
                    from controlplane.apiserver.handlers import subresources

                    reply = await subresources.handle(ctx, verb)
                else:
                    reply = await handler(ctx)
            except UndecodableObject as error:
                # A value that cannot become the kind's Go type (a bad quantity, bad base64): upstream's
                # decoder refuses it before validation, with 400 BadRequest.
                raise errors.bad_request(error.message(rtype.kind, rtype.version)) from None
            except errors.StatusError as error:
                if scope.warnings:
                    error.headers = _with_warnings(error.headers, scope.warnings)
                raise
            if scope.warnings:
                reply.headers = _with_warnings(reply.headers, scope.warnings)
        await respond(send, reply.status, reply.body, headers=reply.headers, audit_id=request.audit_id)
        return reply.status

    @staticmethod
    def _admission_attributes(request: Request, rtype: ResourceType, namespace: str) -> admission.Attributes:
        """What admission needs to know of the request (the operation comes with each write)."""
        info = request.info
        assert info is not None and request.user is not None
        sub = rtype.subresource(info.subresource) if info.subresource else None
        kind_group, kind_version, kind = rtype.group, rtype.version, rtype.kind
        if sub is not None and sub.kind:
            kind = sub.kind
            kind_group = sub.group if sub.group is not None else rtype.group
            kind_version = sub.version if sub.version is not None else rtype.version
        options: dict[str, Any] = {}
        if manager := request.query.get("fieldManager"):
            options["fieldManager"] = manager
        dry_run = request.query.get("dryRun") == "All"
        if dry_run:
            options["dryRun"] = ["All"]
        return admission.Attributes(
            user=request.user,
            operation="",
            group=rtype.group,
            version=rtype.version,
            resource=rtype.plural,
            subresource=info.subresource,
            kind=kind,
            kind_group=kind_group,
            kind_version=kind_version,
            namespace=namespace,
            name=info.name,
            namespaced=rtype.namespaced,
            dry_run=dry_run,
            options=options,
        )

    async def _virtual(self, request: Request, send: Send, rtype: ResourceType) -> int:
        """Resources that are never stored (reviews): answered by their own handlers."""
        from controlplane.apiserver.handlers import reviews

        reply = await reviews.handle(self, request, rtype)
        await respond(send, reply.status, reply.body, audit_id=request.audit_id)
        return reply.status
