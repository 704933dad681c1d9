"""One Python agent process of `workspaced bench`.

It drops done markers with the example module's own Workspace.done (an
atomic write: temporary dot-file, fsync, os.replace, directory fsync), as
any Python agent built on examples/agents/python does, and speaks the
harness's protocol on stdin and stdout (see bench.AgentMain):

  now <subtask>  drop that subtask's done marker
  <subtask>      hold it, to be dropped at "go"
  sync           answer "prepared"
  go             drop every held marker back to back
  report         print "<subtask> <unix ns just before its rename>" for
                 each marker dropped since the last report

The module writes a marker in one call, so a held marker is written whole
at "go" (its temporary file and fsync included). Its rename is stamped by
wrapping os.replace, which the module calls once a marker.

Usage: python3 python_agent.py ROOT TASK AGENT
"""

import os
import signal
import sys
import time

from workspace_agent import Workspace


def main():
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # an interrupt ends it quietly
    root, task, agent = sys.argv[1:4]
    ws = Workspace(root, agent)
    ws.task_dir(task)  # fails now, not at the first marker, if it is missing

    renamed = [0]
    replace = os.replace

    def stamped_replace(src, dst):
        renamed[0] = time.time_ns()
        return replace(src, dst)

    os.replace = stamped_replace

    stamps = []

    def drop(sub):
        ws.done(task, "outputs/%s.json" % sub, subtask=sub)
        stamps.append("%s %d\n" % (sub, renamed[0]))

    out = sys.stdout
    out.write("ready\n")
    out.flush()
    held = []
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        line = line.strip()
        if not line:
            continue
        if line == "sync":
            out.write("prepared\n")
            out.flush()
        elif line == "report":
            out.write("".join(stamps))
            out.flush()
            del stamps[:]
        elif line == "go":
            for sub in held:
                drop(sub)
            held = []
        elif line.startswith("now "):
            drop(line[4:])
        else:
            held.append(line)


if __name__ == "__main__":
    main()
