"""A plan write after approval is refused before anything is written, on
every way in, and no write racing the approval replaces the approved plan."""

from __future__ import annotations

import threading
import time

import pytest

import workspaced
from conftest import Way

APPROVED = "is approved, and an approved plan is never replaced; nothing was written"


@pytest.mark.parametrize("propose", [False, True])
def test_plan_write_after_approval_refused(way: Way, planner: workspaced.Workspace, propose: bool) -> None:
    t = way.approved(planner, ["s1", "s2"])
    before = planner.plan(t)
    with pytest.raises(workspaced.Conflict) as e:
        planner.write_plan(t, {"subtasks": [{"id": "s9", "description": "other"}]}, propose=propose,
                           wait=30 if propose else None)
    assert APPROVED in e.value.detail and "plan_%s v1 of task %s" % (t, t) in e.value.detail
    assert e.value.hint.startswith("amend the running plan instead")
    assert planner.plan(t) == before
    with pytest.raises(workspaced.NotFound):
        planner.plan(t, version=2)


def test_plan_writes_racing_the_approval(way: Way, planner: workspaced.Workspace) -> None:
    t = way.new_task(planner)
    planner.write_plan(t, {"subtasks": [{"id": "s1", "description": "do s1"}]}, propose=True, wait=30).check()
    reviewer = way.connect("reviewer")
    reviewer.write_review(t, "plan_review_1", {"type": "plan_review", "verdict": "approved"})
    seen = threading.Event()
    failures: list[str] = []

    def write(n: int) -> None:
        ws = way.connect("planner")
        deadline = time.monotonic() + 120
        i = 0
        while time.monotonic() < deadline:
            i += 1
            after = seen.is_set()
            try:
                ws.write_plan(t, {"subtasks": [{"id": "w%d_%d" % (n, i), "description": "x"}]})
            except workspaced.Conflict as e:
                if APPROVED not in e.detail:
                    failures.append("writer %d: %s" % (n, e))
                return
            except workspaced.WorkspacedError as e:
                failures.append("writer %d: %s" % (n, e))
                return
            if after:
                failures.append("writer %d: a plan write that started after the approval was seen succeeded" % n)
                return
        failures.append("writer %d: %d plan writes in 120 s and none refused" % (n, i))

    writers = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    for w in writers:
        w.start()
    try:
        reviewer.done(t, "reviews/plan_review_1.json", wait=30).check()
        planner.wait_state(t, lambda s: s["plan_status"] == "approved", timeout=30)
        seen.set()
        approved = planner.plan(t)
    finally:
        seen.set()
        for w in writers:
            w.join(timeout=150)
    assert not failures, failures
    with pytest.raises(workspaced.Conflict):
        planner.write_plan(t, {"subtasks": [{"id": "s9", "description": "other"}]})
    assert planner.plan(t) == approved
