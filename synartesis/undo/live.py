"""``show RUN|SESSION --live``: read every resource a run or session wrote, as it is now.

Per write: ``matches`` (still as it was left), ``reverted`` (back to the state before it),
``drifted`` (both values), ``superseded`` (written again later by the same session: the same
read, or a later action that names one of its identifiers, as ``undo --only`` counts it),
``unreadable`` or ``unchecked`` (no read recorded). Sends no inverse, writes nothing, never
stops early. Items are named as ``show`` names them: ``run:seq`` in a session.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from synartesis.canonical import same_state
from synartesis.journal import ActionRow, Journal
from synartesis.policy.model import Policy
from synartesis.undo.engine import later_writes, prior_state, resource_key, same_resource
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
    where: str = ""  # ``seq`` for a run, ``run:seq`` for a session (as ``show`` prints it)


@dataclass
class LiveReport:
    """``run``: the target's id (a run or a session); ``target``: ``run`` | ``session``;
    ``name``: how reports name it (``run 1e1983ae`` / ``session s-4f2a91c0 (…)``)."""

    run: str
    items: list[LiveItem]
    warnings: list[str]
    target: str = "run"
    name: str = ""

    def as_json(self) -> dict:
        return {"run": self.run, "target": self.target, "targetName": self.name,
                "items": [asdict(i) for i in self.items], "warnings": self.warnings}


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
    # the newest write of each resource, by its place in the journal (``writes`` is in that order
    # already: a hand-edited gseq, negative or not a number, cannot make it point at no write)
    latest: dict[str, str] = {}
    for a in writes:
        if keys[a.id] is not None:
            latest[keys[a.id]] = a.id
    needed = {(a.run_id, v["server"]) for a in writes if (v := j.get_json(a.verify_ref))}
    by_id = {a.id: a for a in writes}
    session = target.kind == "session"

    def where(a: ActionRow) -> str:
        return f"{a.run_id[:8]}:{a.seq}" if session else str(a.seq)

    servers = SpawnedServers(runs, policy, entry_env, stop)
    items: list[LiveItem] = []
    try:
        if needed:
            servers.start(needed)
        for a in writes:
            verify, post, key = j.get_json(a.verify_ref), j.get_json(a.post_ref), keys[a.id]
            if key is not None and latest[key] != a.id:
                last = by_id[latest[key]]
                items.append(LiveItem(a.seq, a.id, a.qualified, "superseded",
                                      f"written again later ({where(last)} {last.qualified})", run=a.run_id, where=where(a)))
                continue
            if verify is None or post is None:
                items.append(LiveItem(a.seq, a.id, a.qualified, "unchecked",
                                      "no read was recorded for this write, so it cannot be checked", run=a.run_id, where=where(a)))
                continue
            outcome = servers.read(a.run_id, verify, timeout=read_timeout, max_bytes=64 * 1024 * 1024)
            obs = outcome.observation()
            if obs is None:
                items.append(LiveItem(a.seq, a.id, a.qualified, "unreadable", getattr(outcome, "reason", None)
                                      or "the read failed", run=a.run_id, where=where(a)))
                continue
            prior = prior_state(a, j.get_json(a.snapshot_ref) if a.prior == "captured" else None)
            if same_state(obs, post, verify) and a.status != "rolled_back":
                items.append(LiveItem(a.seq, a.id, a.qualified, "matches", "still as this run left it", run=a.run_id, where=where(a)))
            elif prior is not None and same_state(obs, prior, verify):
                items.append(LiveItem(a.seq, a.id, a.qualified, "reverted", "back in the state before this write",
                                      run=a.run_id, where=where(a)))
            elif a.status == "rolled_back":
                items.append(_undone_item(j, runs, writes, a, prior, obs, verify, where))
            elif later := later_writes(j, target, a):
                # the session itself changed it afterwards (another read, or none): not drift
                last = later[-1]
                items.append(LiveItem(a.seq, a.id, a.qualified, "superseded",
                                      f"changed again later by this session ({where(last)} {last.qualified})",
                                      expected=post, actual=obs, run=a.run_id, where=where(a)))
            else:
                items.append(LiveItem(a.seq, a.id, a.qualified, "drifted", "changed since this run wrote it",
                                      expected=post, actual=obs, run=a.run_id, where=where(a)))
    finally:
        servers.close()
    return LiveReport(target.id, items, servers.warnings, target.kind, target.name)


def _undone_item(j: Journal, runs: dict, writes: list[ActionRow], a: ActionRow, prior: dict | None, obs: dict,
                 verify: Any, where: Any) -> LiveItem:
    """How an undone write reads now that its resource is not in the state before it: the undo
    may have gone on past it (an earlier call on the same resource was undone too, so the state
    to find is the one before that call: new user round 16, #3), or nothing before it was
    captured (a create's compensation: nothing to compare with); else it changed after the undo
    put it back, which is drift against the state the undo left (adversarial review 17, F3:
    a hand edit after the undo read "reverted")."""
    earlier = _undone_before(j, runs, writes, a)
    if earlier is not None:
        left = prior_state(earlier, j.get_json(earlier.snapshot_ref) if earlier.prior == "captured" else None)
        if left is None:
            return LiveItem(a.seq, a.id, a.qualified, "reverted", f"undone, and so was the earlier {where(earlier)} "
                            f"{earlier.qualified} that touched it; nothing was captured before that call, so this read "
                            "cannot confirm it", actual=obs, run=a.run_id, where=where(a))
        if same_state(obs, left, verify):
            return LiveItem(a.seq, a.id, a.qualified, "reverted", f"undone, and so was the earlier {where(earlier)} "
                            f"{earlier.qualified} that touched it: back in the state before that call",
                            run=a.run_id, where=where(a))
        return LiveItem(a.seq, a.id, a.qualified, "drifted", f"changed since the undo put it back (as before "
                        f"{where(earlier)} {earlier.qualified})", expected=left, actual=obs, run=a.run_id, where=where(a))
    if prior is None:
        return LiveItem(a.seq, a.id, a.qualified, "reverted",
                        "undone; nothing was captured before the call, so this read cannot confirm it",
                        actual=obs, run=a.run_id, where=where(a))
    return LiveItem(a.seq, a.id, a.qualified, "drifted", "changed since the undo put it back", expected=prior,
                    actual=obs, run=a.run_id, where=where(a))


def _undone_before(j: Journal, runs: dict, writes: list[ActionRow], a: ActionRow) -> ActionRow | None:
    """The newest earlier write of the target, undone too, that touched what ``a`` touched
    (:func:`~synartesis.undo.engine.same_resource`), or None."""
    for b in sorted((b for b in writes if (b.gseq or 0, b.seq) < (a.gseq or 0, a.seq) and b.status == "rolled_back"),
                    key=lambda b: (b.gseq or 0, b.seq), reverse=True):
        if b.run_id in runs and same_resource(j, runs[b.run_id], b)(runs.get(a.run_id), a):
            return b
    return None
