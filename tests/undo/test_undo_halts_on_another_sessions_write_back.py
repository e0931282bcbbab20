"""Adversarial review 17, F4 (ABA): session A wrote k0 = A; session C then wrote k0 = C and
k0 = A again. Undoing A found "state matches" (by coincidence) and put v0 back, wiping C's two
writes unnamed. A write of another session to the resource after this one, still in effect,
halts the undo and is named, drift or not; --force --yes overwrites as asked."""

from __future__ import annotations

import json
import os

from helpers import RawSession, cli, kv_proxy, open_journal


def test_undo_halts_when_another_session_wrote_the_resource_back_to_the_same_value(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    for name, values in (("sa", ["A"]), ("sc", ["C", "A"])):
        with RawSession(argv, env=dict(os.environ, SYNARTESIS_SESSION=name)) as s:
            s.handshake()
            for n, v in enumerate(values, 1):
                assert not s.call(n, "put", {"key": "k0", "value": v}).get("isError")
    plan = cli("undo", "sa", "--dry-run", *flags)
    assert plan.returncode == 1 and "another session wrote this resource" in plan.stdout, plan.stdout
    halted = cli("undo", "sa", *flags)
    assert halted.returncode == 1 and "of session s-" in halted.stdout, halted.stdout + halted.stderr
    assert json.loads(state.read_text())["k0"] == "A"
    with open_journal(journal) as j:
        assert {a.status for r in j.list_runs() for a in j.actions(r.id)} == {"applied"}
    preview = cli("undo", "sa", "--force", *flags)  # lists what --force --yes would remove
    assert preview.returncode == 1 and "of session s-" in preview.stdout and "nothing has drifted" not in preview.stdout, \
        preview.stdout
    assert json.loads(state.read_text())["k0"] == "A"
    forced = cli("undo", "sa", "--force", "--yes", *flags)
    assert forced.returncode == 0 and json.loads(state.read_text())["k0"] == "v0", forced.stdout + forced.stderr
