"""The admission plugins of the API servers tests start without a controller manager.

Upstream's ServiceAccount plugin refuses every pod until the serviceaccount controller has created
the namespace's ``default`` ServiceAccount. An API server started alone in a test has no controller
manager, so it runs every default plugin but that one (the runtime's clusters run them all; the
ServiceAccount plugin has tests of its own in ``tests/controlplane/apiserver/admission``).
"""

from __future__ import annotations

from controlplane.apiserver.admission.setup import AdmissionOptions

WITHOUT_CONTROLLERS = AdmissionOptions().without("ServiceAccount")
