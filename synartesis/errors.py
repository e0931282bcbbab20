"""The error tree. Every error a user can cause carries its exit code (DESIGN §9).

0 success · 1 halted, refused or conflict · 2 usage or configuration error.
Only `synartesis.cli` turns these into exit codes and messages.
"""

from __future__ import annotations

__all__ = [
    "SynartesisError",
    "UsageError",
    "PolicyError",
    "JournalError",
    "NoJournalError",
    "JournalConfigError",
    "UpstreamError",
    "ConflictError",
    "ConfigParseError",
    "UndoHaltedError",
]


class SynartesisError(Exception):
    """Base class: a message meant for the user and the exit code it maps to."""

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(SynartesisError):
    """Bad command-line usage: unknown flag, missing value, no such run or action."""

    exit_code = 2


class PolicyError(SynartesisError, ValueError):
    """A policy that does not load or does not validate.

    The message always starts with ``FILE:LINE:COL: `` when a location is known.
    """

    exit_code = 2

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 col: int | None = None) -> None:
        self.file, self.line, self.col, self.detail = file, line, col, message
        if file is not None and line is not None:
            message = f"{file}:{line}:{col or 1}: {message}"
        elif file is not None:
            message = f"{file}: {message}"
        super().__init__(message)


class ConfigParseError(SynartesisError):
    """A client config file that cannot be parsed; it is never written."""

    exit_code = 2


class JournalError(SynartesisError):
    """The journal could not be opened, read or written."""

    exit_code = 1


class NoJournalError(JournalError):
    """A command that reads the journal found none (only the proxy creates one). A configuration
    error (exit 2), as a journal that is not one is: the location it was given holds nothing
    to work on (new user round 10, #6: it exited 1, which says refused or halted)."""

    exit_code = 2


class JournalConfigError(JournalError):
    """The journal named by the configuration cannot be used: not a journal, damaged, written
    by a newer synartesis, or a directory. A configuration error (exit 2; issue 9 item 10)."""

    exit_code = 2


class UpstreamError(SynartesisError):
    """An MCP server could not be started or failed while we talked to it."""

    exit_code = 1


class ServerCommandError(UpstreamError):
    """A server's command names nothing that can run (no such file, not on PATH, not
    executable): the command line is wrong, a configuration error (exit 2; new user round 31, 10b)."""

    exit_code = 2


class ConflictError(SynartesisError):
    """Someone else changed what we were about to change (a file, an action row)."""

    exit_code = 1


class LiveRunError(ConflictError):
    """An undo refused because a run it covers is still active. ``what`` names it ("run 1a2b3c4d
    is", "s-… has a run still active (1a2b3c4d):"), so a caller that has no ``--force`` (the
    console) can say what works there instead of the CLI's advice."""

    def __init__(self, message: str, what: str, run_id: str) -> None:
        super().__init__(message)
        self.what, self.run_id = what, run_id


class UndoHaltedError(SynartesisError):
    """Undo stopped because the world no longer looks the way the run left it."""

    exit_code = 1
