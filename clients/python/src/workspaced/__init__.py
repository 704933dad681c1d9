"""workspaced: the shared workspace of agents, from Python.

    import workspaced
    ws = workspaced.connect("sqlite:/var/lib/agents.db", agent="worker_1", task="t1")
    ws.env.put("counter", {"n": 1})

The root picks the way in: a directory (the file protocol), ``sqlite:PATH``,
``postgres://...`` (psycopg 3, the extra ``postgres``) or ``http(s)://...``
(the HTTP API; the agent is the token's). The operations are the same on
each; :mod:`workspaced.aio` has them as coroutines.
"""

from __future__ import annotations

import os

from ._backend import Backend
from ._common import RawJSON
from .client import Entries, Memory, Workspace
from .errors import (ClaimLost, Conflict, Forbidden, Invalid, LockTimeout, NotFound, NotServing, NoVerdict,
                     Refused, TooLarge, TooManyRequests, Unauthorized, Unsafe, Unsupported, VersionConflict,
                     WorkspacedError)
from .types import Delivery, Entry, EntryInfo, Event, EventPage, MemoryItem, Verdict

__version__ = "0.1.0"

__all__ = [
    "connect", "Workspace", "Entries", "Memory", "RawJSON",
    "Entry", "EntryInfo", "MemoryItem", "Verdict", "Delivery", "Event", "EventPage",
    "WorkspacedError", "Invalid", "Unsafe", "Unauthorized", "Forbidden", "NotFound", "Conflict", "VersionConflict",
    "LockTimeout", "NotServing", "NoVerdict", "ClaimLost", "Refused", "TooLarge", "TooManyRequests", "Unsupported",
]


def open_backend(root: str, agent: str | None = None, token: str | None = None, lock_timeout: float = 30.0,
                 timeout: float = 60.0) -> Backend:
    """The way in root names (connect's, without the Workspace)."""
    if not isinstance(root, str) or not root:
        raise Invalid("no root given", "give a directory, sqlite:PATH, postgres://... or http(s)://...")
    if root.startswith(("http://", "https://")):
        from ._http import HTTPBackend
        return HTTPBackend(root, token=token, agent=agent, timeout=timeout)
    if token is not None:
        raise Invalid("a token is for an http(s):// root", "leave token out, or connect to the HTTP API", "token")
    who = agent if agent is not None else os.environ.get("WORKSPACED_AGENT", "")
    if not who:
        raise Invalid("no agent given", "connect(root, agent='worker_1'), or set $WORKSPACED_AGENT", "agent")
    if root.startswith("sqlite:"):
        from ._databases import SQLiteBackend
        return SQLiteBackend(root, who, lock_timeout)
    if root.startswith(("postgres://", "postgresql://")):
        from ._databases import PostgresBackend
        return PostgresBackend(root, who)
    from ._files import FilesBackend
    return FilesBackend(root, who, lock_timeout)


def connect(root: str | None = None, *, agent: str | None = None, token: str | None = None, task: str | None = None,
            lock_timeout: float = 30.0, timeout: float = 60.0) -> Workspace:
    """A workspace, as agent (over HTTP, as the token's agent).

    root: a directory, ``sqlite:PATH``, ``postgres://USER@HOST/DB?schema=NAME``
    or ``http(s)://HOST:PORT`` (default: $WORKSPACE_ROOT). task: the task
    ``ws.env`` and ``ws.session()`` use when given none. lock_timeout: how
    long a write on a directory or SQLite waits for its lock. timeout: an HTTP request's."""
    r = root if root is not None else os.environ.get("WORKSPACE_ROOT", "")
    return Workspace(open_backend(r, agent, token, lock_timeout, timeout), task)
