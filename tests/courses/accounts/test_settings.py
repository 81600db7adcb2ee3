"""The accounts' settings from the environment: open sign-up, the sign-in limit, and the cache that
keeps the failure counts (one process's memory, or Redis shared by several)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_settings import run_python

REPORT = """
import json, django
django.setup()
from django.conf import settings as s
print(json.dumps({
    "open_signup": s.KUBELAB_OPEN_SIGNUP,
    "limits": [s.KUBELAB_SIGNIN_FAILURES, s.KUBELAB_SIGNIN_FAILURES_PER_IP, s.KUBELAB_SIGNIN_WINDOW],
    "cache": s.CACHES["default"],
}))
"""


def report(tmp_path: Path, **env: str) -> dict[str, object]:
    result = run_python(REPORT, KUBELAB_DATA_DIR=str(tmp_path), **env)
    assert result.returncode == 0, result.stderr
    answer: dict[str, object] = json.loads(result.stdout)
    return answer


def test_the_defaults_open_sign_up_and_count_in_memory(tmp_path: Path) -> None:
    assert report(tmp_path) == {
        "open_signup": True,
        "limits": [5, 20, 300],
        "cache": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }


def test_every_accounts_setting_comes_from_the_environment(tmp_path: Path) -> None:
    assert report(
        tmp_path,
        KUBELAB_OPEN_SIGNUP="false",
        KUBELAB_SIGNIN_FAILURES="3",
        KUBELAB_SIGNIN_FAILURES_PER_IP="50",
        KUBELAB_SIGNIN_WINDOW="600",
        KUBELAB_CACHE="redis://127.0.0.1:6379/3",
    ) == {
        "open_signup": False,
        "limits": [3, 50, 600],
        "cache": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:6379/3",
        },
    }


def test_a_cache_that_is_not_memory_or_redis_is_refused(tmp_path: Path) -> None:
    result = run_python(REPORT, KUBELAB_DATA_DIR=str(tmp_path), KUBELAB_CACHE="memcached://x")
    assert result.returncode != 0
    assert "KUBELAB_CACHE='memcached://x': use memory or redis://host:port/db" in result.stderr
