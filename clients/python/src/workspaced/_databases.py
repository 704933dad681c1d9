"""The two databases of SQLBackend: how each connects, holds a
transaction, names its errors and says whether a daemon serves."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ._sql import SQLBackend
from ._tree import flock_held
from .errors import Invalid, LockTimeout, NotFound, Unsupported, WorkspacedError


class SQLiteBackend(SQLBackend):
    """A workspace in one SQLite file: sqlite:PATH."""

    def __init__(self, root: str, agent: str) -> None:
        import sqlite3
        super().__init__(root, agent)
        path = root[len("sqlite:"):]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise Invalid("root %r names no file" % root, "give sqlite:PATH, such as sqlite:/var/lib/agents.db")
        if not os.path.isfile(path):
            raise NotFound("no SQLite workspace at %s" % path, "run 'workspaced --root %s init' first" % root)
        self.path = path
        self._sqlite3 = sqlite3
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
        for p in ("busy_timeout = 10000", "journal_mode = WAL", "synchronous = FULL", "foreign_keys = ON"):
            self._conn.execute("PRAGMA " + p)

    def close(self) -> None:
        self._conn.close()

    def _where(self) -> str:
        return "the SQLite database " + self.path

    def _cursor_exec(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, tuple(params)).fetchall()
        except self._sqlite3.OperationalError as e:
            if "locked" in str(e) or "busy" in str(e):
                raise LockTimeout("the SQLite database %s stayed locked: %s" % (self.path, e)) from None
            raise

    @contextmanager
    def _tx(self) -> Iterator[None]:
        with self._mu:
            self._conn.execute("BEGIN IMMEDIATE")
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
