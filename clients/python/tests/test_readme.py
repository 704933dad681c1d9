"""The README's Python program, run verbatim against a daemon on SQLite."""

from __future__ import annotations

import os
import pathlib
import re
import runpy
import tempfile

import pytest

from conftest import ROOTS, Way

README = pathlib.Path(__file__).resolve().parents[3] / "README.md"


def test_readme_program(monkeypatch: pytest.MonkeyPatch) -> None:
    if "sqlite" not in ROOTS:
        pytest.skip("no SQLite workspace to run on ($WORKSPACED_PY_ROOTS has no sqlite)")
    text = README.read_text(encoding="utf-8")
    m = re.search(r"<!-- python-example -->\n```python\n(.*?)```", text, re.S)
    assert m, "README.md has no ```python block after <!-- python-example -->"
    way = Way("sqlite", ROOTS["sqlite"])
    task = way.approved(way.connect("planner"), ["s1"])
    monkeypatch.setenv("WORKSPACE_ROOT", ROOTS["sqlite"])
    monkeypatch.setenv("TASK", task)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "readme_example.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(m.group(1))
        out = runpy.run_path(path, run_name="__main__")
    for ws in way.opened:
        ws.close()
    result = out.get("result")
    assert result is not None and result.applied and result.verdict.task_status == "completed"
    st = out["ws"].state(task)
    assert st["subtasks"]["s1"]["worker"] == "worker_1"
