"""Journalling reads off the event loop.

A read with nothing to capture is forwarded first and answered as soon as the server answers;
its journal row is written by this thread, on its own connection, every read of a 50 ms window
in one transaction. SQLite releases the GIL while it works, so the relay keeps moving. A proxy
killed with SIGKILL can lose the last 50 ms of reads (never a write: writes are journalled
before they are sent).
"""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path

from synartesis.errors import JournalError
from synartesis.log import log

__all__ = ["ReadRecorder"]

_BATCH = 256
_WINDOW_S = 0.05  # reads arriving within 50 ms share a transaction


class ReadRecorder:
    """A background thread that records finished reads (see module docstring)."""

    def __init__(self, journal_path: Path) -> None:
        self.path = journal_path
        self._queue: "queue.Queue[dict | None]" = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="synartesis-reads", daemon=True)
        self._thread.start()

    def add(self, item: dict) -> None:
        """Queue one read (``{run, server, tool, rule, args, status, note?, result?}``)."""
        self._queue.put(item)

    def close(self, timeout: float = 10.0) -> None:
        """Record everything queued, then stop the thread."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        from synartesis.journal import Journal

        journal = None
        stop = False
        while not stop:
            item = self._queue.get()
            batch: list[dict] = []
            if item is None:
                stop = True
            else:
                batch.append(item)
            deadline = time.monotonic() + _WINDOW_S
            while len(batch) < _BATCH and not stop:
                try:
                    more = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            if not batch:
                continue
            try:
                if journal is None:
                    journal = Journal.open(self.path, create=False)
                journal.record_reads(batch)
            except JournalError as exc:
                log("error", "could not journal reads", error=str(exc), count=len(batch))
        if journal is not None:
            journal.close()
