"""kube-proxy: how a Service's virtual IP reaches its pods, on every node.

``rules.py`` is the pure part: Services and EndpointSlices in, a rule table out (for each Service
address and port, the endpoints to forward to). ``proxier.py`` is the component: ``KubeProxy`` watches
the API server and keeps one node's table up to date, syncing at most once per ``minSyncPeriod``.
"""

from __future__ import annotations

from controlplane.components.proxy.proxier import KubeProxy, changed_destinations
from controlplane.components.proxy.rules import Endpoint, Rule, RuleTable, build_rule_table

__all__ = ["Endpoint", "KubeProxy", "Rule", "RuleTable", "build_rule_table", "changed_destinations"]
