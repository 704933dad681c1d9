"""A workspace in SQL: one SQLite file (the standard library's sqlite3) or
one PostgreSQL schema (psycopg 3), through the tables agents may write
(docs/PROTOCOL.md, sections 10 and 11)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

from ._common import (check_description, check_id, check_namespace, judge, match_filter, match_namespace, now, parse_event,
                      plan_closed, suffix, task_doc, thread_doc, value_json)
from ._local import LocalBackend
from .errors import Conflict, Invalid, NotFound, VersionConflict
from .types import Entry, EntryInfo, EventPage, MemoryItem, Verdict

_ENTRY_COLS = "key, short_description, stored_by, created_at, updated_at, version, value"
_WRITTEN = "short_description, stored_by, created_at, updated_at, version"


def _ts(v: Any) -> str:
    """A time as RFC 3339 UTC with milliseconds (PostgreSQL gives datetimes)."""
    if isinstance(v, datetime):
        t = v.astimezone(timezone.utc)
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)
    return str(v) if v is not None else ""


def _sortable(ns: Sequence[str]) -> str:
    return "".join(label + "\x01" for label in ns)


class SQLBackend(LocalBackend):
    """The SQL of both databases; each subclass says how to connect, how to
    hold a transaction and whether a daemon serves."""

    placeholder = "?"
    # What holds a task's row in a write (PostgreSQL's row lock).
    task_lock = ""

    def __init__(self, root: str, agent: str) -> None:
        self.agent = check_id("agent", agent)
        self.root = root
        self._mu = threading.RLock()

    # ---- what each database does its own way -------------------------
    def _cursor_exec(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    @contextmanager
    def _tx(self) -> Iterator[None]:
        raise NotImplementedError
        yield  # pragma: no cover

    def _is_unique(self, e: Exception) -> bool:
        raise NotImplementedError

    def _is_fk(self, e: Exception) -> bool:
        raise NotImplementedError

    def _q(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        if self.placeholder != "?":
            sql = sql.replace("%", "%%").replace("?", self.placeholder)
        with self._mu:
            return self._cursor_exec(sql, params)

    def _one(self, sql: str, *params: Any) -> tuple[Any, ...] | None:
        rows = self._q(sql, *params)
        return rows[0] if rows else None

    # A task's and a thread's creation events, as an entry's, are made by
    # the database's triggers on the insert of the row (SQLite migrations
    # 0005 and 0007, PostgreSQL 0009 and 0011): the package writes none.

    # ---- entries -------------------------------------------------------
    def _task_of(self, scope: str, owner: str) -> None:
        if scope in ("thread", "session"):
            task, _, thread = owner.partition("/")
            self._require_task(task)
            if scope == "session" and self._one("SELECT 1 FROM threads WHERE task_id = ? AND id = ?", task, thread) is None:
                raise NotFound("thread %s: no such thread in task %s" % (thread, task),
                               "list task %s's threads to see which exist" % task)

    def _require_task(self, task: str) -> None:
        check_id("task id", task)
        if self._one("SELECT 1 FROM tasks WHERE id = ?", task) is None:
            raise NotFound("task %s: no such task" % task, "'workspaced task list' shows the tasks")

    def _entry(self, r: tuple[Any, ...]) -> Entry:
        return Entry(key=r[0], short_description=r[1], stored_by=r[2], created_at=_ts(r[3]), updated_at=_ts(r[4]),
                     version=int(r[5]), value=json.loads(r[6]))

    def _current(self, scope: str, owner: str, key: str) -> int:
        r = self._one("SELECT version FROM entries WHERE scope = ? AND owner = ? AND key = ?", scope, owner, key)
        return int(r[0]) if r else 0

    def entry_put(self, scope: str, owner: str, key: str, value: Any, description: str | None,
                  if_version: int | None, if_absent: bool) -> Entry:
        body = value_json(value)
        if description is not None:
            check_description(description)
        t, size, who = now(), len(body.encode("utf-8")), self.agent
        if if_version is not None:
            rows = self._q("UPDATE entries SET short_description = COALESCE(?, short_description), stored_by = ?, "
                           "updated_at = ?, version = version + 1, size = ?, value = ? "
                           "WHERE scope = ? AND owner = ? AND key = ? AND version = ? RETURNING " + _WRITTEN,
                           description, who, t, size, body, scope, owner, key, if_version)
            if not rows:
                self._task_of(scope, owner)
                cur = self._current(scope, owner, key)
                raise VersionConflict("%s %r is no longer at version %d: version is %d" % (scope, key, if_version, cur), cur)
            return self._written(key, body, rows[0])
        # One statement: the task's existence (for a task's scopes), the
        # insert or the update, and what was written.
        if scope == "session":
            self._task_of(scope, owner)  # the thread must exist
        task = owner.partition("/")[0] if scope == "thread" else None
        conflict = ("DO NOTHING" if if_absent else
                    "DO UPDATE SET short_description = excluded.short_description, stored_by = excluded.stored_by, "
                    "updated_at = excluded.updated_at, version = entries.version + 1, size = excluded.size, value = excluded.value")
        params: list[Any] = [scope, owner, key, description or "", who, t, t, size, body]
        where = "WHERE true"
        if task is not None:
            where = "WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ?)"
            params.append(task)
        rows = self._q("INSERT INTO entries (scope, owner, key, short_description, stored_by, created_at, updated_at, "
                       "version, size, value) SELECT ?, ?, ?, ?, ?, ?, ?, 1, ?, ? " + where + " ON CONFLICT (scope, owner, key) "
                       + conflict + " RETURNING " + _WRITTEN, *params)
        if not rows:
            self._task_of(scope, owner)
            cur = self._current(scope, owner, key)
            raise VersionConflict("%s %r exists already (version %d)" % (scope, key, cur), cur,
                                  "read it (get), or store it without if_absent to replace it")
        return self._written(key, body, rows[0])

    def _written(self, key: str, value: str, r: tuple[Any, ...]) -> Entry:
        return Entry(key=key, value=json.loads(value), short_description=r[0], stored_by=r[1], created_at=_ts(r[2]),
                     updated_at=_ts(r[3]), version=int(r[4]))

    def entry_get(self, scope: str, owner: str, key: str) -> Entry:
        r = self._one("SELECT " + _ENTRY_COLS + " FROM entries WHERE scope = ? AND owner = ? AND key = ?", scope, owner, key)
        if r is None:
            self._task_of(scope, owner)
            raise NotFound("get %s %r: no such key" % (scope, key), "list the scope to see its keys")
        return self._entry(r)

    def entry_list(self, scope: str, owner: str) -> list[EntryInfo]:
        self._task_of(scope, owner)
        rows = self._q("SELECT key, short_description, stored_by, updated_at, version, size FROM entries "
                       "WHERE scope = ? AND owner = ?", scope, owner)
        out = [EntryInfo(key=r[0], short_description=r[1], stored_by=r[2], updated_at=_ts(r[3]), version=int(r[4]),
                         size=int(r[5])) for r in rows]
        out.sort(key=lambda e: e.key)
        return out

    def entry_delete(self, scope: str, owner: str, key: str, if_version: int | None) -> None:
        self._task_of(scope, owner)
        if if_version is None:
            rows = self._q("DELETE FROM entries WHERE scope = ? AND owner = ? AND key = ? RETURNING version", scope, owner, key)
            if not rows:
                raise NotFound("delete %s %r: no such key" % (scope, key), "list the scope to see its keys")
            return
        rows = self._q("DELETE FROM entries WHERE scope = ? AND owner = ? AND key = ? AND version = ? RETURNING version",
                       scope, owner, key, if_version)
        if not rows:
            cur = self._current(scope, owner, key)
            raise VersionConflict("%s %r is no longer at version %d: version is %d" % (scope, key, if_version, cur), cur)

    # ---- namespaced memory ---------------------------------------------
    def _item(self, r: tuple[Any, ...]) -> MemoryItem:
        return MemoryItem(namespace=tuple(json.loads(r[0])), key=r[1], version=int(r[2]), created_at=_ts(r[3]),
                          updated_at=_ts(r[4]), expires_at=_ts(r[5]) if r[5] is not None else None, value=json.loads(r[6]))

    _ITEM_COLS = "namespace, key, version, created_at, updated_at, expires_at, value"

    def _live_item(self, ns: tuple[str, ...], key: str, t: str) -> MemoryItem | None:
        r = self._one("SELECT " + self._ITEM_COLS + " FROM memory_items WHERE ns_key = ? AND key = ? "
                      "AND (expires_at IS NULL OR expires_at > ?)", _sortable(ns), key, t)
        return self._item(r) if r else None

    def memory_put(self, ns: tuple[str, ...], key: str, value: dict[str, Any], ttl_seconds: int | None,
                   if_version: int | None, if_absent: bool) -> MemoryItem:
        ns = check_namespace(ns)
        if not isinstance(value, dict):
            raise Invalid("a memory item's value is a JSON object", "give a dict", "value")
        body = value_json(value)
        if ttl_seconds is not None and ttl_seconds < 1:
            raise Invalid("ttl_seconds %r: a TTL is at least 1 second" % ttl_seconds, "leave it out for no expiry", "ttl_seconds")
        nsj = json.dumps(list(ns), ensure_ascii=False, separators=(",", ":"))
        with self._tx():
            t = now()
            old = self._live_item(ns, key, t)
            cur = old.version if old else 0
            if if_absent and old is not None:
                raise VersionConflict("item %r exists already (version %d)" % (key, cur), cur)
            if if_version is not None and cur != if_version:
                raise VersionConflict("item %r is no longer at version %d: version is %d" % (key, if_version, cur), cur)
            exp = None
            if ttl_seconds is not None:
                e = datetime.now(timezone.utc) + timedelta(seconds=ttl_seconds)
                exp = _ts(e)
            rows = self._q("INSERT INTO memory_items (ns_key, key, namespace, version, created_at, updated_at, expires_at, "
                           "stored_by, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (ns_key, key) DO UPDATE SET "
                           "version = excluded.version, created_at = excluded.created_at, updated_at = excluded.updated_at, "
                           "expires_at = excluded.expires_at, stored_by = excluded.stored_by, value = excluded.value "
                           "RETURNING " + self._ITEM_COLS,
                           _sortable(ns), key, nsj, cur + 1, old.created_at if old else t, t, exp, self.agent, body)
        return self._item(rows[0])

    def memory_get(self, ns: tuple[str, ...], key: str) -> MemoryItem:
        it = self._live_item(check_namespace(ns), key, now())
        if it is None:
            raise NotFound("get item %r of %s: no such item" % (key, list(ns)), "search the namespace to see its items")
        return it

    def memory_delete(self, ns: tuple[str, ...], key: str, if_version: int | None) -> None:
        ns = check_namespace(ns)
        with self._tx():
            old = self._live_item(ns, key, now())
            cur = old.version if old else 0
            if if_version is not None and cur != if_version:
                raise VersionConflict("item %r is no longer at version %d: version is %d" % (key, if_version, cur), cur)
            if old is None:
                raise NotFound("delete item %r of %s: no such item" % (key, list(ns)), "search the namespace to see its items")
            self._q("DELETE FROM memory_items WHERE ns_key = ? AND key = ?", _sortable(ns), key)

    def _all_items(self) -> list[MemoryItem]:
        rows = self._q("SELECT " + self._ITEM_COLS + " FROM memory_items WHERE expires_at IS NULL OR expires_at > ?", now())
        out = [self._item(r) for r in rows]
        out.sort(key=lambda i: (i.namespace, i.key))
        return out

    def memory_search(self, prefix: tuple[str, ...], filter: dict[str, Any] | None, limit: int,
                      offset: int) -> list[MemoryItem]:
        got = [i for i in self._all_items() if i.namespace[:len(prefix)] == prefix and match_filter(i.value, filter)]
        return got[offset:offset + limit]

    def memory_namespaces(self, prefix: tuple[str, ...], suffix: tuple[str, ...], max_depth: int | None,
                          limit: int, offset: int) -> list[tuple[str, ...]]:
        seen: list[tuple[str, ...]] = []
        for it in self._all_items():
            ns = it.namespace
            if not match_namespace(ns, prefix, suffix):
                continue
            n = ns[:max_depth] if max_depth else ns
            if n not in seen:
                seen.append(n)
        return seen[offset:offset + limit]

    # ---- tasks ---------------------------------------------------------
    def create_task(self, task: str, description: str, fields: dict[str, Any]) -> dict[str, Any]:
        doc, root = task_doc(task, description, fields, self.agent)
        try:
            with self._tx():
                self._q("INSERT INTO tasks (id, created_at, doc) VALUES (?, ?, ?)", task, doc["created_at"],
                        json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
                self._q("INSERT INTO threads (task_id, id, doc) VALUES (?, ?, ?)", task, task,
                        json.dumps(root, indent=2, ensure_ascii=False) + "\n")
        except Exception as e:
            if self._is_unique(e):
                raise Conflict("create task %s: a task with this id exists" % task, "choose another id", "id") from None
            raise
        return doc

    def task(self, task: str) -> dict[str, Any]:
        check_id("task id", task)
        r = self._one("SELECT doc FROM tasks WHERE id = ?", task)
        if r is None:
            raise NotFound("task %s: no such task" % task, "'workspaced task list' shows the tasks")
        doc = json.loads(r[0])
        return doc if isinstance(doc, dict) else {}

    def tasks(self) -> list[str]:
        return sorted(r[0] for r in self._q("SELECT id FROM tasks"))

    def state(self, task: str) -> dict[str, Any] | None:
        check_id("task id", task)
        r = self._one("SELECT doc FROM states WHERE task_id = ?", task)
        if r is None:
            self._require_task(task)
            return None
        doc = json.loads(r[0])
        return doc if isinstance(doc, dict) else None

    def create_thread(self, task: str, thread: str, to: str, fields: dict[str, Any]) -> dict[str, Any]:
        self._require_task(task)
        doc = thread_doc(task, thread, self.agent, to, fields)
        if self._one("SELECT 1 FROM threads WHERE task_id = ? AND id = ?", task, doc["parent_id"]) is None:
            raise NotFound("thread %s: no such thread in task %s" % (doc["parent_id"], task), "name an existing parent thread")
        try:
            self._q("INSERT INTO threads (task_id, id, doc) VALUES (?, ?, ?)", task, thread,
                    json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        except Exception as e:
            if self._is_unique(e):
                raise Conflict("new thread %s: a thread with this id exists in task %s" % (thread, task),
                               "choose another id", "id") from None
            raise
        return doc

    def thread(self, task: str, thread: str) -> dict[str, Any]:
        r = self._one("SELECT doc FROM threads WHERE task_id = ? AND id = ?", task, check_id("thread id", thread))
        if r is None:
            self._require_task(task)
            raise NotFound("thread %s: no such thread in task %s" % (thread, task),
                           "list task %s's threads to see which exist" % task)
        doc = json.loads(r[0])
        return doc if isinstance(doc, dict) else {}

    def product(self, task: str, path: str) -> dict[str, Any]:
        r = self._one("SELECT body FROM products WHERE task_id = ? AND path = ?", task, path)
        if r is None:
            self._require_task(task)
            raise NotFound("task %s has no %s" % (task, path), "it is written before the done marker naming it")
        doc = json.loads(r[0])
        return doc if isinstance(doc, dict) else {}

    # ---- markers and products --------------------------------------------
    def _drop(self, task: str, kind: str, body: dict[str, Any]) -> str:
        name = ".%s.%s.%s" % (kind, self.agent, suffix())
        try:
            self._q("INSERT INTO markers (task_id, kind, name, body) VALUES (?, ?, ?, ?)", task, kind, name,
                    json.dumps(body, ensure_ascii=False))
        except Exception as e:
            if self._is_fk(e):
                raise NotFound("task %s: no such task" % task, "'workspaced task list' shows the tasks") from None
            raise
        return name

    def _verdict(self, task: str, marker: str, after: int) -> Verdict | None:
        r = self._one("SELECT j.seq, j.record, s.doc FROM journal j JOIN states s ON s.task_id = j.task_id "
                      "WHERE j.task_id = ? AND j.name = ?", task, marker)
        if r is None:
            return None
        rec = json.loads(r[1])
        rec["seq"] = int(r[0])
        return judge(json.loads(r[2]), rec, marker)

    def _plan_version(self, task: str) -> int:
        try:
            return int(self.product(task, "plan.json").get("version", 0))
        except NotFound:
            self._require_task(task)
            return 0

    def _write_product(self, task: str, path: str, doc: dict[str, Any], final_subtask: str | None) -> int:
        version = 0
        with self._tx():
            # Hold the task as workspaced's writers do (the task's row on
            # PostgreSQL, which a commit of the state waits for; SQLite's one
            # writer): an approval cannot land between this check and the write.
            self._q("SELECT 1 FROM tasks WHERE id = ?" + self.task_lock, task)
            if path == "plan.json":
                st = self._one("SELECT doc FROM states WHERE task_id = ?", task)
                plan_closed(task, json.loads(st[0]) if st else None)
                version = doc["version"] = self._plan_version(task) + 1
            data = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
            if final_subtask is not None:
                st = self._one("SELECT doc FROM states WHERE task_id = ?", task)
                subs = (json.loads(st[0]).get("subtasks") or {}) if st else {}
                for sid, ss in sorted(subs.items()):
                    if ss.get("status") == "completed" and (sid == final_subtask or ss.get("output") == path):
                        raise Conflict("subtask %s was completed; %s is final" % (sid, path),
                                       "an output is final once its subtask is completed: report more in a new task or thread")
                for (b,) in self._q("SELECT body FROM markers WHERE task_id = ? AND kind = 'done'", task):
                    m = json.loads(b)
                    if isinstance(m, dict) and m.get("output_file") == path and m.get("status", "completed") == "completed":
                        raise Conflict("a done marker reports %s completed and waits for the daemon" % path,
                                       "an output is final once a done marker reports it")
            prev = self._one("SELECT body FROM products WHERE task_id = ? AND path = ?", task, path)
            if prev is not None and prev[0] != data:
                if path == "plan.json":
                    try:
                        v = int(json.loads(prev[0]).get("version", 0))
                    except (ValueError, AttributeError):
                        v = 0
                    keep = "plans/plan_v%d.json" % v
                else:
                    d, base = path.rsplit("/", 1)
                    pid = base[:-5]
                    n = 1 + max([int(p.rsplit(".v", 1)[1][:-5]) for (p,) in self._q(
                        "SELECT path FROM products WHERE task_id = ? AND path LIKE ?", task, "%s/history/%s.v%%" % (d, pid))
                        if p.rsplit(".v", 1)[1][:-5].isdigit()] or [0])
                    keep = "%s/history/%s.v%d.json" % (d, pid, n)
                self._q("INSERT INTO products (task_id, path, body) VALUES (?, ?, ?) ON CONFLICT (task_id, path) DO NOTHING",
                        task, keep, prev[0])
            if prev is None or prev[0] != data:
                self._q("INSERT INTO products (task_id, path, body) VALUES (?, ?, ?) ON CONFLICT (task_id, path) "
                        "DO UPDATE SET body = excluded.body", task, path, data)
        return version

    # ---- events ----------------------------------------------------------
    def events(self, task: str, after: int, limit: int) -> EventPage:
        self._require_task(task)
        rows = self._q("SELECT id, line FROM events WHERE task_id = ? AND id > ? ORDER BY id LIMIT ?", task, after, limit)
        out = []
        pos = after
        for i, line in rows:
            ev = parse_event(line.rstrip("\n"), int(i) - 1, int(i))
            pos = int(i)
            if ev is not None:
                out.append(ev)
        return EventPage(out, pos)
