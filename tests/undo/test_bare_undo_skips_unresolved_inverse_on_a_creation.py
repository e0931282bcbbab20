"""Adversarial review, round 6 — Round 6: bare `undo` must not step past a session whose write needs `--replan` (its inverse
did not resolve). README: "it does pick a session whose remaining writes need `--replan`
(their inverse did not resolve), and says why, rather than skip past them". A write whose
pre-read found the resource absent (prior 'absent') and whose inverse failed to resolve from
`$result` is counted as "stays in place" by undoable_counts (the approved-creation rule), so
bare undo skips the newest session and undoes an OLDER one instead."""
import json
import os

from helpers import FAKE_SERVER, RawSession, cli, proxy_argv

POLICY = """version: 1
servers:
  kv: {}
tools:
  - match: "kv.get"
    class: readonly
  - match: "kv.slow_put"
    class: reversible
    snapshot: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}
    inverse: {tool: kv.put, args: {key: "$.key", value: "$snapshot.value"}}
  - match: "kv.put"
    class: compensable
    snapshot: {tool: kv.get, args: {key: "$.key"}, absent_when: ["no such key"]}
    inverse: {tool: kv.delete, args: {key: "$result.id"}}
"""


def test_bare_undo_picks_the_newest_session_whose_write_needs_replan(tmp_path):
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "kv.json"
    manifest.write_text(POLICY)
    state.write_text(json.dumps({"k0": "v0"}))
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)])
    flags = ["--manifest", str(manifest), "--journal", str(journal)]

    def session(name, tool, args):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=name)) as s:
            s.handshake()
            return s.call(1, tool, args)

    assert not session("older", "slow_put", {"key": "k0", "value": "agent", "delay": 0}).get("isError")
    assert not session("newest", "put", {"key": "new", "value": "x"}).get("isError")
    plan = cli("undo", "--dry-run", "--json", *flags)
    print(plan.stdout, plan.stderr)
    picked = json.loads(plan.stdout)
    # the newest session has a write whose inverse did not resolve: bare undo stops there and
    # names it (for --replan); it must not go on to undo the older session in its place
    assert "(newest," in picked["targetName"], picked["targetName"]
    assert not any("nothing left to undo" in line for line in picked.get("skipped", [])), picked["skipped"]
