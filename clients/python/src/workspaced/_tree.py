"""The file protocol's primitives: atomic durable writes, safe reads,
flock on sidecar lock files, the journal's records (docs/PROTOCOL.md)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._common import now
from .errors import Invalid, LockTimeout, NotFound, Unsafe

READ_MAX = 16 << 20


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes, mode: int = 0o644) -> None:
    """Write data to path atomically and durably: a temporary dot-file in
    the same directory, fsync, rename, fsync of the directory."""
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


# O_NOATIME: reading an entry before replacing it does not dirty its inode
# (an atime update the next fsync would write). Only a file's owner may
# ask for it; anyone else reads without.
_NOATIME = getattr(os, "O_NOATIME", 0)


def _open_read(path: str) -> int:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    if _NOATIME:
        try:
            return os.open(path, flags | _NOATIME)
        except PermissionError:
            pass
    return os.open(path, flags)


def _read_bytes(path: str, limit: int = READ_MAX) -> bytes:
    """An agent file's bytes: a regular file only, never a symlink or FIFO."""
    try:
        fd = _open_read(path)
    except FileNotFoundError:
        raise NotFound("no file %s" % path) from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Unsafe("%s is a symlink" % path, "replace it with a regular file") from None
        raise
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o170000 != 0o100000:
            raise Unsafe("%s is not a regular file" % path, "replace it with a regular file")
        if st.st_size > limit:
            raise Invalid("%s is %d bytes, over the limit" % (path, st.st_size), "keep files under 16 MiB")
        # One read of one byte more than fstat gave (a regular file reads
        # whole): a file grown meanwhile is read on to its end, up to the limit.
        chunks = [os.read(fd, st.st_size + 1)]
        size = len(chunks[0])
        while size > st.st_size:
            more = os.read(fd, 1 << 16)
            if not more:
                break
            chunks.append(more)
            size += len(more)
            if size > limit:
                raise Invalid("%s is over %d bytes" % (path, limit), "keep files under 16 MiB")
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


def _read_json(path: str) -> Any:
    data = _read_bytes(path)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise Invalid("%s is not JSON: %s" % (path, e), "'workspaced validate' names what is wrong with it") from None


_TAIL_SEQ = re.compile(rb'"journal_seq"[ \t\n\r]*:[ \t\n\r]*([0-9]+)[ \t\n\r]*}[ \t\n\r]*\Z')


def _tail_seq(data: bytes) -> int | None:
    """The journal_seq of a state document read from its last bytes, where
    the daemon writes it (its last entry); None when it does not end so. A
    reader waiting for a state to reach a seq passes over the states
    written before that with it, without parsing them; it never decides
    from it."""
    tail = data[-80:]
    m = _TAIL_SEQ.search(tail)
    if m is None:
        return None
    at = len(data) - len(tail) + m.start()
    if at > 0 and data[at - 1:at] == b"\\":
        return None  # the quote is an escaped one, inside a string
    return int(m.group(1))


def flock_held(path: str) -> bool:
    """Whether a process holds the flock of path: a daemon serving holds
    its workspace's (a missing file: nobody does)."""
    try:
        fd = os.open(path, os.O_RDONLY)
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


@contextmanager
def _locked(path: str, agent: str, timeout: float) -> Iterator[str]:
    """flock(LOCK_EX) on the sidecar lock file path, with a holder record;
    yields the time it was taken, the record's since. agent is a checked
    id, so the record needs no JSON escaping."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)  # the first lock of the directory
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    holder = _holder(path)
                    raise LockTimeout("lock %s still held by %s after %gs" % (path, holder, timeout), holder) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        since = now()
        record = ('{"pid": %d, "agent": "%s", "since": "%s"}' % (os.getpid(), agent, since)).encode()
        os.pwrite(fd, record, 0)
        if os.fstat(fd).st_size > len(record):  # a longer record of another holder
            os.ftruncate(fd, len(record))
        yield since
    finally:
        os.close(fd)  # drops the flock


def _holder(path: str) -> str:
    try:
        with open(path, "rb") as f:
            h = json.JSONDecoder().raw_decode(f.read().decode("utf-8", "replace"))[0]
        return "pid %s (agent %s)" % (h.get("pid"), h.get("agent", "?"))
    except (OSError, ValueError, AttributeError):
        return "an unknown holder"


def _lock_of(path: str) -> str:
    d, base = os.path.split(path)
    return os.path.join(d, ".locks", base + ".lock")


def _next_version(hist: str, pid: str) -> int:
    top = 0
    try:
        names = os.listdir(hist)
    except FileNotFoundError:
        return 1
    for name in names:
        if name.startswith(pid + ".v") and name.endswith(".json"):
            digits = name[len(pid) + 2:-5]
            if digits.isdigit() and not digits.startswith("0"):
                top = max(top, int(digits))
    return top + 1


def _find_record(jdir: str, marker: str, after: int) -> dict[str, Any] | None:
    """The journal record of marker past after: journal/<seq>.json or
    journal/<first>-<last>.json ({"records": [...]})."""
    try:
        names = os.listdir(jdir)
    except FileNotFoundError:
        return None
    files = []
    for name in names:
        if name.startswith(".") or not name.endswith(".json"):
            continue
        first, _, last = name[:-5].partition("-")
        if first.isdigit() and len(first) == 12 and (last == "" or (last.isdigit() and len(last) == 12)):
            if int(last or first) > after:
                files.append((int(first), name))
    for _, name in sorted(files, reverse=True):
        try:
            doc = _read_json(os.path.join(jdir, name))
        except (NotFound, Invalid):
            continue
        for rec in doc.get("records", [doc]) if isinstance(doc, dict) else []:
            if isinstance(rec, dict) and rec.get("file") == marker and int(rec.get("seq", 0)) > after:
                return rec
    return None
