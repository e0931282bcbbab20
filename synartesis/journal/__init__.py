"""The journal: one SQLite file shared by every proxy and the CLI. The only module that runs SQL."""

from synartesis.journal.store import (
    ACTION_STATUSES,
    RUN_STATUSES,
    ActionRow,
    AuditResult,
    Journal,
    RunRow,
    UndoRow,
)

__all__ = ["Journal", "ActionRow", "RunRow", "UndoRow", "AuditResult", "ACTION_STATUSES", "RUN_STATUSES"]
