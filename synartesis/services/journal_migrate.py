"""`journal migrate`: copy a journal (a SQLite file) into another (a PostgreSQL database) and
prove the copy with ``audit`` on both sides (issue 14)."""

from __future__ import annotations

from dataclasses import dataclass, field

from synartesis.journal import Journal
from synartesis.journal.transfer import copy_journal
from synartesis.paths import journal_location

__all__ = ["AuditPair", "MigrateReport", "migrate_journal"]


@dataclass(frozen=True)
class AuditPair:
    """One run's audit on the source and on the copy."""

    run_id: str
    source_ok: bool
    target_ok: bool
    events: tuple[int, int]
    problems: list[str]

    @property
    def same(self) -> bool:
        """The copy says what the source says (an intact run stays intact; a broken one stays broken)."""
        return self.source_ok == self.target_ok and self.events[0] == self.events[1]


@dataclass
class MigrateReport:
    """What was copied and how both sides audited. ``source``/``target`` are shown as given,
    with no password."""

    source: str
    target: str
    rows: dict[str, int] = field(default_factory=dict)
    audits: list[AuditPair] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every run audits the same on both sides."""
        return all(a.same for a in self.audits)


def migrate_journal(source: str, to: str) -> MigrateReport:
    """Copy the journal at ``source`` into ``to`` (created when it has no journal yet), then
    audit every run on both.

    Raises:
        NoJournalError: there is no journal at ``source``.
        UsageError: ``to`` already holds runs, or is the source itself.
        JournalError: either side cannot be opened.
    """
    src_loc, dst_loc = journal_location(source), journal_location(to)
    if str(src_loc) == str(dst_loc):
        from synartesis.errors import UsageError
        raise UsageError("--to names the journal being migrated; give another one")
    report = MigrateReport(str(src_loc), str(dst_loc))
    with Journal.open(src_loc, create=False) as src, Journal.open(dst_loc, create=True) as dst:
        report.rows = copy_journal(src, dst).rows
        for run in src.list_runs():
            a, b = src.audit(run.id), dst.audit(run.id)
            problems = [f"source: {p}" for p in a.problems] + [f"copy: {p}" for p in b.problems]
            report.audits.append(AuditPair(run.id, a.ok, b.ok, (a.events, b.events), problems))
    return report
