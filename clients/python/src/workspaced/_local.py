"""What the ways in that reach the store themselves (a directory, SQLite,
PostgreSQL) share: markers and the wait for their verdict, products with
a done marker, and context and preamble through the workspaced binary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from abc import abstractmethod
from typing import Any

from ._backend import Backend
from ._common import FINISHED, check_id, check_output_file, now, output_doc, plan_doc, review_doc
from .errors import Conflict, Invalid, NotFound, NotServing, Unsupported, WorkspacedError, from_problem
from .types import Delivery, Verdict

MAX_WAIT = 300.0


class LocalBackend(Backend):
    """The flows of markers and products over a store's primitives."""

    # primitives of each store
    @abstractmethod
    def _drop(self, task: str, kind: str, body: dict[str, Any]) -> str:
        """Drop a marker of kind (claim, done) and return its name."""

    @abstractmethod
    def _verdict(self, task: str, marker: str, after: int) -> Verdict | None:
        """The verdict on marker, or None while undecided."""

    @abstractmethod
    def _serving(self) -> bool:
        """Whether a daemon serves the store now."""

    @abstractmethod
    def _write_product(self, task: str, path: str, doc: dict[str, Any], final_subtask: str | None) -> int:
        """Write a product (plan.json, outputs/<id>.json, reviews/<id>.json),
        keeping the version it replaces; an output of a completed subtask is
        final (Conflict), and so is a plan once approved. A plan gets the
        version after the current one, read in the same hold of the task;
        that version is returned (0 for any other product)."""

    @abstractmethod
    def _plan_version(self, task: str) -> int:
        """The version of the current plan, 0 without one."""

    def _where(self) -> str:
        return self.root

    # ---- the flows --------------------------------------------------
    def _before_marker(self, task: str, wait: float | None) -> int:
        """With a wait, what makes it pointless: a finished task (Conflict) or
        no daemon (NotServing). Returns the journal_seq the marker's record
        follows."""
        if wait is not None and not 0 <= wait <= MAX_WAIT:
            raise Invalid("wait %r: a wait is 0 to %d seconds" % (wait, MAX_WAIT), "give a shorter wait", "wait")
        st = self.state(task)
        if st is None:
            self.task(task)
        elif st.get("status") in FINISHED:
            raise Conflict("task %s is %s: the daemon takes nothing more for it" % (task, st["status"]),
                           "start a new task for more work")
        if wait is None:
            return 0
        if not self._serving():
            raise NotServing("no daemon serves %s, so no verdict would come; nothing was dropped" % self._where(),
                             "start 'workspaced serve' for this workspace, or drop the marker without a wait")
        return int(st.get("journal_seq", 0)) if st else 0

    def _await(self, task: str, marker: str, after: int, wait: float | None, d: Delivery) -> Delivery:
        if wait is None:
            return d
        deadline = time.monotonic() + wait
        delay, probed = 0.001, time.monotonic()
        while True:
            v = self._verdict(task, marker, after)
            if v is not None:
                return Delivery(d.task_id, d.product, d.version, d.marker, "decided", v)
            t = time.monotonic()
            if t - probed >= 0.5:
                probed = t
                if not self._serving():
                    return Delivery(d.task_id, d.product, d.version, d.marker, "queued", None,
                                    "no daemon serves %s; the marker waits for one" % self._where())
            if t >= deadline:
                return Delivery(d.task_id, d.product, d.version, d.marker, "undecided", None,
                                "no verdict within %gs" % wait)
            time.sleep(min(delay, max(deadline - t, 0.0)))
            delay = min(delay * 2, 0.02)

    def claim(self, task: str, subtask: str, wait: float | None) -> Delivery:
        check_id("task id", task)
        check_id("subtask id", subtask)
        after = self._before_marker(task, wait)
        name = self._drop(task, "claim", {"agent_id": self.agent, "subtask_id": subtask, "claimed_at": now()})
        return self._await(task, name, after, wait, Delivery(task, marker=name))

    def done(self, task: str, output_file: str | None, subtask: str | None, status: str, error: str | None,
             wait: float | None) -> Delivery:
        check_id("task id", task)
        if status not in ("completed", "failed", "cancelled"):
            raise Invalid("status %r is not completed, failed or cancelled" % status, "give one of the three", "status")
        if status == "cancelled" and output_file:
            raise Invalid("a cancel names no output_file", "leave output_file out to cancel", "output_file")
        if status != "cancelled" and not output_file:
            raise Invalid("a done marker names its output_file", "give plan.json, outputs/<id>.json or reviews/<id>.json",
                          "output_file")
        if status == "failed" and not error:
            raise Invalid("a failure says why", "give error", "error")
        if output_file:
            check_output_file(output_file)
        if subtask is not None:
            check_id("subtask id", subtask)
        after = self._before_marker(task, wait)
        body: dict[str, Any] = {"agent_id": self.agent, "status": status, "completed_at": now()}
        if output_file:
            body["output_file"] = output_file
        if subtask:
            body["subtask_id"] = subtask
        if error:
            body["error"] = error
        name = self._drop(task, "done", body)
        return self._await(task, name, after, wait, Delivery(task, product=output_file or "", marker=name))

    def _deliver(self, task: str, path: str, doc: dict[str, Any], final: str | None, done: bool,
                 subtask: str | None, wait: float | None, version: int = 0) -> Delivery:
        after = self._before_marker(task, wait if done else None)
        version = self._write_product(task, path, doc, final) or version
        d = Delivery(task, product=path, version=version)
        if not done:
            return d
        body: dict[str, Any] = {"agent_id": self.agent, "status": "completed", "completed_at": now(), "output_file": path}
        if subtask:
            body["subtask_id"] = subtask
        name = self._drop(task, "done", body)
        return self._await(task, name, after, wait, Delivery(task, path, version, name))

    def write_output(self, task: str, subtask: str, output: dict[str, Any], done: bool,
                     wait: float | None) -> Delivery:
        check_id("task id", task)
        check_id("subtask id", subtask)
        doc = output_doc(subtask, self.agent, output)
        return self._deliver(task, "outputs/%s.json" % subtask, doc, subtask, done, subtask, wait)

    def write_review(self, task: str, review: str, doc: dict[str, Any], done: bool,
                     wait: float | None) -> Delivery:
        check_id("task id", task)
        check_id("review id", review)
        return self._deliver(task, "reviews/%s.json" % review, review_doc(review, self.agent, doc), None, done, None, wait)

    def write_plan(self, task: str, plan: dict[str, Any], propose: bool, wait: float | None) -> Delivery:
        check_id("task id", task)
        version = self._plan_version(task) + 1
        return self._deliver(task, "plan.json", plan_doc(task, self.agent, plan, version), None, propose, None, wait,
                             version)

    # ---- context and preamble: the binary assembles them --------------
    def _cli(self, args: list[str]) -> dict[str, Any]:
        exe = os.environ.get("WORKSPACED_BIN") or shutil.which("workspaced")
        if not exe:
            raise Unsupported("context and preamble are assembled by workspaced, which is not on PATH",
                              "install the workspaced binary (or set WORKSPACED_BIN), or connect over the HTTP API")
        # The root goes in the environment, not the arguments: a postgres://
        # URL may carry a password, which a process list would show.
        env = dict(os.environ, WORKSPACE_ROOT=self.root, WORKSPACED_AGENT=self.agent)
        p = subprocess.run([exe] + args + ["--json"], capture_output=True, env=env, timeout=120)
        if p.returncode != 0:
            text = p.stderr.decode("utf-8", "replace").strip()
            msg, _, hint = text.partition("\nhint: ")
            msg = msg.removeprefix("workspaced: ")
            kind = {3: "not_found", 2: "invalid"}.get(p.returncode, "internal")
            if kind == "internal":
                raise WorkspacedError(msg or "workspaced %s failed (exit %d)" % (args[0], p.returncode), hint)
            raise from_problem(400 if kind == "invalid" else 404, {"kind": kind, "detail": msg, "hint": hint})
        out = json.loads(p.stdout)
        if not isinstance(out, dict):
            raise NotFound("workspaced %s gave no document" % args[0])
        return out

    def context(self, thread: str, budget: int | None) -> dict[str, Any]:
        check_id("thread id", thread)
        args = ["context", "--thread", thread]
        if budget is not None:
            args += ["--budget", str(int(budget))]
        return self._cli(args)

    def preamble(self, thread: str, detail: str | None) -> dict[str, Any]:
        check_id("thread id", thread)
        args = ["preamble", "--thread", thread]
        if detail:
            args += ["--detail", detail]
        return self._cli(args)
