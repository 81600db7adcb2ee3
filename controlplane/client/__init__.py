"""Kubelab's client-go: how components (and anything else in Python) talk to a cluster's API server.

Components never touch the store; everything they know, they learn from the API server, and
everything they do, they ask it to do, with their own credentials, through the same pipeline as
kubectl. This package is the only way they reach it. The pieces, bottom up, each its own module
named like its client-go counterpart:

- ``config``: ``Config`` (client-go ``rest.Config``): server URL or in-process app, CA, token,
  user agent, QPS/burst; ``Config.from_kubeconfig``;
- ``transport``: HTTPS, or ``InProcessTransport`` calling the ASGI app directly with streaming;
- ``errors``: the Status reasons as exception classes (``NotFound``, ``Conflict``, ``Expired`` ...);
- ``tokenbucket``, ``backoff``: the token bucket in front of every request; exponential backoff;
- ``rest``: ``RESTClient`` and ``ResourceClient`` (get, list, create, update, patch, delete, watch),
  with client-go's retries on ``Retry-After``;
- ``watch``: watch events, ``WatchInterface`` and a ``FakeWatcher`` for tests;
- ``pager``: lists in pages of 500 (``tools/pager``);
- ``cache``: the ``Indexer`` (objects by ``namespace/name`` key, plus indexes);
- ``delta_fifo``: the queue of changes between reflector and informer, relist deletion detection;
- ``reflector``: list, then watch from the list's resourceVersion, relist on 410, backoff;
- ``informer``: ``SharedIndexInformer`` and ``SharedInformerFactory``: cache + event handlers.

The workqueue, its rate limiters (``workqueue_ratelimiters``), leader election, event recorder and
the controller-runtime style manager and reconciler live in their own modules of this package.
"""

from __future__ import annotations

from controlplane.client.backoff import Backoff, ExponentialBackoffManager, reflector_backoff
from controlplane.client.cache import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    field_index_func,
    meta_namespace_index_func,
    meta_namespace_key_func,
    split_meta_namespace_key,
)
from controlplane.client.config import Config, default_user_agent
from controlplane.client.delta_fifo import Delta, DeltaFIFO, DeltaType
from controlplane.client.errors import (
    AlreadyExists,
    APIClientError,
    APIError,
    APIServerError,
    BadRequest,
    Conflict,
    ConnectError,
    Expired,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ResourceExpired,
    ServerTimeout,
    ServiceUnavailable,
    StatusCause,
    TooManyRequests,
    TransportError,
    Unauthorized,
    is_already_exists,
    is_conflict,
    is_forbidden,
    is_gone,
    is_invalid,
    is_not_found,
    is_resource_expired,
    is_too_many_requests,
)
from controlplane.client.informer import (
    HandlerRegistration,
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    SharedInformer,
    SharedInformerFactory,
    wait_for_cache_sync,
)
from controlplane.client.pager import ListPager, ListResult
from controlplane.client.reflector import ListerWatcher, ListWatch, Reflector
from controlplane.client.rest import ListOptions, PatchType, ResourceClient, RESTClient, Watch
from controlplane.client.tokenbucket import TokenBucket, TokenBucketRateLimiter
from controlplane.client.transport import InProcessTransport, build_http_client
from controlplane.client.watch import EventType, FakeWatcher, WatchEvent, WatchInterface

__all__ = [
    "NAMESPACE_INDEX",
    "APIClientError",
    "APIError",
    "APIServerError",
    "AlreadyExists",
    "Backoff",
    "BadRequest",
    "Config",
    "Conflict",
    "ConnectError",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "EventType",
    "Expired",
    "ExponentialBackoffManager",
    "FakeWatcher",
    "Forbidden",
    "Gone",
    "HandlerRegistration",
    "InProcessTransport",
    "Indexer",
    "InternalError",
    "Invalid",
    "ListOptions",
    "ListPager",
    "ListResult",
    "ListWatch",
    "ListerWatcher",
    "MethodNotAllowed",
    "NotFound",
    "PatchType",
    "RESTClient",
    "Reflector",
    "ResourceClient",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "ResourceExpired",
    "ServerTimeout",
    "ServiceUnavailable",
    "SharedIndexInformer",
    "SharedInformer",
    "SharedInformerFactory",
    "StatusCause",
    "TokenBucket",
    "TokenBucketRateLimiter",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "Watch",
    "WatchEvent",
    "WatchInterface",
    "build_http_client",
    "default_user_agent",
    "field_index_func",
    "is_already_exists",
    "is_conflict",
    "is_forbidden",
    "is_gone",
    "is_invalid",
    "is_not_found",
    "is_resource_expired",
    "is_too_many_requests",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "reflector_backoff",
    "split_meta_namespace_key",
    "wait_for_cache_sync",
]
