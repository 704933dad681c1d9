"""A state's journal_seq read from its last bytes (_tail_seq), as the
files backend's verdict read passes over states written before a marker's
record; the Go reader's table (workspace.StateTailSeq) holds the same."""
from __future__ import annotations

import json

import pytest

from workspaced._tree import _tail_seq


@pytest.mark.parametrize("data,want", [
    (b'{\n  "status": "executing",\n  "journal_seq": 42\n}\n', 42),
    (b'{"journal_seq":0}', 0),
    (b'{"journal_seq": 7 } ', 7),
    (b'{"journal_seq":-1}', None),
    (b'{"journal_seq":1.5}', None),
    (b'{"journal_seq":"1"}', None),
    (b'{"journal_seq":1,"status":"x"}', None),
    (b'{"x":"\\"journal_seq":1}', None),
    (b'{"my_journal_seq":1}', None),
    (b'', None),
    (b'}', None),
])
def test_tail_seq(data: bytes, want: int | None) -> None:
    assert _tail_seq(data) == want


def test_tail_seq_of_a_long_state() -> None:
    doc = {"task_id": "t1", "subtasks": {"st_%d" % i: {"status": "pending"} for i in range(1000)}, "journal_seq": 1234}
    assert _tail_seq(json.dumps(doc, indent=2).encode() + b"\n") == 1234
