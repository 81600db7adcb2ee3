"""Kubelab's Django settings, read from ``KUBELAB_*`` environment variables with embedded defaults.

The defaults are the embedded lab: everything lives in one data directory (``<repo>/var`` unless
``KUBELAB_DATA_DIR`` says otherwise), Django's own tables in a SQLite file there, one SQLite store
file per cluster under ``<data dir>/clusters/``, and an in-memory channel layer. Scale-out points the
same code at PostgreSQL (``KUBELAB_DATABASE_URL``, ``KUBELAB_STORE``), Redis
(``KUBELAB_CHANNEL_LAYER``) or a real etcd (``KUBELAB_STORE``). docs/configuration.md lists every
variable.

Every management command reads these settings, so every one of them honours ``KUBELAB_DATA_DIR``;
``manage.py`` also turns a ``--data-dir DIR`` option into ``KUBELAB_DATA_DIR`` before Django starts.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"{name}={raw!r}: expected true/false, 1/0, yes/no or on/off")


def _env_float(name: str) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a number") from None


def _env_int(name: str) -> int | None:
    value = _env_float(name)
    if value is not None and value != int(value):
        raise ValueError(f"{name}={os.environ[name]!r}: expected a whole number")
    return None if value is None else int(value)


def _env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def _env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = os.environ.get(name, "").strip() or default
    if raw not in choices:
        raise ValueError(f"{name}={raw!r}: expected one of {', '.join(choices)}")
    return raw


def _env_count(name: str, default: int) -> int:
    value = _env_int(name)
    if value is None:
        return default
    if value < 0:
        raise ValueError(f"{name}={os.environ[name]!r}: expected a whole number >= 0")
    return value


def _env_components(name: str, known: tuple[str, ...]) -> tuple[str, ...]:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return known
    if raw == "none":
        return ()
    chosen = [item.strip() for item in raw.split(",") if item.strip()]
    unknown = [item for item in chosen if item not in known]
    if unknown:
        raise ValueError(
            f"{name}={raw!r}: unknown {', '.join(unknown)}; use none or some of {', '.join(known)}"
        )
    return tuple(c for c in known if c in chosen)


def _env_address(name: str, default: str) -> str:
    """A ``HOST:PORT`` (``[IPv6]:PORT``, ``:PORT``, ``PORT``) from the environment, checked, as given."""
    raw = os.environ.get(name, "").strip() or default
    port = raw.rpartition(":")[2]
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"{name}={raw!r}: expected HOST:PORT with a port from 1 to 65535, e.g. {default}")
    return raw


def data_dir_from_env() -> Path:
    """The data directory: ``KUBELAB_DATA_DIR``, or ``<repo>/var``; absolute."""
    raw = os.environ.get("KUBELAB_DATA_DIR", "").strip()
    return Path(raw).expanduser().resolve() if raw else BASE_DIR / "var"


def persistent_secret_key(data_dir: Path) -> str:
    """The secret key kept in ``<data dir>/secret_key``, generated on first use.

    Sessions and CSRF tokens survive a restart this way without anyone having to set a key. The
    file is created atomically, so two processes starting at once agree on one key.
    """
    path = data_dir / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = data_dir / f".secret_key.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(50) + "\n")
    try:
        os.link(tmp, path)  # fails if another process won the race: then its key is the key
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path.read_text().strip()


def database_from_url(url: str, *, data_dir: Path) -> dict[str, Any]:
    """Django's ``DATABASES["default"]`` for ``KUBELAB_DATABASE_URL``.

    ``""`` or ``sqlite`` is ``<data dir>/db.sqlite3``; ``sqlite:////abs/path.sqlite3`` a given file,
    ``sqlite:///name.sqlite3`` a file in the data dir;
    ``postgresql://user:password@host:port/name?sslmode=require`` a PostgreSQL database.
    """
    if url in ("", "sqlite"):
        return _sqlite(data_dir / "db.sqlite3")
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        # As in SQLAlchemy: sqlite:////abs/path is absolute, sqlite:///name relative (to the data dir).
        path = unquote(parts.path).removeprefix("/")
        if not path:
            raise ValueError(
                f"KUBELAB_DATABASE_URL={url!r}: name the file, e.g. sqlite:////srv/kubelab.sqlite3"
            )
        return _sqlite(data_dir / path)
    if parts.scheme in ("postgres", "postgresql"):
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")) or "kubelab",
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "OPTIONS": dict(parse_qsl(parts.query)),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    raise ValueError(f"KUBELAB_DATABASE_URL={url!r}: use sqlite, sqlite:////path or postgresql://...")


def _sqlite(path: Path) -> dict[str, Any]:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        # WAL lets the web UI read while a write is in progress; IMMEDIATE avoids upgrade deadlocks.
        "OPTIONS": {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        },
        # Kept between requests: opening one (and its PRAGMAs) costs 0.6 ms, and every request's
        # middleware runs on the one thread Django gives synchronous code.
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }


def channel_layers_from_url(url: str) -> dict[str, Any]:
    """Channels' ``CHANNEL_LAYERS`` for ``KUBELAB_CHANNEL_LAYER``: ``memory`` (default) or ``redis://...``."""
    if url in ("", "memory"):
        return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    if url.startswith(("redis://", "rediss://", "unix://")):
        # redis-py 8 gives up on a read after 5 s, just as channels_redis's blocking read of an idle
        # channel (BZPOPMIN, 5 s) returns empty: a longer timeout (django/channels_redis#422).
        host = {"address": url, "socket_timeout": 10}
        # A trace relay's channel takes every tick of every cluster its process mirrors, ~30 a second
        # each (controlplane/consumers/relay.py): room for a few seconds of them, not the default 100.
        config = {"hosts": [host], "channel_capacity": {"trace-relay.*": 1000}}
        return {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": config}}
    raise ValueError(f"KUBELAB_CHANNEL_LAYER={url!r}: use memory or redis://host:port/db")


# -- where the data lives ----------------------------------------------------------------------------

KUBELAB_DATA_DIR = data_dir_from_env()
KUBELAB_DATA_DIR.mkdir(parents=True, exist_ok=True)

# -- Django core -------------------------------------------------------------------------------------

SECRET_KEY = os.environ.get("KUBELAB_SECRET_KEY", "").strip() or persistent_secret_key(KUBELAB_DATA_DIR)
DEBUG = _env_bool("KUBELAB_DEBUG", False)
ALLOWED_HOSTS = _env_list("KUBELAB_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = _env_list("KUBELAB_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    # daphne first: it installs Twisted's asyncio reactor before anything else imports Twisted.
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "controlplane",
    "courses",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # accounts and languages: the language from the switch's cookie or Accept-Language (after the
    # session, before anything that renders) ...
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # ... or, with no cookie, the signed-in user's saved choice (courses/accounts/middleware.py).
    "courses.accounts.middleware.PreferredLanguageMiddleware",
    # The signed-in user, read once on Django's thread for an async view too (same module).
    "courses.accounts.middleware.SignedInUserMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # accounts: whether the header offers "Sign up" (KUBELAB_OPEN_SIGNUP)
                "courses.accounts.context_processors.accounts",
            ],
        },
    },
]

_database_url = os.environ.get("KUBELAB_DATABASE_URL", "").strip()
DATABASES = {"default": database_from_url(_database_url, data_dir=KUBELAB_DATA_DIR)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CHANNEL_LAYERS = channel_layers_from_url(os.environ.get("KUBELAB_CHANNEL_LAYER", "").strip())

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# -- accounts and languages (courses/accounts) -------------------------------------------------------

#: The interface's languages, each named in itself (the switch in the header lists them so). Catalogs:
#: locale/<locale>/LC_MESSAGES/django.po, compiled by `make messages`; ``python tools/i18n_check.py``
#: lists what is untranslated. Which one a request gets: courses/accounts/middleware.py.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
LOGIN_URL = "courses:sign-in"
LOGIN_REDIRECT_URL = "courses:landing"
LOGOUT_REDIRECT_URL = "courses:landing"
#: Django's own accounts, with failed sign-ins rate-limited wherever a password is checked (the sign-in
#: page and the admin's): courses/accounts/backends.py.
AUTHENTICATION_BACKENDS = ["courses.accounts.backends.RateLimitedModelBackend"]
#: Whether anyone may make an account at /accounts/sign-up/ (on by default); off, accounts come from
#: the admin (or a classroom's join code).
KUBELAB_OPEN_SIGNUP = _env_bool("KUBELAB_OPEN_SIGNUP", True)
#: Failed sign-ins allowed per typed username, and per client IP address, within the window; past it,
#: sign-in is refused until the window (opened by the first failure) closes. The address allows more:
#: a whole classroom may share one address. A window of 0 turns the limit off. See
#: courses/accounts/ratelimit.py.
KUBELAB_SIGNIN_FAILURES: int = _env_count("KUBELAB_SIGNIN_FAILURES", 5)
KUBELAB_SIGNIN_FAILURES_PER_IP: int = _env_count("KUBELAB_SIGNIN_FAILURES_PER_IP", 20)
KUBELAB_SIGNIN_WINDOW: int = _env_count("KUBELAB_SIGNIN_WINDOW", 300)
#: Where the failure counts live: Django's cache. ``memory`` (the default) is one process's memory;
#: several web processes must share one, ``redis://host:port/db`` (Django's RedisCache), or each
#: process would count only the failures it saw.
_cache_url = os.environ.get("KUBELAB_CACHE", "").strip()
if _cache_url in ("", "memory"):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
elif _cache_url.startswith(("redis://", "rediss://", "unix://")):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}}
else:
    raise ValueError(f"KUBELAB_CACHE={_cache_url!r}: use memory or redis://host:port/db")
#: Sessions are read from that cache and written through to the database: every page needs the
#: session, and a database query per page is most of what a signed-in page costs beyond its template.
#: A session the cache lost (a restart, another process) is read from the database again.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

# The lab serves its own static files (config/asgi.py), straight from the source tree: no build step.
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = KUBELAB_DATA_DIR / "static"

LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "controlplane": {"level": os.environ.get("KUBELAB_LOG_LEVEL", "INFO").upper()},
        "courses": {"level": os.environ.get("KUBELAB_LOG_LEVEL", "INFO").upper()},
    },
}

# -- the control plane -------------------------------------------------------------------------------

#: The store backend of every cluster: ``sqlite``, ``postgresql://...`` or ``etcd://host:port``.
KUBELAB_STORE = os.environ.get("KUBELAB_STORE", "").strip() or "sqlite"
#: Automatic compaction keeps at least this many revisions (None: the store's default, 1000) ...
KUBELAB_STORE_RETAIN_REVISIONS: int | None = _env_int("KUBELAB_STORE_RETAIN_REVISIONS")
#: ... and at least this many seconds of history (None: the store's default, 300).
KUBELAB_STORE_RETAIN_SECONDS: float | None = _env_float("KUBELAB_STORE_RETAIN_SECONDS")
#: Recent events each API server's watch cache keeps per resource for resuming watches; a watch from
#: an older resourceVersion gets 410 Gone. 0 (the default) sizes the window as upstream does: about
#: 75 s of history, at least 100 events and at most 102,400; a number fixes it.
KUBELAB_WATCH_CACHE_WINDOW: int = _env_int("KUBELAB_WATCH_CACHE_WINDOW") or 0
#: Flow control of each cluster's API server (kube-apiserver's flags of the same names): API Priority
#: and Fairness, or the older max-in-flight limits when off. Their sum is APF's total concurrency
#: limit; the lab's is a tenth of upstream's 400 + 200
#: (controlplane/apiserver/filters/priority_and_fairness.py).
KUBELAB_ENABLE_PRIORITY_AND_FAIRNESS = _env_bool("KUBELAB_ENABLE_PRIORITY_AND_FAIRNESS", True)
KUBELAB_MAX_REQUESTS_INFLIGHT: int = _env_count("KUBELAB_MAX_REQUESTS_INFLIGHT", 40)
KUBELAB_MAX_MUTATING_REQUESTS_INFLIGHT: int = _env_count("KUBELAB_MAX_MUTATING_REQUESTS_INFLIGHT", 20)
#: The cluster created on the lab's first start; empty for none.
KUBELAB_DEMO_CLUSTER = os.environ.get("KUBELAB_DEMO_CLUSTER", "demo").strip()
#: Whether visitors who have not signed in may watch the demo cluster's live trace (and only that
#: cluster's): on by default, so that a local ``make run`` shows the topology at once; turn it off on
#: a shared server. See courses/access.py.
KUBELAB_DEMO_ANONYMOUS = _env_bool("KUBELAB_DEMO_ANONYMOUS", True)
#: Who may see a cluster (its trace socket, topology page and etcd panel): the dotted path of a
#: function ``(user, cluster name) -> bool``. The rule is the classrooms' (courses/access.py); the
#: trace socket's layer may not import the web app, so it is handed the rule by this name
#: (controlplane/consumers/access.py). A Django setting, not an environment variable.
KUBELAB_CLUSTER_ACCESS = "courses.access.user_may_view"
#: Which part of a cluster's trace a viewer sees (a student in a classroom's shared cluster: their own
#: namespace, not their classmates'): the dotted path of a function ``(user, cluster name) ->
#: TraceScope | None`` (controlplane/trace/scope.py), handed down by name as the rule above.
KUBELAB_TRACE_SCOPE = "courses.access.user_trace_scope"
#: How fast the clusters' timers run: ``classroom`` (upstream's ratios, five times faster) or
#: ``upstream`` (Kubernetes' defaults); see controlplane/timing.py.
KUBELAB_TIMING_PROFILE = _env_choice("KUBELAB_TIMING_PROFILE", "classroom", ("classroom", "upstream"))
#: Trace events each cluster keeps for the timeline and for saving a run ...
KUBELAB_TRACE_RECORDER_SIZE: int = _env_count("KUBELAB_TRACE_RECORDER_SIZE", 50_000)
#: ... and whether it keeps them while nobody watches the cluster (off, the default: a cluster
#: without viewers does no trace work at all; on: an instructor can save a run nobody watched).
KUBELAB_TRACE_RECORD = _env_bool("KUBELAB_TRACE_RECORD", False)
#: The simulated nodes each cluster runs (one kubelet and one kube-proxy each).
KUBELAB_NODES: int = _env_count("KUBELAB_NODES", 3)
#: The components each cluster runs inside the lab process; the others may run as their own processes
#: (``manage.py runcomponent``). ``none`` for none.
KUBELAB_COMPONENTS = _env_components(
    "KUBELAB_COMPONENTS", ("scheduler", "controller-manager", "kubelet", "kube-proxy")
)
#: Every cluster's audit policy (an audit.k8s.io/v1 Policy file); empty: Kubelab's default policy
#: (controlplane/apiserver/audit/default-policy.yaml). A cluster with its own
#: ``<cluster dir>/audit-policy.yaml`` uses that instead.
KUBELAB_AUDIT_POLICY_FILE: Path | None = (
    Path(os.environ["KUBELAB_AUDIT_POLICY_FILE"].strip()).expanduser().absolute()
    if os.environ.get("KUBELAB_AUDIT_POLICY_FILE", "").strip()
    else None
)
#: Each cluster's audit log (``<cluster dir>/audit/audit.log``) is rotated at this many MiB, and this
#: many rotated files are kept.
KUBELAB_AUDIT_LOG_MAXSIZE: int = _env_count("KUBELAB_AUDIT_LOG_MAXSIZE", 10)
if KUBELAB_AUDIT_LOG_MAXSIZE < 1:
    raise ValueError(
        f"KUBELAB_AUDIT_LOG_MAXSIZE={KUBELAB_AUDIT_LOG_MAXSIZE}: expected a whole number of MiB >= 1"
    )
KUBELAB_AUDIT_LOG_MAXBACKUP: int = _env_count("KUBELAB_AUDIT_LOG_MAXBACKUP", 2)
#: Where the Kubernetes API port (HTTPS) listens: ``runlab --api``'s default, and the address
#: ``manage.py kubeconfig`` puts in its server URLs unless told ``--server``.
KUBELAB_API_ADDRESS = _env_address("KUBELAB_API_ADDRESS", "127.0.0.1:6443")
#: How a new cluster encrypts Secrets at rest: ``aescbc`` (the default, as upstream's tutorial),
#: ``aesgcm``, ``secretbox``, or ``identity`` (stored in plaintext). Used once, when a cluster is made:
#: it writes ``<cluster dir>/encryption-config.yaml``, which then is the cluster's configuration
#: (``manage.py encryption``; see controlplane/apiserver/encryption).
KUBELAB_ENCRYPTION_PROVIDER = _env_choice(
    "KUBELAB_ENCRYPTION_PROVIDER", "aescbc", ("aescbc", "aesgcm", "secretbox", "identity")
)

# -- the kubectl console: the real kubectl in the browser (courses/console) ---------------------------

#: Seconds a console command may run before it is killed; a command that runs until stopped (``-w``,
#: ``logs -f``, ``rollout status``, ``wait``, ``drain``) gets the second, longer limit.
KUBELAB_CONSOLE_TIMEOUT: float = _env_float("KUBELAB_CONSOLE_TIMEOUT") or 30.0
KUBELAB_CONSOLE_FOLLOW_TIMEOUT: float = _env_float("KUBELAB_CONSOLE_FOLLOW_TIMEOUT") or 600.0
#: Bytes of output one command may write before it is stopped.
KUBELAB_CONSOLE_OUTPUT_LIMIT: int = _env_count("KUBELAB_CONSOLE_OUTPUT_LIMIT", 1024 * 1024) or 1024 * 1024
#: Commands one student may run at the same time (per web process); another is refused until one ends.
KUBELAB_CONSOLE_CONCURRENCY: int = _env_count("KUBELAB_CONSOLE_CONCURRENCY", 2) or 2
#: Resource limits of each kubectl process: CPU seconds, and address space in MiB (Go reserves about
#: 900 MiB of address space at start, so less than 1024 stops kubectl before it runs).
KUBELAB_CONSOLE_CPU_SECONDS: int = _env_count("KUBELAB_CONSOLE_CPU_SECONDS", 30) or 30
KUBELAB_CONSOLE_ADDRESS_SPACE_MIB: int = _env_count("KUBELAB_CONSOLE_ADDRESS_SPACE_MIB", 4096) or 4096
#: Where each console's private directory (kubeconfig, kubectl's cache) is made; empty: the system's
#: temporary directory.
KUBELAB_CONSOLE_TMP_DIR: str = os.environ.get("KUBELAB_CONSOLE_TMP_DIR", "").strip()
#: The API server URL the console's kubectl uses (``https://127.0.0.1:6443``); empty: the one
#: ``manage.py kubeconfig`` writes (``https://<KUBELAB_API_ADDRESS>``).
KUBELAB_CONSOLE_SERVER: str = os.environ.get("KUBELAB_CONSOLE_SERVER", "").strip()

# -- sandboxes: each student's own cluster (courses/sandboxes, controlplane/runtime.py) ---------------

#: Objects of every kind together that one sandbox may hold; a create past it is refused with a
#: message saying so (controlplane/apiserver/admission/sandboxguardrails.py).
KUBELAB_SANDBOX_MAX_OBJECTS: int = _env_count("KUBELAB_SANDBOX_MAX_OBJECTS", 2000)
if KUBELAB_SANDBOX_MAX_OBJECTS < 1:
    raise ValueError(f"KUBELAB_SANDBOX_MAX_OBJECTS={KUBELAB_SANDBOX_MAX_OBJECTS}: expected at least 1")
#: Seconds without a page, socket or API request after which a sandbox hibernates (its components
#: stop, its store closes; the next request wakes it with every object intact). 0: never.
#: Trace events each sandbox's recorder keeps (the lab's clusters keep KUBELAB_TRACE_RECORDER_SIZE).
KUBELAB_SANDBOX_TRACE_SIZE: int = _env_count("KUBELAB_SANDBOX_TRACE_SIZE", 10_000)
if KUBELAB_SANDBOX_TRACE_SIZE < 1:
    raise ValueError(f"KUBELAB_SANDBOX_TRACE_SIZE={KUBELAB_SANDBOX_TRACE_SIZE}: expected at least 1")
_sandbox_idle = _env_float("KUBELAB_SANDBOX_IDLE_SECONDS")
KUBELAB_SANDBOX_IDLE_SECONDS: float = 900.0 if _sandbox_idle is None else _sandbox_idle
if KUBELAB_SANDBOX_IDLE_SECONDS < 0:
    raise ValueError(f"KUBELAB_SANDBOX_IDLE_SECONDS={KUBELAB_SANDBOX_IDLE_SECONDS}: expected seconds >= 0")

# -- the manifest form (courses/manifests) -------------------------------------------------------------

#: A form post may carry a whole manifest: up to the API server's 3 MiB of YAML, which URL-encoding can
#: make three times larger (each byte of non-ASCII text becomes %XX). With Django's default (2.5 MB),
#: a large manifest would be refused as a bare 400 before the form could say why.
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
