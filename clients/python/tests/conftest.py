"""The ways in the suite runs on, each a real daemon started by the Go
test (clients/client_py_test.go):

    WORKSPACED_PY_ROOTS   {"files": DIR, "sqlite": "sqlite:PATH", "postgres": URL, "http": URL}
    WORKSPACED_PY_TOKENS  {"planner": TOKEN, ...}: the HTTP listener's agents
    WORKSPACED_BIN        the workspaced binary (context and preamble off HTTP)
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

import workspaced

ROOTS: dict[str, str] = json.loads(os.environ.get("WORKSPACED_PY_ROOTS") or "{}")
TOKENS: dict[str, str] = json.loads(os.environ.get("WORKSPACED_PY_TOKENS") or "{}")
AGENTS = ("planner", "reviewer", "w1", "w2")
_n = itertools.count()


@dataclass
class Way:
    """One way in: its kind, root, and a connection per agent."""

    kind: str
    root: str
    opened: list[workspaced.Workspace] = field(default_factory=list)

    def connect(self, agent: str, task: str | None = None) -> workspaced.Workspace:
        if self.kind == "http":
            ws = workspaced.connect(self.root, token=TOKENS[agent], task=task)
        else:
            ws = workspaced.connect(self.root, agent=agent, task=task)
        self.opened.append(ws)
        return ws

    def new_task(self, ws: workspaced.Workspace) -> str:
        t = "py%d-%d-%d" % (os.getpid(), int(time.time() * 1000) % 10**8, next(_n))
        ws.create_task(t, "a task of the Python suite")
        return t

    def approved(self, ws: workspaced.Workspace, subtasks: list[str]) -> str:
        """A new task whose plan of subtasks is approved."""
        t = self.new_task(ws)
        d = ws.write_plan(t, {"summary": "steps", "subtasks": [{"id": s, "description": "do " + s} for s in subtasks]},
                          propose=True, wait=30).check()
        assert d.verdict is not None and d.verdict.verdict == "applied"
        r = self.connect("reviewer").write_review(t, "plan_review_1", {"type": "plan_review", "verdict": "approved"},
                                                  done=True, wait=30).check()
        assert r.applied
        return t


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "way" in metafunc.fixturenames:
        kinds = sorted(ROOTS) or ["none"]
        metafunc.parametrize("way", kinds, indirect=True)


@pytest.fixture
def way(request: pytest.FixtureRequest) -> Iterator[Way]:
    kind = str(request.param)
    if kind == "none":
        pytest.skip("no workspace to run on: $WORKSPACED_PY_ROOTS is unset "
                    "(go test ./clients -run TestPythonClient starts the daemons and sets it)")
    w = Way(kind, ROOTS[kind])
    yield w
    for ws in w.opened:
        ws.close()


@pytest.fixture
def planner(way: Way) -> workspaced.Workspace:
    return way.connect("planner")


Connect = Callable[[str], workspaced.Workspace]
