"""The :class:`Journal`: the one object callers use, over the journal's concerns.

Concerns, each a module of ``synartesis.journal`` and a layer of this class:
``blobs`` (payloads stored once) → ``chain`` (the event chain and audit) → ``actions``
(recording and status changes) → ``runs`` (runs, agent sessions, closing dead runs) →
``gates`` (held calls, approvals, denials) → ``attempts`` (undo, redo and saga attempts).
``schema`` owns the tables and migrations; ``sqlite`` everything specific to SQLite and to a
file. Nothing outside this package runs SQL.
"""

from __future__ import annotations

import os
from typing import Iterable

from synartesis.journal.attempts import AttemptsMixin
from synartesis.journal.rows import now_iso
from synartesis.journal.schema import migrate
from synartesis.journal.sqlite import SqliteBackend

__all__ = ["Journal"]


class Journal(AttemptsMixin):
    """A connection to one journal. Not thread-safe; one per thread or process."""

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, create: bool = False, reap: bool | None = None) -> "Journal":
        """Open (and with ``create`` make) the journal at ``path``, upgrading its schema in place.

        Only the proxy creates journals; every other command passes ``create=False``.
        ``reap`` (default: ``not create``, i.e. the CLI): close runs whose proxy is gone on the
        first write of this connection.

        Raises:
            NoJournalError: ``create`` is False and there is no file.
            JournalConfigError: not a journal, damaged, a newer schema, or a directory (exit 2).
            JournalError: it could not be created or opened.
        """
        db = SqliteBackend.open(path, create=create)
        try:
            with _guarded(db):
                migrate(db)
        except BaseException:
            db.close()
            raise
        return cls(db, reap=(not create) if reap is None else reap)

    def size_on_disk(self) -> int:
        """Bytes the journal takes on disk (its file and write-ahead log)."""
        return self.db.size()

    # -- tool shapes (so a pin mismatch can name the field that changed) ----------------
    def remember_shapes(self, server: str, shapes: dict[str, dict]) -> None:
        """Store tool objects seen in ``tools/list`` by fingerprint (``{fingerprint: tool}``)."""
        with self._guard("remember tool shapes"), self._tx():
            for fp, tool in shapes.items():
                self._q("INSERT INTO shapes (fingerprint, server, tool, ref, first_seen) VALUES (?,?,?,?,?) "
                        "ON CONFLICT DO NOTHING", (fp, server, str(tool.get("name")), self.put_json(tool), now_iso()))

    def shapes(self, fingerprints: Iterable[str]) -> dict[str, dict]:
        """Tool objects recorded under these fingerprints (those that are known)."""
        out: dict[str, dict] = {}
        with self._guard("read tool shapes"):
            for fp in fingerprints:
                row = self._one("SELECT ref FROM shapes WHERE fingerprint = ?", (fp,))
                if row:
                    out[fp] = self.get_json(row[0])
        return out


class _guarded:
    """Driver errors while migrating become the backend's JournalError."""

    def __init__(self, db: SqliteBackend) -> None:
        self.db = db

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ, exc, tb) -> bool:
        from synartesis.journal.sqlite import Error
        if isinstance(exc, Error):
            raise self.db.error(self.db.path, "open", exc) from exc
        return False
