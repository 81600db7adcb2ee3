"""Kubelab's web application: the course around a live cluster, over the control plane (``controlplane``).

It is one Django app (label ``courses``), laid out by area:

- ``gateway``: the one door into the running lab (``controlplane.runtime``, the clusters' stores,
  ``controlplane.diagram``, the control plane's websocket routes); an import-linter contract keeps it
  the only one;
- ``lab/``: the cluster pages, a cluster's live topology and its etcd panel;
- ``classrooms/``: classrooms, their people and clusters, and who may see a cluster;
- ``engine/``: (to come) course content, steps, automatic checks, progress;
- ``console/``: (to come) the kubectl console in the browser;
- ``views``, ``urls``: the landing page and the ``courses`` URL namespace, which includes each
  area's routes;
- ``templatetags/lab.py``: the lab's pieces of page (``{% topology %}``, ``{% etcd_panel %}`` ...),
  for the cluster page and, later, a chapter page.

``models``, ``admin`` and ``access`` sit at the top because Django (and ``settings``) look for them
there; each imports its area's module. Every model belongs to this one app, so there is one
``migrations`` directory. Templates are in ``templates/courses/`` (``lab/`` for the cluster pages),
the front end in ``static/``.
"""
