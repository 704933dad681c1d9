"""workspaced.aio: the same operations as coroutines."""

from __future__ import annotations

import asyncio

import workspaced
from conftest import TOKENS, Way
from workspaced import aio


async def _connect(way: Way, agent: str, task: str | None = None) -> aio.AsyncWorkspace:
    if way.kind == "http":
        return await aio.connect(way.root, token=TOKENS[agent], task=task)
    return await aio.connect(way.root, agent=agent, task=task)


def test_aio_flow(way: Way, planner: workspaced.Workspace) -> None:
    t = way.approved(planner, ["s1"])

    async def run() -> None:
        async with await _connect(way, "w1", t) as w1, await _connect(way, "w2", t) as w2:
            e = await w1.env.put("k", {"n": 1})
            await w1.env.put("k", {"n": 2}, if_version=e.version)
            assert (await w2.env.get("k")).value == {"n": 2}
            a, b = await asyncio.gather(w1.claim(t, "s1", wait=30), w2.claim(t, "s1", wait=30))
            verdicts = sorted(d.verdict.verdict for d in (a, b) if d.verdict is not None)
            assert verdicts == ["lost", "won"]
            winner = w1 if a.won else w2
            out = await winner.write_output(t, "s1", {"summary": "async"}, done=True, wait=30)
            assert out.applied
            seen = []
            async for ev in winner.follow(t, timeout=30):
                seen.append(ev.event)
                if ev.event in ("work_completed", "task_completed"):
                    break
            assert "work_completed" in seen or "task_completed" in seen, seen
            item = await w1.memory.put(["aio", t], "k", {"v": 1})
            assert (await w2.memory.get(["aio", t], "k")).version == item.version

    asyncio.run(run())
