#!/usr/bin/env python3
"""A Hivemind worker on a workspace kept in PostgreSQL, with psycopg2 and
nothing else: the tables are the protocol (docs/PROTOCOL.md, section 10).

    python3 pg_worker.py --dsn 'postgresql:///agents?host=/run/postgresql' --schema team_a \\
        --task TASK_ID --agent worker_py [--timeout 60] [--work-delay 0.1]

It waits until the plan is approved, then loops: pick a pending subtask from
the state, insert a claim marker and wait for the daemon's journal row for
it; if it won, write outputs/<id>.json into products and insert a done
marker, waiting for its verdict too. It stops when nothing is left to
claim, and prints the subtasks it finished. Every value is a parameter.
"""

import argparse
import json
import os
import random
import sys
import time

import psycopg2

FINISHED = ("completed", "failed", "cancelled")


class Workspace:
    def __init__(self, dsn, schema, agent):
        self.agent = agent
        self.conn = psycopg2.connect(dsn)
        self.conn.autocommit = True  # each statement its own transaction
        with self.conn.cursor() as cur:
            cur.execute("SELECT set_config('search_path', %s, false)", (schema,))

    def state(self, task):
        with self.conn.cursor() as cur:
            cur.execute("SELECT doc FROM states WHERE task_id = %s", (task,))
            row = cur.fetchone()
        return json.loads(row[0]) if row else None

    def wait_state(self, task, cond, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.state(task)
            if st is not None and cond(st):
                return st
            time.sleep(0.02)
        raise TimeoutError("task %s: the state did not get there in %ss" % (task, timeout))

    def marker(self, task, kind, body):
        """Insert a marker; return its name, by which its journal row is
        found."""
        name = ".%s.%s.%s" % (kind, self.agent, os.urandom(6).hex())
        with self.conn.cursor() as cur:
            cur.execute("INSERT INTO markers (task_id, kind, name, body) VALUES (%s, %s, %s, %s)",
                        (task, kind, name, json.dumps(body)))
        return name

    def verdict(self, task, name, timeout):
        """The journal record of a marker once the daemon took it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.conn.cursor() as cur:
                cur.execute("SELECT seq, record FROM journal WHERE task_id = %s AND name = %s", (task, name))
                row = cur.fetchone()
            if row:
                return json.loads(row[1])
            time.sleep(0.01)
        raise TimeoutError("marker %s not taken in %ss: is the daemon serving?" % (name, timeout))

    def claim(self, task, subtask, timeout):
        rec = self.verdict(task, self.marker(task, "claim", {"agent_id": self.agent, "subtask_id": subtask}), timeout)
        if rec.get("rejected"):
            return False
        st = self.state(task)
        sub = st["subtasks"].get(subtask, {})
        return sub.get("worker") == self.agent and st["journal_seq"] >= rec["seq"]

    def done(self, task, subtask, output, timeout):
        path = "outputs/%s.json" % subtask
        doc = dict(subtask_id=subtask, worker_id=self.agent, status="completed", **output)
        with self.conn.cursor() as cur:
            cur.execute("""INSERT INTO products (task_id, path, body) VALUES (%s, %s, %s)
                           ON CONFLICT (task_id, path) DO UPDATE SET body = excluded.body, updated_at = now()""",
                        (task, path, json.dumps(doc)))
        rec = self.verdict(task, self.marker(task, "done", {"agent_id": self.agent, "subtask_id": subtask,
                                                             "output_file": path, "status": "completed"}), timeout)
        if rec.get("rejected"):
            return rec["rejected"]
        return None


def pick(st, agent, rng):
    subtasks = st.get("subtasks", {})
    mine = sorted(k for k, v in subtasks.items() if v["status"] == "in_progress" and v.get("worker") == agent)
    if mine:
        return mine[0]
    pending = sorted(k for k, v in subtasks.items() if v["status"] == "pending")
    return rng.choice(pending) if pending else None


def run(dsn, schema, task, agent, timeout, work_delay=0.0):
    ws = Workspace(dsn, schema, agent)
    rng = random.Random(agent)
    deadline = time.monotonic() + timeout
    ws.wait_state(task, lambda s: s.get("plan_status") == "approved" or s.get("status") in FINISHED, timeout)
    done = []
    while time.monotonic() < deadline:
        st = ws.state(task)
        if st["status"] in FINISHED:
            break
        target = pick(st, agent, rng)
        if target is None:
            if all(v["status"] in ("completed", "failed") for v in st.get("subtasks", {}).values()):
                break
            time.sleep(0.02)
            continue
        if st["subtasks"][target]["status"] != "in_progress" and not ws.claim(task, target, timeout):
            continue  # another worker won the claim
        time.sleep(work_delay)
        refused = ws.done(task, target, {"summary": "done by %s" % agent}, timeout)
        if refused:
            print("%s: done for %s refused: %s" % (agent, target, refused), file=sys.stderr)
            continue
        done.append(target)
    print("%s finished %s" % (agent, " ".join(sorted(done)) or "nothing"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", required=True, help="a libpq connection string or postgresql:// URL")
    ap.add_argument("--schema", default="workspaced")
    ap.add_argument("--task", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--work-delay", type=float, default=0.0)
    a = ap.parse_args()
    return run(a.dsn, a.schema, a.task, a.agent, a.timeout, a.work_delay)


if __name__ == "__main__":
    sys.exit(main())
