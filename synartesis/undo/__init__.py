"""Undo: walk a run's actions newest first and put back what they changed, halting at drift."""

from synartesis.undo.engine import UndoOptions, UndoReport, Step, undo_run, live_check, LiveReport

__all__ = ["UndoOptions", "UndoReport", "Step", "undo_run", "live_check", "LiveReport"]
