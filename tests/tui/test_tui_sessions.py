"""The console speaks sessions first: a client process's runs folded under its session, the
session's timeline across runs, undo of a whole session, honest statuses, and what a held call
would change (the real proxy and the small kv server)."""

from __future__ import annotations

import pytest
from helpers import FAKE_BLIND_POLICY, FAKE_POLICY, RawSession, open_journal
from test_tui import World, run, screen_text, until

from synartesis.tui.screens import JobScreen, TextScreen

HELD_PUT = FAKE_POLICY.replace('''  - match: "kv.put"
    class: reversible''', '''  - match: "kv.put"
    class: reversible
    gate: always''')


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path)


def _two_runs_of_one_process(world: World) -> None:
    for key in ("k0", "k1"):
        with RawSession(world.argv) as s:  # no SYNARTESIS_SESSION: grouped by this process
            s.handshake("claude-code")
            s.call(1, "put", {"key": key, "value": f"agent {key}"})
            s.close()


def test_a_session_folds_its_runs_and_undoes_them_together(world):
    _two_runs_of_one_process(world)
    before = {"k0": "v0", "k1": "v1"}
    with open_journal(world.journal) as j:
        runs = j.list_runs()
    assert len({r.session_id for r in runs}) == 1

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            lines = screen_text(app).splitlines()
            assert "1 session,  2 runs" in lines[0]
            at = next(i for i, ln in enumerate(lines) if runs[0].session_id[:10] in ln)
            assert "claude-code" in lines[at] and "2 runs · 2 actions" in lines[at]
            assert runs[0].id[:8] in lines[at + 1] and runs[1].id[:8] in lines[at + 2]  # folded in, newest first
            await pilot.press("enter")  # the session's timeline: both runs, in the order the agent acted
            text = screen_text(app)
            assert app.view == "run" and f"session {runs[0].session_id[:10]}" in text.splitlines()[0]
            order = [ln for ln in text.splitlines() if "kv.put" in ln and "applied" in ln]
            assert [ln.strip(" ❯")[:4] for ln in order] == [runs[1].id[:4], runs[0].id[:4]]
            await pilot.press("escape", "home", "u")
            job = app.screen
            assert isinstance(job, JobScreen) and "session" in job._title
            await until(pilot, lambda: job.state == "confirm", what="the plan")
            assert "2 would be reverted" in job.body_text
            await pilot.press("y")
            await until(pilot, lambda: job.state == "done", what="the undo")
            assert job.error is None, job.body_text
            assert "rolled_back · 2 reverted" in job.body_text
            await pilot.press("escape")
            await until(pilot, lambda: screen_text(app).count("rolled_back") >= 3, what="the new statuses")

    run(go())
    assert world.kv() == before


def test_statuses_say_what_was_checked(world):
    world.session([("put", {"key": "k0", "value": "agent"})])
    with open_journal(world.journal) as j:
        run_id = j.list_runs()[0].id
        for a in j.actions(run_id):  # as a compensating undo leaves it: nothing in effect
            j.set_action_status(a.id, "rolled_back", reverted="unverified")
        j.set_run_status(run_id, "compensated", 2)

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert screen_text(app).count("compensated (unverified: 2)") == 2  # the session and its run

    run(go())


def test_a_held_call_shows_what_it_would_change(tmp_path):
    world = World(tmp_path)
    world.manifest.write_text(HELD_PUT)
    [held] = world.session([("put", {"key": "k0", "value": "new"})])
    assert held["isError"]

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("g", "f")
            screen = app.screen
            assert isinstance(screen, TextScreen)
            await until(pilot, lambda: "in value:" in screen.body_text, what="the current state")
            assert "-v0" in screen.body_text and "+new" in screen.body_text

    run(go())
    assert world.kv()["k0"] == "v0"  # only read


def test_the_consoles_own_undo_of_a_compensation_it_cannot_check_ends_unverified(tmp_path):
    world = World(tmp_path)
    world.manifest.write_text(FAKE_BLIND_POLICY)
    world.session([("put", {"key": "k0", "value": "agent"})])

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("home", "u")
            job = app.screen
            assert isinstance(job, JobScreen)
            await until(pilot, lambda: job.state == "confirm", what="the plan")
            await pilot.press("y")
            await until(pilot, lambda: job.state == "done", what="the undo")
            assert job.error is None and "compensated (unverified: 1)" in job.body_text, job.body_text
            assert "[unverified: " in job.body_text
            # the paragraph the CLI prints, word for word (stop 19 left the console without it)
            said = " ".join(job.body_text.split())
            assert ("1 inverse (kv.put) was sent but could not be checked by reading the resource back" in said
                    and "so marked unverified: check by hand." in said), said
            await pilot.press("escape")
            await until(pilot, lambda: screen_text(app).count("compensated (unverified: 1)") >= 2,
                        what="the session and its run, honestly")
            assert "rolled_back" not in screen_text(app)

    run(go())
    assert world.kv()["k0"] == "v0"
