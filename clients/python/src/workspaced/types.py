"""What the operations return: plain dataclasses, the same on every way in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import ClaimLost, NotFound, NoVerdict, Refused

JSON = Any
"""Any JSON value: dict, list, str, int, float, bool or None."""


@dataclass(frozen=True)
class Entry:
    """One entry of a scope (env data, a session, the agent's or the
    global memory), with its value."""

    key: str
    value: JSON
    version: int
    short_description: str = ""
    stored_by: str = ""
    created_at: str = ""
    updated_at: str = ""


@dataclass(frozen=True)
class EntryInfo:
    """One line of a scope's listing: an entry without its value."""

    key: str
    version: int
    size: int
    short_description: str = ""
    stored_by: str = ""
    updated_at: str = ""


@dataclass(frozen=True)
class MemoryItem:
    """An item of the namespaced memory: a JSON object under a namespace
    of labels and a key, with an optional expiry (RFC 3339 UTC, or None)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, JSON]
    version: int
    created_at: str = ""
    updated_at: str = ""
    expires_at: str | None = None


@dataclass(frozen=True)
class Verdict:
    """The daemon's verdict on a marker: ``verdict`` is ``won`` or
    ``lost`` for a claim, ``applied`` or ``refused`` for a done marker,
    ``not_found`` for a claim of a subtask the approved plan has not."""

    marker: str
    task_id: str
    kind: str
    verdict: str
    seq: int = 0
    reason: str = ""
    subtask_id: str = ""
    subtask_status: str = ""
    worker: str = ""
    task_status: str = ""
    journaled: int = 0


@dataclass(frozen=True)
class Delivery:
    """What a write or a marker did: the product written (``plan.json``,
    ``outputs/s1.json``...), the marker dropped, and with a wait how it
    stands: ``decided`` (``verdict`` says what), ``undecided`` (no verdict
    within the wait) or ``queued`` (no daemon decided)."""

    task_id: str
    product: str = ""
    version: int = 0
    marker: str = ""
    stands: str = ""
    verdict: Verdict | None = None
    why: str = ""

    @property
    def decided(self) -> bool:
        return self.verdict is not None

    @property
    def won(self) -> bool:
        """A claim the daemon gave this agent."""
        return self.verdict is not None and self.verdict.verdict == "won"

    @property
    def applied(self) -> bool:
        """A done marker the daemon applied (or a claim it gave)."""
        return self.verdict is not None and self.verdict.verdict in ("won", "applied")

    def check(self) -> Delivery:
        """This delivery if the daemon decided for it; else raises
        ClaimLost (with the holder), Refused (with the reason), NotFound,
        or NoVerdict (no verdict came within the wait)."""
        v = self.verdict
        if v is None:
            if not self.marker:
                return self
            raise NoVerdict("no verdict on %s: it stands %s%s" % (self.marker, self.stands or "queued",
                                                                  ": " + self.why if self.why else ""),
                            "wait longer, or check that 'workspaced serve' runs for this workspace")
        if v.verdict in ("won", "applied"):
            return self
        if v.verdict == "lost":
            raise ClaimLost("claim of %s lost: %s" % (v.subtask_id, v.reason or "another worker holds it"), v.worker, v.reason)
        if v.verdict == "not_found":
            raise NotFound("subtask %s: the approved plan has no such subtask" % v.subtask_id,
                           "read the plan and claim one of its subtasks")
        raise Refused("marker %s refused: %s" % (v.marker, v.reason), v.reason)


@dataclass(frozen=True)
class Event:
    """One line of a task's events: its name, its positional words and
    key=value attributes; ``start`` reads it again, ``end`` is the
    position after it."""

    time: str
    event: str
    task_id: str
    args: tuple[str, ...] = ()
    attrs: dict[str, str] = field(default_factory=dict)
    start: int = 0
    end: int = 0


@dataclass(frozen=True)
class EventPage:
    """Events after a position, and the position to ask from next."""

    events: list[Event]
    next: int
