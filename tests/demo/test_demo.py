"""`synartesis demo`: the whole loop, run as a user runs it (a subprocess), plus proof that
its checks bite (a demo whose undo cannot restore a field fails instead of claiming success)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import helpers
import pytest

from synartesis.services import demo as demo_service
from synartesis.services.demo import describe_changes, run_demo


def test_demo_runs_the_whole_loop_and_exits_0(tmp_path: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "160", "TMPDIR": str(tmp_path)}
    proc = helpers.run([sys.executable, "-m", "synartesis", "demo"], capture_output=True,
                          text=True, encoding="utf-8", timeout=600, env=env, cwd=tmp_path)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    for n in range(1, 7):
        assert f"Step {n}" in out
    for line in (
        "crm.update_customer",
        "$ synartesis list",
        "$ synartesis undo",
        "--dry-run",
        "would call",
        "✓ the store is byte-identical to before the agent ran",
        "✓ `undo` refuses (exit 1) and says drift",
        "✓ it shows both values: what the run left and what is there now",
        "Grace called: keep her on enterprise",
        "✓ the call is held (isError, names the approve command)",
        "$ synartesis approve",
        "✓ the retry goes through",
        "All 6 steps behaved as shown.",
    ):
        assert line in out, line
    assert "✗" not in out
    # the approve command it shows running is the one the proxy told the agent to ask for
    # (new user round 9: it showed one and ran another)
    told = next(ln for ln in out.splitlines() if "│" in ln and re.search(r"synartesis approve [0-9a-f]{8} ", ln))
    ran = next(ln for ln in out.splitlines() if ln.startswith("$ synartesis approve"))
    assert ran.removeprefix("$ synartesis ") == told.split(" synartesis ", 1)[1].strip(), (told, ran)
    # the approve line `gates` prints names the demo's journal: copied into a shell without the
    # demo's SYNARTESIS_HOME it would look in the user's own journal (new user round 15, #6)
    gates_line = next(ln for ln in out.splitlines() if "approve one:" in ln)
    assert "--journal " in gates_line, gates_line
    # The temporary folder is removed afterwards.
    assert not list(tmp_path.glob("synartesis-demo-*"))
    # and it says so, first and last: the commands it printed name that folder (new user round
    # 31, #11: they were copyable, then the folder was gone without a word)
    folder = next(ln for ln in out.splitlines() if ln.startswith("Demo folder: "))
    assert "deleted when the demo ends (--keep keeps it)" in folder, folder
    assert "The demo folder was deleted, so the commands above that name it no longer work" in out, out[-600:]


def test_demo_fails_when_a_step_does_not_behave(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy whose update inverse only restores the plan cannot bring c_002's email back:
    the demo must notice at step 4 and stop, not claim the data is back."""
    real = demo_service.demo_policy_text

    def broken(python: str, store: Path) -> str:
        text = real(python, store)
        needle = '        email: "$snapshot.email"\n'
        assert needle in text
        return text.replace(needle, "", 1)

    monkeypatch.setattr(demo_service, "demo_policy_text", broken)
    seen: list[int] = []
    work = tmp_path / "demo"
    work.mkdir()
    result = run_demo(work, on_step=lambda step: seen.append(step.number))
    assert not result.ok
    assert seen == [1, 2, 3, 4]
    failed = [c.what for c in result.steps[-1].checks if not c.ok]
    assert "the store is byte-identical to before the agent ran" in failed


def test_describe_changes() -> None:
    before = {"customers": {"c_001": {"id": "c_001", "name": "Ada", "plan": "pro"},
                            "c_002": {"id": "c_002", "name": "Grace", "plan": "free"}},
              "outbox": []}
    after = json.loads(json.dumps(before))
    after["customers"]["c_001"]["plan"] = "free"
    del after["customers"]["c_002"]
    after["customers"]["c_003"] = {"id": "c_003", "name": "Alan", "plan": "free"}
    after["outbox"].append({"id": "m_001"})
    assert describe_changes(before, after) == [
        "c_001 Ada: plan 'pro' → 'free'",
        "c_002 Grace: removed",
        "c_003 Alan: added (free)",
        "outbox: +1 message(s)",
    ]
    assert describe_changes(before, before) == []


def test_a_command_the_demo_shows_is_never_broken_across_lines_when_piped() -> None:
    """A new user's round 8: piped, the demo wrapped at 80 columns and split the copyable
    `synartesis approve ID --journal PATH` in two."""
    import io

    from synartesis.cli.demo_cmds import _render_step, demo_console
    from synartesis.services.demo import CommandRun, DemoStep

    command = ("synartesis approve 1e1983ae-5b7c-4c1d-9a51-2f0e6b1d7c44 --journal "
               "/tmp/synartesis-demo-k2j4h5g6/journal.db")
    step = DemoStep(6, "An irreversible call is held until a person approves it")
    step.say(f"  │ held: send_email cannot be undone; a person approves it with: {command}")
    step.ran(CommandRun(command, 0, f"1 waiting: {command}"))
    out = io.StringIO()
    _render_step(demo_console(file=out, width=80, no_color=True), step)
    lines = out.getvalue().splitlines()
    assert sum(command in line for line in lines) == 3, out.getvalue()
