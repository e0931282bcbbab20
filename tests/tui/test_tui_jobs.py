"""The console's jobs (undo, preview, live check) cancelled at the worst moments: esc while
the run's server is still starting, and esc again while it is being shut down. Neither may
leave a server running (issue 9 item 13: such a child outlived the test, and the test's event
loop then waited for it for ever)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from helpers import own_descendants, run_async
from test_tui import World

from synartesis.proxy import client
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
    reached = threading.Event()

    # Mark the moment, then go on as before: the job is cancelled right there (the job runs
    # on a worker thread, so these run there too).
    real_begin, real_close = client.McpClient.begin_initialize, client.McpClient.close

    def begin_initialize(self, *a, **kw):
        if where == "initialize":
            reached.set()
            time.sleep(0.5)
        return real_begin(self, *a, **kw)

    def close(self, *a, **kw):
        if where == "close":
            reached.set()
            time.sleep(0.5)
        return real_close(self, *a, **kw)

    monkeypatch.setattr(client.McpClient, "begin_initialize", begin_initialize)
    monkeypatch.setattr(client.McpClient, "close", close)
    target = jobs.Target(world.journal, world.manifest, "tester")

    async def go() -> None:
        task = asyncio.ensure_future(jobs.undo(target, run_id, dry_run=True))
        # esc while the server is answering initialize, or while the dry run, its reads done,
        # shuts its server down
        assert await asyncio.to_thread(reached.wait, 60)
        task.cancel()
        await asyncio.sleep(0)
        task.cancel()  # and again
        with pytest.raises(asyncio.CancelledError):
            await task
        # while the loop still runs (a leaked server's pipes stay open as long as it does)
        assert await asyncio.to_thread(_live_children) == [], "a server outlived the cancelled job"

    run_async(go(), timeout=120)
