"""Undo and redo: the engines, ``show --live``, and starting the servers a run touched."""

from synartesis.undo.engine import Step, UndoOptions, UndoReport, saga_text, undo_run, undo_target
from synartesis.undo.live import LiveItem, LiveReport, live_check
from synartesis.undo.redo import redo

__all__ = ["UndoOptions", "UndoReport", "Step", "undo_run", "undo_target", "redo", "saga_text", "live_check",
           "LiveReport", "LiveItem"]
