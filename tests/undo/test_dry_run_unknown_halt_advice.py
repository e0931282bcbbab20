"""Adversarial review, round 6 — Round 6 (low): a dry run that halts on an action of unknown outcome (the call timed out) says
"The real undo would stop here too. Before running it: put the resource back the way the run
left it, or run `synartesis undo S --force` to see what would be overwritten" -- while the halt's
own detail, two lines above, says "Check the resource by hand; `undo --force` then steps over this
action (leaving whatever it did)". Nothing is overwritten there (the --force preview shows it
`permanent`, stepped over), and there is no "way the run left it" to put back: the outcome is
unknown. The advice added in 28ae692 is for drift only."""
import json
import os

from helpers import FAKE_POLICY, FAKE_SERVER, RawSession, cli, proxy_argv


def test_a_dry_run_halting_on_an_unknown_outcome_does_not_give_drift_advice(tmp_path):
    manifest, journal, state = tmp_path / "synartesis.yaml", tmp_path / "j.db", tmp_path / "kv.json"
    manifest.write_text(FAKE_POLICY)
    state.write_text(json.dumps({"k0": "v0", "k1": "v1"}))
    argv = proxy_argv("kv", manifest, journal, [*FAKE_SERVER, "--state", str(state)], "--call-timeout", "1")
    with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION="one")) as s:
        s.handshake()
        assert not s.call(1, "put", {"key": "k0", "value": "a"}).get("isError")
        assert s.call(2, "slow_put", {"key": "k1", "value": "c", "delay": 3}, timeout=10).get("isError")  # timed out: unknown
    r = cli("undo", "--dry-run", "--manifest", str(manifest), "--journal", str(journal))
    assert r.returncode == 1 and "outcome unknown" in r.stdout, r.stdout
    assert "steps over this action" in r.stdout, r.stdout
    assert "to see what would be overwritten" not in r.stdout, r.stdout
    assert "put the resource back the way the run left it" not in r.stdout, r.stdout
