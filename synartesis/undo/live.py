"""``show RUN|SESSION --live``: read every resource a run or session wrote, as it is now.

Per write: ``matches`` (still as it was left), ``reverted`` (back to the state before it),
``drifted`` (both values), ``superseded`` (written again later), ``unreadable`` or
``unchecked`` (no read recorded). Sends no inverse, writes nothing, never stops early.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from synartesis.canonical import canonical
from synartesis.journal import Journal
from synartesis.policy.model import Policy
from synartesis.undo.engine import prior_state, resource_key
from synartesis.undo.servers import SpawnedServers, Stop
from synartesis.undo.targets import newest_target, resolve_target

__all__ = ["live_check", "LiveReport", "LiveItem"]


@dataclass
class LiveItem:
    seq: int
    action: str
    tool: str
    state: str  # matches | drifted | reverted | superseded | unreadable | unchecked
    detail: str = ""
    expected: Any = None
    actual: Any = None
    run: str | None = None


@dataclass
class LiveReport:
    run: str
    items: list[LiveItem]
    warnings: list[str]

    def as_json(self) -> dict:
        return {"run": self.run, "items": [asdict(i) for i in self.items], "warnings": self.warnings}


def live_check(j: Journal, ref: str | None, policy: Policy | None, read_timeout: float = 30.0,
               entry_env: Any = None, stop: Stop | None = None) -> LiveReport:
    """Check ``ref`` (a run or session; default the newest session) against the world now.

    ``stop``: set from another thread, the servers are killed; what was not read yet is
    ``unreadable``.

    Raises:
        UsageError: nothing matches.
    """
    target = newest_target(j) if ref is None else resolve_target(j, ref)
    runs = {r.id: r for r in target.runs}
    writes = [a for a in j.actions_of(runs) if a.cls != "readonly"
              and a.status in ("applied", "rolling_back", "rolled_back", "unrecoverable")]
    keys = {a.id: resource_key(runs.get(a.run_id), j.get_json(a.verify_ref)) for a in writes}
    latest: dict[str, tuple[int, int]] = {}
    for a in writes:
        if keys[a.id] is not None:
            latest[keys[a.id]] = max(latest.get(keys[a.id], (0, 0)), (a.gseq or 0, a.seq))
    needed = {(a.run_id, v["server"]) for a in writes if (v := j.get_json(a.verify_ref))}
    servers = SpawnedServers(runs, policy, entry_env, stop)
    items: list[LiveItem] = []
    try:
        if needed:
            servers.start(needed)
        for a in writes:
            verify, post, key = j.get_json(a.verify_ref), j.get_json(a.post_ref), keys[a.id]
            if key is not None and latest[key] != (a.gseq or 0, a.seq):
                items.append(LiveItem(a.seq, a.id, a.qualified, "superseded",
                                      f"written again later (seq {latest[key][1]})", run=a.run_id))
                continue
            if verify is None or post is None:
                items.append(LiveItem(a.seq, a.id, a.qualified, "unchecked",
                                      "no read was recorded for this write, so it cannot be checked", run=a.run_id))
                continue
            obs = (servers.read(a.run_id, verify, timeout=read_timeout, max_bytes=64 * 1024 * 1024)).observation()
            if obs is None:
                items.append(LiveItem(a.seq, a.id, a.qualified, "unreadable", "the read failed", run=a.run_id))
                continue
            prior = prior_state(a, j.get_json(a.snapshot_ref) if a.prior == "captured" else None)
            if canonical(obs) == canonical(post) and a.status != "rolled_back":
                items.append(LiveItem(a.seq, a.id, a.qualified, "matches", "still as this run left it", run=a.run_id))
            elif prior is not None and canonical(obs) == canonical(prior):
                items.append(LiveItem(a.seq, a.id, a.qualified, "reverted", "back in the state before this write",
                                      run=a.run_id))
            else:
                items.append(LiveItem(a.seq, a.id, a.qualified, "drifted", "changed since this run wrote it",
                                      expected=post, actual=obs, run=a.run_id))
    finally:
        servers.close()
    return LiveReport(target.id, items, servers.warnings)
