"""The public face: Workspace and its scopes, over any way in."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from ._backend import Backend
from ._common import check_description, check_filter, check_id, check_key, check_namespace, owner_of
from .errors import Invalid, NotFound
from .types import Delivery, Entry, EntryInfo, Event, EventPage, MemoryItem


class Entries:
    """One scope of entries: a task's env data, a thread's session, an
    agent's memory or the global memory. Every write takes
    ``if_version`` (compare-and-set: VersionConflict carries the current
    version) or ``if_absent`` (create only)."""

    def __init__(self, backend: Backend, scope: str, owner: str) -> None:
        self._b, self.scope, self.owner = backend, scope, owner

    def put(self, key: str, value: Any, description: str | None = None, *, if_version: int | None = None,
            if_absent: bool = False) -> Entry:
        """Create or replace key; returns the entry written (its version).
        value is any JSON value, or ``RawJSON(text)`` to send JSON text as
        it is written."""
        check_key(key)
        if if_version is not None and (isinstance(if_version, bool) or not isinstance(if_version, int) or if_version < 1):
            raise Invalid("if_version %r is not a version (1 or more)" % (if_version,), "give the version you read", "if_version")
        if if_version is not None and if_absent:
            raise Invalid("if_version and if_absent together", "give one of them", "if_absent")
        if description is not None:
            check_description(description)
        return self._b.entry_put(self.scope, self.owner, key, value, description, if_version, if_absent)

    def get(self, key: str) -> Entry:
        """The entry of key (NotFound without one)."""
        return self._b.entry_get(self.scope, self.owner, check_key(key))

    def value(self, key: str, default: Any = None) -> Any:
        """The value of key, or default without one."""
        try:
            return self.get(key).value
        except NotFound:
            return default

    def list(self) -> list[EntryInfo]:
        """Every entry of the scope by key, without values."""
        return self._b.entry_list(self.scope, self.owner)

    def delete(self, key: str, *, if_version: int | None = None) -> None:
        """Remove key (NotFound without it; VersionConflict with a stale if_version)."""
        self._b.entry_delete(self.scope, self.owner, check_key(key), if_version)


class Memory:
    """The namespaced memory: items (JSON objects) under a namespace of
    1-16 labels, with an optional TTL."""

    def __init__(self, backend: Backend) -> None:
        self._b = backend

    def put(self, namespace: list[str] | tuple[str, ...], key: str, value: dict[str, Any], *,
            ttl_seconds: int | None = None, if_version: int | None = None, if_absent: bool = False) -> MemoryItem:
        return self._b.memory_put(check_namespace(namespace), check_key(key), value, ttl_seconds, if_version, if_absent)

    def get(self, namespace: list[str] | tuple[str, ...], key: str) -> MemoryItem:
        return self._b.memory_get(check_namespace(namespace), check_key(key))

    def delete(self, namespace: list[str] | tuple[str, ...], key: str, *, if_version: int | None = None) -> None:
        self._b.memory_delete(check_namespace(namespace), check_key(key), if_version)

    def search(self, prefix: list[str] | tuple[str, ...] = (), *, filter: dict[str, Any] | None = None,
               limit: int = 10, offset: int = 0) -> list[MemoryItem]:
        """Live items under the namespace prefix whose value matches the
        filter ({field: value} or {field: {"$gt": value}}...)."""
        _check_page(limit, offset)
        return self._b.memory_search(tuple(prefix), check_filter(filter), limit, offset)

    def namespaces(self, prefix: list[str] | tuple[str, ...] = (), *, suffix: list[str] | tuple[str, ...] = (),
                   max_depth: int | None = None, limit: int = 100, offset: int = 0) -> list[tuple[str, ...]]:
        """The namespaces holding a live item ("*" in suffix matches any label)."""
        _check_page(limit, offset)
        return self._b.memory_namespaces(tuple(prefix), tuple(suffix), max_depth, limit, offset)


def _check_page(limit: int, offset: int) -> None:
    if not 1 <= limit <= 1000:
        raise Invalid("limit %r is not 1-1000" % (limit,), "give a limit from 1 to 1000", "limit")
    if offset < 0:
        raise Invalid("offset %r is negative" % (offset,), "give an offset of 0 or more", "offset")


class Workspace:
    """A workspace, as one agent. Made by :func:`workspaced.connect`.

    ``task`` is the task ``env`` and ``session()`` use when none is given."""

    def __init__(self, backend: Backend, task: str | None = None) -> None:
        self._b = backend
        self.task_id = check_id("task id", task) if task is not None else None
        self.memory = Memory(backend)

    @property
    def agent(self) -> str:
        """Who acts: the agent given, or over HTTP the token's."""
        return self._b.agent

    @property
    def root(self) -> str:
        return self._b.root

    def close(self) -> None:
        self._b.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _task(self, task: str | None) -> str:
        t = task if task is not None else self.task_id
        if t is None:
            raise Invalid("no task: give one, or connect(..., task=...)", "name the task the entries belong to", "task")
        return check_id("task id", t)

    # ---- entries -------------------------------------------------------
    @property
    def env(self) -> Entries:
        """The env data of the default task."""
        return self.env_of(None)

    def env_of(self, task: str | None) -> Entries:
        """A task's env data (the whole delegation tree shares it)."""
        t = self._task(task)
        return Entries(self._b, "thread", owner_of("thread", t, "", ""))

    def session(self, thread: str, task: str | None = None) -> Entries:
        """One thread's private entries."""
        t = self._task(task)
        return Entries(self._b, "session", owner_of("session", t, thread, ""))

    @property
    def agent_memory(self) -> Entries:
        """This agent's own memory."""
        return Entries(self._b, "agent", owner_of("agent", "", "", self.agent))

    @property
    def global_memory(self) -> Entries:
        """The memory every agent shares."""
        return Entries(self._b, "global", "")

    # ---- tasks ---------------------------------------------------------
    def create_task(self, task: str, description: str, **fields: Any) -> dict[str, Any]:
        """Create a task (task.json); fields: context, constraints, priority..."""
        return self._b.create_task(check_id("task id", task), description, fields)

    def get_task(self, task: str | None = None) -> dict[str, Any]:
        """task.json."""
        return self._b.task(self._task(task))

    def tasks(self) -> list[str]:
        """Every task's id."""
        return self._b.tasks()

    def state(self, task: str | None = None) -> dict[str, Any] | None:
        """The daemon's state of the task (state.json), None before the first."""
        return self._b.state(self._task(task))

    def wait_state(self, task: str | None, until: Any, timeout: float = 30.0, poll: float = 0.02) -> dict[str, Any]:
        """Read the state until until(state) holds; TimeoutError after timeout."""
        t = self._task(task)
        deadline = time.monotonic() + timeout
        while True:
            st = self._b.state(t)
            if st is not None and until(st):
                return st
            if time.monotonic() >= deadline:
                raise TimeoutError("the state of %s did not reach the condition in %gs (status %s)"
                                   % (t, timeout, st and st.get("status")))
            time.sleep(poll)

    def create_thread(self, task: str | None, thread: str, to: str, **fields: Any) -> dict[str, Any]:
        """Start a thread from this agent to another (fields: message,
        concern, approach, buffers, skill_tags, primary_mode, parent_id: the
        task's root thread by default)."""
        return self._b.create_thread(self._task(task), check_id("thread id", thread), check_id("to", to), fields)

    def thread(self, task: str | None, thread: str) -> dict[str, Any]:
        """A thread's document."""
        return self._b.thread(self._task(task), check_id("thread id", thread))

    # ---- plans, claims, outputs, reviews -------------------------------
    def write_plan(self, task: str | None, plan: dict[str, Any], *, propose: bool = False,
                   wait: float | None = None) -> Delivery:
        """Write the next version of the plan; with propose, drop the done
        marker proposing it, and with wait (seconds) wait for the verdict."""
        return self._b.write_plan(self._task(task), plan, propose, wait)

    def propose(self, task: str | None = None, *, wait: float | None = None) -> Delivery:
        """Propose the plan written before (a done marker naming plan.json)."""
        return self._b.done(self._task(task), "plan.json", None, "completed", None, wait)

    def plan(self, task: str | None = None, *, version: int | None = None) -> dict[str, Any]:
        """The current plan, or an earlier version of it."""
        if version is None:
            return self._b.product(self._task(task), "plan.json")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise Invalid("version %r is not a plan's version (1 or more)" % (version,), "give a version", "version")
        t = self._task(task)
        try:
            cur = self._b.product(t, "plan.json")
        except NotFound:
            raise NotFound("task %s has no plan" % t, "write one first") from None
        if cur.get("version") == version:
            return cur
        return self._b.product(t, "plans/plan_v%d.json" % version)

    def claim(self, task: str | None, subtask: str, *, wait: float | None = None) -> Delivery:
        """Claim a subtask. With wait (seconds, at most 300) the daemon's
        verdict: ``.won``, or ``.verdict.worker`` holds it; ``.check()``
        raises ClaimLost. Without, the marker's name at once."""
        return self._b.claim(self._task(task), check_id("subtask id", subtask), wait)

    def write_output(self, task: str | None, subtask: str, output: dict[str, Any], *, done: bool = False,
                     wait: float | None = None) -> Delivery:
        """Write outputs/<subtask>.json (subtask_id and worker_id filled in;
        the version it replaces kept; Conflict once the subtask is
        completed); with done, drop the done marker and wait for its verdict."""
        return self._b.write_output(self._task(task), check_id("subtask id", subtask), output, done, wait)

    def output(self, task: str | None, subtask: str) -> dict[str, Any]:
        return self._b.product(self._task(task), "outputs/%s.json" % check_id("subtask id", subtask))

    def write_review(self, task: str | None, review: str, doc: dict[str, Any], *, done: bool = False,
                     wait: float | None = None) -> Delivery:
        """Write reviews/<review>.json ({"type": "plan_review", "verdict":
        "approved"}...); with done, report it to the daemon."""
        return self._b.write_review(self._task(task), check_id("review id", review), doc, done, wait)

    def review(self, task: str | None, review: str) -> dict[str, Any]:
        return self._b.product(self._task(task), "reviews/%s.json" % check_id("review id", review))

    def done(self, task: str | None, output_file: str | None, *, subtask: str | None = None, status: str = "completed",
             error: str | None = None, wait: float | None = None) -> Delivery:
        """Drop a done marker for a product written before (or a failure,
        status "failed" with error)."""
        return self._b.done(self._task(task), output_file, subtask, status, error, wait)

    def cancel(self, task: str | None, reason: str, *, wait: float | None = None) -> Delivery:
        """Cancel the whole task, saying why."""
        return self._b.done(self._task(task), None, None, "cancelled", reason, wait)

    # ---- events --------------------------------------------------------
    def events(self, task: str | None = None, *, after: int = 0, limit: int = 100) -> EventPage:
        """The task's events after a position, and the position to ask from next."""
        _check_page(limit, 0)
        if after < 0:
            raise Invalid("after %r is negative" % (after,), "give a position of 0 or more", "after")
        return self._b.events(self._task(task), after, limit)

    def follow(self, task: str | None = None, *, after: int = 0, poll: float = 0.05,
               timeout: float | None = None) -> Iterator[Event]:
        """Every event after the position, as it comes, until timeout
        (seconds without a new event; None: for ever). Over HTTP the API's
        event stream brings them (resumed with Last-Event-ID when cut
        off); elsewhere the events are read every poll seconds."""
        t = self._task(task)
        if after < 0:
            raise Invalid("after %r is negative" % (after,), "give a position of 0 or more", "after")
        stream = self._b.follow(t, after, timeout)
        if stream is not None:
            yield from stream
            return
        quiet = time.monotonic()
        while True:
            page = self._b.events(t, after, 1000)
            yield from page.events
            if page.events:
                quiet = time.monotonic()
            after = page.next
            if not page.events:
                if timeout is not None and time.monotonic() - quiet >= timeout:
                    return
                time.sleep(poll)

    # ---- context -------------------------------------------------------
    def context(self, thread: str, *, budget: int | None = None) -> dict[str, Any]:
        """The thread's context bundle, as 'workspaced context --json'."""
        return self._b.context(check_id("thread id", thread), budget)

    def preamble(self, thread: str, *, detail: str | None = None) -> dict[str, Any]:
        """The thread's preamble, as 'workspaced preamble --json' (its text in "text")."""
        return self._b.preamble(check_id("thread id", thread), detail)
