"""The operations of workspaced as coroutines, for asyncio frameworks.

Each call runs the blocking operation in a worker thread
(asyncio.to_thread): the standard library has no asyncio SQLite,
PostgreSQL or HTTP client, and the package takes no third-party one. A
connection serializes its own calls, so coroutines may share it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from . import open_backend
from .client import Entries, Memory, Workspace
from .errors import Invalid
from .types import Delivery, Entry, EntryInfo, Event, EventPage, MemoryItem

__all__ = ["connect", "AsyncWorkspace", "AsyncEntries", "AsyncMemory"]


async def connect(root: str | None = None, *, agent: str | None = None, token: str | None = None,
                  task: str | None = None, lock_timeout: float = 30.0, timeout: float = 60.0) -> AsyncWorkspace:
    """workspaced.connect, as a coroutine."""
    import os
    r = root if root is not None else os.environ.get("WORKSPACE_ROOT", "")
    b = await asyncio.to_thread(open_backend, r, agent, token, lock_timeout, timeout)
    return AsyncWorkspace(Workspace(b, task))


def _next(it: Iterator[Event]) -> Event | None:
    return next(it, None)


class AsyncEntries:
    """Entries (one scope), as coroutines."""

    def __init__(self, e: Entries) -> None:
        self._e = e

    async def put(self, key: str, value: Any, description: str | None = None, *, if_version: int | None = None,
                  if_absent: bool = False) -> Entry:
        return await asyncio.to_thread(self._e.put, key, value, description, if_version=if_version, if_absent=if_absent)

    async def get(self, key: str) -> Entry:
        return await asyncio.to_thread(self._e.get, key)

    async def value(self, key: str, default: Any = None) -> Any:
        return await asyncio.to_thread(self._e.value, key, default)

    async def list(self) -> list[EntryInfo]:
        return await asyncio.to_thread(self._e.list)

    async def delete(self, key: str, *, if_version: int | None = None) -> None:
        await asyncio.to_thread(self._e.delete, key, if_version=if_version)


class AsyncMemory:
    """The namespaced memory, as coroutines."""

    def __init__(self, m: Memory) -> None:
        self._m = m

    async def put(self, namespace: list[str] | tuple[str, ...], key: str, value: dict[str, Any], *,
                  ttl_seconds: int | None = None, if_version: int | None = None, if_absent: bool = False) -> MemoryItem:
        return await asyncio.to_thread(self._m.put, namespace, key, value, ttl_seconds=ttl_seconds,
                                       if_version=if_version, if_absent=if_absent)

    async def get(self, namespace: list[str] | tuple[str, ...], key: str) -> MemoryItem:
        return await asyncio.to_thread(self._m.get, namespace, key)

    async def delete(self, namespace: list[str] | tuple[str, ...], key: str, *, if_version: int | None = None) -> None:
        await asyncio.to_thread(self._m.delete, namespace, key, if_version=if_version)

    async def search(self, prefix: list[str] | tuple[str, ...] = (), *, filter: dict[str, Any] | None = None,
                     limit: int = 10, offset: int = 0) -> list[MemoryItem]:
        return await asyncio.to_thread(self._m.search, prefix, filter=filter, limit=limit, offset=offset)

    async def namespaces(self, prefix: list[str] | tuple[str, ...] = (), *, suffix: list[str] | tuple[str, ...] = (),
                         max_depth: int | None = None, limit: int = 100, offset: int = 0) -> list[tuple[str, ...]]:
        return await asyncio.to_thread(self._m.namespaces, prefix, suffix=suffix, max_depth=max_depth, limit=limit,
                                       offset=offset)


class AsyncWorkspace:
    """A Workspace whose operations are coroutines (the same names and
    arguments; see workspaced.Workspace)."""

    def __init__(self, ws: Workspace) -> None:
        self.sync = ws
        self.memory = AsyncMemory(ws.memory)

    @property
    def agent(self) -> str:
        return self.sync.agent

    @property
    def task_id(self) -> str | None:
        return self.sync.task_id

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncWorkspace:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def env(self) -> AsyncEntries:
        return AsyncEntries(self.sync.env)

    def env_of(self, task: str | None) -> AsyncEntries:
        return AsyncEntries(self.sync.env_of(task))

    def session(self, thread: str, task: str | None = None) -> AsyncEntries:
        return AsyncEntries(self.sync.session(thread, task))

    @property
    def agent_memory(self) -> AsyncEntries:
        return AsyncEntries(self.sync.agent_memory)

    @property
    def global_memory(self) -> AsyncEntries:
        return AsyncEntries(self.sync.global_memory)

    async def create_task(self, task: str, description: str, **fields: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.create_task, task, description, **fields)

    async def get_task(self, task: str | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.get_task, task)

    async def tasks(self) -> list[str]:
        return await asyncio.to_thread(self.sync.tasks)

    async def state(self, task: str | None = None) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.sync.state, task)

    async def wait_state(self, task: str | None, until: Callable[[dict[str, Any]], bool], timeout: float = 30.0,
                         poll: float = 0.02) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            st = await self.state(task)
            if st is not None and until(st):
                return st
            if time.monotonic() >= deadline:
                raise TimeoutError("the state of %s did not reach the condition in %gs" % (task, timeout))
            await asyncio.sleep(poll)

    async def write_plan(self, task: str | None, plan: dict[str, Any], *, propose: bool = False,
                         wait: float | None = None) -> Delivery:
        return await asyncio.to_thread(self.sync.write_plan, task, plan, propose=propose, wait=wait)

    async def propose(self, task: str | None = None, *, wait: float | None = None) -> Delivery:
        return await asyncio.to_thread(self.sync.propose, task, wait=wait)

    async def plan(self, task: str | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.plan, task)

    async def claim(self, task: str | None, subtask: str, *, wait: float | None = None) -> Delivery:
        return await asyncio.to_thread(self.sync.claim, task, subtask, wait=wait)

    async def write_output(self, task: str | None, subtask: str, output: dict[str, Any], *, done: bool = False,
                           wait: float | None = None) -> Delivery:
        return await asyncio.to_thread(self.sync.write_output, task, subtask, output, done=done, wait=wait)

    async def output(self, task: str | None, subtask: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.output, task, subtask)

    async def write_review(self, task: str | None, review: str, doc: dict[str, Any], *, done: bool = False,
                           wait: float | None = None) -> Delivery:
        return await asyncio.to_thread(self.sync.write_review, task, review, doc, done=done, wait=wait)

    async def review(self, task: str | None, review: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.review, task, review)

    async def done(self, task: str | None, output_file: str | None, *, subtask: str | None = None,
                   status: str = "completed", error: str | None = None, wait: float | None = None) -> Delivery:
        return await asyncio.to_thread(self.sync.done, task, output_file, subtask=subtask, status=status, error=error,
                                       wait=wait)

    async def cancel(self, task: str | None, reason: str, *, wait: float | None = None) -> Delivery:
        return await asyncio.to_thread(self.sync.cancel, task, reason, wait=wait)

    async def events(self, task: str | None = None, *, after: int = 0, limit: int = 100) -> EventPage:
        return await asyncio.to_thread(self.sync.events, task, after=after, limit=limit)

    async def follow(self, task: str | None = None, *, after: int = 0, poll: float = 0.05,
                     timeout: float | None = None) -> AsyncIterator[Event]:
        """Every event after the position, as it comes, until timeout
        seconds pass without one (None: for ever). Over HTTP the API's event
        stream brings them, read in a thread."""
        if after < 0:
            raise Invalid("after %r is negative" % (after,), "give a position of 0 or more", "after")
        stream = self.sync._b.follow(self.sync._task(task), after, timeout)
        if stream is not None:
            try:
                while (ev := await asyncio.to_thread(_next, stream)) is not None:
                    yield ev
            finally:
                try:
                    getattr(stream, "close", lambda: None)()
                except ValueError:
                    pass  # still reading in its thread (a cancelled follow): it ends with its connection
            return
        quiet = time.monotonic()
        while True:
            page = await self.events(task, after=after, limit=1000)
            for ev in page.events:
                yield ev
            after = page.next
            if page.events:
                quiet = time.monotonic()
            elif timeout is not None and time.monotonic() - quiet >= timeout:
                return
            else:
                await asyncio.sleep(poll)

    async def context(self, thread: str, *, budget: int | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.context, thread, budget=budget)

    async def preamble(self, thread: str, *, detail: str | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.preamble, thread, detail=detail)
