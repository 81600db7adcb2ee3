"""Sandboxes: one cluster per student, made on demand, hibernated when idle, woken by any request.

- ``identities``: the names (``sb-<account id>``, ``student:<username>``, ``kubelab:checker``);
- ``bootstrap``: what a new sandbox is given (the student's admin binding, the checker's read-only
  role, the student's FlowSchema and priority level), applied through its API server;
- ``services``: ``ensure_sandbox``, ``sandbox_access``, ``checker_token``, ``reset_sandbox``,
  ``kubeconfig_for``, ``touch``: what the rest of the web app calls;
- ``selectors``: what the sandbox page shows; ``views``/``urls``: that page, the kubeconfig download
  and the reset (asked first);
- ``kubeconfig``: the kubeconfig document, pure;
- ``models``: the ``Sandbox`` row (whose cluster it is, how often it was reset).

The cluster side (hibernation, waking, the guardrails' admission plugin) is the control plane's:
``controlplane/runtime.py`` and ``controlplane/apiserver/admission/sandboxguardrails.py``, reached
through ``courses.gateway``.
"""
