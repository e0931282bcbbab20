"""An undo refuses a run whose journal fails its audit (its records cannot be trusted to undo
from), and so does its dry run: adversarial review 19, F12, the dry run skipped the audit,
reported drift and said "the real undo would stop here too", while the real undo refused for
the audit before any step."""

from __future__ import annotations

import json

from helpers import RawSession, cli, kv_proxy, open_journal


def test_undo_and_its_dry_run_both_refuse_a_run_whose_launch_lines_were_edited(tmp_path):
    manifest, journal, state, argv = kv_proxy(tmp_path)
    flags = ["--manifest", str(manifest), "--journal", str(journal)]
    with RawSession(argv) as s:
        s.handshake()
        assert not s.call(1, "put", {"key": "k0", "value": "A"}).get("isError")
    with open_journal(journal) as j:
        [run] = j.list_runs()
        j.conn.execute("UPDATE runs SET servers = ? WHERE id = ?", (json.dumps({"kv": {"command": "sh", "args": []}}), run.id))
    dry = cli("undo", "--dry-run", *flags)
    assert dry.returncode == 1 and "the real undo would refuse" in dry.stderr, dry.stdout + dry.stderr
    real = cli("undo", *flags)
    assert real.returncode == 1 and "fails its audit" in real.stderr, real.stdout + real.stderr
    assert json.loads(state.read_text())["k0"] == "A"
