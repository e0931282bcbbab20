"""The journal as the window sees it: cards and the ledger, read back after the fact.

Everything a card shows (class, status, whether the prior state was captured, the reason a call
is held, the resolved inverse, who decided) is what the proxy journalled; the window never
infers it. All journal access runs on one worker thread with its own connection (SQLite
connections are per thread), so the event loop never waits on a lock.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path
from typing import Any, Callable, TypeVar

from synartesis.canonical import call_key
from synartesis.errors import NoJournalError
from synartesis.journal import Journal
from synartesis.services.runs import action_view, run_summary

__all__ = ["JournalView", "ledger"]

T = TypeVar("T")



def ledger(actions: list[dict]) -> dict:
    """Counts over actions in their ``show --json`` shape.

    - ``calls``: every journalled action;
    - ``reversibleCaptured``: reversible with the prior state captured;
    - ``compensable``;
    - ``held``: calls that were held for a person (waiting, approved or denied; the row that
      later carried an approval made in another run is not counted twice);
    - ``waiting`` / ``approved`` / ``denied``: of those, what became of them;
    - ``undone``: rolled back.
    """
    carriers = {a["usedBy"] for a in actions if a.get("usedBy")}
    held = [a for a in actions if a["id"] not in carriers and (a["status"] in ("gated", "denied") or a.get("decidedBy"))]
    return {
        "calls": len(actions),
        "reversibleCaptured": sum(1 for a in actions if a["class"] == "reversible" and a["prior"] == "captured"),
        "compensable": sum(1 for a in actions if a["class"] == "compensable"),
        "held": len(held),
        "waiting": sum(1 for a in held if a["status"] == "gated"),
        "approved": sum(1 for a in held if a["status"] not in ("gated", "denied")),
        "denied": sum(1 for a in held if a["status"] == "denied"),
        "undone": sum(1 for a in actions if a["status"] == "rolled_back"),
    }


class JournalView:
    """One worker thread holding one read/write connection to the journal at ``path``.

    The journal may not exist yet (the first proxy creates it): calls then see ``None``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal")
        self._j: Journal | None = None

    def _journal(self) -> Journal | None:
        if self._j is None:
            try:
                self._j = Journal.open(self.path, create=False)
            except NoJournalError:
                return None
        return self._j

    async def run(self, fn: Callable[[Journal | None], T]) -> T:
        """``fn(journal or None)`` on the worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: fn(self._journal()))

    def close(self) -> None:
        def shut() -> None:
            if self._j is not None:
                self._j.close()
                self._j = None
        self._pool.submit(shut).result(timeout=10)
        self._pool.shutdown(wait=True)

    # -- reads (run on the worker) ---------------------------------------------------------
    @staticmethod
    def version(j: Journal | None) -> int | None:
        return j.data_version() if j is not None else None

    @staticmethod
    def actions_of(j: Journal | None, runs: list[str]) -> list[dict]:
        """Every action of ``runs`` in their ``show --json`` shape, in journal order."""
        if j is None:
            return []
        out: list[dict] = []
        for r in runs:
            try:
                out.extend(action_view(j, a).as_json() for a in j.actions(r))
            except Exception:  # a run pruned meanwhile
                continue
        return sorted(out, key=lambda a: (a["createdAt"], a["seq"]))

    @staticmethod
    def history(j: Journal | None) -> list[dict]:
        """Every run, newest first (``list --json`` shape)."""
        return [run_summary(r) for r in j.list_runs()] if j is not None else []

    @staticmethod
    def gated(j: Journal | None) -> list[dict]:
        """Every held call across all runs (``gates --json`` shape)."""
        return [action_view(j, a).as_json() for a in j.list_gated()] if j is not None else []

    @staticmethod
    def detail(j: Journal | None, action_id: str) -> dict:
        """One action with everything recorded about it (arguments, result, snapshot, inverse).

        Raises:
            UsageError: no such action.
        """
        if j is None:
            raise NoJournalError("there is no journal yet")
        return action_view(j, j.get_action(action_id), full=True).as_json(full=True)

    @staticmethod
    def find_call(j: Journal | None, run: str, server: str, tool: str, args: Any, taken: set[str]) -> dict | None:
        """The first action of ``run`` (lowest seq) for exactly this call that no card has yet.

        Cards bind in call order, so the n-th of several identical calls gets the n-th row; a
        held call's retry carried by its own row finds that row again."""
        if j is None:
            return None
        key = call_key(server, tool, args)
        for a in j.actions(run):
            if a.call_key == key and a.id not in taken:
                return action_view(j, a).as_json()
        return None

    @staticmethod
    def action(j: Journal | None, ref: str) -> dict | None:
        if j is None:
            return None
        try:
            return action_view(j, j.find_action(ref)).as_json()
        except Exception:
            return None
