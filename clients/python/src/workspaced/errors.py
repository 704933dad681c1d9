"""The errors of every way in, one class a kind.

Each kind mirrors a kind of the HTTP API's problems (api/problem.go) and
an exit code of the command line. An error says what went wrong
(``str(err)`` is the message, then ``hint: ...`` as the CLI prints it)
and how to go on (``err.hint``).
"""

from __future__ import annotations

import json

from typing import Any


class WorkspacedError(Exception):
    """Any refusal of the workspace. ``kind`` is the problem kind of the
    HTTP API (``not_found``, ``version_conflict``...), ``detail`` the
    message, ``hint`` what to do about it, ``status`` the HTTP status the
    API gives it."""

    kind = "internal"
    status = 500

    def __init__(self, detail: str, hint: str = "", field: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        self.hint = hint
        self.field = field

    def __str__(self) -> str:
        if self.hint:
            return "%s\nhint: %s" % (self.detail, self.hint)
        return self.detail


class Invalid(WorkspacedError):
    """Bad input, refused before anything was written: an id, a key, a
    value over the limits, a document its schema refuses."""

    kind = "invalid"
    status = 400


class Unsafe(Invalid):
    """A file that is not safe to read (a symlink, a FIFO) or a listener
    whose grants cannot be trusted."""

    kind = "unsafe"


class Unauthorized(WorkspacedError):
    """No token where one is needed, or an unknown, revoked or expired one."""

    kind = "unauthorized"
    status = 401


class Forbidden(WorkspacedError):
    """The token does not cover the task, lacks the right, or names
    another agent's memory."""

    kind = "forbidden"
    status = 403


class NotFound(WorkspacedError):
    """No such task, thread, subtask, key or item."""

    kind = "not_found"
    status = 404


class Conflict(WorkspacedError):
    """A finished task (it takes no marker), a final output, a task id taken."""

    kind = "conflict"
    status = 409


class VersionConflict(WorkspacedError):
    """A compare-and-set that failed: ``current_version`` is the version
    now (0 when there is no entry)."""

    kind = "version_conflict"
    status = 412

    def __init__(self, detail: str, current_version: int, hint: str = "", field: str = "") -> None:
        super().__init__(detail, hint or _version_hint(current_version), field)
        self.current_version = current_version


def _version_hint(current: int) -> str:
    if current == 0:
        return "there is no such entry now: store it without a version to create it"
    return "read it again (its version is %d now) and decide from what it holds" % current


class LockTimeout(WorkspacedError):
    """A lock still held when the wait for it ended; ``holder`` names who
    holds it."""

    kind = "locked"
    status = 503

    def __init__(self, detail: str, holder: str = "", hint: str = "") -> None:
        super().__init__(detail, hint or "another agent is writing the same thing; try again in a moment")
        self.holder = holder


class NotServing(WorkspacedError):
    """No daemon serves the workspace, so no verdict would come."""

    kind = "not_serving"
    status = 503


class NoVerdict(WorkspacedError):
    """The daemon did not decide within the wait (the marker stays queued)."""

    kind = "no_verdict"
    status = 503


class ClaimLost(WorkspacedError):
    """A claim another worker won first: ``holder`` is the worker that
    holds the subtask now, ``reason`` the daemon's."""

    kind = "claim_lost"
    status = 200

    def __init__(self, detail: str, holder: str, reason: str) -> None:
        super().__init__(detail, "pick another subtask: this one is %s's" % holder if holder else "pick another subtask")
        self.holder = holder
        self.reason = reason


class Refused(WorkspacedError):
    """A marker the daemon refused: ``reason`` says why."""

    kind = "refused"
    status = 200

    def __init__(self, detail: str, reason: str, hint: str = "") -> None:
        super().__init__(detail, hint or "read the reason, fix the product or the marker, and drop a new one")
        self.reason = reason


class TooLarge(Invalid):
    """A body over the listener's bound."""

    kind = "too_large"
    status = 413


class TooManyRequests(WorkspacedError):
    """Over the listener's rate; ``retry_after`` is in seconds."""

    kind = "too_many_requests"
    status = 429

    def __init__(self, detail: str, hint: str = "", retry_after: float = 0.0) -> None:
        super().__init__(detail, hint)
        self.retry_after = retry_after


class Unsupported(WorkspacedError):
    """An operation this way in cannot do (the hint says which can)."""

    kind = "not_implemented"
    status = 501


_KINDS: tuple[type[WorkspacedError], ...] = (Invalid, Unsafe, Unauthorized, Forbidden, NotFound, Conflict,
                                             LockTimeout, NotServing,
              NoVerdict, TooLarge, TooManyRequests, Unsupported)
_BY_KIND: dict[str, type[WorkspacedError]] = {c.kind: c for c in _KINDS}


def read_problem(raw: bytes, detail: str) -> dict[str, Any]:
    """The problem object of an error answer's body raw: {} when the body
    is not a JSON object, with detail as its detail when it gives none."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    problem: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
    problem.setdefault("detail", detail)
    return problem


def from_problem(status: int, problem: dict[str, Any], retry_after: float = 0.0) -> WorkspacedError:
    """The error a problem answer of the HTTP API stands for."""
    kind = str(problem.get("kind") or "")
    detail = str(problem.get("detail") or problem.get("title") or "HTTP %d" % status)
    hint = str(problem.get("hint") or "")
    field = str(problem.get("field") or "")
    if kind == "version_conflict":
        return VersionConflict(detail, int(problem.get("current_version") or 0), hint, field)
    if kind == "too_many_requests":
        return TooManyRequests(detail, hint, retry_after)
    if kind == "locked":
        return LockTimeout(detail, "", hint)
    cls = _BY_KIND.get(kind)
    if cls is None:
        err = WorkspacedError(detail, hint, field)
        err.kind, err.status = kind or "internal", status
        return err
    return cls(detail, hint, field)
