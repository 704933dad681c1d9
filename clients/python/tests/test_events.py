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
    # On PostgreSQL an event is readable once every older transaction in
    # the cluster has ended: the follow waits for it as long as it takes.
    for ev in planner.follow(t, after=page.next, timeout=30.0):
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


def test_follow_resumes_after_the_last_event(way: Way, planner: workspaced.Workspace) -> None:
    # Over HTTP follow reads the API's event stream: each event's position
    # is its id, and a follow opened again from one resumes right after it.
    t = way.approved(planner, ["s1", "s2"])
    if way.kind == "http":
        assert planner._b.follow(t, 0, 1.0) is not None
    first = next(iter(planner.follow(t, timeout=5.0)))
    rest = list(planner.follow(t, after=first.end, timeout=0.5))
    assert rest and rest == planner.events(t, after=first.end, limit=1000).events
    w = way.connect("w2")
    assert w.claim(t, "s2", wait=30).won
    more = []
    for ev in planner.follow(t, after=rest[-1].end, timeout=30.0):
        more.append(ev)
        if ev.event == "work_assigned":
            break
    assert more[0].start == rest[-1].end and more[-1].args[:2] == ("s2", "w2")
    with pytest.raises(workspaced.NotFound):
        next(iter(planner.follow("no_such_task_here", timeout=1.0)))
    with pytest.raises(workspaced.Invalid):
        next(iter(planner.follow(t, after=-1)))
