"""The journal thread: batched read records, journal jobs, and the engine's timer.

A plain read is forwarded at once and its answer forwarded as soon as the server sends it; its
journal row is written here, on a connection of this thread's own. The thread is woken by a
timer, not per item: the first item of a batch wakes it, it sleeps one window (50 ms) so every
read of a burst lands in the same transaction (one ``executemany``, see
:meth:`Journal.record_reads`), and capping results (size, SHA-256, preview) happens here, off
the byte path. While idle it wakes every ``tick_every`` seconds to run the engine's timer (call
timeouts of reads in flight). A proxy killed with SIGKILL can lose the reads not yet committed,
never a write: writes are journalled before they are sent.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from pathlib import Path
TYPE_CHECKING = False  # typing is not imported on the proxy's start-up path (README, design notes)
if TYPE_CHECKING:
    from typing import Any

from synartesis.errors import JournalError
from synartesis.log import log

__all__ = ["JournalThread"]

WINDOW_S = 0.05  # reads finishing within 50 ms share a transaction


class JournalThread:
    """A background thread that journals what may wait a moment (see the module docstring).

    Args:
        path: the journal file (opened on this thread when there is first something to write).
        prepare: turns a queued read item into the row :meth:`Journal.record_reads` takes
            (:func:`synartesis.proxy.pipeline.read_record`); runs on this thread.
        tick: called with ``time.monotonic()`` on every wake (the engine's timeouts).
        tick_every: the longest sleep while idle, in seconds; None sleeps until woken.
    """

    def __init__(self, path: Path, *, prepare: Callable[[dict], dict] | None = None,
                 tick: Callable[[float], None] | None = None, tick_every: float | None = None,
                 window: float = WINDOW_S) -> None:
        self.path = path
        self._prepare = prepare
        self._tick = tick
        self._tick_every = tick_every
        self._window = window
        self._items: collections.deque = collections.deque()
        self._jobs: collections.deque = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._armed = False
        self._stop = False
        self._journal: Any = None
        self._thread = threading.Thread(target=self._run, name="synartesis-journal", daemon=True)
        self._thread.start()

    def add(self, item: dict) -> None:
        """Queue one read record (``{run, server, tool, rule, args, seq}`` plus ``status``/
        ``note``/``result`` or ``answer``). Wakes the thread only for the first of a batch."""
        self._items.append(item)
        if not self._armed:
            self._wake()

    def submit(self, job: Callable[[Any], None]) -> None:
        """Run ``job(journal)`` on this thread, with this thread's connection."""
        self._jobs.append(job)
        if not self._armed:
            self._wake()

    def _wake(self) -> None:
        with self._cond:
            self._armed = True
            self._cond.notify()

    def close(self, timeout: float = 10.0) -> None:
        """Write everything queued, then stop the thread and close its connection."""
        with self._cond:
            self._stop = True
            self._cond.notify()
        self._thread.join(timeout)

    def _run(self) -> None:
        # Open the connection now, while the first reads are at the server, not when their
        # window ends: opened then, on a loaded machine, the first batch was committed a few
        # hundred ms after its reads were answered, and a proxy killed in between lost them all
        # (adversarial review 9). A journal that does not exist yet is opened by the first drain.
        if self.path.exists():
            try:
                from synartesis.journal import Journal
                self._journal = Journal.open(self.path, create=False)
            except Exception:  # noqa: BLE001 - the first drain tries again and says why
                self._journal = None
        while True:
            with self._cond:
                if not self._armed and not self._stop:
                    self._cond.wait(self._tick_every)
                stop = self._stop
                armed = self._armed
            if self._tick is not None:
                try:
                    self._tick(time.monotonic())
                except Exception as exc:  # noqa: BLE001 - the timer must never stop journalling
                    log("error", "internal error in the call timer", error=repr(exc))
            if armed and not stop:
                time.sleep(self._window)  # the timer: a burst of reads shares one transaction
            self._armed = False
            self._drain()
            if self._items or self._jobs:
                self._armed = True  # queued while draining: go round again
            elif stop:
                break
        if self._journal is not None:
            self._journal.close()

    def _drain(self) -> None:
        batch = []
        while self._items:
            item = self._items.popleft()
            try:
                batch.append(self._prepare(item) if self._prepare else item)
            except Exception as exc:  # noqa: BLE001 - one odd answer must not lose the others
                log("error", "could not journal a read", error=repr(exc), tool=item.get("tool"))
        jobs = []
        while self._jobs:
            jobs.append(self._jobs.popleft())
        if not batch and not jobs:
            return
        try:
            if self._journal is None:
                from synartesis.journal import Journal
                self._journal = Journal.open(self.path, create=False)
            if batch:
                self._journal.record_reads(batch)
            for job in jobs:
                job(self._journal)
        except JournalError as exc:
            log("error", "could not journal reads", error=str(exc), count=len(batch))
        except Exception as exc:  # noqa: BLE001 - never let the journal thread die
            log("error", "internal error while journalling reads", error=repr(exc), count=len(batch))
