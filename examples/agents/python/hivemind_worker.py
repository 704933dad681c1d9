#!/usr/bin/env python3
"""A Hivemind worker on the workspaced package: claim subtasks, write
outputs, report them done, and let the daemon keep the state true.

    python3 hivemind_worker.py --root ROOT --task TASK_ID --agent worker_py [--timeout 60] [--work-delay 0.1]

ROOT is any way in the package takes: a directory, sqlite:PATH,
postgres://...?schema=NAME (psycopg 3), or http(s)://... with --token-file
(the agent is then the token's). It waits until the plan is approved, then
loops: pick a pending subtask from the state, claim it and wait for the
daemon's verdict; if it won, do the work and write the output with done,
waiting for that verdict too. It stops when nothing is left to claim, and
prints the subtasks it finished.
"""

import argparse
import random
import sys
import time

import workspaced

FINISHED = ("completed", "failed", "cancelled")


def pick(st, agent, rng):
    """A subtask the state gives this agent already (a claim that won
    late), else a pending one at random, so workers rarely race for the
    same; None when there is nothing to take."""
    subtasks = st.get("subtasks", {})
    mine = sorted(k for k, v in subtasks.items() if v["status"] == "in_progress" and v.get("worker") == agent)
    if mine:
        return mine[0]
    pending = sorted(k for k, v in subtasks.items() if v["status"] == "pending")
    return rng.choice(pending) if pending else None


def run(ws, task, timeout, work_delay):
    rng = random.Random(ws.agent)
    deadline = time.monotonic() + timeout
    ws.wait_state(task, lambda s: s.get("plan_status") == "approved" or s["status"] in FINISHED, timeout=timeout)
    done = []
    while time.monotonic() < deadline:
        st = ws.state(task)
        if st["status"] in FINISHED:
            break
        target = pick(st, ws.agent, rng)
        if target is None:
            if all(v["status"] in ("completed", "failed") for v in st.get("subtasks", {}).values()):
                break
            time.sleep(0.02)
            continue
        try:
            if st["subtasks"][target]["status"] != "in_progress" and not ws.claim(task, target, wait=timeout).won:
                continue  # another worker's claim came first
            time.sleep(work_delay)  # the "work"
            output = {"status": "completed", "summary": "done by %s" % ws.agent,
                      "decisions": ["%s handled %s" % (ws.agent, target)]}
            d = ws.write_output(task, target, output, done=True, wait=timeout)
        except workspaced.Conflict:
            continue  # the task finished meanwhile: the next look ends the loop
        if not d.applied:
            print("%s: done for %s refused: %s" % (ws.agent, target, d.verdict and d.verdict.reason), file=sys.stderr)
            continue
        done.append(target)
    print("%s finished %s" % (ws.agent, " ".join(done) or "nothing"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--agent", help="who acts (over HTTP, the token's agent)")
    ap.add_argument("--token-file", help="the bearer token, for an http(s) root")
    ap.add_argument("--timeout", type=float, default=60.0, help="give up after this many seconds")
    ap.add_argument("--work-delay", type=float, default=0.0, help="seconds of simulated work per subtask")
    a = ap.parse_args()
    token = open(a.token_file).read().strip() if a.token_file else None
    with workspaced.connect(a.root, agent=a.agent, token=token, task=a.task) as ws:
        return run(ws, a.task, a.timeout, a.work_delay)


if __name__ == "__main__":
    sys.exit(main())
