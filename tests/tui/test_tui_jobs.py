"""The console's jobs (undo, preview, live check) cancelled at the worst moments: esc while
the run's server is still starting, and esc again while it is being shut down. Neither may
leave a server running (issue 9 item 13: such a child outlived the test, and the test's event
loop then waited for it for ever)."""

from __future__ import annotations

import asyncio

import pytest
from helpers import own_descendants, run_async
from test_tui import World

from synartesis.proxy import upstream
from synartesis.tui import jobs


def _live_children(grace: float = 3.0) -> list[int]:
    """Our live descendants, after giving a closing server ``grace`` seconds to exit."""
    import time

    end = time.monotonic() + grace
    while True:
        left = own_descendants()
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.05)


@pytest.mark.parametrize("where", ["initialize", "close"])
def test_a_dry_run_cancelled_while_its_server_starts_or_stops_leaves_no_server(tmp_path, monkeypatch, where):
    world = World(tmp_path)
    world.session([("put", {"key": "k0", "value": "agent"})])
    from helpers import open_journal
    with open_journal(world.journal) as j:
        run_id = j.list_runs()[0].id
    reached = asyncio.Event()

    # Mark the moment, then go on as before: the job is cancelled right there.
    real_initialize, real_close = upstream.Upstream.initialize, upstream.Child._close \
        if hasattr(upstream.Child, "_close") else upstream.Child.close

    async def initialize(self, *a, **kw):
        if where == "initialize":
            reached.set()
            await asyncio.sleep(0.5)
        return await real_initialize(self, *a, **kw)

    async def close(self, *a, **kw):
        if where == "close":
            reached.set()
            await asyncio.sleep(0.5)
        return await real_close(self, *a, **kw)

    monkeypatch.setattr(upstream.Upstream, "initialize", initialize)
    monkeypatch.setattr(upstream.Child, real_close.__name__, close)
    target = jobs.Target(world.journal, world.manifest, "tester")

    async def go() -> None:
        task = asyncio.ensure_future(jobs.undo(target, run_id, dry_run=True))
        if where == "close":
            # the dry run finishes its reads, then shuts its server down: esc lands there
            await asyncio.wait_for(reached.wait(), 60)
            task.cancel()
        else:
            await asyncio.wait_for(reached.wait(), 60)
            task.cancel()  # esc while the server is answering initialize
            await asyncio.sleep(0)
            task.cancel()  # and again, while the job is closing what it started
        with pytest.raises(asyncio.CancelledError):
            await task
        # while the loop still runs (a leaked server's pipes stay open as long as it does)
        assert await asyncio.to_thread(_live_children) == [], "a server outlived the cancelled job"

    run_async(go(), timeout=120)
