"""The lab's pieces of page (courses/templatetags/lab.py), composed the way a chapter page would.

Each piece carries the data-* hooks static/topology/topology.js looks for inside the root it is
started on, so a page of another layout can mount a topology of its own.
"""

from __future__ import annotations

import json
import re

from django.template import Context, Template
from pytest_django import Settings

from courses.lab.selectors import ClusterSummary

CHAPTER = Template(
    "{% load lab %}"
    '<article data-topology="root">'
    "<p>Apply the Deployment and watch: {% topology_status cluster %}</p>"
    "{% topology cluster %}"
    "{% etcd_panel cluster %}"
    "</article>"
)


def test_a_page_of_its_own_composes_a_topology_and_its_etcd_panel(settings: Settings) -> None:
    settings.KUBELAB_TIMING_PROFILE = "upstream"
    page = CHAPTER.render(Context({"cluster": ClusterSummary("team-a", "running")}))
    match = re.search(r'<script id="topology-config" type="application/json">(.*?)</script>', page)
    assert match
    assert json.loads(match.group(1)) == {
        "cluster": "team-a",
        "socket": "/ws/lab/team-a/trace/",
        "timing": "upstream",
        "etcd": "/lab/team-a/etcd/",
    }
    for hook in ("timing", "status", "controls", "inspector", "narration"):
        assert page.count(f'data-topology="{hook}"') == 1, hook
    assert page.count('data-etcd="root"') == 1
    assert 'data-profile="upstream"' in page
    assert "The control plane of <code>team-a</code>" in page
