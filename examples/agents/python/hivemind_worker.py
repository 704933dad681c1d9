#!/usr/bin/env python3
"""A Hivemind worker in plain Python: claim subtasks, write outputs, drop
done markers, and let the daemon keep state.json true.

    python3 hivemind_worker.py --root WORKSPACE --task TASK_ID --agent worker_py [--timeout 60]

It waits until the plan is approved, then loops: pick a pending subtask from
state.json, drop a claim marker, wait for the daemon to say who won, and if
it did, do the work, write outputs/<id>.json and drop a done marker. It stops
when nothing is left to claim.
"""

import argparse
import sys
import time

from workspace_agent import Workspace


def work(ws, task, st_id):
    # The "work": a deterministic product other agents can check.
    return {"summary": "done by %s" % ws.agent, "decisions": ["%s handled %s" % (ws.agent, st_id)]}


def run(root, task, agent, timeout):
    ws = Workspace(root, agent)
    deadline = time.monotonic() + timeout
    ws.wait_state(task, lambda s: s.get("plan_status") == "approved" or s.get("status") in ("completed", "failed", "cancelled"),
                  timeout=timeout)
    done = []
    while time.monotonic() < deadline:
        st = ws.state(task)
        if st["status"] in ("completed", "failed", "cancelled"):
            break
        subtasks = st.get("subtasks", {})
        pending = sorted(k for k, v in subtasks.items() if v["status"] == "pending")
        if not pending:
            if all(v["status"] in ("completed", "failed") for v in subtasks.values()):
                break
            time.sleep(0.02)
            continue
        target = pending[0]
        ws.claim(task, target)
        st = ws.wait_state(task, lambda s: s["subtasks"][target]["status"] != "pending"
                           or s["status"] != "executing", timeout=timeout)
        mine = st["subtasks"][target]
        if mine["status"] != "in_progress" or mine.get("worker") != agent:
            continue  # another worker won the claim
        out = ws.write_output(task, target, work(ws, task, target))
        ws.done(task, out, subtask=target)
        ws.wait_state(task, lambda s: s["subtasks"][target]["status"] != "in_progress", timeout=timeout)
        done.append(target)
    print("%s finished %s" % (agent, " ".join(done) or "nothing"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--timeout", type=float, default=60.0)
    a = ap.parse_args()
    return run(a.root, a.task, a.agent, a.timeout)


if __name__ == "__main__":
    sys.exit(main())
