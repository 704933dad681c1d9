"""The namespaced memory on every way in."""

from __future__ import annotations

import pytest

import workspaced
from conftest import Way


def test_items_search_namespaces(way: Way, planner: workspaced.Workspace) -> None:
    top = "ns-" + way.new_task(planner)
    a = planner.memory.put([top, "42", "prefs"], "ui", {"theme": "dark", "age": 30}, ttl_seconds=3600)
    assert a.version == 1 and a.expires_at is not None and a.namespace == (top, "42", "prefs")
    planner.memory.put([top, "7", "prefs"], "ui", {"theme": "light", "age": 12})
    planner.memory.put([top + "x", "1"], "ui", {"theme": "dark"})  # not under the prefix [top]
    got = planner.memory.get([top, "42", "prefs"], "ui")
    assert got.value == {"theme": "dark", "age": 30} and got.expires_at is not None
    found = planner.memory.search([top], filter={"theme": "dark"})
    assert [(i.namespace, i.key) for i in found] == [((top, "42", "prefs"), "ui")]
    adults = planner.memory.search([top], filter={"age": {"$gte": 18}})
    assert [i.namespace[1] for i in adults] == ["42"]
    assert len(planner.memory.search([top], limit=1)) == 1
    assert planner.memory.namespaces([top]) == [(top, "42", "prefs"), (top, "7", "prefs")]
    assert planner.memory.namespaces([top], max_depth=2) == [(top, "42"), (top, "7")]
    b = planner.memory.put([top, "42", "prefs"], "ui", {"theme": "blue"}, if_version=1)
    assert b.version == 2 and b.expires_at is None
    with pytest.raises(workspaced.VersionConflict) as err:
        planner.memory.put([top, "42", "prefs"], "ui", {"theme": "red"}, if_version=1)
    assert err.value.current_version == 2
    with pytest.raises(workspaced.VersionConflict):
        planner.memory.put([top, "42", "prefs"], "ui", {"theme": "red"}, if_absent=True)
    planner.memory.delete([top, "42", "prefs"], "ui", if_version=2)
    with pytest.raises(workspaced.NotFound):
        planner.memory.get([top, "42", "prefs"], "ui")


@pytest.mark.parametrize("ns", [[], "flat", [""], ["a"] * 17])
def test_bad_namespaces(way: Way, planner: workspaced.Workspace, ns: object) -> None:
    with pytest.raises(workspaced.Invalid):
        planner.memory.put(ns, "k", {"a": 1})  # type: ignore[arg-type]


def test_item_value_is_an_object(way: Way, planner: workspaced.Workspace) -> None:
    with pytest.raises(workspaced.Invalid):
        planner.memory.put(["x"], "k", [1, 2])  # type: ignore[arg-type]
