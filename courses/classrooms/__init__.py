"""Classrooms: who teaches whom, which clusters are theirs, and so who may see a cluster.

- ``models``: ``Classroom`` (its instructors and students) and ``ClassroomCluster`` (a cluster of the
  lab that belongs to it); they are models of the ``courses`` app, found through ``courses/models.py``;
- ``access``: the rule for who may see a cluster (its trace, its topology page, its etcd panel),
  named by ``settings.KUBELAB_CLUSTER_ACCESS`` through ``courses/access.py``;
- ``admin``: how staff set classrooms up in Django's admin, found through ``courses/admin.py``.

The instructor console (a classroom's students, their clusters and progress, for its instructors) and
a student's own sandbox cluster (created through ``courses.gateway``) belong here too.
"""
