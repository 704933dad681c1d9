#!/usr/bin/env python3
"""A Hivemind worker on a workspace kept in one SQLite file, with Python's
standard-library sqlite3 and nothing else: the SQL statements of
docs/PROTOCOL.md, section 11.

    python3 sqlite_hivemind_worker.py --root sqlite:./agents.db \\
        --task TASK_ID --agent worker_1 [--timeout 60] [--work-delay 0.1]

It waits until the plan is approved, then loops: pick a pending subtask
from the state, insert a claim marker and read its verdict (the journal row
of its name, with the state, in one read); if it won, do the work, write
outputs/<id>.json and insert a done marker, reading its verdict too. It
stops when the task is finished, and prints the subtasks it finished.

Every connection sets busy_timeout, WAL, synchronous=FULL and foreign
keys; a write is one BEGIN IMMEDIATE transaction. A statement still
refused with "database is locked" after the busy timeout is run again
until the deadline: the worker never fails on it.
"""

import argparse
import json
import os
import random
import sqlite3
import sys
import time
from datetime import datetime, timezone
from urllib.parse import urlsplit

FINISHED = ("completed", "failed", "cancelled")
BUSY_TIMEOUT_MS = 10000


def db_path(root):
    """The database file of a sqlite:PATH root (sqlite:./agents.db,
    sqlite:///var/lib/agents.db), as workspaced reads it."""
    if not root.startswith("sqlite:"):
        raise SystemExit("--root must be sqlite:PATH, got %r" % root)
    rest = root[len("sqlite:"):]
    if rest.startswith("//"):
        u = urlsplit(root)
        if u.netloc not in ("", "localhost"):
            raise SystemExit("--root %r: a SQLite database is a file on this machine" % root)
        rest = u.path
    if not rest:
        raise SystemExit("--root %r names no file" % root)
    return os.path.abspath(rest)


def now():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def suffix():
    return "%d-%s" % (time.time_ns(), os.urandom(4).hex())


def busy(err):
    """Whether err is SQLite's write lock being held by another process
    (SQLITE_BUSY, SQLITE_LOCKED), after the busy timeout."""
    msg = str(err).lower()
    return isinstance(err, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg)


class Worker:
    def __init__(self, root, task, agent, deadline):
        self.task, self.agent, self.deadline = task, agent, deadline
        # isolation_level=None: the module starts no transaction by
        # itself; each statement commits on its own, and a write that
        # needs several is one explicit BEGIN IMMEDIATE.
        self.conn = sqlite3.connect(db_path(root), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        # busy_timeout first, so the others wait for the lock too.
        for pragma in ("busy_timeout = %d" % BUSY_TIMEOUT_MS, "journal_mode = WAL",
                       "synchronous = FULL", "foreign_keys = ON"):
            self.retry(lambda: self.conn.execute("PRAGMA " + pragma).fetchall())

    def retry(self, fn):
        """fn(), run again while SQLite says the database is locked, until
        the deadline; an open transaction is rolled back first."""
        pause = 0.005
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as e:
                if not busy(e) or time.monotonic() > self.deadline:
                    raise
                if self.conn.in_transaction:
                    self.conn.rollback()
                time.sleep(pause * (1 + random.random()))
                pause = min(pause * 2, 0.2)

    def one(self, sql, args):
        return self.retry(lambda: self.conn.execute(sql, args).fetchone())

    def state(self):
        """The task's state (state.json), or None before the daemon wrote one."""
        row = self.one("SELECT doc FROM states WHERE task_id = ?", (self.task,))
        return json.loads(row[0]) if row else None

    def wait_state(self, ok):
        while True:
            st = self.state()
            if st is not None and ok(st):
                return st
            if time.monotonic() > self.deadline:
                raise TimeoutError("task %s: the state did not change in time (is serve running?)" % self.task)
            time.sleep(0.02)

    def marker(self, kind, body):
        """Insert a marker; its name, unique and never reused. One
        statement is one transaction: committed when it returns."""
        name = "." + kind + "." + self.agent + "." + suffix()
        self.one("INSERT INTO markers (task_id, kind, name, body) VALUES (?, ?, ?, ?)",
                 (self.task, kind, name, json.dumps(body)))
        return name

    def verdict(self, name):
        """Wait for the daemon to journal marker name; return (applied,
        reason, state). A marker is refused when its record is rejected,
        or when the state's errors name the record's seq. The journal row
        and the state are read in one statement, one snapshot: the daemon
        writes both in one transaction, so the state has applied it."""
        while True:
            row = self.one("""SELECT j.seq, j.record, s.doc FROM journal j JOIN states s ON s.task_id = j.task_id
                WHERE j.task_id = ? AND j.name = ?""", (self.task, name))
            if row:
                break
            if time.monotonic() > self.deadline:
                raise TimeoutError("marker %s not taken in time (is serve running?)" % name)
            time.sleep(0.01)
        seq, rec, st = row[0], json.loads(row[1]), json.loads(row[2])
        if rec.get("rejected"):
            return False, rec["rejected"], st
        for e in st.get("errors", []):
            if e.get("seq") == seq:
                return False, e["message"], st
        return True, "", st

    def write_output(self, sub, doc):
        """outputs/<sub>.json, unless the subtask is already completed
        (an output is final then): one statement, so the check and the
        write see the same state."""
        self.one("""INSERT INTO products (task_id, path, body)
            SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM states s, json_each(s.doc, '$.subtasks') j
                WHERE s.task_id = ?1 AND j.key = ?4 AND json_extract(j.value, '$.status') = 'completed')
            ON CONFLICT (task_id, path) DO UPDATE SET body = excluded.body,
                updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')""",
                 (self.task, "outputs/%s.json" % sub, json.dumps(doc), sub))


def pick(st, agent, rng):
    """A subtask the state already gives this agent (a claim that won
    late), else a pending one at random; None when there is none."""
    subs = st.get("subtasks", {})
    mine = sorted(k for k, v in subs.items() if v["status"] == "in_progress" and v.get("worker") == agent)
    if mine:
        return mine[0]
    pending = sorted(k for k, v in subs.items() if v["status"] == "pending")
    return rng.choice(pending) if pending else None


def run(root, task, agent, timeout, work_delay):
    w = Worker(root, task, agent, time.monotonic() + timeout)
    rng = random.Random(agent)
    w.wait_state(lambda s: s.get("plan_status") == "approved" or s.get("status") in FINISHED)
    done = []
    while True:
        if time.monotonic() > w.deadline:
            print("%s: gave up after %ss" % (agent, timeout), file=sys.stderr)
            return 1
        st = w.state()
        if st["status"] in FINISHED:
            break
        target = pick(st, agent, rng)
        if target is None:
            time.sleep(0.02)  # others are working: wait for the task to end
            continue
        if st["subtasks"][target]["status"] != "in_progress":
            ok, why, st = w.verdict(w.marker("claim", {"agent_id": agent, "subtask_id": target, "claimed_at": now()}))
            if not ok:
                continue  # another worker's claim won
        time.sleep(work_delay)
        w.write_output(target, {"subtask_id": target, "worker_id": agent, "status": "completed",
                                "summary": "done by %s" % agent, "completed_at": now()})
        ok, why, st = w.verdict(w.marker("done", {"agent_id": agent, "subtask_id": target,
                                                   "output_file": "outputs/%s.json" % target,
                                                   "status": "completed", "completed_at": now()}))
        if not ok:
            print("%s: done for %s refused: %s" % (agent, target, why), file=sys.stderr)
            continue
        done.append(target)
    print("%s finished %s" % (agent, " ".join(done) or "nothing"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, help="sqlite:PATH, as workspaced takes it")
    ap.add_argument("--task", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--timeout", type=float, default=60.0, help="give up after this many seconds")
    ap.add_argument("--work-delay", type=float, default=0.0, help="seconds of simulated work per subtask")
    a = ap.parse_args()
    return run(a.root, a.task, a.agent, a.timeout, a.work_delay)


if __name__ == "__main__":
    sys.exit(main())
