"""The operations a way in provides; Workspace gives them their public names."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

from .types import Delivery, Entry, EntryInfo, Event, EventPage, MemoryItem


class Backend(ABC):
    """One way in: a directory, a SQLite file, a PostgreSQL schema or the
    HTTP API. ``agent`` is who acts."""

    agent: str
    root: str

    @abstractmethod
    def close(self) -> None: ...

    # entries: scope is thread, session, agent or global; owner as the SQL tables name it
    @abstractmethod
    def entry_put(self, scope: str, owner: str, key: str, value: Any, description: str | None,
                  if_version: int | None, if_absent: bool) -> Entry: ...

    @abstractmethod
    def entry_get(self, scope: str, owner: str, key: str) -> Entry: ...

    @abstractmethod
    def entry_list(self, scope: str, owner: str) -> list[EntryInfo]: ...

    @abstractmethod
    def entry_delete(self, scope: str, owner: str, key: str, if_version: int | None) -> None: ...

    # namespaced memory
    @abstractmethod
    def memory_put(self, ns: tuple[str, ...], key: str, value: dict[str, Any], ttl_seconds: int | None,
                   if_version: int | None, if_absent: bool) -> MemoryItem: ...

    @abstractmethod
    def memory_get(self, ns: tuple[str, ...], key: str) -> MemoryItem: ...

    @abstractmethod
    def memory_delete(self, ns: tuple[str, ...], key: str, if_version: int | None) -> None: ...

    @abstractmethod
    def memory_search(self, prefix: tuple[str, ...], filter: dict[str, Any] | None, limit: int,
                      offset: int) -> list[MemoryItem]: ...

    @abstractmethod
    def memory_namespaces(self, prefix: tuple[str, ...], suffix: tuple[str, ...], max_depth: int | None,
                          limit: int, offset: int) -> list[tuple[str, ...]]: ...

    # tasks
    @abstractmethod
    def create_task(self, task: str, description: str, fields: dict[str, Any]) -> dict[str, Any]: ...

    @abstractmethod
    def task(self, task: str) -> dict[str, Any]: ...

    @abstractmethod
    def tasks(self) -> list[str]: ...

    @abstractmethod
    def state(self, task: str) -> dict[str, Any] | None: ...

    @abstractmethod
    def create_thread(self, task: str, thread: str, to: str, fields: dict[str, Any]) -> dict[str, Any]: ...

    @abstractmethod
    def thread(self, task: str, thread: str) -> dict[str, Any]: ...

    # products and markers
    @abstractmethod
    def write_plan(self, task: str, plan: dict[str, Any], propose: bool, wait: float | None) -> Delivery: ...

    @abstractmethod
    def product(self, task: str, path: str) -> dict[str, Any]:
        """A product: plan.json, plans/plan_v<N>.json, outputs/<id>.json, reviews/<id>.json."""

    @abstractmethod
    def claim(self, task: str, subtask: str, wait: float | None) -> Delivery: ...

    @abstractmethod
    def write_output(self, task: str, subtask: str, output: dict[str, Any], done: bool,
                     wait: float | None) -> Delivery: ...

    @abstractmethod
    def write_review(self, task: str, review: str, doc: dict[str, Any], done: bool,
                     wait: float | None) -> Delivery: ...

    @abstractmethod
    def done(self, task: str, output_file: str | None, subtask: str | None, status: str, error: str | None,
             wait: float | None) -> Delivery: ...

    # events, context
    @abstractmethod
    def events(self, task: str, after: int, limit: int) -> EventPage: ...

    def follow(self, task: str, after: int, timeout: float | None) -> Iterator[Event] | None:
        """The task's events as a stream brings them, where the way in has
        one (the HTTP API's); None: follow reads pages of events."""
        return None

    @abstractmethod
    def context(self, thread: str, budget: int | None) -> dict[str, Any]: ...

    @abstractmethod
    def preamble(self, thread: str, detail: str | None) -> dict[str, Any]: ...
