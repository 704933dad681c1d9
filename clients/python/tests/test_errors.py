"""Errors: kinds, messages and hints, and what HTTP refuses."""

from __future__ import annotations

import pytest

import workspaced
from conftest import ROOTS
from workspaced.errors import from_problem


@pytest.mark.parametrize("kind,cls", [
    ("not_found", workspaced.NotFound), ("invalid", workspaced.Invalid), ("unauthorized", workspaced.Unauthorized),
    ("forbidden", workspaced.Forbidden), ("conflict", workspaced.Conflict), ("locked", workspaced.LockTimeout),
    ("not_serving", workspaced.NotServing), ("no_verdict", workspaced.NoVerdict),
])
def test_problem_kinds(kind: str, cls: type[workspaced.WorkspacedError]) -> None:
    e = from_problem(400, {"kind": kind, "detail": "what", "hint": "how"})
    assert isinstance(e, cls) and e.detail == "what" and e.hint == "how"
    assert str(e) == "what\nhint: how"


def test_version_conflict_problem() -> None:
    e = from_problem(412, {"kind": "version_conflict", "detail": "stale", "current_version": 7})
    assert isinstance(e, workspaced.VersionConflict) and e.current_version == 7 and e.hint


def test_unknown_token_is_unauthorized() -> None:
    if "http" not in ROOTS:
        pytest.skip("no HTTP listener to run on ($WORKSPACED_PY_ROOTS has no http)")
    with pytest.raises(workspaced.Unauthorized):
        workspaced.connect(ROOTS["http"], token="tk_not_a_token")


def test_no_agent_is_invalid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKSPACED_AGENT", raising=False)
    with pytest.raises(workspaced.Invalid):
        workspaced.connect("/nonexistent", agent=None)


def test_missing_workspace(tmp_path: object) -> None:
    with pytest.raises(workspaced.NotFound) as err:
        workspaced.connect(str(tmp_path), agent="a")
    assert "workspaced init" in err.value.hint
    with pytest.raises(workspaced.NotFound):
        workspaced.connect("sqlite:%s/none.db" % tmp_path, agent="a")
