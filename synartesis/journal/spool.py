"""The opt-in local spool (``journal_fallback: spool``, issue 14 item 4).

A team journal that cannot be reached makes the proxy hold every call (fail closed). With the
policy's ``journal_fallback: spool`` it journals into a local SQLite file instead, one per
journal URL (``$SYNARTESIS_HOME/spool/<hash>.db``, 0600 in a 0700 folder), and each run it
begins there carries a ``run.spooled`` event naming the journal it was meant for. The next
proxy that reaches the journal ships every spooled run that has ended (rows, events and
payloads, as ``journal migrate`` copies them) and removes it from the spool; a run still live
stays until its proxy is gone.

Journal-wide action numbers are chained, so a spool numbers its actions from the time it was
made (milliseconds × 65536) rather than from 1: shipped actions never collide with the team
journal's, and sort after what it held when they were spooled.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from synartesis.canonical import sha256_hex

if TYPE_CHECKING:
    from synartesis.journal.facade import Journal

__all__ = ["spool_path", "open_spool", "ship_spool"]


def spool_path(url: str) -> Path:
    """The spool file for the journal at ``url`` (shown form, without a password)."""
    from synartesis.paths import Env, synartesis_home
    return synartesis_home(Env.current()) / "spool" / (sha256_hex(str(url).encode("utf-8"))[:16] + ".db")


def open_spool(url: str) -> "Journal":
    """Open (and make) the spool of ``url``; its action numbers start far above the team's."""
    from synartesis.journal.facade import Journal
    j = Journal.open(spool_path(url), create=True)
    floor = int(time.time() * 1000) << 16
    with j._guard("start a spool"), j._tx():
        j._q("UPDATE counters SET value = ? WHERE name = 'gseq' AND value < ?", (floor, floor))
    return j


def mark_spooled(j: "Journal", run_id: str, url: str) -> None:
    """Chain a ``run.spooled`` event into a run begun in the spool."""
    with j._guard("mark a spooled run"), j._tx():
        j._event(run_id, "run.spooled", {"journal": str(url)})


def ship_spool(url: str, target: "Journal") -> int:
    """Copy every ended run of ``url``'s spool into ``target`` and remove it from the spool;
    returns how many were shipped (0 when there is no spool)."""
    from synartesis.journal.facade import Journal
    from synartesis.journal.transfer import copy_journal
    path = spool_path(url)
    if not path.exists():
        return 0
    with Journal.open(path) as spool:
        have = {r.id for r in target.list_runs()}
        done = [r.id for r in spool.list_runs() if not r.live and r.id not in have]
        if not done:
            return 0
        copy_journal(spool, target, done)
        spool.prune(done)
    return len(done)
