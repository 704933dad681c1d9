"""Plans, claims, outputs, reviews and the daemon's verdicts on every way in."""

from __future__ import annotations

import pytest

import workspaced
from conftest import Way


def test_claim_output_done(way: Way, planner: workspaced.Workspace) -> None:
    t = way.approved(planner, ["s1", "s2"])
    w1, w2 = way.connect("w1"), way.connect("w2")
    won = w1.claim(t, "s1", wait=30)
    assert won.stands == "decided" and won.won and won.verdict is not None
    assert (won.verdict.verdict, won.verdict.worker, won.verdict.subtask_status) == ("won", "w1", "in_progress")
    assert won.check() is won
    lost = w2.claim(t, "s1", wait=30)
    assert lost.verdict is not None and lost.verdict.verdict == "lost" and not lost.won
    assert lost.verdict.worker == "w1" and lost.verdict.reason
    with pytest.raises(workspaced.ClaimLost) as err:
        lost.check()
    assert err.value.holder == "w1" and err.value.hint
    missing = w2.claim(t, "s9", wait=30)
    assert missing.verdict is not None and missing.verdict.verdict == "not_found"
    with pytest.raises(workspaced.NotFound):
        missing.check()
    out = w1.write_output(t, "s1", {"summary": "did s1"}, done=True, wait=30).check()
    assert out.product == "outputs/s1.json" and out.applied
    assert out.verdict is not None and out.verdict.subtask_status == "completed"
    doc = planner.output(t, "s1")
    assert doc["summary"] == "did s1" and doc["worker_id"] == "w1" and doc["subtask_id"] == "s1"
    with pytest.raises(workspaced.Conflict):
        w1.write_output(t, "s1", {"summary": "again"})
    assert w2.claim(t, "s2", wait=30).won
    w2.write_output(t, "s2", {"summary": "draft"})
    w2.write_output(t, "s2", {"summary": "final"})
    d = w2.done(t, "outputs/s2.json", subtask="s2", wait=30).check()
    assert d.verdict is not None and d.verdict.task_status == "completed"
    st = planner.wait_state(t, lambda s: s["status"] == "completed", timeout=30)
    assert st["subtasks"]["s2"]["worker"] == "w2"
    with pytest.raises(workspaced.Conflict):
        w2.claim(t, "s2", wait=10)


def test_without_wait_the_marker_is_dropped(way: Way, planner: workspaced.Workspace) -> None:
    t = way.approved(planner, ["s1"])
    d = way.connect("w1").claim(t, "s1")
    assert d.marker and d.verdict is None and d.stands in ("", "queued")
    st = planner.wait_state(t, lambda s: s["subtasks"]["s1"]["status"] == "in_progress", timeout=30)
    assert st["subtasks"]["s1"]["worker"] == "w1"


def test_plan_versions_and_failure(way: Way, planner: workspaced.Workspace) -> None:
    t = way.new_task(planner)
    first = planner.write_plan(t, {"subtasks": [{"id": "a", "description": "a"}]})
    assert first.version == 1 and first.product == "plan.json" and first.verdict is None
    second = planner.write_plan(t, {"subtasks": [{"id": "b", "description": "b"}]}, propose=True, wait=30).check()
    assert second.version == 2 and planner.plan(t)["subtasks"][0]["id"] == "b"
    way.connect("reviewer").write_review(t, "pr", {"type": "plan_review", "verdict": "approved"}, done=True, wait=30)
    w1 = way.connect("w1")
    assert w1.claim(t, "b", wait=30).won
    w1.write_output(t, "b", {"summary": "could not"})
    failed = w1.done(t, "outputs/b.json", subtask="b", status="failed", error="tests fail", wait=30)
    assert failed.verdict is not None and failed.verdict.verdict == "applied"


@pytest.mark.parametrize("kwargs", [
    {"status": "done"},
    {"status": "failed"},
    {"output_file": None},
])
def test_bad_done_markers(way: Way, planner: workspaced.Workspace, kwargs: dict[str, object]) -> None:
    t = way.new_task(planner)
    args: dict[str, object] = {"output_file": "plan.json", "status": "completed"}
    args.update(kwargs)
    with pytest.raises(workspaced.Invalid):
        planner.done(t, args["output_file"], status=args["status"])  # type: ignore[arg-type]


def test_cancel(way: Way, planner: workspaced.Workspace) -> None:
    t = way.new_task(planner)
    d = planner.cancel(t, "not needed", wait=30).check()
    assert d.verdict is not None and d.verdict.task_status == "cancelled"
    with pytest.raises(workspaced.Conflict):
        planner.claim(t, "s1", wait=5)


def test_tasks(way: Way, planner: workspaced.Workspace) -> None:
    t = way.new_task(planner)
    assert t in planner.tasks()
    doc = planner.get_task(t)
    assert doc["id"] == t and doc["description"]
    with pytest.raises(workspaced.Conflict):
        planner.create_task(t, "again")
    with pytest.raises(workspaced.Invalid):
        planner.create_task(t + "-empty", "  ")


def test_done_naming_a_missing_product_is_refused(way: Way, planner: workspaced.Workspace) -> None:
    t = way.approved(planner, ["s1"])
    w1 = way.connect("w1")
    assert w1.claim(t, "s1", wait=30).won
    try:
        d = w1.done(t, "outputs/s1.json", subtask="s1", wait=30)
    except workspaced.NotFound:
        assert way.kind == "http", "only the API checks the product before it drops the marker"
        return
    assert d.verdict is not None and d.verdict.verdict == "refused" and d.verdict.reason
    with pytest.raises(workspaced.Refused) as err:
        d.check()
    assert err.value.reason == d.verdict.reason


def test_threads_and_sessions(way: Way, planner: workspaced.Workspace) -> None:
    t = way.new_task(planner)
    w1 = way.connect("w1")
    th = w1.create_thread(t, "th_" + t, "w2", message="help")
    assert (th["id"], th["task_id"], th["from"], th["to"], th["parent_id"]) == ("th_" + t, t, "w1", "w2", t)
    assert planner.thread(t, "th_" + t)["message"] == "help"
    with pytest.raises(workspaced.Conflict):
        w1.create_thread(t, "th_" + t, "w2")
    with pytest.raises(workspaced.NotFound):
        w1.create_thread("no_such_task_here", "th_x", "w2")
    with pytest.raises(workspaced.Invalid):
        w1.create_thread(t, "a/b", "w2")
    s = w1.session("th_" + t, task=t)
    assert s.put("notes", ["one"]).version == 1 and s.get("notes").value == ["one"]
    with pytest.raises(workspaced.NotFound):
        w1.session("no_such_thread", task=t).put("k", 1)
    with pytest.raises(workspaced.NotFound):
        w1.session("no_such_thread", task=t).get("k")


def test_plan_versions_are_kept(way: Way, planner: workspaced.Workspace) -> None:
    t = way.new_task(planner)
    with pytest.raises(workspaced.NotFound):
        planner.plan(t)
    planner.write_plan(t, {"summary": "first", "subtasks": [{"id": "s1", "description": "a"}]})
    planner.write_plan(t, {"summary": "second", "subtasks": [{"id": "s1", "description": "a"}]})
    assert planner.plan(t)["summary"] == "second" and planner.plan(t)["version"] == 2
    assert planner.plan(t, version=1)["summary"] == "first"
    assert planner.plan(t, version=2)["summary"] == "second"
    with pytest.raises(workspaced.NotFound):
        planner.plan(t, version=3)


@pytest.mark.parametrize("output_file", ["../../etc/passwd", "state.json", "outputs/../x.json", "outputs/a/b.json"])
def test_done_outside_the_task_is_invalid(way: Way, planner: workspaced.Workspace, output_file: str) -> None:
    t = way.new_task(planner)
    with pytest.raises(workspaced.Invalid):
        planner.done(t, output_file, wait=10)


def test_finished_task_takes_no_marker_even_without_wait(way: Way, planner: workspaced.Workspace) -> None:
    t = way.new_task(planner)
    planner.cancel(t, "stop", wait=30).check()
    with pytest.raises(workspaced.Conflict):
        planner.claim(t, "s1")
    with pytest.raises(workspaced.Conflict):
        planner.done(t, "plan.json")
