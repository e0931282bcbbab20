"""Fixtures for the window's tests: a files root with the shipped filesystem policy, a scripted
model, and ``synartesis desktop`` itself; every process is stopped in the finaliser."""

from __future__ import annotations

import pytest
from desktopkit import FS_ENTRY, Desktop, ScriptedModel, write_fs_policy


@pytest.fixture
def files_root(tmp_path, fake_home):
    """A folder served by the real filesystem server under the policy name ``files``."""
    if not FS_ENTRY.exists():
        pytest.fail(f"{FS_ENTRY} is missing: run npm ci --prefix .servers first")
    root = tmp_path / "root"
    root.mkdir()
    write_fs_policy(fake_home, root)
    return root


@pytest.fixture
def open_window(tmp_path):
    """``open_window(turns, *args)`` → (Desktop, ScriptedModel) with the custom profile pointed at
    the scripted model; both are stopped when the test ends."""
    started: list = []

    def start(turns: list[dict], *args: str, profile: str = "custom"):
        model = ScriptedModel(turns)
        started.append(model)
        desk = Desktop(*args, cwd=tmp_path)
        started.append(desk)
        base = model.root if profile == "anthropic" else model.base
        desk.put(f"/api/profiles/{profile}", {"baseUrl": base, "model": "scripted"})
        return desk, model

    yield start
    for thing in reversed(started):
        if isinstance(thing, Desktop):
            thing.stop()
        else:
            thing.close()
