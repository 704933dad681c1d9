"""Errors: kinds, messages and hints, and what HTTP refuses."""

from __future__ import annotations

import fcntl
import os
import pathlib
import subprocess
import sys

import pytest

import workspaced
from conftest import ROOTS
from workspaced.errors import from_problem, read_problem


@pytest.mark.parametrize("kind,cls", [
    ("not_found", workspaced.NotFound), ("invalid", workspaced.Invalid), ("unauthorized", workspaced.Unauthorized),
    ("forbidden", workspaced.Forbidden), ("conflict", workspaced.Conflict), ("locked", workspaced.LockTimeout),
    ("not_serving", workspaced.NotServing), ("no_verdict", workspaced.NoVerdict),
])
def test_problem_kinds(kind: str, cls: type[workspaced.WorkspacedError]) -> None:
    e = from_problem(400, {"kind": kind, "detail": "what", "hint": "how"})
    assert isinstance(e, cls) and e.detail == "what" and e.hint == "how"
    assert str(e) == "what\nhint: how"


@pytest.mark.parametrize("raw,want", [
    (b"<html>502 Bad Gateway</html>", {"detail": "GET /x: HTTP 502"}),
    (b"", {"detail": "GET /x: HTTP 502"}),
    (b"[1, 2]", {"detail": "GET /x: HTTP 502"}),
    (b'"just a string"', {"detail": "GET /x: HTTP 502"}),
    (b'{"kind": "locked"}', {"kind": "locked", "detail": "GET /x: HTTP 502"}),
    (b'{"kind": "invalid", "detail": "bad key"}', {"kind": "invalid", "detail": "bad key"}),
    (b"\xff\xfe not utf-8", {"detail": "GET /x: HTTP 502"}),
])
def test_read_problem(raw: bytes, want: dict[str, str]) -> None:
    assert read_problem(raw, "GET /x: HTTP 502") == want


def test_version_conflict_problem() -> None:
    e = from_problem(412, {"kind": "version_conflict", "detail": "stale", "current_version": 7})
    assert isinstance(e, workspaced.VersionConflict) and e.current_version == 7 and e.hint


def test_unknown_token_is_unauthorized() -> None:
    if "http" not in ROOTS:
        pytest.skip("no HTTP listener to run on ($WORKSPACED_PY_ROOTS has no http)")
    with pytest.raises(workspaced.Unauthorized):
        workspaced.connect(ROOTS["http"], token="tk_not_a_token")


def test_no_agent_is_invalid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKSPACED_AGENT", raising=False)
    with pytest.raises(workspaced.Invalid):
        workspaced.connect("/nonexistent", agent=None)


def test_missing_workspace(tmp_path: pathlib.Path) -> None:
    with pytest.raises(workspaced.NotFound) as err:
        workspaced.connect(str(tmp_path), agent="a")
    assert "workspaced init" in err.value.hint
    with pytest.raises(workspaced.NotFound):
        workspaced.connect("sqlite:%s/none.db" % tmp_path, agent="a")


def _fresh_tree(tmp_path: pathlib.Path) -> str:
    exe = os.environ.get("WORKSPACED_BIN")
    if not exe:
        pytest.skip("$WORKSPACED_BIN is unset: no binary to make a workspace with")
    root = str(tmp_path / "ws")
    subprocess.run([exe, "--root", root, "init"], check=True, capture_output=True)
    return root


def test_no_daemon_no_wait(tmp_path: pathlib.Path) -> None:
    ws = workspaced.connect(_fresh_tree(tmp_path), agent="w1")
    ws.create_task("t1", "nobody serves it")
    with pytest.raises(workspaced.NotServing) as err:
        ws.claim("t1", "s1", wait=5)
    assert "workspaced serve" in err.value.hint
    assert not [n for n in os.listdir(os.path.join(ws.root, "tasks", "t1")) if n.startswith(".claim.")]
    d = ws.claim("t1", "s1")
    assert d.marker.startswith(".claim.w1.") and d.verdict is None


def test_lock_timeout_names_the_holder(tmp_path: pathlib.Path) -> None:
    root = _fresh_tree(tmp_path)
    ws = workspaced.connect(root, agent="w1", task="t1", lock_timeout=0.2)
    ws.create_task("t1", "a held lock")
    ws.env.put("k", 1)
    lock = os.path.join(root, "tasks", "t1", "env", ".locks", "k.json.lock")
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.pwrite(fd, b'{"pid": 4242, "agent": "holder_agent", "since": "2026-01-01T00:00:00.000Z"}', 0)
        with pytest.raises(workspaced.LockTimeout) as err:
            ws.env.put("k", 2)
        assert "holder_agent" in err.value.holder and err.value.hint
    finally:
        os.close(fd)
    assert ws.env.put("k", 3).version == 2


# A process of its own holds SQLite's write lock (BEGIN IMMEDIATE) until
# its stdin says to let go, or for the seconds given.
_HOLD = ("import sqlite3, sys, time\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE')\n"
         "print('held', flush=True)\n"
         "time.sleep(float(sys.argv[2])) if len(sys.argv) > 2 else sys.stdin.read()\n"
         "c.execute('COMMIT')\n")


def _fresh_sqlite(tmp_path: pathlib.Path) -> str:
    exe = os.environ.get("WORKSPACED_BIN")
    if not exe:
        pytest.skip("$WORKSPACED_BIN is unset: no binary to make a workspace with")
    db = str(tmp_path / "ws.db")
    subprocess.run([exe, "--root", "sqlite:" + db, "init"], check=True, capture_output=True)
    return db


def _holder(db: str, *seconds: str) -> subprocess.Popen[str]:
    p = subprocess.Popen([sys.executable, "-c", _HOLD, db, *seconds], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout is not None and p.stdout.readline() == "held\n"
    return p


def test_sqlite_write_waits_past_the_busy_timeout(tmp_path: pathlib.Path) -> None:
    # lock_timeout 4 s: SQLite's own wait is 2 s, then the write is run
    # again; the lock, held 3 s, is free before the deadline.
    db = _fresh_sqlite(tmp_path)
    ws = workspaced.connect("sqlite:" + db, agent="w1", task="t1", lock_timeout=4)
    ws.create_task("t1", "a held write lock")
    p = _holder(db, "3")
    try:
        assert ws.env.put("k", 1).version == 1
    finally:
        p.wait()


def test_sqlite_lock_timeout_names_the_holder(tmp_path: pathlib.Path) -> None:
    db = _fresh_sqlite(tmp_path)
    ws = workspaced.connect("sqlite:" + db, agent="w1", task="t1", lock_timeout=0.3)
    ws.create_task("t1", "a held write lock")
    p = _holder(db)
    try:
        with pytest.raises(workspaced.LockTimeout) as err:
            ws.env.put("k", 1)
        if os.path.exists("/proc/locks"):
            assert err.value.holder.startswith("pid %d (python" % p.pid), err.value
        assert err.value.holder in str(err.value) and "lock_timeout" in err.value.hint
    finally:
        assert p.stdin is not None
        p.stdin.close()
        p.wait()
    assert ws.env.put("k", 2).version == 1
