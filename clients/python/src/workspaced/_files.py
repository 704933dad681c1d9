"""A workspace directory: the file protocol of docs/PROTOCOL.md, with
flock, atomic rename and markers, on the standard library alone."""

from __future__ import annotations

import json
import os
from typing import Any

from ._common import (RawJSON, canonical, check_description, check_id, decode_key, encode_key, event_line, judge, now,
                      parse_event, plan_closed, suffix, task_doc, thread_doc, value_text)
from ._filesmemory import FilesMemory
from ._local import LocalBackend
from ._tree import (flock_held, _find_record, _fsync_dir, _lock_of, _locked, _next_version, _read_bytes, _read_json, _tail_seq,
                    atomic_write)
from .errors import Conflict, Invalid, NotFound, VersionConflict
from .types import Entry, EntryInfo, Event, EventPage, Verdict


def entry_bytes(e: Entry, vtext: str) -> bytes:
    """An entry file: canonical JSON (2-space indent), value last."""
    j = json.dumps
    return ('{\n  "key": %s,\n  "short_description": %s,\n  "stored_by": %s,\n  "created_at": %s,\n  "updated_at": %s,'
            '\n  "version": %d,\n  "value": %s\n}\n' % (
                j(e.key, ensure_ascii=False), j(e.short_description, ensure_ascii=False), j(e.stored_by, ensure_ascii=False),
                j(e.created_at), j(e.updated_at), e.version, vtext.replace("\n", "\n  "))).encode("utf-8")


def _entry_head(path: str) -> dict[str, Any]:
    """An entry file's members but its value: its head alone is parsed
    when the file is canonical (value last), else the whole file."""
    data = _read_bytes(path)
    i = data.find(b'\n  "value": ')
    if i > 0 and data[i - 1:i] == b",":
        try:
            head = json.loads(data[:i - 1] + b"}")
            if isinstance(head, dict) and "version" in head:
                return head
        except ValueError:
            pass
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise Invalid("%s is not JSON: %s" % (path, e), "'workspaced validate' names what is wrong with it") from None
    if not isinstance(doc, dict):
        raise Invalid("%s is not an entry" % path, "'workspaced validate' names what is wrong with it")
    return doc


def _entry(d: dict[str, Any]) -> Entry:
    return Entry(key=str(d["key"]), value=d.get("value"), version=int(d.get("version", 0)),
                 short_description=str(d.get("short_description", "")), stored_by=str(d.get("stored_by", "")),
                 created_at=str(d.get("created_at", "")), updated_at=str(d.get("updated_at", "")))


class FilesBackend(FilesMemory, LocalBackend):
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
            tdir = self._task_dir(task)
            if not os.path.isfile(os.path.join(tdir, "threads", check_id("thread id", thread) + ".json")):
                raise NotFound("thread %s: no such thread in task %s" % (thread, task),
                               "list task %s's threads to see which exist" % task)
            return os.path.join(tdir, "sessions", thread), task
        if scope == "agent":
            return os.path.join(self.root, "memory", "agents", check_id("agent", owner)), ""
        return os.path.join(self.root, "memory", "global"), ""

    def _event(self, task: str, line: str) -> None:
        fd = os.open(os.path.join(self.root, "tasks", task, "events.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)

    def _entry_event(self, scope: str, owner: str, task: str, verb: str, key: str, version: int, at: str = "") -> None:
        if not task:
            return
        attrs: dict[str, Any] = {"key": key, "agent": self.agent}
        if version:
            attrs["version"] = version
        if scope == "session":
            attrs["scope"], attrs["thread"] = "session", owner.partition("/")[2]
        self._event(task, event_line(task, ("env_" if scope == "thread" else "memory_") + verb, [], attrs, at))

    # ---- entries -------------------------------------------------------
    def entry_put(self, scope: str, owner: str, key: str, value: Any, description: str | None,
                  if_version: int | None, if_absent: bool) -> Entry:
        d, task = self._scope_dir(scope, owner)
        path = os.path.join(d, encode_key(key) + ".json")
        vtext = value_text(value)  # the value as the file holds it, checked against the limits
        if description is not None:
            check_description(description)
        # One time, once the lock is taken, for the holder record, the entry and its event.
        with _locked(_lock_of(path), self.agent, self.lock_timeout) as t:  # creates d/.locks, and so d
            try:
                old: dict[str, Any] | None = _entry_head(path)
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
            # A put keeps the description only when it updates a version it names.
            keep = if_version is not None and old is not None and description is None
            desc = str(old.get("short_description", "")) if keep and old else (description or "")
            e = Entry(key=key, value=value.value if isinstance(value, RawJSON) else value, version=cur + 1,
                      short_description=desc, stored_by=self.agent,
                      created_at=str(old.get("created_at", t)) if old else t, updated_at=t)
            atomic_write(path, entry_bytes(e, vtext))
        self._entry_event(scope, owner, task, "stored" if if_version is None else "updated", key, cur + 1, t)
        return e

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

    def create_thread(self, task: str, thread: str, to: str, fields: dict[str, Any]) -> dict[str, Any]:
        tdir = self._task_dir(task)
        doc = thread_doc(task, thread, self.agent, to, fields)
        path = os.path.join(tdir, "threads", thread + ".json")
        if not os.path.isfile(os.path.join(tdir, "threads", doc["parent_id"] + ".json")):
            raise NotFound("thread %s: no such thread in task %s" % (doc["parent_id"], task), "name an existing parent thread")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with _locked(_lock_of(path), self.agent, self.lock_timeout):
            if os.path.lexists(path):
                raise Conflict("new thread %s: a thread with this id exists in task %s" % (thread, task),
                               "choose another id", "id")
            atomic_write(path, canonical(doc))
        self._event(task, event_line(task, "thread_created", [thread],
                                     {"from": doc["from"], "to": to, "parent": doc["parent_id"]}))
        return doc

    def thread(self, task: str, thread: str) -> dict[str, Any]:
        try:
            doc: Any = _read_json(os.path.join(self._task_dir(task), "threads", check_id("thread id", thread) + ".json"))
        except NotFound:
            raise NotFound("thread %s: no such thread in task %s" % (thread, task),
                           "list task %s's threads to see which exist" % task) from None
        return doc if isinstance(doc, dict) else {}

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
        return flock_held(os.path.join(self.root, ".workspaced.lock"))

    def _verdict(self, task: str, marker: str, after: int) -> Verdict | None:
        tdir = self._task_dir(task)
        if os.path.lexists(os.path.join(tdir, marker)):
            return None
        rec = _find_record(os.path.join(tdir, "journal"), marker, after)
        if rec is None:
            return None
        try:
            data = _read_bytes(os.path.join(tdir, "state.json"))
        except NotFound:
            return None
        tail = _tail_seq(data)
        if tail is not None and tail < int(rec["seq"]):
            return None  # a state written before the record's: not parsed
        try:
            st = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise Invalid("%s is not JSON: %s" % (os.path.join(tdir, "state.json"), e),
                          "'workspaced validate' names what is wrong with it") from None
        if not isinstance(st, dict) or int(st.get("journal_seq", 0)) < int(rec["seq"]):
            return None
        return judge(st, rec, marker)

    def _plan_version(self, task: str) -> int:
        try:
            return int(_read_json(os.path.join(self._task_dir(task), "plan.json")).get("version", 0))
        except NotFound:
            return 0

    def _write_product(self, task: str, path: str, doc: dict[str, Any], final_subtask: str | None) -> int:
        tdir = self._task_dir(task)
        full = os.path.join(tdir, path)
        version = 0
        with _locked(os.path.join(tdir, ".locks", "task.lock"), self.agent, self.lock_timeout):
            # Under the task's lock, the one the daemon commits the state
            # under: an approval cannot land between this check and the write.
            if path == "plan.json":
                plan_closed(task, self.state(task))
                version = doc["version"] = self._plan_version(task) + 1
            data = canonical(doc)
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
        return version

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
