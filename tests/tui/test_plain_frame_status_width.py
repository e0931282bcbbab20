"""A reviewer's finding: piped, the console's frame lost its columns on a run that ended
`compensated (unverified: 1)` (the status column was 11 wide). The column is now as wide as the
widest status shown. Real proxy, the key-value server with a compensation it cannot read back."""

from __future__ import annotations

from helpers import FAKE_BLIND_POLICY, cli
from test_tui import World


def test_the_piped_frame_keeps_its_columns_past_a_long_status(tmp_path):
    w = World(tmp_path)
    w.manifest.write_text(FAKE_BLIND_POLICY)  # kv.put is a compensation with no read
    w.session([("put", {"key": "k0", "value": "agent"})], "undone-agent")
    flags = ["--manifest", str(w.manifest), "--journal", str(w.journal)]
    done = cli("undo", "undone-agent", *flags)
    assert done.returncode == 0 and "compensated (unverified: 1)" in done.stdout, done.stdout
    w.session([("put", {"key": "k1", "value": "agent"})], "other-agent")
    frame = cli(*flags)
    assert frame.returncode == 0, frame.stderr
    rows = [ln for ln in frame.stdout.splitlines() if "-agent" in ln or "└" in ln]
    assert len(rows) == 4, frame.stdout
    assert any("compensated (unverified: 1) " in r for r in rows), rows
    # every row's column after the status starts at the same place: the sessions' agent names,
    # the runs' server names
    sessions = [r for r in rows if "-agent" in r]
    assert len({r.index(name) for r, name in zip(sessions, ("other-agent", "undone-agent"))}) == 1, sessions
    runs = [r for r in rows if "└" in r]
    assert len({r.index(" kv ") for r in runs}) == 1, runs
