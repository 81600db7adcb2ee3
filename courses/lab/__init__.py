"""The lab: the cluster pages, each a cluster's live topology with its etcd panel.

- ``views``, ``urls``: ``/lab/<name>/`` (the page) and ``/lab/<name>/etcd/`` (the etcd panel's reads);
- ``selectors``: what the pages read of the lab (through ``courses.gateway``), shaped for them;
- ``etcdpanel``: what the etcd panel may show of a stored key (pure).

Its pieces of page are template tags (``courses/templatetags/lab.py``: ``{% topology %}``,
``{% topology_status %}``, ``{% etcd_panel %}``) over ``templates/courses/lab/``, and its front end is
``static/topology/`` (``start(root)`` mounts a topology). Manifest forms that act on a cluster beside
its topology belong here too.
"""
