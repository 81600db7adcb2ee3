"""The PostgreSQL backend: etcd's data model in ordinary tables, shared by several clusters and processes.

**Rows are versions.** As in the SQLite backend, a key is never updated in place: every write inserts
a new row stamped with the revision that wrote it, and a delete inserts a *tombstone* (``version`` 0)::

    kubelab.kv  (prev_revision: see below)
    cluster | key                   | revision | sub | create_revision | version | lease | value
    --------+-----------------------+----------+-----+-----------------+---------+-------+------
    lab-1   | /registry/pods/ns/web |       41 |   0 |              41 |       1 |     0 | {...}
    lab-1   | /registry/pods/ns/web |       42 |   0 |              41 |       2 |     0 | {...}
    lab-1   | /registry/pods/ns/web |       43 |   0 |               0 |       0 |     0 |
                                        (revision 43 is a tombstone: the pod was deleted)

Reading "at revision R" takes, per key, the newest row with ``revision <= R`` and drops it if it is a
tombstone (``DISTINCT ON (key) ... ORDER BY key, revision DESC`` walks the ``(cluster, key, revision
DESC)`` index in exactly that order). ``sub`` orders the rows of one revision (a transaction that
writes three keys makes three rows at one revision), and ``prev_revision`` points at the version a
write replaced, so a watch event can carry ``prev_kv`` without a search. Keys are stored as UTF-8
``bytea`` because bytes compare in code-point order, exactly like Python strings; to read them in
``psql``, use ``convert_from(key, 'UTF8')``.

**Several clusters, one database.** Every table has a ``cluster`` column that leads every primary key
and index, so the clusters of a database (and of a schema, ``kubelab`` by default) never see each
other's rows. Each cluster has one row in ``revisions`` (its revision counter, and the name of its
NOTIFY channel) and one in ``compactions`` (its compaction mark), plus its ``leases``.

**The revision counter is a locked row.** A write transaction starts with::

    UPDATE kubelab.revisions SET revision = revision + 1 WHERE cluster = 'lab-1' RETURNING revision

which takes the row lock and holds it until COMMIT. A second writer of the same cluster (in this
process or another one) waits on that lock, so transactions of one cluster are serialized like
etcd's, **commit order equals revision order**, and revisions stay gapless: a transaction that rolls
back also rolls back its increment, and one that turns out to write nothing (a failed compare whose
other branch only reads, a delete of a missing key) puts the counter back before it commits.

**One round trip per transaction.** The whole of etcd's transaction logic (evaluate the compares,
pick the branch, check leases, read each key, insert the new versions, bump the counter, notify) is
a PL/pgSQL function installed by ``start()``: ``kubelab.txn(...)`` for any transaction, and
``kubelab.txn1(...)`` for the one-key transactions kube-apiserver sends nearly always (put, create,
update, delete), which takes plain parameters instead of arrays and reads the key once. Python sends
one ``SELECT * FROM kubelab.txn1(...)`` in autocommit mode: the server runs it and commits before it
answers, so a write is acknowledged only once it is durable, after a single round trip.

**Why the MVCC rules are written twice, and which copy is the reference.** The pure core
(``mvcc.py``) is the specification, and the SQLite backend, which runs ``mvcc.evaluate`` over its
in-memory key index, is the reference implementation (Kubelab has no separate in-memory store). This
backend does not call ``mvcc.evaluate``: compares, branch, lease check, each operation's previous
version, the new versions and the gapless revision are PL/pgSQL here (``txn``, ``txn1``), and so are
lease revocation and compaction; Python only validates (``mvcc.check_txn``, ``check_read_revision``)
and builds the responses from what the function reports (``_txn_outcome``). The reason is round
trips. ``mvcc.evaluate`` needs each key's current version, read under the counter lock, before it
knows what to insert, so driving it from Python costs at least two round trips per transaction
(``BEGIN``, lock and read; then ``INSERT``, ``NOTIFY``, ``COMMIT``), six as one statement at a time,
and the lock that serializes every writer of the cluster, in every process, is held across them.
The function costs one. Measured with one writer of 1 KiB puts through psycopg on a local
PostgreSQL 15 (fsync and ``synchronous_commit`` on, a shared 2-CPU machine, best of 3 rounds of 2000,
two runs): a raw autocommit ``INSERT`` took 211-215 us, ``txn1`` 308-377 us (0.57-0.69 of raw),
``mvcc.evaluate`` with its two round trips pipelined 581-675 us (0.32-0.36), and as six statements
638-782 us (0.27-0.34). ``python -m bench store --quick`` holds ``postgres.single_writer`` to >= 0.6
of the raw loop; it measured the store at 0.50-0.55 on that machine (2,295-2,559 commits/s), so the
target is only within reach of the one-round-trip form, and the Python form would be at a third.

So the functions must keep agreeing with ``mvcc.py``. A change to the rules goes into ``mvcc.py``
first (SQLite follows it), then here; ``tests/controlplane/store/test_postgres_reference.py`` runs
generated programs (compares, puts, deletes, gets, ranges at any revision, compaction, leases,
watches) against SQLite and this backend and requires identical answers, revisions, errors and watch
events, and the conformance suite holds every backend, etcd included, to the same semantics.

**One connection per store writes and listens.** It ``LISTEN``s on the cluster's channel, and every
write of the process goes through it. When several writes are waiting it sends them as one pipeline,
``BEGIN; SELECT txn1(...); SELECT txn1(...); ...; COMMIT``, in one round trip and one fsync (**group
commit**); each write still gets its own revision.

**Watches wake on NOTIFY.** Every committing write calls ``pg_notify(<cluster's channel>,
<revision>)``; PostgreSQL delivers the notification to every listening session once the transaction
has committed. While the store's connection is idle, the event loop watches its socket, so a commit
of another process wakes it at once; when it hears of a revision newer than the last one it has
published, it reads the rows after that revision (they are gapless and in commit order, see above)
and hands them to the ``WatchHub`` in revision order. So a watch in process B sees the writes of
process A, nothing is polled, and a notification lost in a reconnect costs nothing: a new connection
first reads every row after the last published one. The process's *own* commits need no read: the
writer already knows their events and publishes them at once, before answering the caller, when they
directly follow the last published revision (otherwise another process's commit came in between,
and the read after its notification publishes both, in order). The notification of an own commit
arrives together with the commit's result and is simply found already published.

**Compaction** deletes, in one transaction, every version superseded at the mark and every tombstone
at or before it, and moves the mark (kept in its own table so that compacting never blocks writers).
Before compacting, a store waits until it has published its own writes up to the mark, so its
watches never miss an event; a process that has not yet read commits that another process's
compaction removed ends its watches with ``Compacted`` (etcd cancels a watcher that falls behind
compaction the same way).

**Leases** are rows with an expiry on the cluster clock. ``kubelab.lease_revoke(...)`` deletes the
lease and writes tombstones for every key whose current version carries it, as one revision. A
background task of each store revokes the leases whose time has run out; when several processes
race for the same lease, the row delete decides and only one of them writes.

**Failures.** Every database error becomes a ``BackendUnavailable``; a lost connection is reopened
(at once for the next write, with backoff for listening). As with any database, if the connection
drops while COMMIT is in flight, the caller cannot know whether the write was committed. Reads, lease
grants and compaction use a few other pooled connections, so they never wait behind writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg.rows import TupleRow
from psycopg.types.numeric import Int8

from controlplane.clock import SYSTEM_CLOCK, Clock
from controlplane.store import mvcc
from controlplane.store.compaction import Compactor, RetentionPolicy
from controlplane.store.errors import (
    BackendUnavailable,
    Compacted,
    FutureRevision,
    InvalidRequest,
    LeaseNotFound,
    StoreClosed,
    StoreError,
    UnknownCluster,
)
from controlplane.store.interface import Store
from controlplane.store.kv import (
    Delete,
    DeleteResponse,
    Event,
    EventType,
    Get,
    GetResponse,
    KeyValue,
    Lease,
    OpResponse,
    Put,
    PutResponse,
    RangeResult,
    Txn,
    TxnResult,
)
from controlplane.store.watch import DEFAULT_WATCH_CAPACITY, Watch, WatchHub
from controlplane.tasks import cancel_and_wait
from controlplane.trace import NULL_SINK, TraceSink

Connection = psycopg.AsyncConnection[TupleRow]
T = TypeVar("T")

#: Events per watch-history page, and revisions per catch-up read.
HISTORY_PAGE = 1000
CATCH_UP_PAGE = 1000

#: The SQLSTATE our functions raise for a cluster that has no counter row.
UNKNOWN_CLUSTER = "KL001"

# -- the schema -----------------------------------------------------------------------------------
# ``@s@`` stands for the quoted schema name. Installed by ``start()`` under an advisory lock, so
# processes starting together do not race on CREATE.

SCHEMA = """
CREATE SCHEMA IF NOT EXISTS @s@;

-- One row per cluster: its revision counter. Every write transaction locks it (see txn below).
CREATE TABLE IF NOT EXISTS @s@.revisions (
    cluster  text   PRIMARY KEY,
    revision bigint NOT NULL,
    channel  text   NOT NULL        -- the NOTIFY channel of the cluster's commits
) WITH (fillfactor = 50);           -- room for HOT updates: the row changes on every commit

-- One row per cluster: its compaction mark, apart from the counter so compaction never blocks writes.
CREATE TABLE IF NOT EXISTS @s@.compactions (
    cluster          text   PRIMARY KEY,
    compact_revision bigint NOT NULL
);

-- Every version of every key; version 0 is a tombstone.
CREATE TABLE IF NOT EXISTS @s@.kv (
    cluster         text    NOT NULL,
    key             bytea   NOT NULL,
    revision        bigint  NOT NULL,   -- etcd's mod_revision
    sub             integer NOT NULL,   -- position among the rows of this revision
    create_revision bigint  NOT NULL,
    version         bigint  NOT NULL,
    lease           bigint  NOT NULL,
    value           bytea   NOT NULL,
    prev_revision   bigint  NOT NULL,   -- the live version this one replaced, 0 if none
    PRIMARY KEY (cluster, revision, sub)
);
CREATE UNIQUE INDEX IF NOT EXISTS kv_key_revision ON @s@.kv (cluster, key, revision DESC);
CREATE INDEX IF NOT EXISTS kv_lease ON @s@.kv (cluster, lease) WHERE lease <> 0;

CREATE TABLE IF NOT EXISTS @s@.leases (
    cluster    text             NOT NULL,
    id         bigint           NOT NULL,
    ttl        bigint           NOT NULL,
    expires_at double precision NOT NULL,   -- cluster-clock seconds
    PRIMARY KEY (cluster, id)
);
CREATE SEQUENCE IF NOT EXISTS @s@.lease_ids;

-- etcd's transaction: if all compares hold then the success operations else the failure ones, as
-- one revision if anything is written. Compares and operations come as parallel arrays; the
-- one-letter codes keep the call small. Returns the branch taken, the revision after, a lease that
-- does not exist (then nothing was written), and for each operation of the branch the key as that
-- operation found it (NULLs if absent): the previous value of a Put or Delete, the result of a Get.
CREATE OR REPLACE FUNCTION @s@.txn(
    p_cluster     text,
    p_cmp_keys    bytea[],
    p_cmp_targets text,        -- per compare: c(reate_revision), m(od_revision), v(ersion)
    p_cmp_ops     text,        -- per compare: = ! < >
    p_cmp_values  bigint[],
    p_kinds       text,        -- per operation: P(ut), D(elete), G(et)
    p_keys        bytea[],
    p_values      bytea[],
    p_leases      bigint[],
    p_n_success   integer,     -- operations 1..p_n_success are the success branch, the rest failure
    OUT succeeded            boolean,
    OUT revision             bigint,
    OUT missing_lease        bigint,
    OUT prev_create_revision bigint[],
    OUT prev_mod_revision    bigint[],
    OUT prev_version         bigint[],
    OUT prev_lease           bigint[],
    OUT prev_value           bytea[]
) LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
    v_writes  boolean := strpos(p_kinds, 'P') > 0 OR strpos(p_kinds, 'D') > 0;
    v_rev     bigint;              -- the revision this transaction writes (or reads, if read-only)
    v_channel text;
    v_row     @s@.kv%ROWTYPE;
    v_actual  bigint;
    v_first   integer;
    v_last    integer;
    v_kind    text;
    v_sub     integer := 0;
BEGIN
    IF v_writes THEN
        -- Take the cluster's write lock and the next revision in one statement.
        UPDATE @s@.revisions AS r SET revision = r.revision + 1 WHERE r.cluster = p_cluster
            RETURNING r.revision, r.channel INTO v_rev, v_channel;
    ELSE
        SELECT r.revision INTO v_rev FROM @s@.revisions AS r WHERE r.cluster = p_cluster;
    END IF;
    IF v_rev IS NULL THEN
        RAISE EXCEPTION 'unknown cluster %', p_cluster USING ERRCODE = 'KL001';
    END IF;

    succeeded := true;
    FOR i IN 1 .. coalesce(array_length(p_cmp_keys, 1), 0) LOOP
        SELECT * INTO v_row FROM @s@.kv AS k
            WHERE k.cluster = p_cluster AND k.key = p_cmp_keys[i] AND k.revision <= v_rev
            ORDER BY k.revision DESC LIMIT 1;
        v_actual := CASE WHEN v_row.version IS NULL OR v_row.version = 0 THEN 0
                         WHEN substr(p_cmp_targets, i, 1) = 'c' THEN v_row.create_revision
                         WHEN substr(p_cmp_targets, i, 1) = 'm' THEN v_row.revision
                         ELSE v_row.version END;
        succeeded := CASE substr(p_cmp_ops, i, 1)
                         WHEN '=' THEN v_actual = p_cmp_values[i]
                         WHEN '!' THEN v_actual <> p_cmp_values[i]
                         WHEN '<' THEN v_actual < p_cmp_values[i]
                         ELSE v_actual > p_cmp_values[i] END;
        EXIT WHEN NOT succeeded;
    END LOOP;

    IF succeeded THEN
        v_first := 1;
        v_last := p_n_success;
    ELSE
        v_first := p_n_success + 1;
        v_last := length(p_kinds);
    END IF;

    -- A Put naming a lease that does not exist fails the whole transaction before anything is written.
    FOR i IN v_first .. v_last LOOP
        IF substr(p_kinds, i, 1) = 'P' AND p_leases[i] <> 0 AND NOT EXISTS (
            SELECT 1 FROM @s@.leases AS l WHERE l.cluster = p_cluster AND l.id = p_leases[i]
        ) THEN
            missing_lease := p_leases[i];
            EXIT;
        END IF;
    END LOOP;

    prev_create_revision := '{}';
    prev_mod_revision := '{}';
    prev_version := '{}';
    prev_lease := '{}';
    prev_value := '{}';
    IF missing_lease IS NULL THEN
        FOR i IN v_first .. v_last LOOP
            -- The key as it is now, including this transaction's own earlier operations.
            SELECT * INTO v_row FROM @s@.kv AS k
                WHERE k.cluster = p_cluster AND k.key = p_keys[i] AND k.revision <= v_rev
                ORDER BY k.revision DESC LIMIT 1;
            IF v_row.version = 0 THEN
                v_row := NULL;  -- a tombstone: the key does not exist
            END IF;
            prev_create_revision := array_append(prev_create_revision, v_row.create_revision);
            prev_mod_revision := array_append(prev_mod_revision, v_row.revision);
            prev_version := array_append(prev_version, v_row.version);
            prev_lease := array_append(prev_lease, v_row.lease);
            prev_value := array_append(prev_value, v_row.value);

            v_kind := substr(p_kinds, i, 1);
            IF v_kind = 'P' THEN
                INSERT INTO @s@.kv (cluster, key, revision, sub, create_revision, version, lease, value,
                                    prev_revision)
                VALUES (p_cluster, p_keys[i], v_rev, v_sub, coalesce(v_row.create_revision, v_rev),
                        coalesce(v_row.version, 0) + 1, p_leases[i], p_values[i],
                        coalesce(v_row.revision, 0));
                v_sub := v_sub + 1;
            ELSIF v_kind = 'D' AND v_row.revision IS NOT NULL THEN
                INSERT INTO @s@.kv (cluster, key, revision, sub, create_revision, version, lease, value,
                                    prev_revision)
                VALUES (p_cluster, p_keys[i], v_rev, v_sub, 0, 0, 0, '', v_row.revision);
                v_sub := v_sub + 1;
            END IF;
        END LOOP;
    END IF;

    IF v_sub > 0 THEN
        -- Delivered to every listener when (and only if) this transaction commits.
        PERFORM pg_notify(v_channel, v_rev::text);
    ELSIF v_writes THEN
        -- Nothing written after all: give the revision back, so revisions stay gapless.
        UPDATE @s@.revisions AS r SET revision = r.revision - 1 WHERE r.cluster = p_cluster;
        v_rev := v_rev - 1;
    END IF;
    revision := v_rev;
END
$fn$;

-- The same for the transactions kube-apiserver sends nearly all the time, which touch one key:
-- put, create (absent? Put : Get), update and delete (unchanged? Put/Delete : Get). Plain
-- parameters instead of arrays, and one read of the key serves the compare and the operation.
CREATE OR REPLACE FUNCTION @s@.txn1(
    p_cluster    text,
    p_key        bytea,
    p_cmp_target text,         -- '' (no compare), c, m or v
    p_cmp_op     text,
    p_cmp_value  bigint,
    p_success    text,         -- P, D or G
    p_value      bytea,
    p_lease      bigint,
    p_failure    text,         -- '' (nothing) or G
    OUT succeeded            boolean,
    OUT revision             bigint,
    OUT missing_lease        bigint,
    OUT prev_create_revision bigint,
    OUT prev_mod_revision    bigint,
    OUT prev_version         bigint,
    OUT prev_lease           bigint,
    OUT prev_value           bytea
) LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
    v_writes  boolean := p_success <> 'G';
    v_rev     bigint;
    v_channel text;
    v_row     @s@.kv%ROWTYPE;
    v_actual  bigint;
    v_kind    text;
BEGIN
    IF v_writes THEN
        UPDATE @s@.revisions AS r SET revision = r.revision + 1 WHERE r.cluster = p_cluster
            RETURNING r.revision, r.channel INTO v_rev, v_channel;
    ELSE
        SELECT r.revision INTO v_rev FROM @s@.revisions AS r WHERE r.cluster = p_cluster;
    END IF;
    IF v_rev IS NULL THEN
        RAISE EXCEPTION 'unknown cluster %', p_cluster USING ERRCODE = 'KL001';
    END IF;

    SELECT * INTO v_row FROM @s@.kv AS k
        WHERE k.cluster = p_cluster AND k.key = p_key AND k.revision <= v_rev
        ORDER BY k.revision DESC LIMIT 1;
    IF v_row.version = 0 THEN
        v_row := NULL;
    END IF;
    IF p_cmp_target = '' THEN
        succeeded := true;
    ELSE
        v_actual := CASE WHEN v_row.revision IS NULL THEN 0
                         WHEN p_cmp_target = 'c' THEN v_row.create_revision
                         WHEN p_cmp_target = 'm' THEN v_row.revision
                         ELSE v_row.version END;
        succeeded := CASE p_cmp_op
                         WHEN '=' THEN v_actual = p_cmp_value
                         WHEN '!' THEN v_actual <> p_cmp_value
                         WHEN '<' THEN v_actual < p_cmp_value
                         ELSE v_actual > p_cmp_value END;
    END IF;
    v_kind := CASE WHEN succeeded THEN p_success ELSE p_failure END;
    IF v_kind = 'P' AND p_lease <> 0 AND NOT EXISTS (
        SELECT 1 FROM @s@.leases AS l WHERE l.cluster = p_cluster AND l.id = p_lease
    ) THEN
        missing_lease := p_lease;
        v_kind := '';
    END IF;
    IF v_kind <> '' THEN
        prev_create_revision := v_row.create_revision;
        prev_mod_revision := v_row.revision;
        prev_version := v_row.version;
        prev_lease := v_row.lease;
        prev_value := v_row.value;
    END IF;

    IF v_kind = 'P' THEN
        INSERT INTO @s@.kv (cluster, key, revision, sub, create_revision, version, lease, value,
                            prev_revision)
        VALUES (p_cluster, p_key, v_rev, 0, coalesce(v_row.create_revision, v_rev),
                coalesce(v_row.version, 0) + 1, p_lease, p_value, coalesce(v_row.revision, 0));
        PERFORM pg_notify(v_channel, v_rev::text);
    ELSIF v_kind = 'D' AND v_row.revision IS NOT NULL THEN
        INSERT INTO @s@.kv (cluster, key, revision, sub, create_revision, version, lease, value,
                            prev_revision)
        VALUES (p_cluster, p_key, v_rev, 0, 0, 0, 0, '', v_row.revision);
        PERFORM pg_notify(v_channel, v_rev::text);
    ELSIF v_writes THEN
        UPDATE @s@.revisions AS r SET revision = r.revision - 1 WHERE r.cluster = p_cluster;
        v_rev := v_rev - 1;
    END IF;
    revision := v_rev;
END
$fn$;

-- End a lease: delete it and, as one revision, every key whose current version carries it.
-- With p_now, only if it has expired by then (the expiry task; keepalive may have won the race).
CREATE OR REPLACE FUNCTION @s@.lease_revoke(
    p_cluster text,
    p_id      bigint,
    p_now     double precision,
    OUT revoked              boolean,
    OUT revision             bigint,
    OUT keys                 bytea[],
    OUT prev_create_revision bigint[],
    OUT prev_mod_revision    bigint[],
    OUT prev_version         bigint[],
    OUT prev_value           bytea[]
) LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
    v_rev     bigint;
    v_channel text;
    v_row     @s@.kv%ROWTYPE;
    v_sub     integer := 0;
BEGIN
    UPDATE @s@.revisions AS r SET revision = r.revision + 1 WHERE r.cluster = p_cluster
        RETURNING r.revision, r.channel INTO v_rev, v_channel;
    IF v_rev IS NULL THEN
        RAISE EXCEPTION 'unknown cluster %', p_cluster USING ERRCODE = 'KL001';
    END IF;
    DELETE FROM @s@.leases AS l
        WHERE l.cluster = p_cluster AND l.id = p_id AND (p_now IS NULL OR l.expires_at <= p_now);
    revoked := FOUND;
    keys := '{}';
    prev_create_revision := '{}';
    prev_mod_revision := '{}';
    prev_version := '{}';
    prev_value := '{}';
    IF revoked THEN
        FOR v_row IN
            SELECT k.* FROM @s@.kv AS k
            WHERE k.cluster = p_cluster AND k.lease = p_id AND k.version > 0
              AND NOT EXISTS (SELECT 1 FROM @s@.kv AS n
                              WHERE n.cluster = p_cluster AND n.key = k.key AND n.revision > k.revision)
            ORDER BY k.key
        LOOP
            INSERT INTO @s@.kv (cluster, key, revision, sub, create_revision, version, lease, value,
                                prev_revision)
            VALUES (p_cluster, v_row.key, v_rev, v_sub, 0, 0, 0, '', v_row.revision);
            v_sub := v_sub + 1;
            keys := array_append(keys, v_row.key);
            prev_create_revision := array_append(prev_create_revision, v_row.create_revision);
            prev_mod_revision := array_append(prev_mod_revision, v_row.revision);
            prev_version := array_append(prev_version, v_row.version);
            prev_value := array_append(prev_value, v_row.value);
        END LOOP;
    END IF;
    IF v_sub > 0 THEN
        PERFORM pg_notify(v_channel, v_rev::text);
    ELSE
        UPDATE @s@.revisions AS r SET revision = r.revision - 1 WHERE r.cluster = p_cluster;
        v_rev := v_rev - 1;
    END IF;
    revision := v_rev;
END
$fn$;

-- Compact at p_revision: keep, per key, the newest version at or before it (unless a tombstone)
-- and everything after it. Does nothing (done = false) unless compact_revision < p_revision <= current.
CREATE OR REPLACE FUNCTION @s@.compact(
    p_cluster  text,
    p_revision bigint,
    OUT current_revision bigint,
    OUT compact_revision bigint,
    OUT done             boolean
) LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
    SELECT c.compact_revision INTO compact_revision FROM @s@.compactions AS c
        WHERE c.cluster = p_cluster FOR UPDATE;
    SELECT r.revision INTO current_revision FROM @s@.revisions AS r WHERE r.cluster = p_cluster;
    IF compact_revision IS NULL OR current_revision IS NULL THEN
        RAISE EXCEPTION 'unknown cluster %', p_cluster USING ERRCODE = 'KL001';
    END IF;
    done := p_revision > compact_revision AND p_revision <= current_revision;
    IF done THEN
        DELETE FROM @s@.kv AS k
            WHERE k.cluster = p_cluster AND k.revision <= p_revision
              AND (k.version = 0 OR EXISTS (
                  SELECT 1 FROM @s@.kv AS n
                  WHERE n.cluster = p_cluster AND n.key = k.key
                    AND n.revision > k.revision AND n.revision <= p_revision));
        UPDATE @s@.compactions AS c SET compact_revision = p_revision WHERE c.cluster = p_cluster;
        compact_revision := p_revision;
    END IF;
END
$fn$;
"""

# -- the queries ------------------------------------------------------------------------------------

TXN = (
    "SELECT * FROM @s@.txn(%s, %s::bytea[], %s::text, %s::text, %s::bigint[],"
    " %s::text, %s::bytea[], %s::bytea[], %s::bigint[], %s::integer)"
)
TXN1 = (
    "SELECT * FROM @s@.txn1(%s, %s::bytea, %s::text, %s::text, %s::bigint,"
    " %s::text, %s::bytea, %s::bigint, %s::text)"
)
LEASE_REVOKE = "SELECT * FROM @s@.lease_revoke(%s, %s::bigint, %s::double precision)"
COMPACT = "SELECT * FROM @s@.compact(%s, %s::bigint)"

INIT_REVISIONS = (
    "INSERT INTO @s@.revisions (cluster, revision, channel) VALUES (%s, 0, %s) ON CONFLICT DO NOTHING"
)
INIT_COMPACTIONS = (
    "INSERT INTO @s@.compactions (cluster, compact_revision) VALUES (%s, 0) ON CONFLICT DO NOTHING"
)
CHANNEL = "SELECT channel, revision FROM @s@.revisions WHERE cluster = %s"

MARKS = """
SELECT r.revision, c.compact_revision
FROM @s@.revisions AS r JOIN @s@.compactions AS c ON c.cluster = r.cluster
WHERE r.cluster = %(cluster)s
"""

# One statement, so one snapshot: the marks, the total count and the page of live keys agree.
RANGE = """
WITH meta AS (
    SELECT r.revision AS current_revision, c.compact_revision,
           coalesce(%(revision)s::bigint, r.revision) AS at_revision
    FROM @s@.revisions AS r JOIN @s@.compactions AS c ON c.cluster = r.cluster
    WHERE r.cluster = %(cluster)s
), latest AS (
    SELECT DISTINCT ON (k.key) k.key, k.create_revision, k.revision, k.version, k.lease, k.value
    FROM @s@.kv AS k, meta AS m
    WHERE k.cluster = %(cluster)s AND k.key >= %(begin)s AND k.key < %(end)s
      AND k.revision <= m.at_revision
      AND m.at_revision BETWEEN m.compact_revision AND m.current_revision
    ORDER BY k.key, k.revision DESC
), live AS (
    SELECT l.*, count(*) OVER () AS total FROM latest AS l
    WHERE l.version > 0 ORDER BY l.key LIMIT %(limit)s::bigint
)
SELECT m.current_revision, m.compact_revision, m.at_revision, live.total,
       live.key, live.create_revision, live.revision, live.version, live.lease, live.value
FROM meta AS m LEFT JOIN live ON true
ORDER BY live.key
"""

# An event row: the version written, and the version it replaced (NULLs if none).
EVENTS = """
    SELECT e.revision, e.sub, e.key, e.create_revision, e.version, e.lease, e.value,
           p.create_revision AS p_create_revision, p.revision AS p_revision, p.version AS p_version,
           p.lease AS p_lease, p.value AS p_value
    FROM @s@.kv AS e
    LEFT JOIN @s@.kv AS p ON p.cluster = e.cluster AND p.key = e.key AND p.revision = e.prev_revision
"""

# What a catch-up reads: every event in (after, upto], with the marks of the same snapshot.
CATCH_UP = f"""
WITH meta AS (
    SELECT r.revision AS current_revision, c.compact_revision,
           least(r.revision, %(after)s::bigint + %(page)s::bigint) AS upto
    FROM @s@.revisions AS r JOIN @s@.compactions AS c ON c.cluster = r.cluster
    WHERE r.cluster = %(cluster)s
)
SELECT m.current_revision, m.compact_revision, m.upto, ev.*
FROM meta AS m LEFT JOIN LATERAL ({EVENTS}
    WHERE e.cluster = %(cluster)s AND e.revision > %(after)s::bigint AND e.revision <= m.upto
) AS ev ON true
ORDER BY ev.revision, ev.sub
"""

# A page of a watch's history: the events under a prefix in (after, upto], where upto is chosen so
# that a page holds about HISTORY_PAGE events and never splits a revision.
HISTORY = f"""
WITH meta AS (
    SELECT c.compact_revision FROM @s@.compactions AS c WHERE c.cluster = %(cluster)s
), bound AS (
    SELECT max(s.revision) AS upto FROM (
        SELECT e.revision FROM @s@.kv AS e
        WHERE e.cluster = %(cluster)s AND e.key >= %(begin)s AND e.key < %(end)s
          AND e.revision > %(after)s::bigint AND e.revision <= %(head)s::bigint
        ORDER BY e.revision LIMIT %(page)s::bigint
    ) AS s
)
SELECT m.compact_revision, b.upto, ev.*
FROM meta AS m CROSS JOIN bound AS b LEFT JOIN LATERAL ({EVENTS}
    WHERE e.cluster = %(cluster)s AND e.key >= %(begin)s AND e.key < %(end)s
      AND e.revision > %(after)s::bigint AND e.revision <= b.upto
) AS ev ON true
ORDER BY ev.revision, ev.sub
"""

LEASE_GRANT = (
    "INSERT INTO @s@.leases (cluster, id, ttl, expires_at)"
    " VALUES (%s, nextval('@s@.lease_ids'), %s, %s) RETURNING id"
)
LEASE_KEEPALIVE = (
    "UPDATE @s@.leases SET expires_at = %(now)s + ttl"
    " WHERE cluster = %(cluster)s AND id = %(id)s AND expires_at > %(now)s RETURNING ttl, expires_at"
)
LEASES_EXPIRED = "SELECT id FROM @s@.leases WHERE cluster = %s AND expires_at <= %s ORDER BY expires_at, id"

_TARGETS = {"create_revision": "c", "mod_revision": "m", "version": "v"}
_OPS = {"=": "=", "!=": "!", "<": "<", ">": ">"}
_KINDS: dict[type[Any], str] = {Put: "P", Delete: "D", Get: "G"}


def _encode(key: str) -> bytes:
    return key.encode("utf-8", "surrogatepass")


def _decode(raw: bytes) -> str:
    return bytes(raw).decode("utf-8", "surrogatepass")


def _event(row: Sequence[Any]) -> Event:
    """An event from an ``EVENTS`` row."""
    rev, _sub, raw_key, create_rev, version, lease, value, p_create, p_rev, p_version, p_lease, p_value = row
    key = _decode(raw_key)
    prev = None if p_rev is None else KeyValue(key, bytes(p_value), p_create, p_rev, p_version, p_lease)
    if version == 0:
        return Event(EventType.DELETE, mvcc.tombstone(key, rev), prev)
    return Event(EventType.PUT, KeyValue(key, bytes(value), create_rev, rev, version, lease), prev)


def channel_name(schema: str, cluster: str) -> str:
    """The NOTIFY channel of a cluster: readable when it fits PostgreSQL's 63 bytes, else hashed."""
    name = f"{schema}.{cluster}"
    if len(name.encode()) <= 63:
        return name
    return "kubelab." + hashlib.sha1(name.encode()).hexdigest()


def _as_store_error(error: Exception, what: str) -> StoreError:
    """``error`` as the store's callers may see it: always a typed ``StoreError``."""
    if isinstance(error, StoreError):
        return error
    if isinstance(error, psycopg.Error):
        return _unavailable(error, what)
    return BackendUnavailable(f"PostgreSQL {what} failed unexpectedly: {error!r}")


def _unavailable(error: psycopg.Error, what: str) -> StoreError:
    if error.sqlstate == UNKNOWN_CLUSTER:
        message = error.diag.message_primary or ""
        return UnknownCluster(message.removeprefix("unknown cluster "))
    return BackendUnavailable(f"PostgreSQL {what} failed: {error}")


# -- connections ------------------------------------------------------------------------------------


class _Connections:
    """A few autocommit connections for reads and lease writes, opened on first need.

    Small enough not to need psycopg-pool: a semaphore bounds how many are in use, idle ones are
    kept, and one that saw an error (or was cancelled mid-query) is closed rather than reused.
    """

    def __init__(self, dsn: str, size: int, connect_timeout: float) -> None:
        self._dsn = dsn
        self._connect_timeout = connect_timeout
        self._slots = asyncio.Semaphore(size)
        self._idle: list[Connection] = []
        self._closed = False

    async def connect(self) -> Connection:
        return await psycopg.AsyncConnection.connect(
            self._dsn, autocommit=True, connect_timeout=max(1, round(self._connect_timeout))
        )

    @contextlib.asynccontextmanager
    async def connection(self, *, fresh: bool = False) -> AsyncIterator[Connection]:
        async with self._slots:
            if self._closed:
                raise StoreClosed()
            conn = self._idle.pop() if self._idle and not fresh else await self.connect()
            healthy = False
            try:
                yield conn
                healthy = True
            finally:
                if (
                    healthy
                    and not self._closed
                    and not conn.closed
                    and conn.info.transaction_status == TransactionStatus.IDLE
                ):
                    self._idle.append(conn)
                else:
                    with contextlib.suppress(psycopg.Error):
                        await conn.close()

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(psycopg.Error):
                await conn.close()


@dataclass(slots=True)
class _Call:
    """One statement for the writer connection (a txn, a lease revocation) and who waits for it.

    ``handle`` turns the statement's row into the caller's answer and the events it committed.
    """

    query: str
    params: tuple[Any, ...]
    handle: Callable[[TupleRow], tuple[Any, Sequence[Event]]]
    future: asyncio.Future[Any]


def _single_key(txn: Txn) -> str | None:
    """The key of a transaction of the one-key shape that ``txn1`` runs, or None."""
    if len(txn.success) != 1 or len(txn.compares) > 1 or len(txn.failure) > 1:
        return None
    key = txn.success[0].key
    if any(c.key != key for c in txn.compares):
        return None
    if txn.failure and (not isinstance(txn.failure[0], Get) or txn.failure[0].key != key):
        return None
    return key


def _txn_outcome(
    txn: Txn, succeeded: bool, revision: int, missing_lease: int | None, prevs: Sequence[KeyValue | None]
) -> tuple[TxnResult, tuple[Event, ...]]:
    """The result of ``txn`` from what the database function reports.

    ``prevs`` holds, per operation of the branch that ran, the key as that operation found it.
    """
    if missing_lease is not None:
        raise LeaseNotFound(missing_lease)
    responses: list[OpResponse] = []
    events: list[Event] = []
    for op, prev in zip(txn.success if succeeded else txn.failure, prevs, strict=True):
        if isinstance(op, Get):
            responses.append(GetResponse(prev))
        elif isinstance(op, Put):
            kv = KeyValue(
                op.key,
                op.value,
                prev.create_revision if prev else revision,
                revision,
                prev.version + 1 if prev else 1,
                op.lease,
            )
            events.append(Event(EventType.PUT, kv, prev))
            responses.append(PutResponse(prev))
        elif prev is None:
            responses.append(DeleteResponse(0, None))
        else:
            events.append(Event(EventType.DELETE, mvcc.tombstone(op.key, revision), prev))
            responses.append(DeleteResponse(1, prev))
    return TxnResult(succeeded, revision, tuple(responses), tuple(events)), tuple(events)


def _txn1_handler(txn: Txn) -> Callable[[TupleRow], tuple[TxnResult, Sequence[Event]]]:
    """The handler of a ``txn1`` row for ``txn``."""

    def handle(row: TupleRow) -> tuple[TxnResult, Sequence[Event]]:
        succeeded, revision, missing_lease, create_rev, mod_rev, version, lease, value = row
        ops = txn.success if succeeded else txn.failure
        prev = None
        if mod_rev is not None:
            prev = KeyValue(ops[0].key, bytes(value), create_rev, mod_rev, version, lease)
        return _txn_outcome(txn, succeeded, revision, missing_lease, [prev] if ops else [])

    return handle


# -- the store --------------------------------------------------------------------------------------


class PostgresStore(Store):
    """A cluster's store in a PostgreSQL database that other clusters and processes may share."""

    backend = "postgres"

    def __init__(
        self,
        cluster: str,
        *,
        dsn: str,
        clock: Clock = SYSTEM_CLOCK,
        trace: TraceSink = NULL_SINK,
        retention: RetentionPolicy | None = None,
        watch_capacity: int = DEFAULT_WATCH_CAPACITY,
        schema: str = "kubelab",
        readers: int = 4,
        max_batch: int = 256,
        lease_check_interval: float = 0.5,
        connect_timeout: float = 5.0,
    ) -> None:
        super().__init__(cluster, trace=trace, watch_capacity=watch_capacity)
        self.dsn = dsn
        self.schema = schema
        self.clock = clock
        self.retention = retention
        self.lease_check_interval = lease_check_interval
        self.max_batch = max_batch
        self._pool = _Connections(dsn, readers, connect_timeout)
        self._hub = WatchHub(trace=trace)
        quoted = sql.Identifier(schema).as_string()
        self._sql = {
            name: query.replace("@s@", quoted)
            for name, query in {
                "schema": SCHEMA,
                "txn": TXN,
                "txn1": TXN1,
                "lease_revoke": LEASE_REVOKE,
                "compact": COMPACT,
                "init_revisions": INIT_REVISIONS,
                "init_compactions": INIT_COMPACTIONS,
                "channel": CHANNEL,
                "marks": MARKS,
                "range": RANGE,
                "catch_up": CATCH_UP,
                "history": HISTORY,
                "lease_grant": LEASE_GRANT,
                "lease_keepalive": LEASE_KEEPALIVE,
                "leases_expired": LEASES_EXPIRED,
            }.items()
        }
        self._started = False
        self._closed = False
        # The store's connection to its cluster (see _run): it commits the writes queued here and
        # listens on the cluster's channel; ``_wake`` rouses its task for either.
        self._conn: Connection | None = None
        self._conn_broken = False
        self._watching: int | None = None  # the socket being watched while idle
        self._queue: deque[_Call] = deque()
        self._in_flight: list[_Call] = []
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        # What the watches have: every event up to ``_published``; ``_heard`` is the newest revision
        # a notification announced, so there is something to read while it is ahead.
        self._channel = ""
        self._published = 0
        self._heard = 0
        self._committed = 0  # the newest revision this process committed
        self._publish_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._tasks: list[asyncio.Task[None]] = []

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            return
        if self._closed:
            raise StoreClosed()
        try:
            conn = await self._pool.connect()
        except psycopg.Error as error:
            raise BackendUnavailable(f"cannot connect to PostgreSQL: {error}") from error
        try:
            async with conn.transaction():
                # Processes starting together install the schema one at a time.
                await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"kubelab:{self.schema}",))
                await conn.execute(self._sql["schema"].encode())
            channel = channel_name(self.schema, self.cluster)
            await conn.execute(self._sql["init_revisions"], (self.cluster, channel))
            await conn.execute(self._sql["init_compactions"], (self.cluster,))
            cur = await conn.execute(self._sql["channel"], (self.cluster,))
            row = await cur.fetchone()
            assert row is not None
            self._channel, self._published = row
            self._committed = self._published
            await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
        except psycopg.Error as error:
            with contextlib.suppress(psycopg.Error):
                await conn.close()
            raise BackendUnavailable(f"cannot set up the PostgreSQL store: {error}") from error
        self._use(conn)
        self._heard = self._published + 1  # read once what was committed before LISTEN took effect
        self._started = True
        name = f"store-{self.cluster}"
        self._task = asyncio.create_task(self._run(), name=f"{name}-connection")
        self._tasks.append(asyncio.create_task(self._expire_leases(), name=f"{name}-leases"))
        if self.retention is not None and self.retention.interval > 0:
            self._tasks.append(
                asyncio.create_task(self._compact_periodically(self.retention), name=f"{name}-compactor")
            )

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await cancel_and_wait(*self._tasks)
        self._tasks.clear()
        if self._task is not None:
            # Commit what is already queued (its events reach the watches first), then stop.
            self._stopping = True
            self._wake.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._task), 10.0)
            await self._stop(self._task)
            self._fail_queued(StoreClosed())
        self._hub.close(StoreClosed())
        for waiter in self._publish_waiters:
            if not waiter[1].done():
                waiter[1].set_exception(StoreClosed())
        self._publish_waiters.clear()
        await self._drop_connection()
        await self._pool.close()

    @staticmethod
    async def _stop(task: asyncio.Task[None]) -> None:
        await cancel_and_wait(task)

    def _check_open(self) -> None:
        if self._closed or not self._started:
            raise StoreClosed()

    # -- plumbing: reads -------------------------------------------------------------------------

    async def _fetch(self, query: str, params: Any, *, what: str, retry: bool = True) -> list[TupleRow]:
        """Run one statement on a pooled connection; a read retries once on a fresh connection."""
        self._check_open()
        for attempt in (1, 2):
            try:
                async with self._pool.connection(fresh=attempt == 2) as conn:
                    cur = await conn.execute(query, params, binary=True)
                    return await cur.fetchall()
            except psycopg.OperationalError as error:
                # An idle connection may have died with a server restart: one more try on a new one.
                if attempt == 2 or not retry:
                    raise _unavailable(error, what) from error
            except psycopg.Error as error:
                raise _unavailable(error, what) from error
        raise AssertionError("unreachable")

    async def _marks(self) -> tuple[int, int]:
        """(current revision, compaction mark), read in one snapshot."""
        rows = await self._fetch(self._sql["marks"], {"cluster": self.cluster}, what="read")
        if not rows:
            raise UnknownCluster(self.cluster)
        current, compacted = rows[0]
        return int(current), int(compacted)

    # -- plumbing: the write queue ---------------------------------------------------------------

    async def _write(
        self, query: str, params: tuple[Any, ...], handle: Callable[[TupleRow], tuple[T, Sequence[Event]]]
    ) -> T:
        """Commit one statement through the store's connection; the answer comes after COMMIT."""
        self._check_open()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.append(_Call(query, params, handle, future))
        self._wake.set()
        return cast("T", await future)

    # -- plumbing: the connection ----------------------------------------------------------------
    #
    # One connection per store both writes and LISTENs. While it commits, PostgreSQL sends the
    # notifications of this and other processes' commits along with the results (psycopg passes them
    # to ``_notified``); while it is idle, the event loop watches its socket (``_readable``), so a
    # commit of another process wakes it at once. A notification of a revision newer than the last
    # one published makes it read the rows after that revision (``_catch_up``).

    async def _run(self) -> None:
        backoff = 0.05
        lingered = True
        while True:
            try:
                if self._heard > self._published:
                    # Another process committed: read that first, so watches never fall behind.
                    conn = await self._connection()
                    self._unwatch_socket()
                    await self._catch_up(conn)
                if self._queue:
                    await self._commit(await self._connection(), self._take_batch())
                    lingered = False
                    continue
                if self._stopping:
                    return
                if not lingered:
                    # A caller that was just answered often writes again at once: give it one turn
                    # of the event loop before going idle (watching the socket costs system calls).
                    lingered = True
                    await asyncio.sleep(0)
                    continue
                self._watch_socket(await self._connection())
            except Exception as error:
                # The database is away (or the cluster is gone): answer what waits, retry later.
                await self._drop_connection()
                self._fail_queued(_as_store_error(error, "connection"))
                if self._stopping:
                    return
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), backoff)
                backoff = min(backoff * 2, 2.0)
                continue
            except asyncio.CancelledError:
                self._fail_queued(StoreClosed())
                raise
            backoff = 0.05
            self._wake.clear()
            if self._queue or self._stopping or self._conn_broken or self._heard > self._published:
                continue
            await self._wake.wait()

    def _take_batch(self) -> list[_Call]:
        """The calls to commit together: all that are waiting, up to ``max_batch``."""
        batch = [self._queue.popleft() for _ in range(min(len(self._queue), self.max_batch))]
        self._in_flight = batch
        return batch

    async def _connection(self) -> Connection:
        """The store's connection, (re)opened and listening; a new one first reads what it missed."""
        if self._conn is not None and not self._conn_broken and not self._conn.closed:
            return self._conn
        await self._drop_connection()
        conn = await self._pool.connect()
        try:
            await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
        except BaseException:
            with contextlib.suppress(psycopg.Error):
                await conn.close()
            raise
        self._use(conn)
        self._heard = max(self._heard, self._published + 1)  # commits may have come and gone unheard
        return conn

    def _use(self, conn: Connection) -> None:
        conn.add_notify_handler(self._notified)
        self._conn = conn
        self._conn_broken = False

    async def _drop_connection(self) -> None:
        self._unwatch_socket()
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()

    def _watch_socket(self, conn: Connection) -> None:
        """While the connection is idle, let the event loop tell us when something arrives on it."""
        if self._watching is None:
            self._watching = conn.fileno()
            asyncio.get_running_loop().add_reader(self._watching, self._readable)

    def _unwatch_socket(self) -> None:
        """Stop watching the socket before psycopg uses the connection (it watches it itself)."""
        if self._watching is not None:
            asyncio.get_running_loop().remove_reader(self._watching)
            self._watching = None

    def _readable(self) -> None:
        """Data on the idle connection: notifications, or the end of the connection."""
        conn = self._conn
        if conn is None:
            return
        try:
            conn.pgconn.consume_input()
            while (notify := conn.pgconn.notifies()) is not None:
                self._heard_revision(notify.extra)
        except psycopg.Error:
            self._conn_broken = True
            self._unwatch_socket()
        self._wake.set()

    def _notified(self, notify: psycopg.Notify) -> None:
        """A notification that arrived while the connection was running a statement."""
        self._heard_revision(notify.payload)

    def _heard_revision(self, payload: str | bytes) -> None:
        try:
            revision = int(payload)
        except ValueError:
            revision = self._published + 1  # not ours to parse: just read whatever is new
        self._heard = max(self._heard, revision)

    async def _commit(self, conn: Connection, batch: list[_Call]) -> None:
        """Commit ``batch`` and answer its calls; ``_in_flight`` holds those not answered yet."""
        self._unwatch_socket()
        self._in_flight = batch
        try:
            rows = await self._execute(conn, batch)
        except psycopg.Error as error:
            await self._recover(conn, error)
            if len(batch) == 1 or isinstance(error, psycopg.OperationalError):
                self._in_flight = []
                self._answer_error(batch, _unavailable(error, "write"))
                return
            # The whole batch rolled back: let each call succeed or fail on its own.
            for i, call in enumerate(batch):
                self._in_flight = batch[i:]
                try:
                    (row,) = await self._execute(conn, [call])
                except psycopg.Error as alone:
                    await self._recover(conn, alone)
                    self._answer_error([call], _unavailable(alone, "write"))
                else:
                    self._deliver(call, row)
            self._in_flight = []
            return
        self._in_flight = []
        for call, row in zip(batch, rows, strict=True):
            self._deliver(call, row)

    @staticmethod
    async def _execute(conn: Connection, batch: list[_Call]) -> list[TupleRow | None]:
        """One statement on its own (autocommit), several as one pipelined transaction."""
        if len(batch) == 1:
            cur = await conn.execute(batch[0].query, batch[0].params, binary=True)
            return [await cur.fetchone()]
        async with conn.pipeline():
            await conn.execute("BEGIN")
            cursors = [await conn.execute(c.query, c.params, binary=True) for c in batch]
            await conn.execute("COMMIT")
        return [await cur.fetchone() for cur in cursors]

    async def _recover(self, conn: Connection, error: psycopg.Error) -> None:
        """After an error, roll back what the connection has open, or give the connection up."""
        try:
            if isinstance(error, psycopg.OperationalError) or conn.closed:
                raise error
            if conn.info.transaction_status != TransactionStatus.IDLE:
                await conn.execute("ROLLBACK")
        except psycopg.Error:
            self._conn_broken = True

    def _deliver(self, call: _Call, row: TupleRow | None) -> None:
        """Answer a committed call, after handing its events to this process's watches."""
        try:
            if row is None:
                raise BackendUnavailable("PostgreSQL returned no result")
            answer, events = call.handle(row)
        except Exception as error:
            if not call.future.done():
                call.future.set_exception(_as_store_error(error, "write"))
            return
        if events:
            self._publish_own(events)
        if not call.future.done():
            call.future.set_result(answer)

    def _publish_own(self, events: Sequence[Event]) -> None:
        """Publish a commit of this process at once if it is the next revision to publish.

        Otherwise another process committed in between and has not been read yet: ``_catch_up``
        will read this commit too, in order. Either way it skips what is published here.
        """
        revision = events[0].revision
        self._committed = max(self._committed, revision)
        if revision == self._published + 1:
            self._published = revision
            self._hub.publish(events)
            self._wake_publish_waiters()

    @staticmethod
    def _answer_error(batch: list[_Call], error: StoreError) -> None:
        for call in batch:
            if not call.future.done():
                call.future.set_exception(error)

    def _fail_queued(self, error: StoreError) -> None:
        """Answer every call not committed yet (queued, or in a batch that failed) with ``error``."""
        queued, self._queue = [*self._in_flight, *self._queue], deque()
        self._in_flight = []
        self._answer_error(queued, error)

    async def _catch_up(self, conn: Connection) -> None:
        """Read the rows after the last published revision and publish them, page by page."""
        while True:
            heard = self._heard
            params = {"cluster": self.cluster, "after": self._published, "page": CATCH_UP_PAGE}
            cur = await conn.execute(self._sql["catch_up"], params, binary=True)
            rows = await cur.fetchall()
            if not rows:
                raise UnknownCluster(self.cluster)
            current, compacted, upto = rows[0][0], rows[0][1], rows[0][2]
            if compacted > self._published:
                # Another process compacted away events this process had not published yet: the
                # watches cannot be told the whole story any more, so end them (etcd does too).
                self._hub.close(Compacted(self._published, compacted))
                self._hub = WatchHub(trace=self.trace)
                self._published = compacted
                continue
            events = [_event(row[3:]) for row in rows if row[3] is not None and row[3] > self._published]
            self._published = max(self._published, upto)
            if events:
                self._hub.publish(events)
            self._wake_publish_waiters()
            if upto >= current:
                if self._heard == heard:
                    # Everything heard of before this read is published (a notification that came
                    # during the read may announce a commit the read did not see: read again then).
                    self._heard = min(self._heard, self._published)
                return

    def _wake_publish_waiters(self) -> None:
        waiting = []
        for revision, future in self._publish_waiters:
            if revision <= self._published:
                if not future.done():
                    future.set_result(None)
            else:
                waiting.append((revision, future))
        self._publish_waiters = waiting

    async def _published_up_to(self, revision: int) -> None:
        """Return once every event up to ``revision`` has been handed to this process's watches."""
        if revision <= self._published or self._task is None:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._publish_waiters.append((revision, future))
        await future

    # -- revisions -------------------------------------------------------------------------------

    async def current_revision(self) -> int:
        return (await self._marks())[0]

    async def compact_revision(self) -> int:
        return (await self._marks())[1]

    async def _compact(self, revision: int) -> None:
        self._check_open()
        # This process's watches must have their events before the history under them goes.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._published_up_to(min(revision, self._committed)), 5.0)
        rows = await self._fetch(
            self._sql["compact"], (self.cluster, revision), what="compaction", retry=False
        )
        current, compacted, done = rows[0]
        if not done:
            if revision > current:
                raise FutureRevision(revision, current)
            raise Compacted(revision, compacted)

    async def _ticks(self, interval: float) -> AsyncIterator[float]:
        """The cluster-clock times at which a background task should look, every ``interval``.

        The next deadline is set before the task does its (database) work, so time that passes
        meanwhile is not lost; after a jump past several deadlines it looks once, not once per deadline.
        """
        next_at = self.clock.now() + interval
        while True:
            await self.clock.sleep(next_at - self.clock.now())
            now = self.clock.now()
            next_at = max(next_at + interval, now)
            yield now

    async def _compact_periodically(self, policy: RetentionPolicy) -> None:
        compactor = Compactor(policy)
        compactor.observe(self.clock.now(), self._published)
        async for now in self._ticks(policy.interval):
            try:
                current, compacted = await self._marks()
                compactor.observe(now, current)
                target = compactor.target(now, current, compacted)
                if target is not None:
                    with contextlib.suppress(Compacted, FutureRevision):
                        await self.compact(target)
            except StoreClosed:
                return
            except StoreError:
                continue  # the database is away: try again at the next interval

    # -- reads -----------------------------------------------------------------------------------

    async def _range(self, begin: str, end: str, *, revision: int | None, limit: int) -> RangeResult:
        params = {
            "cluster": self.cluster,
            "revision": revision,
            "begin": _encode(begin),
            "end": _encode(end),
            "limit": limit if limit > 0 else None,
        }
        rows = await self._fetch(self._sql["range"], params, what="read")
        if not rows:
            raise UnknownCluster(self.cluster)
        current, compacted, at, total = rows[0][:4]
        mvcc.check_read_revision(at, current=current, compacted=compacted)
        kvs = tuple(
            KeyValue(_decode(key), bytes(value), create_rev, mod_rev, version, lease)
            for *_, key, create_rev, mod_rev, version, lease, value in rows
            if key is not None
        )
        count = total or 0
        return RangeResult(kvs, at, count > len(kvs), count)

    # -- writes ----------------------------------------------------------------------------------

    async def _txn(self, txn: Txn) -> TxnResult:
        key = _single_key(txn)
        if key is not None:
            return await self._write(self._sql["txn1"], self._txn1_params(txn, key), _txn1_handler(txn))
        ops = (*txn.success, *txn.failure)
        params = (
            self.cluster,
            [_encode(c.key) for c in txn.compares],
            "".join(_TARGETS[c.target] for c in txn.compares),
            "".join(_OPS[c.op] for c in txn.compares),
            [Int8(c.value) for c in txn.compares],
            "".join(_KINDS[type(op)] for op in ops),
            [_encode(op.key) for op in ops],
            [op.value if isinstance(op, Put) else b"" for op in ops],
            [Int8(op.lease if isinstance(op, Put) else 0) for op in ops],
            len(txn.success),
        )

        def handle(row: TupleRow) -> tuple[TxnResult, Sequence[Event]]:
            succeeded, revision, missing_lease, creates, mods, versions, leases, values = row
            ops = txn.success if succeeded else txn.failure
            prevs = [
                None
                if mods[i] is None
                else KeyValue(op.key, bytes(values[i]), creates[i], mods[i], versions[i], leases[i])
                for i, op in enumerate(ops[: len(mods)])
            ]
            return _txn_outcome(txn, succeeded, revision, missing_lease, prevs)

        return await self._write(self._sql["txn"], params, handle)

    def _txn1_params(self, txn: Txn, key: str) -> tuple[Any, ...]:
        op = txn.success[0]
        cmp = txn.compares[0] if txn.compares else None
        return (
            self.cluster,
            _encode(key),
            _TARGETS[cmp.target] if cmp else "",
            _OPS[cmp.op] if cmp else "",
            Int8(cmp.value if cmp else 0),
            _KINDS[type(op)],
            op.value if isinstance(op, Put) else b"",
            Int8(op.lease if isinstance(op, Put) else 0),
            "G" if txn.failure else "",
        )

    # -- watch -----------------------------------------------------------------------------------

    async def _watch(self, prefix: str, from_revision: int | None) -> Watch:
        self._check_open()
        start = (await self._marks())[0] if from_revision is None else from_revision
        end = mvcc.prefix_end(prefix)

        async def read_history(after: int) -> tuple[int, AsyncIterator[Sequence[Event]]]:
            current, compacted = await self._marks()
            if after < compacted:
                raise Compacted(after, compacted)
            head = max(current, after)
            return head, self._history(prefix, end, after, head)

        return await self._hub.open(prefix, start, read_history, capacity=self.watch_capacity)

    async def _history(self, prefix: str, end: str, after: int, head: int) -> AsyncIterator[Sequence[Event]]:
        """Pages of the events under ``prefix`` in (after, head], each read in one snapshot."""
        while after < head:
            params = {
                "cluster": self.cluster,
                "begin": _encode(prefix),
                "end": _encode(end),
                "after": after,
                "head": head,
                "page": HISTORY_PAGE,
            }
            rows = await self._fetch(self._sql["history"], params, what="read")
            if not rows:
                raise UnknownCluster(self.cluster)
            compacted, upto = rows[0][0], rows[0][1]
            if compacted > after:
                # Compaction ran while we replayed: rows we still need may be gone.
                raise Compacted(after, compacted)
            if upto is None:
                return
            yield [_event(row[2:]) for row in rows if row[2] is not None]
            after = upto

    # -- leases ----------------------------------------------------------------------------------

    async def lease_grant(self, ttl: int) -> Lease:
        if ttl <= 0:
            raise InvalidRequest(f"lease TTL must be positive, got {ttl}")
        expires_at = self.clock.now() + ttl
        rows = await self._fetch(
            self._sql["lease_grant"], (self.cluster, Int8(ttl), expires_at), what="lease grant", retry=False
        )
        return Lease(int(rows[0][0]), ttl, expires_at)

    async def lease_keepalive(self, lease_id: int) -> Lease:
        params = {"cluster": self.cluster, "id": Int8(lease_id), "now": self.clock.now()}
        rows = await self._fetch(self._sql["lease_keepalive"], params, what="lease keepalive")
        if not rows:
            raise LeaseNotFound(lease_id)
        ttl, expires_at = rows[0]
        return Lease(lease_id, int(ttl), float(expires_at))

    async def lease_revoke(self, lease_id: int) -> int:
        revision = await self._revoke(lease_id, None)
        if revision is None:
            raise LeaseNotFound(lease_id)
        return revision

    async def _revoke(self, lease_id: int, now: float | None) -> int | None:
        """Revoke (if ``now`` is given: only if expired by then); None if there was nothing to revoke."""

        def handle(row: TupleRow) -> tuple[TxnResult | None, Sequence[Event]]:
            revoked, revision, raw_keys, creates, mods, versions, values = row
            if not revoked:
                return None, ()
            events = tuple(
                Event(
                    EventType.DELETE,
                    mvcc.tombstone(key, revision),
                    KeyValue(key, bytes(value), create_rev, mod_rev, version, lease_id),
                )
                for key, create_rev, mod_rev, version, value in zip(
                    map(_decode, raw_keys), creates, mods, versions, values, strict=True
                )
            )
            responses = tuple(DeleteResponse(1, e.prev_kv) for e in events)
            return TxnResult(True, revision, responses, events), events

        result = await self._write(self._sql["lease_revoke"], (self.cluster, Int8(lease_id), now), handle)
        if result is None:
            return None
        if self.trace.enabled:
            self._trace_txn(Txn(success=tuple(Delete(e.key) for e in result.events)), result, None)
        return result.revision

    async def _expire_leases(self) -> None:
        """Revoke leases whose TTL ran out on the cluster clock (etcd's lessor does the same)."""
        async for now in self._ticks(self.lease_check_interval):
            try:
                rows = await self._fetch(self._sql["leases_expired"], (self.cluster, now), what="read")
                for (lease_id,) in rows:
                    await self._revoke(int(lease_id), now)
            except StoreClosed:
                return
            except StoreError:
                continue  # the database is away: try again at the next interval
