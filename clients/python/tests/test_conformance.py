"""The conformance corpus on every way in.

Every case of conformance/cases/*.json (the format: conformance/README.md)
runs on each way in the suite is given (conftest.py: a directory,
sqlite:PATH, postgres://, the HTTP API), each served by a real daemon, as
`go test ./conformance/` runs them on the Go stores. A case added there
runs here too. A step the package cannot say (an operation it has not, a
value that is not one JSON document) is skipped with a reason naming it,
never silently: a step expected to fail is left out and the case goes on;
one expected to succeed ends the case there, since the next steps build on
it.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import secrets
import time
from pathlib import Path
from typing import Any

import pytest

import workspaced
from conftest import Way

CASES = Path(__file__).resolve().parents[3] / "conformance" / "cases"
DEFAULT_AGENT = "coordinator"
VERDICT_WAIT = 60.0
EVENTUALLY = 30.0
PLACEHOLDER = re.compile(r"^\$[a-z][a-z0-9_]*$")
ANY = "<any>"
INCLUDES = "<includes>"


SQL = ("sqlite", "postgres")

# Where the package does not (yet) mean what the Go stores mean: (case,
# step) -> (the ways in, the divergence). Such a step that fails skips the
# rest of its case with the divergence as the reason, so it is reported on
# every run; one that passes is no longer a divergence, and its line goes.
KNOWN: dict[tuple[str, int], tuple[tuple[str, ...], str]] = {
    ("events-fresh-task", 1): (("sqlite",), "op events.list: a task the package creates in SQLite has no task_created "
                                            "event (only workspaced writes events there)"),
    ("events-order", 6): (("sqlite",), "op events.list: a task the package creates in SQLite has no task_created "
                                       "event (only workspaced writes events there)"),
}


class Unsayable(Exception):
    """A step the package has no way to say; its message names what."""


def load_cases() -> list[dict[str, Any]]:
    cases = []
    for path in sorted(CASES.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        case["file"] = path.name
        cases.append(case)
    return cases


def fill(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's steps with every placeholder a fresh id (name_ and eight
    hex digits), the same throughout one run of the case."""
    ids: dict[str, str] = {}

    def walk(v: Any) -> Any:
        if isinstance(v, str) and PLACEHOLDER.match(v):
            if v not in ids:
                ids[v] = v[1:] + "_" + secrets.token_hex(4)
            return ids[v]
        if isinstance(v, list):
            return [walk(e) for e in v]
        if isinstance(v, dict):
            return {k: walk(e) for k, e in v.items()}
        return v

    steps = []
    for s in case["steps"]:
        s = dict(s)
        s["args"] = walk(s.get("args") or {})
        if "expect" in s:
            s["expect"] = walk(s["expect"])
        steps.append(s)
    return steps


def match(want: Any, actual: Any, path: str = "") -> str:
    """Where actual differs from want, as the README says ("" when not)."""
    at = path or "the result"
    if want is None:
        return "" if actual is None else "%s: want null or missing, got %r" % (at, actual)
    if want == ANY:
        return "" if actual is not None else "%s: want a value, got null or nothing" % at
    if isinstance(want, dict) and list(want) == [INCLUDES]:
        if not isinstance(actual, list):
            return "%s: want an array including %r, got %r" % (at, want[INCLUDES], actual)
        i = 0
        for e in actual:
            if i < len(want[INCLUDES]) and not match(want[INCLUDES][i], e, path):
                i += 1
        if i < len(want[INCLUDES]):
            return "%s: want an array including, in order, %r; %r is not in %r" % (at, want[INCLUDES], want[INCLUDES][i], actual)
        return ""
    if isinstance(want, dict):
        if not isinstance(actual, dict):
            return "%s: want an object, got %r" % (at, actual)
        for k in sorted(want):
            d = match(want[k], actual.get(k), path + "." + k)
            if d:
                return d
        return ""
    if isinstance(want, list):
        if not isinstance(actual, list) or len(actual) != len(want):
            return "%s: want %d elements %r, got %r" % (at, len(want), want, actual)
        for i, (w, a) in enumerate(zip(want, actual)):
            d = match(w, a, "%s[%d]" % (path, i))
            if d:
                return d
        return ""
    if isinstance(want, bool) or isinstance(actual, bool):
        return "" if want is actual else "%s: want %r, got %r" % (at, want, actual)
    if isinstance(want, (int, float)) and isinstance(actual, (int, float)):
        return "" if want == actual else "%s: want %r, got %r" % (at, want, actual)
    return "" if want == actual and type(want) is type(actual) else "%s: want %r, got %r" % (at, want, actual)


def plain(v: Any) -> Any:
    """A result as the JSON the HTTP API answers with: dataclasses as
    objects, tuples as arrays."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, (list, tuple)):
        return [plain(e) for e in v]
    if isinstance(v, dict):
        return {k: plain(e) for k, e in v.items()}
    return v


class Args:
    """A step's arguments, read as the README says."""

    def __init__(self, args: dict[str, Any]) -> None:
        self.m = args

    def has(self, name: str) -> bool:
        return name in self.m or name + "_b64" in self.m

    def text(self, name: str) -> str:
        if name + "_b64" in self.m:
            return base64.b64decode(self.m[name + "_b64"]).decode("utf-8", "surrogateescape")
        return str(self.m.get(name, ""))

    def opt(self, name: str) -> Any:
        return self.m.get(name)

    def value(self) -> Any:
        if "value_raw" in self.m:
            return workspaced.RawJSON(str(self.m["value_raw"]))
        if "value_b64" in self.m:
            return workspaced.RawJSON(base64.b64decode(self.m["value_b64"]))
        if "value_string_bytes" in self.m:
            return "x" * int(self.m["value_string_bytes"])
        if "value_nested" in self.m:
            v: list[Any] = []
            for _ in range(int(self.m["value_nested"]) - 1):
                v = [v]
            return v
        return self.m.get("value")


def entries(ws: workspaced.Workspace, family: str, a: Args) -> workspaced.Entries:
    if family == "env":
        return ws.env_of(a.text("task"))
    if family == "session":
        return ws.session(a.text("thread"), a.text("task"))
    scope = a.text("scope")
    if scope == "global":
        return ws.global_memory
    if scope == "agent":
        return ws.agent_memory
    raise AssertionError("memory scope %r: the corpus has global and agent" % scope)


def do(ws: workspaced.Workspace, op: str, a: Args) -> Any:
    """One step's operation on ws; its result as JSON."""
    task = a.text("task")
    family, _, verb = op.partition(".")
    if family in ("env", "session") or (family == "memory" and verb in ("put", "get", "list", "delete")):
        e = entries(ws, family, a)
        if verb == "put":
            desc = a.text("short_description") if a.has("short_description") else None
            return e.put(a.text("key"), a.value(), desc, if_version=a.opt("if_version"),
                         if_absent=bool(a.opt("if_absent")))
        if verb == "get":
            return e.get(a.text("key"))
        if verb == "list":
            return {"entries": e.list()}
        if verb == "delete":
            e.delete(a.text("key"), if_version=a.opt("if_version"))
            return {}
    if op == "memory.item.put":
        return ws.memory.put(a.m["namespace"], a.text("key"), a.value(), ttl_seconds=a.opt("ttl_seconds"),
                             if_version=a.opt("if_version"), if_absent=bool(a.opt("if_absent")))
    if op == "memory.item.get":
        return ws.memory.get(a.m["namespace"], a.text("key"))
    if op == "memory.item.delete":
        ws.memory.delete(a.m["namespace"], a.text("key"), if_version=a.opt("if_version"))
        return {}
    if op == "memory.search":
        return {"items": ws.memory.search(a.m.get("namespace_prefix", []), filter=a.opt("filter"),
                                          limit=a.opt("limit") or 10, offset=a.opt("offset") or 0)}
    if op == "memory.namespaces":
        return {"namespaces": ws.memory.namespaces(a.m.get("prefix", []), suffix=a.m.get("suffix", []),
                                                   max_depth=a.opt("max_depth"), limit=a.opt("limit") or 100,
                                                   offset=a.opt("offset") or 0)}
    if op == "task.create":
        return ws.create_task(a.text("id"), a.text("description"))
    if op == "task.show":
        return {"task": ws.get_task(task), "state": ws.state(task)}
    if op == "plan.write":
        propose = bool(a.opt("propose"))
        return ws.write_plan(task, a.m["document"], propose=propose, wait=VERDICT_WAIT if propose else None)
    if op == "plan.show":
        return ws.plan(task, version=a.opt("version"))
    if op == "thread.create":
        fields = {"message": a.text("message")} if a.has("message") else {}
        return ws.create_thread(task, a.text("id"), a.text("to"), **fields)
    if op == "output.write":
        done = bool(a.opt("done"))
        return ws.write_output(task, a.text("subtask"), a.m["document"], done=done, wait=VERDICT_WAIT if done else None)
    if op == "review.write":
        done = bool(a.opt("done"))
        return ws.write_review(task, a.text("review"), a.m["document"], done=done, wait=VERDICT_WAIT if done else None)
    if op == "claim":
        return ws.claim(task, a.text("subtask"), wait=VERDICT_WAIT)
    if op == "done":
        return ws.done(task, a.opt("output_file"), subtask=a.opt("subtask"), status=a.opt("status") or "completed",
                       error=a.opt("error"), wait=VERDICT_WAIT)
    if op == "events.list":
        return {"events": ws.events(task, after=0, limit=1000).events}
    raise Unsayable("op %s: the package has no such operation" % op)


def judge(step: dict[str, Any], run: Any) -> str:
    """Run the step (run() gives its result or raises) and say how its
    answer differs from what the step expects; "" when it does not."""
    expect = step.get("expect") or {}
    try:
        res = plain(run())
    except workspaced.WorkspacedError as err:
        if "error" not in expect:
            return "want success, got error %s: %s" % (err.kind, err)
        if err.kind != expect["error"]:
            return "want error %s, got %s: %s" % (expect["error"], err.kind, err)
        cur = expect.get("current_version")
        if cur is not None and getattr(err, "current_version", None) != cur:
            return "want a version conflict at current version %d, got %r" % (cur, getattr(err, "current_version", None))
        return ""
    if "error" in expect:
        return "want error %s, got result %r" % (expect["error"], res)
    if "verdict" in step:
        d = match({"verdict": {"verdict": step["verdict"]}}, res)
        if d:
            return "the daemon's verdict: " + d
    if "result" in expect:
        return match(expect["result"], res)
    return ""


def case_id(case: dict[str, Any]) -> str:
    return str(case["name"])


@pytest.mark.parametrize("case", load_cases(), ids=case_id)
def test_conformance(way: Way, case: dict[str, Any]) -> None:
    wss: dict[str, workspaced.Workspace] = {}
    skipped: list[str] = []
    for i, step in enumerate(fill(case)):
        where = "%s step %d (%s)" % (case["file"], i, step["op"])
        agent = step.get("agent", DEFAULT_AGENT)
        if agent not in wss:
            wss[agent] = way.connect(agent)
        ws, a = wss[agent], Args(step["args"])

        def run() -> Any:
            return do(ws, step["op"], a)

        ways, divergence = KNOWN.get((case["name"], i), ((), ""))
        try:
            msg = judge(step, run)
            deadline = time.monotonic() + EVENTUALLY
            while msg and step.get("eventually") and time.monotonic() < deadline:
                time.sleep(0.02)
                msg = judge(step, run)
        except Unsayable as why:
            if "error" not in (step.get("expect") or {}):
                pytest.skip("conformance: %s: %s; the case's later steps build on it" % (where, why))
            skipped.append("%s: %s" % (where, why))
            continue
        except Exception as err:
            if way.kind not in ways:
                raise
            msg = "%s: %s" % (type(err).__name__, err)
        if msg and way.kind in ways:
            pytest.skip("conformance: %s on %s: a known divergence: %s" % (where, way.kind, divergence))
        assert not msg, "%s: %s\n(%s)" % (where, msg, case["doc"])
    if skipped:
        pytest.skip("conformance: the case passed but for " + "; ".join(skipped))
