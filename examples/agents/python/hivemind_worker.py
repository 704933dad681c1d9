#!/usr/bin/env python3
"""A Hivemind worker in plain Python: claim subtasks, write outputs, drop
done markers, and let the daemon keep state.json true.

    python3 hivemind_worker.py --root WORKSPACE --task TASK_ID --agent worker_py [--timeout 60] [--work-delay 0.1]

It waits until the plan is approved, then loops: pick a pending subtask from
state.json, drop a claim marker and wait for the daemon's verdict on it; if
it won, do the work, write outputs/<id>.json and drop a done marker, waiting
for its verdict too. It stops when nothing is left to claim, and prints the
subtasks it finished.
"""

import argparse
import random
import sys
import time

from workspace_agent import Conflict, Workspace


def work(ws, task, st_id, delay):
    # The "work": a deterministic product other agents can check, after a
    # simulated delay.
    time.sleep(delay)
    return {"summary": "done by %s" % ws.agent, "decisions": ["%s handled %s" % (ws.agent, st_id)]}


FINISHED = ("completed", "failed", "cancelled")


def pick(st, agent, rng):
    """A subtask the state already gives this agent (a claim that won
    late), else a pending one at random so workers rarely race for the
    same; None when there is nothing to take."""
    subtasks = st.get("subtasks", {})
    mine = sorted(k for k, v in subtasks.items() if v["status"] == "in_progress" and v.get("worker") == agent)
    if mine:
        return mine[0]
    pending = sorted(k for k, v in subtasks.items() if v["status"] == "pending")
    return rng.choice(pending) if pending else None


def run(root, task, agent, timeout, work_delay=0.0):
    ws = Workspace(root, agent)
    rng = random.Random(agent)
    deadline = time.monotonic() + timeout
    ws.wait_state(task, lambda s: s.get("plan_status") == "approved" or s.get("status") in FINISHED, timeout=timeout)
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
        mine = st["subtasks"][target]
        try:
            if mine["status"] != "in_progress":
                # The daemon takes the first valid claim and refuses the
                # others; the verdict says which this one was.
                v = ws.claim(task, target, wait=timeout)
                if v["verdict"] != "won":
                    continue  # another worker won the claim
            out = ws.write_output(task, target, work(ws, task, target, work_delay))
            v = ws.done(task, out, subtask=target, wait=timeout)
        except Conflict:
            continue  # the task finished meanwhile: the loop's next look ends it
        if v["verdict"] != "applied":
            print("%s: done for %s refused: %s" % (agent, target, v["reason"]), file=sys.stderr)
            continue
        done.append(target)
    print("%s finished %s" % (agent, " ".join(done) or "nothing"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--timeout", type=float, default=60.0, help="give up after this many seconds")
    ap.add_argument("--work-delay", type=float, default=0.0, help="seconds of simulated work per subtask")
    a = ap.parse_args()
    return run(a.root, a.task, a.agent, a.timeout, a.work_delay)


if __name__ == "__main__":
    sys.exit(main())
