"""A workspace directory: the file protocol of docs/PROTOCOL.md, with
flock, atomic rename and markers, on the standard library alone."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
from datetime import datetime, timedelta, timezone
from typing import Any

from ._common import (canonical, check_description, check_id, check_key, check_namespace, decode_key, encode_key,
                      event_line, judge, match_filter, now, parse_event, quote, suffix, suffix_match, task_doc,
                      value_json)
from ._local import LocalBackend
from ._tree import _find_record, _fsync_dir, _lock_of, _locked, _next_version, _read_bytes, _read_json, atomic_write
from .errors import Conflict, Invalid, NotFound, VersionConflict
from .types import Entry, EntryInfo, Event, EventPage, MemoryItem, Verdict


def _entry(d: dict[str, Any]) -> Entry:
    return Entry(key=str(d["key"]), value=d.get("value"), version=int(d.get("version", 0)),
                 short_description=str(d.get("short_description", "")), stored_by=str(d.get("stored_by", "")),
                 created_at=str(d.get("created_at", "")), updated_at=str(d.get("updated_at", "")))


def _sortable(ns: tuple[str, ...]) -> str:
    return "".join(label + "\x01" for label in ns)


def _item(d: dict[str, Any]) -> MemoryItem:
    return MemoryItem(namespace=tuple(d["namespace"]), key=str(d["key"]), value=d.get("value") or {},
                      version=int(d.get("version", 0)), created_at=str(d.get("created_at", "")),
                      updated_at=str(d.get("updated_at", "")), expires_at=d.get("expires_at"))


def _live(it: MemoryItem, at: str) -> bool:
    return it.expires_at is None or _parse_time(it.expires_at) > _parse_time(at)


def _parse_time(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


class FilesBackend(LocalBackend):
    """A workspace directory, used by one agent."""

    def __init__(self, root: str, agent: str, lock_timeout: float = 30.0) -> None:
        self.agent = check_id("agent", agent)
        self.root = os.path.abspath(root)
        self.lock_timeout = lock_timeout
        if not os.path.isdir(os.path.join(self.root, "tasks")):
            raise NotFound("no workspace at %s" % self.root, "run 'workspaced init %s' first" % self.root)

    def close(self) -> None:
        pass

    # ---- paths ---------------------------------------------------------
    def _task_dir(self, task: str) -> str:
        check_id("task id", task)
        d = os.path.join(self.root, "tasks", task)
        if not os.path.isfile(os.path.join(d, "task.json")):
            raise NotFound("task %s: no such task" % task, "'workspaced task list' shows the tasks")
        return d

    def _scope_dir(self, scope: str, owner: str) -> tuple[str, str]:
        """The scope's directory and the task whose events.log tells of it ('' for none)."""
        if scope == "thread":
            return os.path.join(self._task_dir(owner), "env"), owner
        if scope == "session":
            task, _, thread = owner.partition("/")
            check_id("thread id", thread)
            return os.path.join(self._task_dir(task), "sessions", thread), task
        if scope == "agent":
            return os.path.join(self.root, "memory", "agents", check_id("agent", owner)), ""
        return os.path.join(self.root, "memory", "global"), ""

    def _event(self, task: str, line: str) -> None:
        fd = os.open(os.path.join(self.root, "tasks", task, "events.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)

    def _entry_event(self, scope: str, owner: str, task: str, verb: str, key: str, version: int) -> None:
        if not task:
            return
        attrs: dict[str, Any] = {"key": key, "agent": self.agent}
        if version:
            attrs["version"] = version
        if scope == "session":
            attrs["scope"], attrs["thread"] = "session", owner.partition("/")[2]
        self._event(task, event_line(task, ("env_" if scope == "thread" else "memory_") + verb, [], attrs))

    # ---- entries -------------------------------------------------------
    def entry_put(self, scope: str, owner: str, key: str, value: Any, description: str | None,
                  if_version: int | None, if_absent: bool) -> Entry:
        d, task = self._scope_dir(scope, owner)
        path = os.path.join(d, encode_key(key) + ".json")
        value_json(value)
        if description is not None:
            check_description(description)
        os.makedirs(d, exist_ok=True)
        with _locked(_lock_of(path), self.agent, self.lock_timeout):
            t = now()
            try:
                old: dict[str, Any] | None = _read_json(path)
            except NotFound:
                old = None
            except Invalid:
                if if_version is not None or if_absent:
                    raise
                old = None
            cur = int(old.get("version", 0)) if old else 0
            if if_absent and old is not None:
                raise VersionConflict("%s %r exists already (version %d)" % (scope, key, cur), cur,
                                      "read it (get), or store it without if_absent to replace it")
            if if_version is not None and cur != if_version:
                raise VersionConflict("%s %r is no longer at version %d: version is %d" % (scope, key, if_version, cur), cur)
            desc = description if description is not None else (str(old.get("short_description", "")) if old else "")
            doc = {"key": key, "short_description": desc, "stored_by": self.agent,
                   "created_at": old.get("created_at", t) if old else t, "updated_at": t, "version": cur + 1,
                   "value": value}
            atomic_write(path, canonical(doc))
        self._entry_event(scope, owner, task, "stored" if if_version is None else "updated", key, cur + 1)
        return _entry(doc)

    def entry_get(self, scope: str, owner: str, key: str) -> Entry:
        d, _ = self._scope_dir(scope, owner)
        try:
            return _entry(_read_json(os.path.join(d, encode_key(key) + ".json")))
        except NotFound:
            raise NotFound("get %s %r: no such key" % (_label(scope, owner), key), "list the scope to see its keys") from None

    def entry_list(self, scope: str, owner: str) -> list[EntryInfo]:
        d, _ = self._scope_dir(scope, owner)
        out: list[EntryInfo] = []
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            return out
        for name in names:
            if name.startswith(".") or not name.endswith(".json"):
                continue
            p = os.path.join(d, name)
            try:
                e = _read_json(p)
                size = os.path.getsize(p)
            except (Invalid, NotFound, OSError):
                continue
            out.append(EntryInfo(key=str(e.get("key", decode_key(name[:-5]))), version=int(e.get("version", 0)),
                                 size=size, short_description=str(e.get("short_description", "")),
                                 stored_by=str(e.get("stored_by", "")), updated_at=str(e.get("updated_at", ""))))
        out.sort(key=lambda m: m.key.encode("utf-8"))
        return out

    def entry_delete(self, scope: str, owner: str, key: str, if_version: int | None) -> None:
        d, task = self._scope_dir(scope, owner)
        path = os.path.join(d, encode_key(key) + ".json")
        with _locked(_lock_of(path), self.agent, self.lock_timeout):
            try:
                cur = int(_read_json(path).get("version", 0))
            except NotFound:
                if if_version is not None:
                    raise VersionConflict("%s %r: no such key" % (_label(scope, owner), key), 0) from None
                raise NotFound("delete %s %r: no such key" % (_label(scope, owner), key), "list the scope to see its keys") from None
            if if_version is not None and cur != if_version:
                raise VersionConflict("%s %r is no longer at version %d: version is %d" % (scope, key, if_version, cur), cur)
            os.unlink(path)
            _fsync_dir(d)
        self._entry_event(scope, owner, task, "deleted", key, 0)

    # ---- namespaced memory ---------------------------------------------
    def _ns_dir(self, ns: tuple[str, ...]) -> str:
        h = hashlib.sha256(_sortable(ns).encode("utf-8")).hexdigest()[:32]
        return os.path.join(self.root, "memory", "namespaces", h)

    def _memory_event(self, verb: str, ns: tuple[str, ...], key: str, version: int, at: str) -> None:
        attrs: dict[str, Any] = {"agent": self.agent, "key": key, "namespace": json.dumps(list(ns), ensure_ascii=False,
                                                                                        separators=(",", ":"))}
        if version:
            attrs["version"] = version
        words = [at, "memory_" + verb, quote("")] + ["%s=%s" % (k, quote(str(v))) for k, v in sorted(attrs.items())]
        p = os.path.join(self.root, "memory", "namespaces", "events.log")
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (" ".join(words) + "\n").encode("utf-8"))
        finally:
            os.close(fd)

    def memory_put(self, ns: tuple[str, ...], key: str, value: dict[str, Any], ttl_seconds: int | None,
                   if_version: int | None, if_absent: bool) -> MemoryItem:
        ns = check_namespace(ns)
        check_key(key)
        if not isinstance(value, dict):
            raise Invalid("a memory item's value is a JSON object", "give a dict", "value")
        value_json(value)
        if ttl_seconds is not None and ttl_seconds < 1:
            raise Invalid("ttl_seconds %r: a TTL is at least 1 second" % ttl_seconds, "leave it out for no expiry", "ttl_seconds")
        d = self._ns_dir(ns)
        os.makedirs(d, exist_ok=True)
        if not os.path.exists(os.path.join(d, ".namespace.json")):
            atomic_write(os.path.join(d, ".namespace.json"), canonical({"namespace": list(ns)}))
        path = os.path.join(d, encode_key(key) + ".json")
        with _locked(_lock_of(path), self.agent, self.lock_timeout):
            t = now()
            try:
                old: MemoryItem | None = _item(_read_json(path))
            except (NotFound, Invalid, KeyError):
                old = None
            if old is not None and not _live(old, t):
                old = None
            cur = old.version if old else 0
            if if_absent and old is not None:
                raise VersionConflict("item %r exists already (version %d)" % (key, cur), cur)
            if if_version is not None and cur != if_version:
                raise VersionConflict("item %r is no longer at version %d: version is %d" % (key, if_version, cur), cur)
            exp = None
            if ttl_seconds is not None:
                e = datetime.now(timezone.utc) + timedelta(seconds=ttl_seconds)
                exp = e.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (e.microsecond // 1000)
            doc = {"namespace": list(ns), "key": key, "version": cur + 1, "created_at": old.created_at if old else t,
                   "updated_at": t, "expires_at": exp, "value": value}
            atomic_write(path, canonical(doc))
        self._memory_event("stored", ns, key, cur + 1, t)
        return _item(doc)

    def memory_get(self, ns: tuple[str, ...], key: str) -> MemoryItem:
        ns = check_namespace(ns)
        check_key(key)
        try:
            it = _item(_read_json(os.path.join(self._ns_dir(ns), encode_key(key) + ".json")))
        except NotFound:
            it = None
        if it is None or not _live(it, now()):
            raise NotFound("get item %r of %s: no such item" % (key, list(ns)), "search the namespace to see its items")
        return it

    def memory_delete(self, ns: tuple[str, ...], key: str, if_version: int | None) -> None:
        ns = check_namespace(ns)
        check_key(key)
        path = os.path.join(self._ns_dir(ns), encode_key(key) + ".json")
        if not os.path.isdir(os.path.dirname(path)):
            raise NotFound("delete item %r of %s: no such item" % (key, list(ns)), "search the namespace to see its items")
        with _locked(_lock_of(path), self.agent, self.lock_timeout):
            t = now()
            try:
                it: MemoryItem | None = _item(_read_json(path))
            except NotFound:
                it = None
            if it is not None and not _live(it, t):
                it = None
            cur = it.version if it else 0
            if if_version is not None and cur != if_version:
                raise VersionConflict("item %r is no longer at version %d: version is %d" % (key, if_version, cur), cur)
            if it is None:
                raise NotFound("delete item %r of %s: no such item" % (key, list(ns)), "search the namespace to see its items")
            os.unlink(path)
            _fsync_dir(os.path.dirname(path))
        self._memory_event("deleted", ns, key, 0, t)

    def _namespaces(self) -> list[tuple[tuple[str, ...], str]]:
        base = os.path.join(self.root, "memory", "namespaces")
        out = []
        try:
            names = os.listdir(base)
        except FileNotFoundError:
            return []
        for h in names:
            try:
                doc = _read_json(os.path.join(base, h, ".namespace.json"))
                out.append((tuple(doc["namespace"]), os.path.join(base, h)))
            except (NotFound, Invalid, KeyError, TypeError, NotADirectoryError):
                continue
        out.sort(key=lambda p: p[0])
        return out

    def _items(self, d: str) -> list[MemoryItem]:
        t = now()
        out = []
        for name in sorted(os.listdir(d)):
            if name.startswith(".") or not name.endswith(".json"):
                continue
            try:
                it = _item(_read_json(os.path.join(d, name)))
            except (NotFound, Invalid, KeyError):
                continue
            if _live(it, t):
                out.append(it)
        out.sort(key=lambda i: i.key.encode("utf-8"))
        return out

    def memory_search(self, prefix: tuple[str, ...], filter: dict[str, Any] | None, limit: int,
                      offset: int) -> list[MemoryItem]:
        out: list[MemoryItem] = []
        for ns, d in self._namespaces():
            if ns[:len(prefix)] != tuple(prefix):
                continue
            out.extend(it for it in self._items(d) if match_filter(it.value, filter))
        return out[offset:offset + limit]

    def memory_namespaces(self, prefix: tuple[str, ...], suffix: tuple[str, ...], max_depth: int | None,
                          limit: int, offset: int) -> list[tuple[str, ...]]:
        seen: list[tuple[str, ...]] = []
        for ns, d in self._namespaces():
            if ns[:len(prefix)] != tuple(prefix) or not suffix_match(ns, suffix) or not self._items(d):
                continue
            n = ns[:max_depth] if max_depth else ns
            if n not in seen:
                seen.append(n)
        return seen[offset:offset + limit]

    # ---- tasks ---------------------------------------------------------
    def create_task(self, task: str, description: str, fields: dict[str, Any]) -> dict[str, Any]:
        doc, root = task_doc(task, description, fields, self.agent)
        d = os.path.join(self.root, "tasks", task)
        try:
            os.mkdir(d)
        except FileExistsError:
            raise Conflict("create task %s: a task with this id exists" % task, "choose another id", "id") from None
        os.mkdir(os.path.join(d, "threads"))
        atomic_write(os.path.join(d, "threads", task + ".json"), canonical(root))
        atomic_write(os.path.join(d, "task.json"), canonical(doc))  # last: it makes the task exist
        self._event(task, event_line(task, "task_created", [], {"by": doc["submitted_by"]}))
        return doc

    def task(self, task: str) -> dict[str, Any]:
        doc = _read_json(os.path.join(self._task_dir(task), "task.json"))
        return doc if isinstance(doc, dict) else {}

    def tasks(self) -> list[str]:
        d = os.path.join(self.root, "tasks")
        return sorted(n for n in os.listdir(d) if not n.startswith(".") and os.path.isfile(os.path.join(d, n, "task.json")))

    def state(self, task: str) -> dict[str, Any] | None:
        try:
            doc = _read_json(os.path.join(self._task_dir(task), "state.json"))
        except NotFound:
            return None
        return doc if isinstance(doc, dict) else None

    def product(self, task: str, path: str) -> dict[str, Any]:
        try:
            doc = _read_json(os.path.join(self._task_dir(task), path))
        except NotFound:
            raise NotFound("task %s has no %s" % (task, path), "it is written before the done marker naming it") from None
        return doc if isinstance(doc, dict) else {}

    # ---- the store's primitives for markers and products -------------
    def _drop(self, task: str, kind: str, body: dict[str, Any]) -> str:
        name = ".%s.%s.%s" % (kind, self.agent, suffix())
        atomic_write(os.path.join(self._task_dir(task), name), canonical(body))
        return name

    def _serving(self) -> bool:
        try:
            fd = os.open(os.path.join(self.root, ".workspaced.lock"), os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EACCES):
                return True
            raise
        finally:
            os.close(fd)
        return False

    def _verdict(self, task: str, marker: str, after: int) -> Verdict | None:
        tdir = self._task_dir(task)
        if os.path.lexists(os.path.join(tdir, marker)):
            return None
        rec = _find_record(os.path.join(tdir, "journal"), marker, after)
        if rec is None:
            return None
        st = self.state(task)
        if st is None or int(st.get("journal_seq", 0)) < int(rec["seq"]):
            return None
        return judge(st, rec, marker)

    def _plan_version(self, task: str) -> int:
        try:
            return int(_read_json(os.path.join(self._task_dir(task), "plan.json")).get("version", 0))
        except NotFound:
            return 0

    def _write_product(self, task: str, path: str, doc: dict[str, Any], final_subtask: str | None) -> None:
        tdir = self._task_dir(task)
        full = os.path.join(tdir, path)
        data = canonical(doc)
        with _locked(os.path.join(tdir, ".locks", "task.lock"), self.agent, self.lock_timeout):
            if final_subtask is not None:
                self._check_open(task, tdir, final_subtask, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            try:
                prev: bytes | None = _read_bytes(full)
            except NotFound:
                prev = None
            if prev is not None and prev != data:
                if path == "plan.json":
                    keep_dir = os.path.join(tdir, "plans")
                    try:
                        v = int(json.loads(prev).get("version", 0))
                    except (ValueError, AttributeError):
                        v = 0
                    keep = os.path.join(keep_dir, "plan_v%d.json" % v)
                else:
                    keep_dir = os.path.join(os.path.dirname(full), "history")
                    pid = os.path.basename(full)[:-5]
                    keep = os.path.join(keep_dir, "%s.v%d.json" % (pid, _next_version(keep_dir, pid)))
                os.makedirs(keep_dir, exist_ok=True)
                if not os.path.exists(keep):
                    atomic_write(keep, prev)
            if prev != data:
                atomic_write(full, data)

    def _check_open(self, task: str, tdir: str, subtask: str, rel: str) -> None:
        st = self.state(task) or {}
        for sid, ss in sorted((st.get("subtasks") or {}).items()):
            if ss.get("status") == "completed" and (sid == subtask or ss.get("output") == rel):
                raise Conflict("subtask %s was completed; %s is final" % (sid, rel),
                               "an output is final once its subtask is completed: report more in a new task or thread")
        for name in sorted(os.listdir(tdir)):
            if not name.startswith(".done."):
                continue
            try:
                m = _read_json(os.path.join(tdir, name))
            except (NotFound, Invalid):
                continue
            if isinstance(m, dict) and m.get("output_file") == rel and m.get("status", "completed") == "completed":
                raise Conflict("done marker %s reports %s completed and waits for the daemon" % (name, rel),
                               "an output is final once a done marker reports it")

    # ---- events --------------------------------------------------------
    def events(self, task: str, after: int, limit: int) -> EventPage:
        p = os.path.join(self._task_dir(task), "events.log")
        out: list[Event] = []
        pos = after
        try:
            f = open(p, "rb")
        except FileNotFoundError:
            return EventPage([], after)
        with f:
            f.seek(after)
            while len(out) < limit:
                raw = f.readline()
                if not raw.endswith(b"\n"):
                    break  # a last line still being written
                start, pos = pos, pos + len(raw)
                ev = parse_event(raw.decode("utf-8", "replace").rstrip("\n"), start, pos)
                if ev is not None:
                    out.append(ev)
        return EventPage(out, pos)


def _label(scope: str, owner: str) -> str:
    return {"thread": "env of task %s" % owner, "session": "session %s" % owner, "agent": "memory of %s" % owner,
            "global": "global memory"}[scope]


__all__ = ["FilesBackend", "atomic_write"]
