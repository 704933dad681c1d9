#!/usr/bin/env python3
"""The ARC-AGI walkthrough of env data, played by two Python agents.

The solver loads a puzzle and stores it once; the observer, delegated to
with a message about intent only, reads the skills about grids, lists the
env data, reads the grid and stores the patterns it sees; the solver reads
them back.

    python3 arc_walkthrough.py --root WORKSPACE --task TASK_ID [--role solver|observer|both]
"""

import argparse
import sys

from workspace_agent import Workspace

PUZZLE = {
    "task_id": "training-001",
    "train": [
        {"input": [[0, 1, 2], [3, 4, 5], [6, 7, 8]], "output": [[8, 7, 6], [5, 4, 3], [2, 1, 0]]},
    ],
    "test": {"input": [[1, 0, 0], [0, 2, 0], [0, 0, 3]]},
}


def solver_store(root, task):
    ws = Workspace(root, "solver")
    ws.store_env(task, "arc_task",
                 "The current ARC-AGI puzzle: task training-001, one 3x3 training pair and a 3x3 test input.",
                 PUZZLE)
    print("solver: stored arc_task")


def observer(root, task):
    ws = Workspace(root, "observer")
    # The skills about grids teach how to look; a broken skill file is
    # listed as refused, never fatal.
    skills, refused = ws.skills()
    for s in skills:
        if "grids" in s["tags"]:
            print("observer: skill %s: %s" % (s["name"], s["description"]))
    for r in refused:
        print("observer: skipped %s (%s)" % (r["file"], r["reason"]))
    manifest = ws.list_env(task)
    print("observer: env data:", ", ".join("%s (%s)" % (m["key"], m["short_description"]) for m in manifest))
    puzzle = ws.get_env(task, "arc_task")
    pair = puzzle["train"][0]
    flat_in = [c for row in pair["input"] for c in row]
    flat_out = [c for row in pair["output"] for c in row]
    patterns = []
    if flat_out == list(reversed(flat_in)):
        patterns.append("rotation_180")
    if sorted(flat_in) == sorted(flat_out):
        patterns.append("colour_preserving")
    ws.store_env(task, "observed_patterns",
                 "Patterns the observer found in arc_task: %s." % ", ".join(patterns), patterns)
    print("observer: stored observed_patterns =", patterns)


def solver_read(root, task):
    ws = Workspace(root, "solver")
    patterns = ws.get_env(task, "observed_patterns")
    grid = ws.get_env(task, "arc_task")["test"]["input"]
    answer = [list(reversed(row)) for row in reversed(grid)] if "rotation_180" in patterns else grid
    ws.store_env(task, "solution_attempts", "One attempt: the test grid rotated 180 degrees.",
                 [{"rule": patterns, "output": answer}])
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
