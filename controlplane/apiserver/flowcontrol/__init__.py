"""API Priority and Fairness (APF): how the API server shares its capacity among its clients.

An API server can only work on so many requests at once. kube-apiserver used to cap them with two
numbers (``--max-requests-inflight``, ``--max-mutating-requests-inflight``) and answer 429 beyond them
(``maxinflight.py``): one client in a hot loop then takes every slot, and the kubelets' heartbeats are
refused with everyone else's. APF (``k8s.io/apiserver/pkg/util/flowcontrol``, KEP 1040) instead:

1. **classifies** each request, after authentication, by the first **FlowSchema** that matches it
   (lowest ``matchingPrecedence`` first; rules on the user, its groups or ServiceAccount, the verb,
   the resource or the URL): ``classification.py``;
2. sends it to that FlowSchema's **priority level** (a PriorityLevelConfiguration), which owns a share
   of the server's **seats** (``nominalConcurrencyShares`` of the total concurrency limit): ``controller.py``;
3. within the level, puts it in a **flow** (the FlowSchema plus the user's name or the namespace,
   ``distinguisherMethod``), and the flow in one of a few queues picked by **shuffle sharding**
   (``shufflesharding.py``), so that one heavy flow shares its queues with few others;
4. dispatches from the queues by **fair queuing** in virtual time, so that each busy queue gets an
   equal share of the level's seats (``queueset.py``), and answers 429 with ``Retry-After``
   (``droppedrequests.py``) when a queue is full;
5. keeps the seat until the handler finishes (a watch: until it is set up).

The objects that configure it are made by the API server itself at start (``bootstrap.py``,
``ensurer.py``), and can be edited with kubectl like any other: the API server reads them from its
watch caches, so an edit applies to the next request.

Every module here but ``ensurer.py`` is pure (no I/O, no clock of its own: callers pass ``now``); the
API server's filter (``controlplane/apiserver/filters/priority_and_fairness.py``) is the thin async adapter
that waits on them.
"""
