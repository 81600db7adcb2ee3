"""The ASGI application daphne serves: the clusters' API servers, Django, and Channels consumers.

``/clusters/<name>/...`` goes to that cluster's API server (``controlplane.apiserver``), a raw ASGI
application routed beside Django: it is the Kubernetes API, and a Django request cycle per call would
cost more than the work. Everything else over HTTP goes to Django; websockets go to Channels, behind
the origin check and session authentication: ``/ws/lab/<cluster>/trace/`` streams a cluster's trace
(``controlplane.consumers``); the course's own sockets (a chapter's checks, the kubectl console) are
``courses.routing``'s.

Importing this module starts nothing: the clusters are started by ``manage.py runlab`` once daphne's
event loop runs (daphne has no ASGI lifespan). Static files are served by the same application, from
the source tree, so the lab needs no separate web server and no build step.
"""

from __future__ import annotations

import os

from config.webhandler import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# Django must be set up before anything that imports models (Channels' auth middleware does).
django_application = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from controlplane.apiserver.mount import ClusterAPIRouter  # noqa: E402
from controlplane.consumers.routing import websocket_urlpatterns  # noqa: E402
from controlplane.runtime import active_lab  # noqa: E402
from courses.routing import websocket_urlpatterns as course_websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": ClusterAPIRouter(active_lab, ASGIStaticFilesHandler(django_application)),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter([*websocket_urlpatterns, *course_websocket_urlpatterns]))
        ),
    }
)
