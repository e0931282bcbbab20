"""The journal: one SQLite file shared by every proxy and the CLI, or one PostgreSQL database
shared by a team (issue 14). The only module that runs SQL.

Callers use :class:`Journal` (``synartesis.journal.facade``) and the row types; the package's
other modules are its concerns (see the facade's docstring).
"""

from synartesis.journal.facade import Journal
from synartesis.journal.liveness import pid_alive as process_alive
from synartesis.journal.rows import (
    ACTION_STATUSES,
    APPROVAL_TTL_S,
    IN_EFFECT,
    RUN_STATUSES,
    ActionRow,
    AuditResult,
    RunRow,
    SessionRow,
    UndoRow,
    now_iso,
    session_status,
    status_text,
)
from synartesis.journal.runs import SESSION_ENV, RunOrigin
from synartesis.journal.schema import SCHEMA_VERSION

__all__ = ["Journal", "ActionRow", "RunRow", "SessionRow", "UndoRow", "AuditResult", "RunOrigin",
           "ACTION_STATUSES", "RUN_STATUSES", "IN_EFFECT", "APPROVAL_TTL_S", "SCHEMA_VERSION", "SESSION_ENV",
           "now_iso", "session_status", "status_text", "process_alive"]
