"""Settings come from ``KUBELAB_*`` environment variables, with the embedded lab as the default.

Settings are read once per process, so each case loads them in a fresh Python process with the
environment it describes, and reports what Django ended up with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from config.settings import BASE_DIR, channel_layers_from_url, database_from_url
from tests.support.services import POSTGRES_DSN, port_open, service_missing

REPORT = """
import json, django
django.setup()
from django.conf import settings as s
print(json.dumps({
    "data_dir": str(s.KUBELAB_DATA_DIR),
    "db": {k: str(v) for k, v in s.DATABASES["default"].items() if k in ("ENGINE", "NAME", "HOST", "USER")},
    "secret_key": s.SECRET_KEY,
    "debug": s.DEBUG,
    "allowed_hosts": s.ALLOWED_HOSTS,
    "channel_layer": s.CHANNEL_LAYERS["default"]["BACKEND"],
    "store": s.KUBELAB_STORE,
    "retain_revisions": s.KUBELAB_STORE_RETAIN_REVISIONS,
    "retain_seconds": s.KUBELAB_STORE_RETAIN_SECONDS,
    "demo": s.KUBELAB_DEMO_CLUSTER,
    "demo_anonymous": s.KUBELAB_DEMO_ANONYMOUS,
    "cluster_access": s.KUBELAB_CLUSTER_ACCESS,
    "timing": s.KUBELAB_TIMING_PROFILE,
    "nodes": s.KUBELAB_NODES,
    "components": list(s.KUBELAB_COMPONENTS),
    "audit_policy": str(s.KUBELAB_AUDIT_POLICY_FILE),
    "audit_maxsize": s.KUBELAB_AUDIT_LOG_MAXSIZE,
    "audit_maxbackup": s.KUBELAB_AUDIT_LOG_MAXBACKUP,
    "static_root": str(s.STATIC_ROOT),
    "apps": s.INSTALLED_APPS,
}))
"""


def clean_env(**overrides: str) -> dict[str, str]:
    """This process's environment without any ``KUBELAB_*`` variable, plus ``overrides``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBELAB_")}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    env.update(overrides)
    return env


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def settings_with(**env: str) -> dict[str, Any]:
    result = run_python(REPORT, **env)
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_defaults_are_the_embedded_lab(tmp_path: Path) -> None:
    # KUBELAB_DATA_DIR is the one variable set, so the test never writes into the repository's var/.
    s = settings_with(KUBELAB_DATA_DIR=str(tmp_path))
    assert s["db"]["ENGINE"] == "django.db.backends.sqlite3"
    assert s["channel_layer"] == "channels.layers.InMemoryChannelLayer"
    assert s["store"] == "sqlite"
    assert s["demo"] == "demo"
    assert s["demo_anonymous"] is True
    assert s["cluster_access"] == "courses.access.user_may_view"
    assert s["debug"] is False
    assert "127.0.0.1" in s["allowed_hosts"]
    assert s["retain_revisions"] is None and s["retain_seconds"] is None
    assert s["apps"][0] == "daphne"
    assert (s["audit_policy"], s["audit_maxsize"], s["audit_maxbackup"]) == ("None", 10, 2)
    assert {"channels", "controlplane", "courses", "django.contrib.staticfiles"} <= set(s["apps"])


def test_the_default_data_dir_is_var_in_the_repository() -> None:
    code = "from config.settings import data_dir_from_env; print(data_dir_from_env())"
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()) == BASE_DIR / "var"
    assert "var/" in (BASE_DIR / ".gitignore").read_text().split()


def test_kubelab_data_dir_moves_the_data(tmp_path: Path) -> None:
    data = tmp_path / "elsewhere"
    s = settings_with(KUBELAB_DATA_DIR=str(data))
    assert s["data_dir"] == str(data)
    assert s["db"]["NAME"] == str(data / "db.sqlite3")
    assert s["static_root"] == str(data / "static")
    # The generated secret key is kept there, and the next process reads the same one.
    assert (data / "secret_key").read_text().strip() == s["secret_key"]
    assert (data / "secret_key").stat().st_mode & 0o077 == 0
    assert settings_with(KUBELAB_DATA_DIR=str(data))["secret_key"] == s["secret_key"]


def test_management_commands_honour_kubelab_data_dir(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "--verbosity", "0"],
        cwd=BASE_DIR,
        env=clean_env(KUBELAB_DATA_DIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "db.sqlite3").stat().st_size > 0


def test_every_variable_is_honoured(tmp_path: Path) -> None:
    s = settings_with(
        KUBELAB_DATA_DIR=str(tmp_path),
        KUBELAB_SECRET_KEY="not-a-secret-for-tests",
        KUBELAB_DEBUG="true",
        KUBELAB_ALLOWED_HOSTS="lab.example.org, 10.0.0.5",
        KUBELAB_DATABASE_URL="postgresql://kube:pw@db.example.org:5433/kubelab",
        KUBELAB_CHANNEL_LAYER="redis://127.0.0.1:6379/1",
        KUBELAB_STORE="etcd://127.0.0.1:2379",
        KUBELAB_STORE_RETAIN_REVISIONS="50",
        KUBELAB_STORE_RETAIN_SECONDS="2.5",
        KUBELAB_DEMO_CLUSTER="playground",
        KUBELAB_DEMO_ANONYMOUS="false",
        KUBELAB_TIMING_PROFILE="upstream",
        KUBELAB_NODES="5",
        KUBELAB_COMPONENTS="kubelet, scheduler",
        KUBELAB_AUDIT_POLICY_FILE=str(tmp_path / "policy.yaml"),
        KUBELAB_AUDIT_LOG_MAXSIZE="5",
        KUBELAB_AUDIT_LOG_MAXBACKUP="0",
    )
    assert s["secret_key"] == "not-a-secret-for-tests"
    assert not (tmp_path / "secret_key").exists()
    assert s["debug"] is True
    assert s["allowed_hosts"] == ["lab.example.org", "10.0.0.5"]
    assert s["db"] == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "kubelab",
        "HOST": "db.example.org",
        "USER": "kube",
    }
    assert s["channel_layer"] == "channels_redis.core.RedisChannelLayer"
    assert s["store"] == "etcd://127.0.0.1:2379"
    assert s["retain_revisions"] == 50
    assert s["retain_seconds"] == 2.5
    assert s["demo"] == "playground"
    assert s["demo_anonymous"] is False
    assert s["timing"] == "upstream"
    assert s["nodes"] == 5
    assert s["components"] == ["scheduler", "kubelet"]
    assert s["audit_policy"] == str(tmp_path / "policy.yaml")
    assert (s["audit_maxsize"], s["audit_maxbackup"]) == (5, 0)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("KUBELAB_DEBUG", "maybe"),
        ("KUBELAB_DEMO_ANONYMOUS", "sometimes"),
        ("KUBELAB_DATABASE_URL", "mysql://db/kubelab"),
        ("KUBELAB_CHANNEL_LAYER", "rabbitmq://localhost"),
        ("KUBELAB_STORE_RETAIN_REVISIONS", "many"),
        ("KUBELAB_STORE_RETAIN_REVISIONS", "1.5"),
        ("KUBELAB_TIMING_PROFILE", "fast"),
        ("KUBELAB_NODES", "-1"),
        ("KUBELAB_COMPONENTS", "scheduler,etcd"),
        ("KUBELAB_AUDIT_LOG_MAXSIZE", "0"),
        ("KUBELAB_AUDIT_LOG_MAXBACKUP", "-1"),
    ],
)
def test_a_bad_value_stops_the_process_and_names_the_variable(tmp_path: Path, name: str, value: str) -> None:
    result = run_python(REPORT, KUBELAB_DATA_DIR=str(tmp_path), **{name: value})
    assert result.returncode != 0
    assert name in result.stderr


def test_database_urls(tmp_path: Path) -> None:
    assert database_from_url("", data_dir=tmp_path)["NAME"] == tmp_path / "db.sqlite3"
    assert database_from_url("sqlite", data_dir=tmp_path)["NAME"] == tmp_path / "db.sqlite3"
    assert database_from_url("sqlite:////srv/lab.sqlite3", data_dir=tmp_path)["NAME"] == Path(
        "/srv/lab.sqlite3"
    )
    assert database_from_url("sqlite:///lab.sqlite3", data_dir=tmp_path)["NAME"] == tmp_path / "lab.sqlite3"
    pg = database_from_url("postgres://u%40x:p%2Fw@h:1/d?sslmode=require", data_dir=tmp_path)
    assert (pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"], pg["NAME"]) == ("u@x", "p/w", "h", "1", "d")
    assert pg["OPTIONS"] == {"sslmode": "require"}


def test_channel_layer_urls() -> None:
    assert channel_layers_from_url("memory")["default"]["BACKEND"] == "channels.layers.InMemoryChannelLayer"
    redis = channel_layers_from_url("redis://r:6379/2")["default"]
    # A read outlasts channels_redis's 5-second blocking read (redis-py 8 times out after 5 s).
    assert redis["CONFIG"]["hosts"] == [{"address": "redis://r:6379/2", "socket_timeout": 10}]
    assert redis["CONFIG"]["channel_capacity"] == {"trace-relay.*": 1000}  # room for the relay's ticks


@pytest.mark.postgres
def test_django_runs_on_postgresql(tmp_path: Path) -> None:
    if not port_open("127.0.0.1", 5432):
        service_missing("PostgreSQL at 127.0.0.1:5432")
    code = (
        "import django; django.setup()\n"
        "from django.db import connection\n"
        "with connection.cursor() as c:\n"
        "    c.execute('SELECT 1')\n"
        "    print(c.fetchone()[0], connection.vendor)\n"
    )
    result = run_python(code, KUBELAB_DATA_DIR=str(tmp_path), KUBELAB_DATABASE_URL=POSTGRES_DSN)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "postgresql"]
