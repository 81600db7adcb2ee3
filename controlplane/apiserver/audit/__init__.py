"""Auditing: a record, request by request, of who did what to which object, and what came of it.

An API server that many people and programs use must be able to answer afterwards: *who deleted that
Deployment? Who read the database password? What did the scheduler write at 10:42?* kube-apiserver
answers with its **audit log**: for each request, one or more ``audit.k8s.io/v1`` **Events**
(``event.py``) naming the user (and the user it impersonated), the verb, the object, the client's
address and User-Agent, the answer's status, the authorizer's decision and, if asked, the bodies.

What is recorded is decided per request by the cluster's **audit policy** (``policy.py``): a list of
rules, the first matching one wins, each giving a **level**:

- ``None``: nothing is recorded;
- ``Metadata``: who, what, when, and the answer's status; no bodies;
- ``Request``: also the request's body;
- ``RequestResponse``: also the response's body.

A request is recorded at up to four **stages**: ``RequestReceived`` (as soon as the user is known),
``ResponseStarted`` (long-running requests only: a watch, once its headers are out),
``ResponseComplete`` (the answer is sent) and ``Panic`` (the server failed). A rule may leave stages
out (``omitStages``); most policies omit ``RequestReceived``, which ``ResponseComplete`` repeats.

The events are written as JSON lines to the cluster's audit log (``log.py``), by a writer thread, so
that a slow disk never holds up the API server; the file is rotated when it grows too large.
Kubelab's default policy (``default-policy.yaml``) follows upstream's recommended one: Secrets,
ConfigMaps, tokens and TokenReviews at ``Metadata`` (their bodies hold credentials), other writes with
their bodies. Whatever a policy says, Kubelab never records a Secret's or a token's body
(``policy.SENSITIVE``): the audit log is read by students.

Upstream: ``k8s.io/apiserver/pkg/audit`` (``policy/checker.go``, ``request.go``, ``context.go``),
``pkg/apis/audit/v1/types.go``, ``pkg/endpoints/filters/audit.go``, ``plugin/pkg/audit/log``.
"""
