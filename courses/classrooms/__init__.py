"""Classrooms: who teaches whom, which clusters are theirs, and so who may see a cluster.

- ``models``: ``Classroom`` (its instructors and students) and ``ClassroomCluster`` (a cluster of the
  lab that belongs to it); they are models of the ``courses`` app, found through ``courses/models.py``;
- ``access``: the rule for who may see a cluster (its trace, its topology page, its etcd panel),
  named by ``settings.KUBELAB_CLUSTER_ACCESS`` through ``courses/access.py``;
- ``admin``: how staff set classrooms up in Django's admin, found through ``courses/admin.py``;
- ``services`` (create a classroom, join it with its code, renew the code, the log) and ``selectors``
  (the dashboard: each student's progress per chapter and their sandbox), under ``views`` and
  ``urls``: ``/classrooms/``, the join form, and the instructor's dashboard with its fault controls
  and its switch between the students' sandboxes and the classroom's shared cluster;
- ``shared``: the shared cluster: a namespace per student with ``edit`` in it, the instructors its
  admins, and what a chapter page acts with when the classroom's chapters use it.
"""
