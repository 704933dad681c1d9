#!/usr/bin/env python3
"""The ARC-AGI walkthrough of env data, played by two agents on the
workspaced package.

The solver loads a puzzle and stores it once; the observer, delegated to
with a message about intent only, lists the env data, reads the grid and
stores the patterns it sees; the solver reads them back.

    python3 arc_walkthrough.py --root ROOT --task TASK_ID [--role solver|observer|solver-read|both]
"""

import argparse
import sys

import workspaced

PUZZLE = {
    "task_id": "training-001",
    "train": [
        {"input": [[0, 1, 2], [3, 4, 5], [6, 7, 8]], "output": [[8, 7, 6], [5, 4, 3], [2, 1, 0]]},
    ],
    "test": {"input": [[1, 0, 0], [0, 2, 0], [0, 0, 3]]},
}


def solver_store(root, task):
    with workspaced.connect(root, agent="solver", task=task) as ws:
        ws.env.put("arc_task", PUZZLE,
                   "The current ARC-AGI puzzle: task training-001, one 3x3 training pair and a 3x3 test input.")
    print("solver: stored arc_task")


def observer(root, task):
    with workspaced.connect(root, agent="observer", task=task) as ws:
        print("observer: env data:", ", ".join("%s (%s)" % (e.key, e.short_description) for e in ws.env.list()))
        pair = ws.env.get("arc_task").value["train"][0]
        flat_in = [c for row in pair["input"] for c in row]
        flat_out = [c for row in pair["output"] for c in row]
        patterns = []
        if flat_out == list(reversed(flat_in)):
            patterns.append("rotation_180")
        if sorted(flat_in) == sorted(flat_out):
            patterns.append("colour_preserving")
        ws.env.put("observed_patterns", patterns, "Patterns the observer found in arc_task: %s." % ", ".join(patterns))
    print("observer: stored observed_patterns =", patterns)


def solver_read(root, task):
    with workspaced.connect(root, agent="solver", task=task) as ws:
        patterns = ws.env.get("observed_patterns").value
        grid = ws.env.get("arc_task").value["test"]["input"]
        answer = [list(reversed(row)) for row in reversed(grid)] if "rotation_180" in patterns else grid
        ws.env.put("solution_attempts", [{"rule": patterns, "output": answer}],
                   "One attempt: the test grid rotated 180 degrees.")
    print("solver: answer", answer)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--role", choices=["solver", "observer", "solver-read", "both"], default="both")
    a = ap.parse_args()
    if a.role in ("solver", "both"):
        solver_store(a.root, a.task)
    if a.role in ("observer", "both"):
        observer(a.root, a.task)
    if a.role in ("solver-read", "both"):
        solver_read(a.root, a.task)
    return 0


if __name__ == "__main__":
    sys.exit(main())
