"""Entries of every scope, with compare-and-set, on every way in."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import workspaced
from conftest import Way

Scope = Callable[[workspaced.Workspace, str], workspaced.Entries]
SCOPES: dict[str, Scope] = {
    "env": lambda ws, t: ws.env_of(t),
    "session": lambda ws, t: ws.session(t, task=t),
    "agent": lambda ws, t: ws.agent_memory,
    "global": lambda ws, t: ws.global_memory,
}


@pytest.mark.parametrize("scope", sorted(SCOPES))
def test_put_get_compare_and_set(way: Way, planner: workspaced.Workspace, scope: str) -> None:
    t = way.new_task(planner)
    s = SCOPES[scope](planner, t)
    key = "cas/" + t  # a '/' is a key's like any character
    e1 = s.put(key, {"n": 1}, "a counter")
    assert (e1.key, e1.value, e1.version, e1.short_description) == (key, {"n": 1}, 1, "a counter")
    assert e1.stored_by == planner.agent
    e2 = s.put(key, {"n": 2}, if_version=1)
    assert e2.version == 2 and e2.short_description == "a counter"
    with pytest.raises(workspaced.VersionConflict) as err:
        s.put(key, {"n": 3}, if_version=1)
    assert err.value.current_version == 2 and err.value.kind == "version_conflict" and err.value.hint
    with pytest.raises(workspaced.VersionConflict) as err:
        s.put(key, {"n": 3}, if_absent=True)
    assert err.value.current_version == 2
    got = s.get(key)
    assert got.value == {"n": 2} and got.version == 2 and got.created_at == e1.created_at
    listed = [i for i in s.list() if i.key == key]
    assert len(listed) == 1 and listed[0].version == 2 and listed[0].size > 0
    assert not hasattr(listed[0], "value")
    with pytest.raises(workspaced.VersionConflict):
        s.delete(key, if_version=1)
    s.delete(key, if_version=2)
    with pytest.raises(workspaced.NotFound):
        s.get(key)
    assert s.value(key, default="none") == "none"
    created = s.put(key, [1, "two", None], if_absent=True)
    assert created.version == 1 and s.get(key).value == [1, "two", None]
    s.delete(key)
    with pytest.raises(workspaced.NotFound):
        s.delete(key)


def test_two_writers_one_wins(way: Way, planner: workspaced.Workspace) -> None:
    t = way.new_task(planner)
    other = way.connect("w1")
    planner.env_of(t).put("x", 0)
    a = planner.env_of(t).get("x")
    b = other.env_of(t).get("x")
    planner.env_of(t).put("x", a.value + 1, if_version=a.version)
    with pytest.raises(workspaced.VersionConflict) as err:
        other.env_of(t).put("x", b.value + 10, if_version=b.version)
    assert err.value.current_version == 2
    assert planner.env_of(t).get("x").value == 1


@pytest.mark.parametrize("key", ["", "a\x00b", "tab\there", "x" * 201, "\x7f"])
def test_bad_keys_are_refused(way: Way, planner: workspaced.Workspace, key: str) -> None:
    t = way.new_task(planner)
    with pytest.raises(workspaced.Invalid) as err:
        planner.env_of(t).put(key, 1)
    assert err.value.hint


def _deep(n: int) -> object:
    v: object = []
    for _ in range(n):
        v = [v]
    return v


@pytest.mark.parametrize("value", [{1, 2}, float("nan"), "x" * (1 << 20), _deep(70)], ids=["set", "nan", "1MiB", "deep"])
def test_bad_values_are_refused(way: Way, planner: workspaced.Workspace, value: object) -> None:
    t = way.new_task(planner)
    with pytest.raises(workspaced.Invalid):
        planner.env_of(t).put("k", value)
    with pytest.raises(workspaced.NotFound):
        planner.env_of(t).get("k")


@pytest.mark.parametrize("task", ["", "../etc", "a b", "-x", "x" * 129])
def test_bad_task_ids_are_refused(way: Way, planner: workspaced.Workspace, task: str) -> None:
    with pytest.raises(workspaced.Invalid):
        planner.env_of(task).put("k", 1)


def test_missing_task(way: Way, planner: workspaced.Workspace) -> None:
    with pytest.raises(workspaced.NotFound):
        planner.env_of("no_such_task_here").put("k", 1)
    with pytest.raises(workspaced.NotFound):
        planner.get_task("no_such_task_here")


def test_values_round_trip(way: Way, planner: workspaced.Workspace) -> None:
    t = way.new_task(planner)
    values: list[object] = [None, True, 0, -1.5, "", "é\u0000\n", [], {}, {"nested": {"list": [1, {"a": "b"}]}}]
    for i, v in enumerate(values):
        planner.env_of(t).put("v%d" % i, v)
        assert planner.env_of(t).get("v%d" % i).value == v


def test_compare_and_set_loses_no_update(way: Way, planner: workspaced.Workspace) -> None:
    """Two connections incrementing one counter with compare-and-set, from
    threads at once: every increment lands once."""
    import threading

    t = way.new_task(planner)
    planner.env_of(t).put("counter", 0)
    errors: list[BaseException] = []

    def add(ws: workspaced.Workspace, n: int) -> None:
        try:
            for _ in range(n):
                while True:
                    e = ws.env_of(t).get("counter")
                    try:
                        ws.env_of(t).put("counter", e.value + 1, if_version=e.version)
                        break
                    except workspaced.VersionConflict:
                        continue
        except BaseException as x:  # reported below
            errors.append(x)

    workers = [threading.Thread(target=add, args=(way.connect(a), 15)) for a in ("w1", "w2")]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    got = planner.env_of(t).get("counter")
    assert got.value == 30 and got.version == 31


def test_raw_json_text(way: Way, planner: workspaced.Workspace) -> None:
    # JSON text goes as it is written: a number no float holds keeps its
    # digits on every way in.
    t = way.new_task(planner)
    env = planner.env_of(t)
    text = '{ "big": 123456789012345678901234567890,\n  "ratio": 1.50, "list": [1 , "two", null] }'
    e = env.put("raw", workspaced.RawJSON(text), "as written")
    assert e.version == 1 and e.value == {"big": 123456789012345678901234567890, "ratio": 1.5, "list": [1, "two", None]}
    got = env.get("raw")
    assert got.value == e.value and got.short_description == "as written"
    assert env.put("raw", workspaced.RawJSON(b"[]"), if_version=1).version == 2 and env.get("raw").value == []
    assert env.put("raw2", workspaced.RawJSON('"text"'), if_absent=True).value == "text"


@pytest.mark.parametrize("text,why", [
    ("NaN", "not JSON"), ("{", "not JSON"), ("[1] [2]", "not JSON"), ("", "not JSON"), (b"\xff", "UTF-8"),
    ("[" * 65 + "]" * 65, "deeper than 64"), ('"%s"' % ("x" * (1 << 20)), "over the"), (7, "is text"),
])
def test_raw_json_refused(text: object, why: str) -> None:
    with pytest.raises(workspaced.Invalid) as err:
        workspaced.RawJSON(text)  # type: ignore[arg-type]
    assert why in err.value.detail and err.value.hint and err.value.field == "value"
    assert len(workspaced.RawJSON("[" * 64 + "]" * 64).text) == 128
