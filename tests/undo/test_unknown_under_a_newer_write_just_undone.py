"""Adversarial review 16, F5: write k1, a write of k1 whose outcome is unknown (no answer within
the call timeout), write k1 again. Undo reverted the newest write (verified), then halted on the
unknown one: "a newer call still in effect changed the same resource since", naming the write it
had just undone (its row was not settled yet). What the walk reverted no longer stands over it:
the unknown call is settled by its read (found as before it: nothing to undo) and the undo goes
on, as a second undo did."""

from __future__ import annotations

import json
import os

from helpers import RawSession, cli, kv_proxy


def test_undo_settles_an_unknown_call_once_the_newer_write_over_it_is_undone(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    argv = [*argv[:argv.index("--")], "--call-timeout", "2", *argv[argv.index("--"):]]
    with RawSession(argv, env={**os.environ, "FAKE_HANG": "slow_put"}) as s:
        s.handshake()
        assert not s.call(1, "put", {"key": "k1", "value": "n1"}).get("isError")
        s.call(2, "slow_put", {"key": "k1", "value": "n2", "delay": 0})  # never answered: unknown
        assert not s.call(3, "put", {"key": "k1", "value": "n3"}).get("isError")
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    plan = cli("undo", "--dry-run", *flags)
    assert plan.returncode == 0 and "newer call" not in plan.stdout, plan.stdout
    done = cli("undo", *flags)
    assert done.returncode == 0 and "newer call" not in done.stdout, done.stdout + done.stderr
    assert json.loads(state.read_text())["k1"] == "v1"
