"""The API server of one cluster: an ASGI application running upstream's request pipeline.

``APIServer`` is mounted at ``/clusters/<cluster>/`` (see ``config/asgi.py``). Each request is read
once (``http.Request``, with its request info), then passes the stages in kube-apiserver's order
(``DefaultBuildHandlerChain``); ``APIServer._serve`` is the whole sequence, one stage per line, each
taking the value the one before made (``pipeline.py``)::

    authentication -> audit -> impersonation -> flow control -> authorization -> handler
                                                              (decode, admission, validation, storage)

The handler is chosen by ``routing.py`` from the URL's shape and the verb, and every write it makes
goes through the resource's registry with the request's ``RequestScope`` (``requestscope.py``): who
asks, its admission, its trace, the revisions it writes.

Every stage reports on the trace (``request.stage``) what it decided, so the diagram can light it up
as the request passes, and stop a denied request at the stage that denied it. ``request.received``
comes once authentication has said who sent the request (its ``from`` is that user's diagram node; a
request without valid credentials comes from ``user:anonymous``; it carries the decoded ``query``, so a
check sees ``dryRun``, ``resourceVersion`` or ``watch``), ``request.completed`` last, with the store
revision the request wrote, if it wrote one, and the Status ``reason`` of an error answer (a 409 is
``Conflict`` or ``AlreadyExists``). Each of them names what the request is about (user, verb,
resource, namespace, name), worked out once per request. Failures are always a
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
from urllib.parse import parse_qsl

from controlplane.api.resources import ResourceRegistry, ResourceType
from controlplane.api.strategies.common import UndecodableObject
from controlplane.apiserver import admission, componentstatus, deprecation, errors, health, routing
from controlplane.apiserver.admission.setup import AdmissionOptions
from controlplane.apiserver.admission.setup import build as build_admission
from controlplane.apiserver.apiextensions import CustomResourceDefinitions
from controlplane.apiserver.apiservermetrics import APIServerMetrics
from controlplane.apiserver.authz.authorizer import Attributes
from controlplane.apiserver.authz.policy import Authorization
from controlplane.apiserver.clusterauthenticationtrust import ClusterAuthenticationTrustController
from controlplane.apiserver.encryption.config import ResourceTransformers
from controlplane.apiserver.filters import (
    audit,
    authentication,
    authorization,
    impersonation,
    priority_and_fairness,
)
from controlplane.apiserver.filters.bootstraptoken import BootstrapTokenAuthenticator, secret_getter
from controlplane.apiserver.filters.x509 import X509Authenticator
from controlplane.apiserver.flowcontrol.flowcontrolmetrics import FlowControlMetrics
from controlplane.apiserver.handlers import discovery, finalize, openapi, openapi_v2, reviews
from controlplane.apiserver.handlers.resources import Backends, Context
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
from controlplane.apiserver.identitylease import IdentityLeaseController
from controlplane.apiserver.kubeadmconfig import KubeadmInit
from controlplane.apiserver.kubeletclient import KubeletConnections
from controlplane.apiserver.kubernetesservice import KubernetesServiceController, KubernetesServiceOptions
from controlplane.apiserver.kubesystemaddons import ensure_kube_system_addons
from controlplane.apiserver.pipeline import (
    NO_REPORT,
    Authenticated,
    Authorized,
    Impersonated,
    Reporter,
    Stage,
)
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.requestscope import RequestScope
from controlplane.apiserver.storageclassaddon import ensure_default_storage_class
from controlplane.apiserver.systempriorityclasses import (
    SYSTEM_PRIORITY_CLASSES_HOOK,
    ensure_system_priority_classes,
)
from controlplane.apiserver.watchcache import WatchCache
from controlplane.clock import SYSTEM_CLOCK, Clock
from controlplane.identity import SYSTEM_MASTERS, UserInfo
from controlplane.metrics import MetricsRegistry
from controlplane.pki import certificate_pem
from controlplane.serviceaccounttokens import TokenIssuer
from controlplane.store import Store
from controlplane.store.conditions import StoreUnreachable
from controlplane.trace import NULL_SINK, TraceSink, nodes, request_context

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
POST_START_HOOKS = (
    SYSTEM_NAMESPACES_HOOK,
    FLOWCONTROL_HOOK,
    RBAC_HOOK,
    SYSTEM_PRIORITY_CLASSES_HOOK,
    BOOTSTRAP_CONTROLLER_HOOK,
)

#: Namespaces every cluster has (upstream's metav1.NamespaceDefault, NamespaceSystem, NamespacePublic,
#: and the node lease namespace).
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
#: Their creation: the API server's own, not admitted.
SYSTEM_NAMESPACES_SCOPE = RequestScope.unadmitted(
    reason=f"{SYSTEM_NAMESPACES_HOOK}: the server's own namespaces"
)


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


def _status_reason(error: errors.StatusError) -> str | None:
    """The reason of the Status an error answer carries; None for a plain-text answer (flow control's
    429 is Go's ``http.Error``, no Status) and for an empty reason (a Status omits it)."""
    if isinstance(error, errors.PlainTextError):
        return None
    return error.reason or None


def _query_parameters(raw_query: str) -> dict[str, str | list[str]]:
    """A query string as ``request.received`` names it: each parameter's decoded value, or the list of
    its values, in order, when it is repeated (``/readyz?exclude=etcd&exclude=log``)."""
    found: dict[str, str | list[str]] = {}
    for name, value in parse_qsl(raw_query, keep_blank_values=True):
        have = found.get(name)
        if have is None:
            found[name] = value
        elif isinstance(have, list):
            have.append(value)
        else:
            found[name] = [have, value]
    return found


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
        watch_cache_window: int = 0,
        kubelets: KubeletConnections | None = None,
        service_account_issuer: TokenIssuer | None = None,
        client_certificates: X509Authenticator | None = None,
        anonymous: bool = False,
        flow_control: priority_and_fairness.FlowControlOptions | None = None,
        metrics_registry: MetricsRegistry | None = None,
        auditor: audit.Auditor | None = None,
        encryption: ResourceTransformers | None = None,
        admission_options: AdmissionOptions | None = None,
        kubernetes_service: KubernetesServiceOptions | None = None,
        kubeadm: KubeadmInit | None = None,
    ) -> None:
        self.cluster = cluster
        self.store = store
        self.types = resource_types
        self.tokens = tokens
        self.clock = clock
        self.trace = trace
        self.server_address = server_address
        self.registries: dict[tuple[str, str, str], Registry] = {}
        #: Whether ``scheduler`` or ``controller-manager`` runs, for ``componentstatuses`` (the lab
        #: sets it; None: nothing runs beside this server, and their probes are refused).
        self.components_healthy: componentstatus.ComponentsHealthy | None = None
        self.caches: dict[str, WatchCache] = {}
        for t in resource_types:
            if t.storage_prefix is None:
                continue
            self.registries[(t.group, t.version, t.plural)] = finalize.registry_for(store, t, clock)
            cache_key = t.cache_key or t.storage_prefix
            if cache_key not in self.caches:
                self.caches[cache_key] = WatchCache(store, t, window=watch_cache_window, clock=clock)
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
            bootstrap_tokens=BootstrapTokenAuthenticator(secret_getter(self.registries, self.caches), clock),
        )
        #: The authorizers (Node, RBAC) over the caches, the bootstrap policy, the escalation checks.
        self.authorization = Authorization(resource_types, self.caches, self.registries)
        #: How ``pods/log`` reaches the kubelets (the runtime registers the in-process ones).
        self.kubelets = kubelets if kubelets is not None else KubeletConnections()
        #: API Priority and Fairness, or max-in-flight (``filters/priority_and_fairness.py``).
        self.flow_control = priority_and_fairness.build(
            flow_control or priority_and_fairness.FlowControlOptions(),
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
        #: Groups only their members may impersonate: a sandbox's guardrails exempt system:masters.
        self._protected_groups = (
            frozenset({SYSTEM_MASTERS}) if self.admission_options.guardrails is not None else frozenset()
        )
        self.admission, self.webhook_client = build_admission(
            self.admission_options,
            registries=self.registries,
            caches=self.caches,
            trace=trace,
            cluster=cluster,
            authorize=self._may,  # CertificateApproval asks whether the user may approve for a signer
            clock=clock,
        )
        #: What handlers may reach beyond their own resource.
        self.backends = Backends(self.registries, self.kubelets, service_account_issuer, trace)
        #: Keeps the ``kubernetes`` Service and its endpoints (None: this server serves no Services).
        self.kubernetes_service = self._kubernetes_service(kubernetes_service or KubernetesServiceOptions())
        #: What kubeadm init uploaded besides its addons (None: only the addons, ``kubesystemaddons.py``).
        self.kubeadm = kubeadm
        #: Publishes the client CA in kube-system/extension-apiserver-authentication (None: no client CA).
        self.authentication_trust = self._authentication_trust(client_certificates)
        #: Keeps this server's identity Lease in kube-system (None: this server serves no Leases).
        leases = self.registries.get(("coordination.k8s.io", "v1", "leases"))
        self.identity_lease = None if leases is None else IdentityLeaseController(leases, clock)
        #: Serves the custom resources of CustomResourceDefinitions (``apiextensions.py``).
        self.custom_resources = CustomResourceDefinitions(self, watch_cache_window=watch_cache_window)
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

    def _authentication_trust(
        self, client_certificates: X509Authenticator | None
    ) -> ClusterAuthenticationTrustController | None:
        configmaps = self.registries.get(("", "v1", "configmaps"))
        if configmaps is None or client_certificates is None:
            return None
        return ClusterAuthenticationTrustController(
            configmaps=configmaps,
            cache_for=lambda registry: self.caches.get(
                registry.rtype.cache_key or registry.rtype.storage_prefix or ""
            ),
            client_ca=certificate_pem(client_certificates.ca),
            clock=self.clock,
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
        await self.custom_resources.start()  # upstream's start-apiextensions-controllers
        await ensure_default_storage_class(self.registries)  # what a cluster installer adds
        await ensure_system_priority_classes(self.registries)
        self.start_steps.add(SYSTEM_PRIORITY_CLASSES_HOOK)
        await ensure_kube_system_addons(self.registries, self.kubeadm)  # kubeadm's uploads and addons
        if self.kubernetes_service is not None:
            # Its first reconciliation before the server is ready: nothing else can take 10.96.0.1.
            await self.kubernetes_service.start()
        self.start_steps.add(BOOTSTRAP_CONTROLLER_HOOK)
        if self.authentication_trust is not None:  # start-cluster-authentication-info-controller
            await self.authentication_trust.start()
        if self.identity_lease is not None:
            await self.identity_lease.start()
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
                await registry.create(obj, "", scope=SYSTEM_NAMESPACES_SCOPE)

    async def _cache_for(self, rtype: ResourceType) -> WatchCache | None:
        """The watch cache serving ``rtype``, started (and so filled) if this is its first use."""
        cache = self.caches.get(rtype.cache_key or "")
        if cache is not None and not cache.ready:
            await cache.start()  # starts it once; every caller waits until it is filled
        return cache

    async def stop(self) -> None:
        self.started = False
        self.stopping = True
        if self.identity_lease is not None:
            await self.identity_lease.stop()
        if self.kubernetes_service is not None:  # upstream's stop-kubernetes-service-controller hook
            await self.kubernetes_service.stop()
        if self.authentication_trust is not None:
            await self.authentication_trust.stop()
        await self.flow_control.stop()
        if self.store.observer is self.metrics:
            self.store.observer = None
        await self.authorization.stop()
        await self.custom_resources.stop()
        await asyncio.gather(*(cache.stop() for cache in self.caches.values()))
        if self.auditor is not None:
            await self.auditor.close()
        await self.kubelets.aclose()
        await self.webhook_client.aclose()

    # -- ASGI ------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request.from_scope(scope, receive)  # made once; every stage reads this one
        # The trace bus names every event emitted while the request is served after it, whoever emits
        # it (a store read, a watch cache, a webhook call): see ``trace/context.py``.
        with request_context(request.audit_id):
            await self._serve(request, send)

    # -- the pipeline ----------------------------------------------------------------------------

    async def _serve(self, request: Request, send: Send) -> None:
        """Serve one request: the stages in kube-apiserver's order (``DefaultBuildHandlerChain``).

        Each stage takes the value the stage before it made and makes the next one (``pipeline.py``):
        ``Request -> Authenticated -> Impersonated -> Dispatched -> Authorized``, then the handler.
        ``reached`` is the last value made, so that however the request ends (answered, refused by a
        stage, failed) it is completed (metrics, audit, trace) as far as it got. A refusal is answered
        as a Status with upstream's code; anything unexpected (a bug) is logged and answered 500, as
        upstream's panic recovery does, never as a dropped connection.
        """
        started = time.perf_counter()
        inflight = self.metrics.started(request)
        audited = audit.RequestAudit(self.auditor)  # the request's audit, before anything else runs
        send = audit.observing(audited, send)  # the audit sees every response, whoever sends it
        written: list[int] = []  # the store revisions the request writes, oldest first
        reached: Stage = request
        code = 500
        reason: str | None = None  # the Status reason of an error answer (request.completed's reason)
        try:
            if request.method == "GET" and request.path in PUBLIC_PATHS:  # anyone may ask: no stages
                self._received(request)
                code = await self._public(request, send)
                return
            reached = authenticated = await self._authenticate(request, audited)  # 401 if nobody
            report = self._reporter(authenticated)
            report("authentication", "pass", authenticated.how)
            audit.record_received(authenticated, audited, report)
            reached = impersonated = await impersonation.impersonate(
                authenticated, self.authorization, report, protected_groups=self._protected_groups
            )
            async with self.flow_control.admit(impersonated, send, report) as dispatched:  # 429 if full
                reached = dispatched
                reached = authorized = await authorization.authorize(  # 403 if no authorizer allows it
                    dispatched, self.authorization, report, self._rbac_decisions(dispatched), audited
                )
                code = await self._handle(authorized, report, written, audited)
        except errors.StatusError as error:
            code, reason = error.code, _status_reason(error)
            await respond_error(send, error, request.audit_id)
        except StoreUnreachable as error:  # no etcd: its error as it said it (store/conditions.py)
            code = 500
            await respond_error(send, errors.StatusError(500, "", str(error)), request.audit_id)
        except Exception as error:  # a bug: answer like upstream's panic recovery, and log it
            logger.exception("API request %s %s failed", request.method, request.path)
            internal = errors.internal_error(error)
            code, reason = 500, internal.reason
            audit.record_panic(audited, error)
            with contextlib.suppress(Exception):
                await respond_error(send, internal, request.audit_id)
        finally:
            self._complete(reached, code, reason, time.perf_counter() - started, inflight, audited, written)

    async def _authenticate(self, request: Request, audited: audit.RequestAudit) -> Authenticated:
        """The authentication stage. It also says the request arrived (``request.received``), from its
        sender's node once the sender is known, from ``user:anonymous`` when its credentials were
        refused: before any of the request's stages, whatever happens."""
        try:
            authenticated = await authentication.authenticate(request, self.authenticator)
        except authentication.Unauthenticated as refused:
            self._received(request)  # from user:anonymous: the diagram shows the bounce
            self._reporter(request)("authentication", "deny", refused.why)
            audit.record_unauthenticated(request, audited)
            raise
        except Exception:  # a failing authenticator: the request arrived all the same
            self._received(request)
            raise
        self._received(authenticated)
        return authenticated

    async def _handle(
        self, authorized: Authorized, report: Reporter, written: list[int], audited: audit.RequestAudit
    ) -> int:
        """The handler of an authorized request: discovery, health and metrics for a non-resource
        path; for a resource, the route ``routing.resolve`` finds, with the request's ``RequestScope``
        (who, admission, trace, revisions) for every write it makes. Returns the status sent."""
        request = authorized.request
        if not request.info.is_resource_request:
            return await self._non_resource(authorized)
        route = routing.resolve(self.types, request.info)
        rtype = route.rtype
        if route.handler is None and rtype.kind == "ComponentStatus":  # probed, never stored
            reply = await componentstatus.handle(self, request, rtype)
            await respond(
                authorized.send, reply.status, reply.body, headers=reply.headers, audit_id=request.audit_id
            )
            return reply.status
        if route.handler is None:  # a review: never stored, answered from what it asks
            reply = await reviews.handle(self, request, authorized.acting, rtype)
            await respond(authorized.send, reply.status, reply.body, audit_id=request.audit_id)
            return reply.status
        admitting = admission.Admission(
            self.admission,
            self._admission_attributes(authorized, rtype, route.namespace),
            # Admission's audit annotations go into the request's audit event (a webhook that
            # failed open: failed-open.validating.webhook.admission.k8s.io/round_0_index_0).
            admission.Scope(
                audit_id=request.audit_id, report=report, annotations=audit.annotations_of(audited)
            ),
        )
        cache = self.caches.get(rtype.cache_key or "")
        if cache is not None and not cache.ready:  # its first use (a started one is just looked up)
            cache = await self._cache_for(rtype)
        ctx = Context(
            rtype=rtype,
            registry=self.registries[(rtype.group, rtype.version, rtype.plural)],
            cache=cache,
            store=self.store,
            request=request,
            namespace=route.namespace,
            name=request.info.name,
            subresource=request.info.subresource,
            accept=Accept() if route.plain_text else negotiate(request),
            scope=RequestScope(
                user=authorized.acting,
                admission=admitting,
                report=report,
                audit_id=request.audit_id,
                written=written,
            ),
            send=authorized.send,
            source=authorized.source,
            backends=self.backends,
        )
        deprecated = deprecation.warning(rtype.group, rtype.version, rtype.kind)
        if deprecated is not None:  # first, as upstream's route adds it before the handler runs
            admitting.scope.warn(deprecated)
        warnings = admitting.scope.warnings
        try:
            reply = await route.handler(ctx)
        except UndecodableObject as error:
            # A value that cannot become the kind's Go type (a bad quantity, bad base64): upstream's
            # decoder refuses it before validation, with 400 BadRequest.
            raise errors.bad_request(error.message(rtype.kind, rtype.version)) from None
        except errors.StatusError as error:
            if warnings:
                error.headers = _with_warnings(error.headers, warnings)
            raise
        if reply.sent:  # a watch or a log, streamed by its handler
            return reply.status
        if warnings:
            reply.headers = _with_warnings(reply.headers, warnings)
        await respond(
            authorized.send, reply.status, reply.body, headers=reply.headers, audit_id=request.audit_id
        )
        return reply.status

    def _admission_attributes(
        self, authorized: Authorized, rtype: ResourceType, namespace: str
    ) -> admission.Attributes:
        """What admission needs to know of the request (the operation comes with each write)."""
        request = authorized.request
        info = request.info
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
            user=authorized.acting,
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

    def _complete(
        self,
        reached: Stage,
        code: int,
        reason: str | None,
        duration: float,
        inflight: str | None,
        audited: audit.RequestAudit,
        written: list[int],
    ) -> None:
        """The request was answered with ``code``: count it, write its last audit stage, and say on
        the trace how it ended (``request.completed``, with the last revision it wrote, and the
        ``reason`` of the Status an error answer carries: a 409 is ``Conflict`` or ``AlreadyExists``)."""
        request = reached.request if isinstance(reached, Authenticated) else reached
        self.metrics.finished(inflight, request, code, duration)
        acting = reached.acting if isinstance(reached, Impersonated) else None
        audit_level = audit.record_completed(audited, request, acting, code)
        if self.trace.enabled:
            completed: dict[str, Any] = {"code": code, "duration": round(duration, 6)}
            if written:
                completed["revision"] = written[-1]
            if audit_level:  # its audit event's auditID is this event's id
                completed["audit"] = audit_level
            if reason:
                completed["reason"] = reason
            self._event("request.completed", reached, **self._about(reached), **completed)

    # -- the request's trace ---------------------------------------------------------------------

    def _event(self, type: str, stage: Stage, **fields: Any) -> None:
        """One trace event of the request ``stage`` is about, from its sender's node to the API server."""
        if self.trace.enabled:
            self.trace.emit(type, **self._envelope(stage), **fields)

    def _envelope(self, stage: Stage) -> dict[str, Any]:
        """The fields every event of the request has: its cluster, its Audit-ID, the diagram's edge."""
        if isinstance(stage, Authenticated):
            audit_id, source = stage.request.audit_id, stage.source
        else:
            audit_id, source = stage.audit_id, nodes.ANONYMOUS
        return {"cluster": self.cluster, "id": audit_id, "from": source, "to": nodes.APISERVER}

    @staticmethod
    def _about(stage: Stage) -> dict[str, Any]:
        """What the request is about, as every ``request.*`` event of it says: the user authentication
        found, and what it asks for (verb, resource, namespace, name, subresource)."""
        about: dict[str, Any] = {}
        if isinstance(stage, Authenticated):
            about["user"] = stage.user.username
            info = stage.request.info
        else:
            info = stage.info
        about["verb"] = info.verb
        for name in ("resource", "namespace", "name", "subresource"):
            if value := getattr(info, name):
                about[name] = value
        return about

    def _received(self, stage: Stage) -> None:
        """``request.received``: who sent it (as far as known) and what it asks for."""
        if not self.trace.enabled:
            return
        request = stage.request if isinstance(stage, Authenticated) else stage
        fields: dict[str, Any] = {"method": request.method, "path": request.path, **self._about(stage)}
        if query := _query_parameters(request.raw_query):
            fields["query"] = query
        if agent := request.headers.get("user-agent"):
            fields["user_agent"] = agent
        self._event("request.received", stage, **fields)

    def _reporter(self, stage: Stage) -> Reporter:
        """Where the request's pipeline stages go: ``request.stage`` events naming what it is about;
        nowhere (``NO_REPORT``) while nobody watches the trace."""
        if not self.trace.enabled:
            return NO_REPORT
        return _StageEvents(self.trace, {**self._envelope(stage), **self._about(stage)})

    def _rbac_decisions(self, stage: Authenticated) -> authorization.Emit | None:
        """Where the authorization stage's ``rbac.decision`` goes (None while nobody watches)."""
        if not self.trace.enabled:
            return None
        return partial(self._event, "rbac.decision", stage)

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

    async def _non_resource(self, authorized: Authorized) -> int:
        """Discovery, health, metrics and the OpenAPI documents: what is not a resource."""
        request, send = authorized.request, authorized.send
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
            # A custom resource's document is built from its definition's schema.
            reply = self.custom_resources.openapi_reply(parts[2:], request.query.get("hash"))
            if reply is None and len(parts) == 2:
                body = dumps(self.custom_resources.openapi_index(openapi.index(self.types)))
                reply = openapi.Reply(200, body, {"Etag": f'"{openapi.compute_etag(body)}"'})
            if reply is None:
                reply = openapi.serve(self.types, parts[2:], request)  # cached bytes, ETag, immutable
            await respond(send, reply.status, reply.body, headers=reply.headers, audit_id=request.audit_id)
            return reply.status
        elif parts == ["openapi", "v2"]:  # what kubectl falls back to (a List, a kind v3 lacks)
            reply = openapi_v2.serve(self.types, self.custom_resources, request)
            await respond(
                send,
                reply.status,
                reply.body,
                content_type=reply.content_type,
                headers=reply.headers,
                audit_id=request.audit_id,
            )
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


class _StageEvents:
    """A request's ``Reporter`` while someone watches the trace: each stage is a ``request.stage`` event
    with the fields every event of the request has (``fields``: its envelope and what it is about)."""

    __slots__ = ("fields", "trace")

    def __init__(self, trace: TraceSink, fields: dict[str, Any]) -> None:
        self.trace = trace
        self.fields = fields

    def __call__(self, name: str, outcome: str, detail: str, /, **fields: str | int) -> None:
        self.trace.emit("request.stage", **self.fields, stage=name, outcome=outcome, detail=detail, **fields)
