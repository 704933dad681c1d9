"""Events, context and preamble on every way in."""

from __future__ import annotations

import pytest

import workspaced
from conftest import Way


def test_events_page_and_follow(way: Way, planner: workspaced.Workspace) -> None:
    t = way.approved(planner, ["s1"])
    page = planner.events(t)
    names = [e.event for e in page.events]
    assert "plan_ready" in names and "plan_approved" in names and page.next > 0
    assert all(e.task_id == t and e.end > e.start for e in page.events)
    again = planner.events(t, after=page.next)
    assert [e.event for e in again.events] == []
    assert way.connect("w1").claim(t, "s1", wait=30).won
    seen = []
    for ev in planner.follow(t, after=page.next, timeout=1.0):
        seen.append(ev)
        if ev.event == "work_assigned":
            break
    assert seen and seen[-1].event == "work_assigned" and "w1" in seen[-1].args
    first = planner.events(t, limit=1)
    assert len(first.events) == 1 and first.next == first.events[0].end


def test_context_and_preamble(way: Way, planner: workspaced.Workspace) -> None:
    t = way.new_task(planner)
    ctx = planner.context(t, budget=4000)
    assert isinstance(ctx, dict) and ctx
    pre = planner.preamble(t)
    assert isinstance(pre.get("text"), str) and pre["agent"] == "coordinator"  # the root thread's addressee
    with pytest.raises(workspaced.NotFound):
        planner.context("no_such_thread_here")
