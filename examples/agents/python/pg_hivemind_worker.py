#!/usr/bin/env python3
"""A Hivemind worker on a workspace kept in PostgreSQL, with psycopg2 and
nothing else: the SQL statements of docs/PROTOCOL.md, section 10.

    python3 pg_hivemind_worker.py --root 'postgres://agent@db/agents?schema=team_a' \\
        --task TASK_ID --agent worker_pg [--timeout 60] [--work-delay 0.1]

It waits until the plan is approved, then loops: pick a pending subtask
from the state, insert a claim marker and read its verdict (the journal row
of its name, then the state); if it won, do the work, write
outputs/<id>.json and insert a done marker, reading its verdict too. It
stops when the task is finished, and prints the subtasks it finished.
(Debian: apt-get install python3-psycopg2.)
"""

import argparse
import json
import os
import random
import sys
import time
from datetime import datetime, timezone
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg2

FINISHED = ("completed", "failed", "cancelled")


class Verdict(Exception):
    pass


def split_root(root):
    """The libpq connection URI and the schema of a workspace root:
    ?schema= is workspaced's, libpq does not know it."""
    u = urlsplit(root)
    q = parse_qsl(u.query, keep_blank_values=True)
    schema = next((v for k, v in q if k == "schema"), "") or "workspaced"
    rest = urlencode([(k, v) for k, v in q if k != "schema"])
    return urlunsplit((u.scheme, u.netloc, u.path, rest, u.fragment)), schema


def now():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def suffix():
    return "%d-%s" % (time.time_ns(), os.urandom(4).hex())


class Worker:
    def __init__(self, root, task, agent):
        dsn, schema = split_root(root)
        self.task, self.agent = task, agent
        self.conn = psycopg2.connect(dsn, application_name="pg_hivemind_worker " + agent)
        # Every statement is its own transaction: a marker is committed
        # (and the daemon woken) the moment it is inserted.
        self.conn.autocommit = True
        with self.conn.cursor() as cur:
            # The one place a name goes into SQL text: quoted as an
            # identifier by the server.
            cur.execute("SELECT set_config('search_path', quote_ident(%s), false)", (schema,))

    def one(self, sql, args):
        with self.conn.cursor() as cur:
            cur.execute(sql, args)
            return cur.fetchone()

    def state(self):
        """The task's state (state.json), or None before the daemon wrote one."""
        row = self.one("SELECT doc FROM states WHERE task_id = %s", (self.task,))
        return json.loads(row[0]) if row else None

    def wait_state(self, ok, deadline):
        while True:
            st = self.state()
            if st is not None and ok(st):
                return st
            if time.monotonic() > deadline:
                raise TimeoutError("task %s: the state did not change in time (is serve running?)" % self.task)
            time.sleep(0.02)

    def marker(self, kind, body):
        """Insert a marker; its name, unique and never reused."""
        name = "." + kind + "." + self.agent + "." + suffix()
        return self.one("INSERT INTO markers (task_id, kind, name, body) VALUES (%s, %s, %s, %s) RETURNING name",
                        (self.task, kind, name, json.dumps(body)))[0]

    def verdict(self, name, deadline):
        """Wait for the daemon to journal marker name; return (applied,
        reason, state). A marker is refused when its record is rejected,
        or when the state's errors name the record's seq."""
        while True:
            row = self.one("SELECT seq, record FROM journal WHERE task_id = %s AND name = %s", (self.task, name))
            if row:
                break
            if time.monotonic() > deadline:
                raise TimeoutError("marker %s not taken in time (is serve running?)" % name)
            time.sleep(0.01)
        seq, rec = row[0], json.loads(row[1])
        # The journal row and the state are written in one transaction:
        # the state read now has journal_seq >= seq.
        st = self.wait_state(lambda s: s["journal_seq"] >= seq, deadline)
        if rec.get("rejected"):
            return False, rec["rejected"], st
        for e in st.get("errors", []):
            if e.get("seq") == seq:
                return False, e["message"], st
        return True, "", st

    def write_output(self, sub, doc):
        """outputs/<sub>.json, unless the subtask is already completed
        (an output is final then)."""
        self.one("""INSERT INTO products (task_id, path, body)
            SELECT %s, %s, %s WHERE NOT EXISTS (SELECT 1 FROM states WHERE task_id = %s
                AND (doc::jsonb #>> ARRAY['subtasks', %s, 'status']) = 'completed')
            ON CONFLICT (task_id, path) DO UPDATE SET body = excluded.body, updated_at = now()
            RETURNING path""", (self.task, "outputs/%s.json" % sub, json.dumps(doc), self.task, sub))


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
    w = Worker(root, task, agent)
    rng = random.Random(agent)
    deadline = time.monotonic() + timeout
    w.wait_state(lambda s: s.get("plan_status") == "approved" or s.get("status") in FINISHED, deadline)
    done = []
    while True:
        if time.monotonic() > deadline:
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
            ok, why, st = w.verdict(w.marker("claim", {"agent_id": agent, "subtask_id": target, "claimed_at": now()}), deadline)
            if not ok:
                continue  # another worker's claim won
        time.sleep(work_delay)
        w.write_output(target, {"subtask_id": target, "worker_id": agent, "status": "completed",
                                "summary": "done by %s" % agent, "completed_at": now()})
        ok, why, st = w.verdict(w.marker("done", {"agent_id": agent, "subtask_id": target,
                                                   "output_file": "outputs/%s.json" % target,
                                                   "status": "completed", "completed_at": now()}), deadline)
        if not ok:
            print("%s: done for %s refused: %s" % (agent, target, why), file=sys.stderr)
            continue
        done.append(target)
    print("%s finished %s" % (agent, " ".join(done) or "nothing"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, help="postgres://…?schema=NAME")
    ap.add_argument("--task", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--timeout", type=float, default=60.0, help="give up after this many seconds")
    ap.add_argument("--work-delay", type=float, default=0.0, help="seconds of simulated work per subtask")
    a = ap.parse_args()
    return run(a.root, a.task, a.agent, a.timeout, a.work_delay)


if __name__ == "__main__":
    sys.exit(main())
