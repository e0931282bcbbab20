"""Saga mode (issue 10 item 8): when a ``tools/call`` of a run fails, the proxy rolls the run's
earlier changes back before it answers, on its own server connection, with the same engine and
the same halts as ``synartesis undo``.

The proxy is given :func:`rollback` by the process's entry point (``synartesis.cli.main``), so
it imports nothing of the undo engine itself. Nothing is ever re-sent, and irreversible calls
are left alone even when a policy gives them an inverse. The run stays active (the agent goes
on); the attempt is recorded as a ``saga`` in the journal, with each step, like an undo.
"""

from __future__ import annotations

from typing import Any, Callable

from synartesis.journal import Journal
from synartesis.policy.model import Policy
from synartesis.undo.engine import UndoOptions, saga_text, undo_target
from synartesis.undo.servers import HeldServers
from synartesis.undo.targets import resolve_target

__all__ = ["rollback"]


def rollback(*, journal: Journal, run_id: str, server: str, request: Callable[..., Any], policy: Policy | None,
             options: Any, error: str) -> str:
    """Undo run ``run_id`` newest first over ``server``'s connection; return what the agent is told.

    Args:
        journal: the proxy's own connection (used on this thread only).
        request: the connection's blocking ``request(method, params, *, timeout, meta)``.
        options: the proxy's options (``read_timeout``, ``call_timeout``, ``max_snapshot_bytes``).
        error: what the failed call said, for the agent.
    Runs on the proxy's lane thread, with no event loop: the engine's requests block that
    thread, so the next call waits until the rollback is over and cannot overtake it.
    """
    opts = UndoOptions(by="saga", own_run=True, skip_irreversible=True, policy=policy,
                       read_timeout=getattr(options, "read_timeout", 30.0),
                       call_timeout=getattr(options, "call_timeout", None) or 600.0,
                       max_snapshot_bytes=getattr(options, "max_snapshot_bytes", 8 * 1024 * 1024))
    target = resolve_target(journal, run_id)
    report = undo_target(journal, target, opts, servers=HeldServers({server: request}), kind="saga")
    return saga_text(report, error)
