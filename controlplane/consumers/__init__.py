"""Consumers: the websockets through which browsers watch the clusters live.

HTTP asks and answers once; a websocket stays open, so the server can push whatever happens the
moment it happens. Channels (Django's websocket layer) gives each open socket a **consumer**, an
object that lives as long as the socket and reacts to its messages. Kubelab has one: ``TraceConsumer``
(``trace.py``) streams one cluster's trace events to the topology page, in frames cut by the pure
``framing.py``, to the users ``access.may_view`` lets in (by the web app's rule, ``courses.access``,
which a setting names). ``routing.py`` lists the websocket URLs that ``config/asgi.py`` serves.
"""

from __future__ import annotations
