"""A workspaced agent in plain Python: files, rename and flock, nothing else.

This module speaks the workspace protocol of the README using only the
standard library. It needs no workspaced binary and no Go:

* every file is written atomically: a temporary dot-file in the target's own
  directory, fsync, os.replace over the target, fsync of the directory;
* a read-modify-write (an entry update) happens under fcntl.flock on the
  sidecar lock file <dir>/.locks/<file name>.lock, the same lock the Go CLI
  and daemon take (flock, never fcntl/lockf record locks);
* an entry file is canonical JSON with `value` written last;
* work is claimed and finished with .claim.<agent>.<suffix> and
  .done.<agent>.<suffix> markers; only the daemon writes state.json;
* the daemon's verdict on a marker (won or lost, applied or refused) is read
  from the journal record named after it and the state.json that reflects
  it (claim/done with wait=...), or, for a marker refused because its name
  was journaled already, from events.log's marker_refused line;
* an output is written under the task's lock, never over a finished
  subtask's, and the version it replaces is kept in outputs/history/.
* skills are read from skills/<name>.md (front matter, then Markdown) and
  chosen for a thread the way a thread's context chooses them.

Python 3.8+, Linux or any POSIX system with flock.
"""

import errno
import fcntl
import json
import os
import re
import secrets
import time
from datetime import datetime, timezone

__all__ = [
    "Workspace", "NotFound", "Conflict", "Invalid", "NoDaemon", "encode_key", "decode_key", "now", "parse_skill",
]

_KEEP = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_MAX_VALUE = 1 << 20


class NotFound(Exception):
    """A task, key or file that does not exist (the CLI's exit 3)."""


class Conflict(Exception):
    """A stale if_version, or a lock still held at the timeout (exit 4)."""


class Invalid(Exception):
    """Input refused before anything was written."""


class NoDaemon(Exception):
    """No daemon serves the root, so a marker waits undecided (exit 1)."""


FINISHED = ("completed", "failed", "cancelled")


def now():
    """RFC 3339 in UTC with milliseconds, as every workspace file uses."""
    t = datetime.now(timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def check_id(what, s):
    ok = (isinstance(s, str) and 1 <= len(s) <= 128 and s[0].isascii() and s[0].isalnum()
          and all(c in "._-" or (c.isascii() and c.isalnum()) for c in s))
    if not ok:
        raise Invalid("%s %r is not a valid id (letters, digits, '.', '_', '-')" % (what, s))


def encode_key(key):
    """The key's file name without .json: bytes outside [A-Za-z0-9._-] and a
    leading '.' become %XX (upper-case hex)."""
    raw = key.encode("utf-8")
    if not 1 <= len(raw) <= 200 or any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in key):
        raise Invalid("key %r: 1-200 bytes of UTF-8 without control characters" % key)
    out = []
    for i, b in enumerate(raw):
        if b in _KEEP and not (i == 0 and b == ord(".")):
            out.append(chr(b))
        else:
            out.append("%%%02X" % b)
    return "".join(out)


def decode_key(name):
    out = bytearray()
    i = 0
    while i < len(name):
        if name[i] == "%":
            out.append(int(name[i + 1:i + 3], 16))
            i += 3
        else:
            out.append(ord(name[i]))
            i += 1
    return out.decode("utf-8")


def canonical(obj):
    """Canonical JSON: 2-space indent, no ASCII escaping, trailing newline."""
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path, data, mode=0o644):
    """Write data to path atomically and durably: a reader sees the old file
    or the new one, never a torn one, and the new one survives a crash."""
    d, base = os.path.split(path)
    d = d or "."
    tmp = os.path.join(d, ".%s.tmp-%s" % (base, secrets.token_hex(6)))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(d)


class _Lock:
    """flock(LOCK_EX) on a sidecar lock file, with a timeout and a holder
    record. The kernel drops the lock when the process dies."""

    def __init__(self, path, agent, timeout):
        self.path, self.agent, self.timeout, self.fd = path, agent, timeout, None

    def __enter__(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    holder = _read_holder(self.path)
                    os.close(self.fd)
                    raise Conflict("lock %s held by %s: gave up after %ss" % (self.path, holder, self.timeout))
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        record = json.dumps({"pid": os.getpid(), "agent": self.agent, "since": now()}).encode()
        os.pwrite(self.fd, record, 0)
        os.ftruncate(self.fd, len(record))
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _read_holder(path):
    try:
        with open(path, "rb") as f:
            h = json.JSONDecoder().raw_decode(f.read().decode("utf-8", "replace"))[0]
        return "pid %s (agent %s)" % (h.get("pid"), h.get("agent", "?"))
    except (OSError, ValueError):
        return "an unknown holder"


def lock_path(file_path):
    d, base = os.path.split(file_path)
    return os.path.join(d, ".locks", base + ".lock")


def _read_json(path, limit=16 << 20):
    """Read an agent file: regular files only, never a symlink or FIFO."""
    return json.loads(_read_bytes(path, limit).decode("utf-8"))


def _read_bytes(path, limit=16 << 20):
    """The bytes of an agent file: regular files only, never a symlink or
    FIFO, at most limit bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise NotFound(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Invalid("%s is a symlink" % path)
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not (st.st_mode & 0o170000 == 0o100000):
            raise Invalid("%s is not a regular file" % path)
        if st.st_size > limit:
            raise Invalid("%s is %d bytes, over the limit" % (path, st.st_size))
        return f.read()


SKILL_MAX = 256 << 10             # a larger skill file is refused
SKILL_FRONT_MATTER_MAX = 4096      # the closing "---" line ends within these bytes
_SKILL_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+#-]{0,63}\Z")
_SKILL_KEY = re.compile(r"[a-z_][a-z0-9_]{0,63}\Z")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def parse_skill(data):
    """Parse a skill file (bytes) as the Go reader does: a line "---", then
    "key: value" lines (description: text or "a JSON string"; tags: [a, b];
    modes: [m]), then a line "---", then the UTF-8 Markdown body. Returns
    {"description", "tags", "modes", "body"}; raises Invalid naming the
    line at fault."""
    if len(data) > SKILL_MAX:
        raise Invalid("is %d bytes, over the %d-byte limit" % (len(data), SKILL_MAX))
    pos = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    limit, fields, line = pos + SKILL_FRONT_MATTER_MAX, {}, 0
    while True:
        line += 1
        if pos >= len(data):
            raise Invalid("front matter: line 1: the file is empty" if line == 1 else 'front matter: no closing "---" line')
        end = data.find(b"\n", pos)
        raw, nxt = (data[pos:], len(data)) if end < 0 else (data[pos:end], end + 1)
        if nxt > limit:
            raise Invalid('front matter: no closing "---" line within the first %d bytes' % SKILL_FRONT_MATTER_MAX)
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Invalid("front matter: line %d: not UTF-8 text" % line)
        if line == 1:
            if text != "---":
                raise Invalid('front matter: line 1: a skill begins with a "---" line')
        elif text == "---":
            break
        else:
            _front_matter_line(fields, line, text)
        pos = nxt
    meta = _check_front_matter(fields)
    try:
        meta["body"] = data[nxt:].decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid("the body is not UTF-8 text")
    return meta


def _front_matter_line(fields, line, text):
    if not text.strip():
        return
    if text[0] in " \t":
        raise Invalid("front matter: line %d: indented; the front matter is flat key: value lines" % line)
    key, sep, value = text.partition(":")
    if not sep or not _SKILL_KEY.match(key):
        raise Invalid("front matter: line %d: not a key: value line" % line)
    if key in fields:
        raise Invalid("front matter: line %d: %s is given twice" % (line, key))
    value = value.strip()
    if value.startswith("["):
        if not value.endswith("]"):
            raise Invalid('front matter: line %d: the list of %s does not end with "]"' % (line, key))
        inner = value[1:-1].strip()
        items = [it.strip() for it in inner.split(",")] if inner else []
        if any(not it for it in items):
            raise Invalid("front matter: line %d: the list of %s has an empty item" % (line, key))
        fields[key] = items
    elif value.startswith('"'):
        try:
            v = json.loads(value)
        except ValueError:
            v = None
        if not isinstance(v, str):
            raise Invalid("front matter: line %d: the quoted %s is not one JSON string" % (line, key))
        fields[key] = v
    else:
        fields[key] = value


def _check_front_matter(fields):
    """What schemas/skill.schema.json says, by hand."""
    extra = sorted(set(fields) - {"description", "tags", "modes"})
    if extra:
        raise Invalid("front matter: unknown key %s" % extra[0])
    d = fields.get("description")
    if not isinstance(d, str) or not 1 <= len(d) <= 300 or _CONTROL.search(d):
        raise Invalid("front matter: description must be one line of 1-300 characters")
    out = {"description": d}
    for k in ("tags", "modes"):
        v = fields.get(k, [])
        if (not isinstance(v, list) or len(v) > 32 or len(set(v)) != len(v)
                or not all(isinstance(w, str) and _SKILL_WORD.match(w) for w in v)):
            raise Invalid("front matter: %s must be a list of up to 32 distinct words" % k)
        out[k] = v
    return out


def _read_skill_file(path):
    """The bytes of a skill file: a regular file (never a symlink or a
    FIFO) of at most SKILL_MAX bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise NotFound(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Invalid("is a symlink")
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if st.st_mode & 0o170000 != 0o100000:
            raise Invalid("is not a regular file")
        if st.st_size > SKILL_MAX:
            raise Invalid("is %d bytes, over the %d-byte limit" % (st.st_size, SKILL_MAX))
        return f.read(SKILL_MAX + 1)


class Workspace:
    """One workspace root, used by one agent."""

    def __init__(self, root, agent, lock_timeout=30.0):
        check_id("agent", agent)
        self.root, self.agent, self.lock_timeout = os.path.abspath(root), agent, lock_timeout
        if not os.path.isdir(os.path.join(self.root, "tasks")):
            raise NotFound("no workspace at %s (run 'workspaced init' or create tasks/)" % self.root)

    # -- paths ---------------------------------------------------------
    def task_dir(self, task):
        check_id("task id", task)
        d = os.path.join(self.root, "tasks", task)
        if not os.path.isfile(os.path.join(d, "task.json")):
            raise NotFound("task %s" % task)
        return d

    def resolve_thread(self, thread):
        """The task a thread belongs to: the root thread's id is the task id;
        any other thread is tasks/<task>/threads/<thread>.json."""
        check_id("thread id", thread)
        if os.path.isfile(os.path.join(self.root, "tasks", thread, "task.json")):
            return thread
        for task in sorted(os.listdir(os.path.join(self.root, "tasks"))):
            if os.path.isfile(os.path.join(self.root, "tasks", task, "threads", thread + ".json")):
                return task
        raise NotFound("thread %s" % thread)

    def _entry_path(self, task, key):
        return os.path.join(self.task_dir(task), "env", encode_key(key) + ".json")

    def _event(self, task, name, **attrs):
        words = [now(), name, task] + ["%s=%s" % (k, _quote(str(v))) for k, v in sorted(attrs.items())]
        fd = os.open(os.path.join(self.task_dir(task), "events.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (" ".join(words) + "\n").encode("utf-8"))
        finally:
            os.close(fd)

    # -- env data (thread scope) -----------------------------------------
    def store_env(self, task, key, short_description, value):
        """Create or replace; keeps created_at, bumps version."""
        path = self._entry_path(task, key)
        body = json.dumps(value, ensure_ascii=False)
        if len(body.encode("utf-8")) > _MAX_VALUE:
            raise Invalid("value of %r is over the 1 MiB limit" % key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with _Lock(lock_path(path), self.agent, self.lock_timeout):
            t = now()
            created, version = t, 1
            try:
                old = _read_json(path)
                created, version = old.get("created_at", t), int(old.get("version", 0)) + 1
            except (NotFound, ValueError):
                pass
            entry = {"key": key, "short_description": short_description, "stored_by": self.agent,
                     "created_at": created, "updated_at": t, "version": version, "value": value}
            atomic_write(path, canonical(entry))
        self._event(task, "env_stored", key=key, agent=self.agent, version=version)
        return entry

    def get_env(self, task, key):
        """The value of one key; NotFound if missing."""
        return self.get_env_entry(task, key)["value"]

    def get_env_entry(self, task, key):
        try:
            return _read_json(self._entry_path(task, key))
        except NotFound:
            raise NotFound("env key %r in task %s" % (key, task))

    def list_env(self, task):
        """The manifest: key, short_description, stored_by, updated_at,
        version, size — values are not returned."""
        d = os.path.join(self.task_dir(task), "env")
        out = []
        if not os.path.isdir(d):
            return out
        for name in sorted(os.listdir(d)):
            if name.startswith(".") or not name.endswith(".json"):
                continue
            p = os.path.join(d, name)
            try:
                e = _read_json(p)
            except (Invalid, NotFound, ValueError):
                continue
            out.append({"key": e["key"], "short_description": e.get("short_description", ""),
                        "stored_by": e.get("stored_by", ""), "updated_at": e.get("updated_at", ""),
                        "version": e.get("version", 0), "size": os.path.getsize(p)})
        out.sort(key=lambda m: m["key"])
        return out

    def update_env(self, task, key, short_description=None, value=None, if_version=None, modify=None):
        """Change an existing entry under its lock. modify(old_value) -> new
        value makes a read-modify-write that never loses a concurrent update."""
        path = self._entry_path(task, key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with _Lock(lock_path(path), self.agent, self.lock_timeout):
            try:
                e = _read_json(path)
            except NotFound:
                raise NotFound("env key %r in task %s" % (key, task))
            if if_version is not None and e.get("version") != if_version:
                raise Conflict("env key %r is at version %s, not %s" % (key, e.get("version"), if_version))
            if short_description is not None:
                e["short_description"] = short_description
            if modify is not None:
                e["value"] = modify(e["value"])
            elif value is not None:
                e["value"] = value
            e["stored_by"], e["updated_at"], e["version"] = self.agent, now(), int(e.get("version", 0)) + 1
            v = e.pop("value")
            e["value"] = v  # value last
            atomic_write(path, canonical(e))
        self._event(task, "env_updated", key=key, agent=self.agent, version=e["version"])
        return e

    def delete_env(self, task, key):
        path = self._entry_path(task, key)
        with _Lock(lock_path(path), self.agent, self.lock_timeout):
            try:
                os.unlink(path)
            except FileNotFoundError:
                raise NotFound("env key %r in task %s" % (key, task))
            _fsync_dir(os.path.dirname(path))
        self._event(task, "env_deleted", key=key, agent=self.agent)

    # -- the daemon's view and markers -----------------------------------
    def state(self, task):
        """state.json as the daemon last wrote it, or None before the first."""
        try:
            return _read_json(os.path.join(self.task_dir(task), "state.json"))
        except NotFound:
            return None

    def _marker(self, task, prefix, body):
        name = "%s%s.%d-%s" % (prefix, self.agent, time.time_ns(), secrets.token_hex(3))
        atomic_write(os.path.join(self.task_dir(task), name), canonical(body))
        return name

    def _before_marker(self, task, wait):
        """When waiting for a verdict, what makes that pointless: a finished
        task (Conflict: the daemon takes nothing more for it) or no daemon
        (NoDaemon). Returns the state's journal_seq, which the marker's
        record follows. Without a wait nothing is read: a marker costs one
        write."""
        if wait is None:
            return 0
        st = self.state(task)
        if st is not None and st.get("status") in FINISHED:
            raise Conflict("task %s is %s: the daemon takes nothing more for it" % (task, st["status"]))
        if not self.serving():
            raise NoDaemon("no daemon serves %s, so no verdict would come; nothing was dropped "
                           "(start 'workspaced serve')" % self.root)
        return st.get("journal_seq", 0) if st else 0

    def claim(self, task, subtask, wait=None):
        """Drop a claim marker and return its name. With wait (seconds),
        wait for the daemon's verdict instead and return it (see
        wait_verdict): "won", "lost" or "not_found" ("refused" only for a
        marker name used already, which this module never does)."""
        check_id("subtask id", subtask)
        after = self._before_marker(task, wait)
        name = self._marker(task, ".claim.", {"agent_id": self.agent, "subtask_id": subtask, "claimed_at": now()})
        if wait is None:
            return name
        return self.wait_verdict(task, name, after, timeout=wait)

    def write_output(self, task, subtask, output):
        """Write outputs/<subtask>.json atomically (before done), setting
        subtask_id and worker_id, and filling completed_at and status
        (completed) when output leaves them out. An output naming another
        subtask or worker is refused (Invalid). Under the task's lock (the
        one the daemon holds while it applies markers): a finished
        subtask's output, or one a waiting done marker reports completed,
        is final (Conflict); any other output it replaces is kept as
        outputs/history/<subtask>.v<N>.json."""
        check_id("subtask id", subtask)
        doc = dict(output)
        for field, want in (("subtask_id", subtask), ("worker_id", self.agent)):
            if field in doc and doc[field] not in ("", want):
                raise Invalid("the document says %s %s, but %s is %r"
                              % (field, json.dumps(doc[field]), "the subtask it is written for" if field == "subtask_id"
                                 else "the agent writing it", want))
        doc["subtask_id"], doc["worker_id"] = subtask, self.agent
        doc.setdefault("completed_at", now())
        doc.setdefault("status", "completed")
        tdir = self.task_dir(task)
        rel = "outputs/%s.json" % subtask
        path = os.path.join(tdir, "outputs", subtask + ".json")
        data = canonical(doc)
        with _Lock(os.path.join(tdir, ".locks", "task.lock"), self.agent, self.lock_timeout):
            self._check_output_open(task, subtask, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                prev = _read_bytes(path)
            except NotFound:
                prev = None
            if prev is not None and prev != data:
                hist = os.path.join(tdir, "outputs", "history")
                os.makedirs(hist, exist_ok=True)
                atomic_write(os.path.join(hist, "%s.v%d.json" % (subtask, _next_version(hist, subtask))), prev)
            if prev != data:
                atomic_write(path, data)
        return rel

    def _check_output_open(self, task, subtask, rel):
        st = self.state(task) or {}
        for sid, ss in sorted((st.get("subtasks") or {}).items()):
            if ss.get("status") == "completed" and (sid == subtask or ss.get("output") == rel):
                raise Conflict("subtask %s was completed; %s is final" % (sid, rel))
        tdir = self.task_dir(task)
        for name in sorted(os.listdir(tdir)):
            if not name.startswith(".done."):
                continue
            try:
                m = _read_json(os.path.join(tdir, name))
            except (NotFound, Invalid, ValueError):
                continue
            if isinstance(m, dict) and m.get("output_file") == rel and m.get("status", "completed") == "completed":
                raise Conflict("done marker %s reports %s completed and waits for the daemon" % (name, rel))

    def done(self, task, output_file, subtask=None, status="completed", error=None, wait=None):
        """Drop a done marker for a product written before it and return
        its name. With wait (seconds), wait for the daemon's verdict instead
        and return it (see wait_verdict): "applied", "refused" or
        "not_found"."""
        after = self._before_marker(task, wait)
        body = {"agent_id": self.agent, "status": status, "completed_at": now()}
        if output_file:
            body["output_file"] = output_file
        if subtask:
            body["subtask_id"] = subtask
        if error:
            body["error"] = error
        name = self._marker(task, ".done.", body)
        if wait is None:
            return name
        return self.wait_verdict(task, name, after, timeout=wait)

    def cancel(self, task, reason=None, wait=None):
        """Cancel the task: a done marker with status cancelled and the
        reason as its error, which the daemon applies. Returns the marker's
        name, or with wait (seconds) the verdict."""
        return self.done(task, None, status="cancelled", error=reason, wait=wait)

    # -- verdicts --------------------------------------------------------
    def serving(self):
        """Whether a daemon serves the root: it holds an exclusive flock on
        <root>/.workspaced.lock. Probed without blocking; nothing is created."""
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
            os.close(fd)  # closing drops a probe lock taken
        return False

    def verdict(self, task, marker, after=0):
        """The daemon's verdict on the marker named marker, or None while it
        is undecided. The verdict is a dict like the CLI's --wait --json:
        marker, task_id, kind, verdict (won, lost, applied, refused,
        not_found), seq, reason, subtask_id, subtask_status, worker,
        task_status. after is a journal_seq the marker's record follows.
        A marker dropped under a name the journal holds already is refused
        without a record of its own: verdict "refused", seq 0, journaled
        the seq of the record that holds the name."""
        tdir = self.task_dir(task)
        if os.path.lexists(os.path.join(tdir, marker)):
            return None
        rec = _find_record(os.path.join(tdir, "journal"), marker, after)
        if rec is None:
            # Gone with no record: refused if its name was journaled
            # already, which only events.log says.
            refused = _refused_as(os.path.join(tdir, "events.log"), marker)
            if refused is None:
                return None
            return _reused(self.state(task) or {}, task, marker, *refused)
        st = self.state(task)
        if st is None or st.get("journal_seq", 0) < rec["seq"]:
            return None
        return _judge(st, rec, marker)

    def wait_verdict(self, task, marker, after=0, timeout=60.0):
        """Poll verdict() until the daemon decides; NoDaemon when none
        serves while the marker is undecided, TimeoutError after timeout."""
        deadline = time.monotonic() + timeout
        delay, probed = 0.005, time.monotonic()
        while True:
            v = self.verdict(task, marker, after)
            if v is not None:
                return v
            if time.monotonic() - probed >= 0.5:
                probed = time.monotonic()
                if not self.serving():
                    v = self.verdict(task, marker, after)
                    if v is not None:
                        return v
                    raise NoDaemon("no daemon serves %s; marker %s waits undecided" % (self.root, marker))
            if time.monotonic() >= deadline:
                raise TimeoutError("no verdict on %s within %ss" % (marker, timeout))
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def wait_state(self, task, pred, timeout=30.0, poll=0.02):
        """Poll state.json until pred(state) is true; returns the state."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.state(task)
            if st is not None and pred(st):
                return st
            if time.monotonic() >= deadline:
                raise TimeoutError("state of %s did not reach the condition in %ss (last: %s)"
                                   % (task, timeout, st and st.get("status")))
            time.sleep(poll)

    # -- skills -----------------------------------------------------------
    def skills(self):
        """Every skill of skills/, by name, without bodies, and the files
        refused: ([{name, description, tags, modes, size}], [{file, reason}])."""
        d = os.path.join(self.root, "skills")
        if os.path.islink(d) or (os.path.exists(d) and not os.path.isdir(d)):
            raise Invalid("skills/ is not a directory")
        if not os.path.isdir(d):
            return [], []
        out, refused = [], []
        for n in sorted(os.listdir(d)):
            if n.startswith(".") or not n.endswith(".md"):
                continue
            name = n[:-3]
            try:
                check_id("skill name", name)
                data = _read_skill_file(os.path.join(d, n))
                meta = parse_skill(data)
            except (Invalid, NotFound) as e:
                refused.append({"file": "skills/" + n, "reason": "refused: %s" % e})
                continue
            del meta["body"]
            meta.update(name=name, size=len(data))
            out.append(meta)
        return out, refused

    def read_skill(self, name):
        """One skill whole: {name, description, tags, modes, body}."""
        check_id("skill name", name)
        meta = parse_skill(_read_skill_file(os.path.join(self.root, "skills", name + ".md")))
        meta["name"] = name
        return meta

    def thread_skills(self, task, thread):
        """The skills the context of a thread loads, in its order, as
        [(name, why)]: core, the agent's card's skills, the skills of the
        thread's primary_mode, the skills its skill_tags meet (case aside)."""
        check_id("thread id", thread)
        t = _read_json(os.path.join(self.task_dir(task), "threads", thread + ".json"))
        try:
            cards = _read_json(os.path.join(self.root, "config", "agents.json")).get("agents", [])
        except NotFound:
            cards = []
        card = next((c for c in cards if c.get("name") == t["to"]), {})
        avail = {s["name"]: s for s in self.skills()[0]}
        picked, order = {}, []

        def add(name, why):
            if name not in avail:
                return
            if name not in picked:
                picked[name] = []
                order.append(name)
            picked[name].append(why)

        add("core", "every thread")
        for n in card.get("skills", []):
            add(n, "every thread of " + t["to"])
        mode = (t.get("primary_mode") or "").strip()
        if mode:
            for n in sorted(avail):
                if any(m.lower() == mode.lower() for m in avail[n]["modes"]):
                    add(n, "mode " + mode)
        want = [x.strip().lower() for x in t.get("skill_tags", [])]
        for n in sorted(avail):
            met = [x for x in avail[n]["tags"] if x.lower() in want]
            if met:
                add(n, ("tag " if len(met) == 1 else "tags ") + ", ".join(met))
        return [(n, " and ".join(picked[n])) for n in order]


def _next_version(hist, pid):
    """The next free version of product pid in a history directory."""
    top = 0
    for name in os.listdir(hist):
        if name.startswith(pid + ".v") and name.endswith(".json"):
            digits = name[len(pid) + 2:-len(".json")]
            if digits.isdigit() and not digits.startswith("0"):
                top = max(top, int(digits))
    return top + 1


def _find_record(jdir, marker, after):
    """The journal record of marker among the records past after, or None.
    A journal holds <seq>.json (one record), <first>-<last>.json
    ({"records": [...]}) and <seq>.taken<marker name> (a marker taken whose
    record is not written yet)."""
    try:
        names = os.listdir(jdir)
    except FileNotFoundError:
        return None
    files = []
    for name in names:
        base = name[:-len(".json")] if name.endswith(".json") else None
        if base is None or name.startswith("."):
            continue
        first, _, last = base.partition("-")
        if first.isdigit() and len(first) == 12 and (last == "" or (last.isdigit() and len(last) == 12)):
            if int(last or first) > after:
                files.append((int(first), name))
    for _, name in sorted(files, reverse=True):
        doc = _read_json(os.path.join(jdir, name))
        for rec in doc.get("records", [doc]) if isinstance(doc, dict) else []:
            if isinstance(rec, dict) and rec.get("file") == marker and rec.get("seq", 0) > after:
                return rec
    return None


# An events.log word: a bare run, or a double-quoted one with escapes; an
# attribute is <word>=<word>.
_WORD = re.compile(r'("(?:[^"\\]|\\.)*"|[^\s"=]+)(?:=("(?:[^"\\]|\\.)*"|[^\s"]+))?')


def _unquote(w):
    if w.startswith('"'):
        try:
            return json.loads(w)
        except ValueError:
            return None
    return w


def _refused_as(log, marker):
    """The daemon's marker_refused line for marker, refused because its
    name was journaled already (it carries journaled=<seq>): (that seq, the
    subtask the marker named), or None."""
    try:
        f = open(log, "rb")
    except FileNotFoundError:
        return None
    found = None
    with f:
        for raw in f:
            # A last line without its newline is still being written.
            if not raw.endswith(b"\n") or b" marker_refused " not in raw:
                continue
            words, attrs = [], {}
            for m in _WORD.finditer(raw.decode("utf-8", "replace")):
                if m.group(2) is None:
                    words.append(_unquote(m.group(1)))
                else:
                    attrs[_unquote(m.group(1))] = _unquote(m.group(2))
            seq = attrs.get("journaled") or ""
            if words[1:2] == ["marker_refused"] and attrs.get("file") == marker and seq.isdigit():
                found = (int(seq), words[3] if len(words) > 3 else "")
    return found


def _reused(st, task, marker, journaled, sid):
    """The verdict on marker, refused for its name journaled already as
    seq journaled."""
    v = {"marker": marker, "task_id": task, "kind": "claim" if marker.startswith(".claim.") else "done",
         "verdict": "refused", "seq": 0, "journaled": journaled,
         "reason": "this marker name was already used (journaled as seq %d); write a new marker with a fresh name" % journaled,
         "subtask_id": sid, "task_status": st.get("status")}
    ss = (st.get("subtasks") or {}).get(sid) if sid else None
    if ss:
        v["subtask_status"], v["worker"] = ss.get("status"), ss.get("worker", "")
    return v


def _refusal(st, rec):
    """Why the record was refused, or None when it was applied: the daemon
    rejected it on reading ("rejected"), or the machine refused it — an
    error in the state carrying its seq, other than the failure a failed
    done marker itself reports ("subtask <id> failed: <error>")."""
    if rec.get("rejected"):
        return rec["rejected"]
    m = rec.get("marker") or {}
    failure = "subtask %s failed: %s" % (m.get("subtask_id", ""), m.get("error") or "failed without an error message")
    for e in st.get("errors") or []:
        if e.get("seq") != rec["seq"]:
            continue
        if rec.get("kind") == "done" and m.get("status") == "failed" and e.get("message") == failure:
            continue
        return e.get("message", "")
    return None


def _judge(st, rec, marker):
    m = rec.get("marker") or {}
    sid = m.get("subtask_id", "")
    ss = (st.get("subtasks") or {}).get(sid) if sid else None
    reason = _refusal(st, rec)
    if reason is None:
        verdict = "won" if rec.get("kind") == "claim" else "applied"
    elif sid and st.get("plan_status") == "approved" and ss is None:
        verdict = "not_found"
    else:
        verdict = "lost" if rec.get("kind") == "claim" else "refused"
    v = {"marker": marker, "task_id": st.get("task_id"), "kind": rec.get("kind"), "verdict": verdict,
         "seq": rec["seq"], "reason": reason or "", "subtask_id": sid, "task_status": st.get("status")}
    if ss:
        v["subtask_status"], v["worker"] = ss.get("status"), ss.get("worker", "")
    return v


def _quote(s):
    """An events.log word: bare when it is printable ASCII without space,
    quote, '=' or backslash, else double-quoted with JSON escapes (which
    Go's strconv.Unquote reads; ensure_ascii=False keeps non-ASCII as is
    rather than as surrogate pairs Go would not join)."""
    if s and all(0x20 < ord(c) < 0x7F and c not in '"=\\' for c in s):
        return s
    return json.dumps(s, ensure_ascii=False)
