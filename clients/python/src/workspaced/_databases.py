"""The two databases of SQLBackend: how each connects, holds a
transaction, names its errors and says whether a daemon serves."""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ._sql import SQLBackend
from ._tree import flock_held
from .errors import Invalid, LockTimeout, NotFound, Unsupported, WorkspacedError


T = TypeVar("T")

# SQLite's write lock in WAL mode: a POSIX lock on byte 120 of the -shm
# file (WALINDEX_LOCK_OFFSET, the first of its locks), held from BEGIN
# IMMEDIATE to COMMIT.
_WAL_WRITE_LOCK = 120


def write_lock_holder(path: str) -> str:
    """Who holds the SQLite database path's write lock, from the kernel's
    table of locks (/proc/locks, Linux): "pid N (command)", or "another
    process" where that cannot be told."""
    try:
        ino = os.stat(path + "-shm").st_ino
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return "another process"
    for line in lines:
        w = line.split()
        # 1: POSIX  ADVISORY  WRITE 4242 fd:01:123456 120 120
        if len(w) >= 8 and w[1] == "POSIX" and w[3] == "WRITE" and w[5].rsplit(":", 1)[-1] == str(ino) \
                and w[6] == str(_WAL_WRITE_LOCK):
            try:
                with open("/proc/%s/comm" % w[4]) as c:
                    return "pid %s (%s)" % (w[4], c.read().strip())
            except OSError:
                return "pid %s" % w[4]
    return "another process"


class SQLiteBackend(SQLBackend):
    """A workspace in one SQLite file: sqlite:PATH."""

    def __init__(self, root: str, agent: str, lock_timeout: float = 30.0) -> None:
        import sqlite3
        super().__init__(root, agent)
        self.lock_timeout = lock_timeout
        path = root[len("sqlite:"):]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise Invalid("root %r names no file" % root, "give sqlite:PATH, such as sqlite:/var/lib/agents.db")
        if not os.path.isfile(path):
            raise NotFound("no SQLite workspace at %s" % path, "run 'workspaced --root %s init' first" % root)
        self.path = path
        self._sqlite3 = sqlite3
        # SQLite's own wait for the write lock is the protocol's 10 s, or
        # half of lock_timeout when shorter; past it the write is run again
        # until lock_timeout (_retry).
        busy = max(1, min(10000, int(lock_timeout * 500)))
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=busy / 1000)
        for p in ("busy_timeout = %d" % busy, "journal_mode = WAL", "synchronous = FULL", "foreign_keys = ON"):
            self._retry(lambda: self._conn.execute("PRAGMA " + p))

    def close(self) -> None:
        self._conn.close()

    def _where(self) -> str:
        return "the SQLite database " + self.path

    def _retry(self, fn: Callable[[], T]) -> T:
        """fn, run again while SQLite refuses it as busy (nothing was
        written then), with a short random pause, until lock_timeout; then
        LockTimeout naming the process that holds the write lock. A
        statement inside a transaction is not run again on its own."""
        deadline = time.monotonic() + self.lock_timeout
        while True:
            try:
                return fn()
            except self._sqlite3.OperationalError as e:
                msg = str(e)
                if "locked" not in msg and "busy" not in msg:
                    raise
                left = deadline - time.monotonic()
                if left <= 0 or self._conn.in_transaction:
                    holder = write_lock_holder(self.path)
                    raise LockTimeout("the SQLite database %s stayed locked by %s for %gs (%s)"
                                      % (self.path, holder, self.lock_timeout, msg), holder,
                                      "another process is writing it; try again, or give connect() a longer "
                                      "lock_timeout") from None
            time.sleep(min(left, random.uniform(0.005, 0.025)))

    def _cursor_exec(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._retry(lambda: self._conn.execute(sql, tuple(params)).fetchall())

    @contextmanager
    def _tx(self) -> Iterator[None]:
        with self._mu:
            self._retry(lambda: self._conn.execute("BEGIN IMMEDIATE"))
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _is_unique(self, e: Exception) -> bool:
        return isinstance(e, self._sqlite3.IntegrityError) and "UNIQUE" in str(e)

    def _is_fk(self, e: Exception) -> bool:
        return isinstance(e, self._sqlite3.IntegrityError) and "FOREIGN KEY" in str(e)

    def _serving(self) -> bool:
        return flock_held(self.path + ".lock")


class PostgresBackend(SQLBackend):
    """A workspace in one PostgreSQL schema: postgres://...?schema=NAME
    (psycopg 3, the extra "postgres")."""

    placeholder = "%s"
    task_lock = " FOR NO KEY UPDATE"
    agents_write_events = True

    def __init__(self, root: str, agent: str) -> None:
        super().__init__(root, agent)
        try:
            import psycopg
        except ImportError:
            raise Unsupported("a postgres:// root needs psycopg 3, which is not installed",
                              "install the extra: pip install 'workspaced[postgres]' (Debian: python3-psycopg)") from None
        u = urlsplit(root)
        q = parse_qsl(u.query, keep_blank_values=True)
        schema = next((v for k, v in q if k == "schema"), "") or "workspaced"
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,39}", schema):
            raise Invalid("schema %r is not a name of lower-case letters, digits and underscores (at most 40)" % schema,
                          "name the schema as ?schema=team_a")
        conninfo = urlunsplit((u.scheme, u.netloc, u.path, urlencode([(k, v) for k, v in q if k != "schema"]), u.fragment))
        self.schema = schema
        self._psycopg = psycopg
        try:
            self._conn = psycopg.connect(conninfo, autocommit=True)
        except psycopg.OperationalError as e:
            raise WorkspacedError("cannot reach PostgreSQL: %s" % e, "check the URL, and that the server runs") from None
        self._conn.execute("SELECT set_config('search_path', %s, false)", (schema,))
        if self._one("SELECT to_regclass('tasks')") == (None,):
            raise NotFound("no workspace in the schema %s" % schema, "run 'workspaced --root %s init' first" % root)

    def close(self) -> None:
        self._conn.close()

    def _where(self) -> str:
        return "the PostgreSQL schema " + self.schema

    def _cursor_exec(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        cur = self._conn.execute(sql.encode("utf-8"), tuple(params))
        return cur.fetchall() if cur.description is not None else []

    @contextmanager
    def _tx(self) -> Iterator[None]:
        with self._mu, self._conn.transaction():
            yield

    def _is_unique(self, e: Exception) -> bool:
        return isinstance(e, self._psycopg.errors.UniqueViolation)

    def _is_fk(self, e: Exception) -> bool:
        return isinstance(e, self._psycopg.errors.ForeignKeyViolation)

    def _serving(self) -> bool:
        r = self._one("SELECT expires_at >= clock_timestamp() AND holder <> '' FROM lease WHERE id = 1")
        return bool(r and r[0])
