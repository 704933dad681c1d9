"""A task's events as the HTTP API streams them (Server-Sent Events,
text/event-stream), on the standard library's http.client: each event's
id is its position, so a stream cut off, or ended by a quiet spell, is
opened again with Last-Event-ID and resumes exactly after the last event
received (api/events.go)."""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

from .errors import WorkspacedError, from_problem, read_problem
from .types import Event

# How long to wait before opening a stream the server ended, unless it
# says otherwise (its "retry:" field).
RETRY = 2.0


def event_of(e: dict[str, Any]) -> Event:
    """An event as the API writes it (workspace.PositionedEvent)."""
    return Event(time=e["time"], event=e["event"], task_id=e["task_id"], args=tuple(e.get("args") or ()),
                 attrs=dict(e.get("attrs") or {}), start=int(e["start"]), end=int(e["end"]))


def follow(connect: Callable[[float | None], http.client.HTTPConnection], url: str, headers: dict[str, str],
           after: int, timeout: float | None) -> Iterator[Event]:
    """The events after position after, as the stream brings them, until
    timeout seconds pass without one (None: for ever)."""
    pos, quiet, retry = after, time.monotonic(), RETRY
    while True:
        left = None if timeout is None else timeout - (time.monotonic() - quiet)
        if left is not None and left <= 0:
            return
        conn = connect(left)
        try:
            h = dict(headers, Accept="text/event-stream")
            h["Last-Event-ID"] = str(pos)
            try:
                conn.request("GET", url, headers=h)
                resp = conn.getresponse()
            except (socket.timeout, TimeoutError):
                continue
            except OSError as e:
                raise WorkspacedError("cannot reach %s: %s" % (url, e), "check that 'workspaced serve --listen' runs") from None
            if resp.status >= 400:
                raise from_problem(resp.status, read_problem(resp.read(), "GET %s: HTTP %d" % (url, resp.status)))
            fields: dict[str, str] = {}
            data: list[str] = []
            while True:
                try:
                    line = resp.readline()
                except (socket.timeout, TimeoutError):
                    break  # quiet past the socket's timeout: the loop above says whether to go on
                except OSError:
                    break  # cut off: resume from pos
                if timeout is not None and time.monotonic() - quiet >= timeout:
                    return
                if not line:
                    time.sleep(retry if timeout is None else min(retry, max(timeout - (time.monotonic() - quiet), 0)))
                    break  # the server ended the stream
                text = line.decode("utf-8").rstrip("\r\n")
                if text:
                    name, _, value = text.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if name == "data":
                        data.append(value)
                    elif name == "retry" and value.isdigit():
                        retry = int(value) / 1000
                    elif name in ("id", "event"):
                        fields[name] = value
                    continue  # a comment (": keep-alive") has no name and is passed over
                if data:
                    ev = event_of(json.loads("\n".join(data)))
                    pos = int(fields.get("id") or ev.end)
                    quiet = time.monotonic()
                    yield ev
                fields, data = {}, []
        finally:
            conn.close()
