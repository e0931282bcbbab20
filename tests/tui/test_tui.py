"""The console (`synartesis` with no command), driven headless with textual's pilot against
journals written by the real proxy (`synartesis proxy` subprocess) over the key-value server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import (
    FAKE_POLICY,
    FAKE_SERVER,
    RawSession,
    cli,
    open_journal,
    proxy_argv,
    run_async,
)

from synartesis.tui.app import KEYS, ConsoleApp
from synartesis.tui.screens import HELP, JOB_KEYS, JobScreen, ReasonScreen, TextScreen

# -- fixtures: real journals from the real proxy ---------------------------------------------

class World:
    """A policy, a journal and the key-value server's state file, all under ``tmp_path``."""

    def __init__(self, root: Path, seed: dict | None = None) -> None:
        self.manifest = root / "synartesis.yaml"
        self.journal = root / "journal.db"
        self.state = root / "kv.json"
        self.manifest.write_text(FAKE_POLICY)
        self.state.write_text(json.dumps(seed if seed is not None else {"k0": "v0", "k1": "v1"},
                                         sort_keys=True, indent=1))
        self.argv = proxy_argv("kv", self.manifest, self.journal, [*FAKE_SERVER, "--state", str(self.state)])

    def session(self, calls: list[tuple[str, dict]], name: str = "test-agent") -> list[dict]:
        """One agent session (one run) through the real proxy; returns the tool results. Each
        name is its own agent session (as another client process would be)."""
        with RawSession(self.argv, env=dict(os.environ, SYNARTESIS_SESSION=name)) as s:
            s.handshake(name)
            out = [s.call(i + 1, tool, args) for i, (tool, args) in enumerate(calls)]
            s.close()
        return out

    def kv(self) -> dict:
        return json.loads(self.state.read_text())

    def app(self, **kw) -> ConsoleApp:
        return ConsoleApp(self.journal, self.manifest, "tester", poll=kw.pop("poll", 0.1), **kw)


def run(coro):
    return run_async(coro, timeout=240)


def screen_text(app) -> str:
    """What the terminal shows now, as plain text (one line per row)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips)


async def until(pilot, check, timeout: float = 60.0, what: str = "condition"):
    """Let the app run until ``check()`` is true (workers start real servers, so allow time)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        await pilot.pause(0.05)
        if check():
            return
    raise AssertionError(f"timed out waiting for {what}; screen:\n{screen_text(pilot.app)}")


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path)


# -- runs and timeline ---------------------------------------------------------------------------

def test_every_status_line_fits_80_columns():
    lines = list(KEYS.values()) + list(JOB_KEYS.values())
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert all(len(line) <= 78 for line in HELP.splitlines())



def test_open_a_run_shows_its_timeline_and_esc_goes_back(world):
    world.session([("get", {"key": "k0"}), ("put", {"key": "k0", "value": "agent"}),
                   ("put", {"key": "k1", "value": 1}), ("delete", {"key": "k1"})])
    with open_journal(world.journal) as j:
        run_id = j.list_runs()[0].id

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            text = screen_text(app)
            assert run_id[:8] in text and "test-agent" in text and "4 actions · 1 held" in text
            assert KEYS["runs"] in text  # the status line says what the keys do
            await pilot.press("enter")
            assert app.view == "run"
            text = screen_text(app)
            # seq, server.tool, class, status, prior state, resolved inverse
            assert "kv.get" in text and "readonly" in text
            lines = [ln for ln in text.splitlines() if "kv.put" in ln and "applied" in ln]
            assert len(lines) == 2 and all("reversible" in ln and "prior captured" in ln for ln in lines)
            assert 'undo: kv.put {"key":"k0","value":"v0"}' in text
            assert 'undo: kv.put {"key":"k1","value":"v1"}' in text
            held = next(ln for ln in text.splitlines() if "kv.delete" in ln)
            assert "gated" in held and "irreversible" in held and "prior none" in held
            assert "undo: none (never applied)" in text
            assert KEYS["run"] in text
            # f expands an action: arguments, result and snapshot
            await pilot.press("down", "f")
            assert isinstance(app.screen, TextScreen)
            body = app.screen.body_text
            assert '"value": "agent"' in body  # arguments
            assert '"ok": true' in body  # result
            assert "snapshot" in body and '"value": "v0"' in body  # the state before
            await pilot.press("escape")
            assert app.view == "run" and not isinstance(app.screen, TextScreen)
            await pilot.press("escape")
            assert app.view == "runs"
            assert run_id[:8] in screen_text(app)
            await pilot.press("question_mark")
            assert isinstance(app.screen, TextScreen) and "live check" in app.screen.body_text
            await pilot.press("escape", "q")
        assert app.return_code in (0, None)

    run(go())


# -- held calls ----------------------------------------------------------------------------------

def _held_world(world: World, keys: list[str]) -> None:
    """A run holding one ``kv.delete`` per key (kv.delete has no rule: irreversible, held)."""
    results = world.session([("delete", {"key": k}) for k in keys])
    assert all(r.get("isError") for r in results)


def test_approve_and_deny_held_calls_are_recorded_in_the_journal(world):
    _held_world(world, ["k0", "k1"])

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert "2 awaiting approval" in screen_text(app)
            await pilot.press("g")
            text = screen_text(app)
            assert app.view == "held" and KEYS["held"] in text
            assert 'kv.delete {"key":"k0"}' in text and 'kv.delete {"key":"k1"}' in text
            assert "why:" in text  # each with its reason
            await pilot.press("a")  # approve the first (k0)
            await until(pilot, lambda: 'kv.delete {"key":"k0"}' not in screen_text(app), what="the approval")
            assert "approved kv.delete" in screen_text(app)
            await pilot.press("d")  # deny the other: asks for a reason
            assert isinstance(app.screen, ReasonScreen)
            await until(pilot, lambda: app.screen.ready, what="the reason prompt")
            await pilot.press(*"not today")
            await pilot.press("enter")
            await until(pilot, lambda: "Nothing is waiting for a decision." in screen_text(app), what="the denial")
            assert "denied kv.delete" in screen_text(app)

    run(go())
    with open_journal(world.journal) as j:
        rows = {json.loads(json.dumps(j.get_json(a.args_ref)))["key"]: a for a in j.actions(j.list_runs()[0].id)}
    assert rows["k0"].status == "approved" and rows["k0"].decided_by == "tester"
    assert rows["k1"].status == "denied" and rows["k1"].decided_by == "tester"
    assert rows["k1"].decision_note == "not today"
    # the approval really lets the agent's retry through
    world.session([("delete", {"key": "k0"})])
    assert "k0" not in world.kv() and "k1" in world.kv()


def test_deny_cancelled_with_esc_records_nothing(world):
    _held_world(world, ["k0"])

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("g", "d")
            assert isinstance(app.screen, ReasonScreen)
            await until(pilot, lambda: app.screen.ready, what="the reason prompt")
            await pilot.press("escape")
            await pilot.pause()
            assert "nothing was recorded" in screen_text(app)

    run(go())
    with open_journal(world.journal) as j:
        assert [a.status for a in j.list_gated()] == ["gated"]


# -- undo, preview, live check -------------------------------------------------------------------

def test_undo_shows_the_plan_then_n_changes_nothing_and_y_undoes(world):
    before = world.state.read_bytes()
    world.session([("put", {"key": "k0", "value": "agent"}), ("put", {"key": "k1", "value": "agent1"})])
    after = world.state.read_bytes()
    assert after != before

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("u")
            assert isinstance(app.screen, JobScreen)
            job = app.screen
            await until(pilot, lambda: job.state == "confirm", what="the plan")
            body = job.body_text
            assert "DRY RUN" in body and "would call kv.put" in body and "2 would be reverted" in body
            assert "y undo" in screen_text(app)
            await pilot.press("n")
            await pilot.pause()
            assert not isinstance(app.screen, JobScreen)
            assert "left alone" in screen_text(app)
            assert world.state.read_bytes() == after  # n changed nothing
            with open_journal(world.journal) as j:
                assert j.list_runs()[0].status == "complete" and not j.undos(j.list_runs()[0].id)

            await pilot.press("u")
            job = app.screen
            assert isinstance(job, JobScreen)
            await until(pilot, lambda: job.state == "confirm", what="the plan")
            await pilot.press("y", "y", "u", "y")  # leaning on the keys
            await until(pilot, lambda: job.state == "done", what="the undo")
            assert job.error is None, job.error
            assert "rolled_back · 2 reverted" in job.body_text
            await pilot.press("escape")
            await pilot.pause()
            assert "rolled_back" in screen_text(app)

    run(go())
    assert world.state.read_bytes() == before  # the data is back
    with open_journal(world.journal) as j:
        run_row = j.list_runs()[0]
        assert run_row.status == "rolled_back"
        assert len(j.undos(run_row.id)) == 1  # one undo, however many keys were pressed


def test_preview_never_writes(world):
    world.session([("put", {"key": "k0", "value": "agent"})])
    after = world.state.read_bytes()
    log = world.state.parent / "calls.jsonl"
    size_before = world.journal.stat().st_size

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("p")
            job = app.screen
            assert isinstance(job, JobScreen) and job.kind == "preview"
            await until(pilot, lambda: job.state == "done", what="the preview")
            assert "DRY RUN" in job.body_text and "1 would be reverted · nothing was changed · would end rolled_back" in job.body_text
            await pilot.press("y")  # y means nothing in a preview
            await pilot.pause(0.3)
            assert job.state == "done"
            await pilot.press("escape")

    run(go())
    assert world.state.read_bytes() == after
    assert not log.exists()
    with open_journal(world.journal) as j:
        r = j.list_runs()[0]
        assert r.status == "complete" and not j.undos(r.id)
        assert [a.status for a in j.actions(r.id)] == ["applied"]
        assert j.audit(r.id).ok
    del size_before


def test_live_check_reports_a_drifted_write_with_both_values(world):
    world.session([("put", {"key": "k0", "value": "agent"}), ("put", {"key": "k1", "value": "agent1"})])
    kv = world.kv()
    kv["k0"] = "a human edited this"
    world.state.write_text(json.dumps(kv, sort_keys=True, indent=1))

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("enter", "l")  # from the open run's timeline
            job = app.screen
            assert isinstance(job, JobScreen) and job.kind == "live"
            await until(pilot, lambda: job.state == "done", what="the live check")
            body = job.body_text
            assert job.error is None, body
            drifted = [ln for ln in body.splitlines() if "drifted" in ln and "kv.put" in ln]
            assert len(drifted) == 1 and drifted[0].split()[0].endswith(":1")  # run:seq, as in a session's timeline
            assert "expected:" in body and '"agent"' in body
            assert "actual:" in body and "a human edited this" in body
            assert any("matches" in ln and ln.split()[0].endswith(":2") for ln in body.splitlines())
            assert "1 drifted, 1 matches" in screen_text(app)

    run(go())
    assert world.kv()["k0"] == "a human edited this"  # a check writes nothing


def test_undo_with_nothing_to_undo_does_not_ask(world):
    world.session([("get", {"key": "k0"})])

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("u")
            job = app.screen
            await until(pilot, lambda: job.state == "done", what="the plan")
            # the CLI's words (new user round 9: the console said "no undo to do", "nothing was changed")
            assert "nothing to undo in session" in job.body_text and "1 readonly" in job.body_text, job.body_text
            assert "RESULT  nothing undone (nothing was sent)" in job.body_text, job.body_text
            await pilot.press("y")
            await pilot.pause(0.2)
            assert job.state == "done" and job.result is None

    run(go())
    with open_journal(world.journal) as j:
        r = j.list_runs()[0]
        assert r.status == "complete" and not j.undos(r.id)
    cli_says = " ".join(cli("undo", r.session_id, "--manifest", str(world.manifest), "--journal", str(world.journal)
                            ).stdout.split())
    assert "nothing to undo in session" in cli_says and "R E S U L T nothing undone (nothing was sent)" in cli_says, cli_says


def test_undo_of_an_active_run_is_refused_with_the_reason(world):
    with RawSession(world.argv) as s:
        s.handshake()
        s.call(1, "put", {"key": "k0", "value": "live"})

        async def go():
            app = world.app()
            async with app.run_test(size=(80, 24)) as pilot:
                await pilot.pause()
                assert "active" in screen_text(app)
                await pilot.press("u")
                job = app.screen
                await until(pilot, lambda: job.state == "done", what="the refusal")
                assert "still active" in job.body_text
                # the console has no --force (a new user's round 8): it says what works here
                said = " ".join(job.body_text.split())
                assert "--force" not in said.split("synartesis undo")[0] and "press u again" in said
                assert "synartesis undo " in said and "--force` in a terminal" in said
                await pilot.press("y")
                await pilot.pause(0.2)
                assert job.state == "done"

        run(go())
        s.close()
    assert world.kv()["k0"] == "live"


# -- live follow, missing journal, long lists -------------------------------------------------

def test_waits_for_a_missing_journal_then_follows_new_runs_and_held_calls(world):
    assert not world.journal.exists()

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.3)
            text = screen_text(app)
            assert "no journal at" in text and str(world.journal)[:30] in text.replace("\n", "")
            assert not world.journal.exists()  # the console never creates one
            # an agent starts working: the run appears without a key press
            await asyncio.to_thread(world.session, [("put", {"key": "k0", "value": "x"})], "first-agent")
            await until(pilot, lambda: "first-agent" in screen_text(app), what="the first run")
            await asyncio.to_thread(world.session, [("delete", {"key": "k1"})], "second-agent")
            await until(pilot, lambda: "second-agent" in screen_text(app) and "1 awaiting approval" in screen_text(app),
                        what="the second run and its held call")
            # the new run arrived above the selected one: the selection stays on the same run
            assert app.pager.selected.data.label == "first-agent"
            assert next(ln for ln in screen_text(app).splitlines() if ln.startswith("❯")).count("first-agent") == 1
            await pilot.press("g")
            assert 'kv.delete {"key":"k1"}' in screen_text(app)

    run(go())


def test_an_open_timeline_follows_the_agent_live(world):
    with RawSession(world.argv) as s:
        s.handshake("busy-agent")
        s.call(1, "put", {"key": "k0", "value": "one"})

        async def go():
            app = world.app()
            async with app.run_test(size=(80, 24)) as pilot:
                await pilot.pause()
                assert "active" in screen_text(app) and "1 live" in screen_text(app)
                await pilot.press("enter")
                assert app.view == "run" and len(app.actions) == 1
                await asyncio.to_thread(s.call, 2, "put", {"key": "k1", "value": "two"})
                await until(pilot, lambda: len(app.actions) == 2 and 'undo: kv.put {"key":"k1","value":"v1"}'
                            in screen_text(app), what="the second action")
                await asyncio.to_thread(s.call, 3, "delete", {"key": "k1"})
                await until(pilot, lambda: "actions · 1 held" in screen_text(app), what="the held call")
                # decide it right in the timeline
                await pilot.press("end", "a")
                await until(pilot, lambda: "approved kv.delete" in screen_text(app), what="the approval")

        run(go())
        s.close()
    with open_journal(world.journal) as j:
        assert [a.status for a in j.actions(j.list_runs()[0].id)] == ["applied", "applied", "approved"]


def test_esc_cancels_a_preview_and_the_next_one_can_start(world):
    world.session([("put", {"key": "k0", "value": "agent"})])
    after = world.state.read_bytes()

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("p", "escape")
            await pilot.pause()
            assert not isinstance(app.screen, JobScreen) and app.busy is None
            await pilot.press("p")
            job = app.screen
            assert isinstance(job, JobScreen)
            await until(pilot, lambda: job.state == "done", what="the second preview")
            assert "1 would be reverted" in job.body_text

    run(go())
    assert world.state.read_bytes() == after


def test_a_file_that_is_not_a_journal_is_reported_not_touched(world):
    world.journal.write_bytes(b"this is not sqlite at all\n" * 10)
    before = world.journal.read_bytes()

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.3)
            assert "is not a Synartesis journal" in screen_text(app).replace("\n", " ")
            await pilot.press("g", "u", "r", "q")

    run(go())
    assert world.journal.read_bytes() == before


def test_quit_waits_while_a_real_undo_runs(world):
    world.session([("get", {"key": "k0"})])

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            app.undo_running = True  # as JobScreen sets it between y and the undo's end
            await pilot.press("q")
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert app.is_running and "an undo is running" in screen_text(app)
            app.undo_running = False
            await pilot.press("q")
            await pilot.pause()
            assert not app.is_running

    run(go())


def _many_runs(world: World, n: int) -> None:
    """``n`` runs through the real proxy, ten sessions at a time."""
    done = 0
    while done < n:
        batch = [RawSession(world.argv) for _ in range(min(10, n - done))]
        try:
            for k, s in enumerate(batch):
                s.handshake(f"agent-{done + k:02d}")
            for s in batch:
                s.call(1, "get", {"key": "k0"})
        finally:
            for s in batch:
                try:
                    s.close()
                except subprocess.TimeoutExpired:
                    s.proc.kill()
        done += len(batch)


def test_forty_runs_in_24_rows_keep_the_selection_visible(world):
    _many_runs(world, 40)
    with open_journal(world.journal) as j:
        runs = j.list_runs()
    assert len(runs) == 40

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            text = screen_text(app)
            assert len(text.splitlines()) == 24
            assert "more below" in text and "more above" not in text
            # one client process started them all: one session, its 40 runs folded in below it
            assert app.pager.selected.key == runs[0].session_id
            for step in range(40):
                await pilot.press("down")
                sel = app.pager.selected
                assert sel is not None and sel.key == runs[step].id
                text = screen_text(app)
                line = next((ln for ln in text.splitlines() if ln.startswith("❯")), None)
                assert line is not None and runs[step].id[:8] in line, text
            assert "more above" in text and "more below" not in text
            await pilot.press("home")
            assert "❯ " + runs[0].session_id[:10] in screen_text(app)
            await pilot.press("pagedown")
            line = next(ln for ln in screen_text(app).splitlines() if ln.startswith("❯"))
            assert app.pager.selected.key[:8] in line

    run(go())


def _colours(app) -> set[tuple[int, int, int]]:
    """Every colour (foreground and background) the current screen is drawn with."""
    out = set()
    for strip in app.screen._compositor.render_strips():
        for seg in strip:
            for colour in (seg.style.color, seg.style.bgcolor) if seg.style else ():
                if colour is not None:
                    out.add(tuple(colour.get_truecolor()))
    return out


@pytest.mark.parametrize("no_color", [True, False])
def test_no_color_degrades_to_plain(world, monkeypatch, no_color):
    _held_world(world, ["k0"])
    if not no_color:
        monkeypatch.delenv("NO_COLOR", raising=False)

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("enter")
            colours = _colours(app)
            assert colours
            grey = all(r == g == b for r, g, b in colours)
            assert app.no_color is no_color and grey is no_color, colours
            # states stay readable without colour: words and a cursor mark
            text = screen_text(app)
            assert "❯" in text and "gated" in text and "irreversible" in text

    run(go())


# -- clients -------------------------------------------------------------------------------------

CURSOR = ('{\n  "mcpServers": {\n    "mem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},\n'
          '    "odd": {"command": "my-server"}\n  }\n}\n')


def test_clients_view_shows_the_same_rows_as_status(world, fake_home, tmp_path):
    from installkit import install, make_env, place

    from synartesis.paths import Env
    from synartesis.services.status import collect_status

    place(fake_home, "cursor", CURSOR)
    world.session([("get", {"key": "k0"})])

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("c")
            await until(pilot, lambda: app.clients is not None and not app.clients_loading, what="the client scan")
            text = screen_text(app)
            assert app.view == "clients" and KEYS["clients"] in text
            expected = collect_status(Env.current())
            assert [(i.data.name, i.data.state, i.data.covered) for i in app.pager.items] == \
                   [(r.name, r.state, r.covered) for r in expected.rows]
            assert "✗ Cursor" in text and "mem" in text and "odd" in text and "not-wrapped" in text
            assert f"0 of {len(expected.rows)} server entries covered" in text
            # install, then look again: wrapped, with the policy's source, provenance and TODO count
            await asyncio.to_thread(install, make_env(fake_home), tmp_path)
            await pilot.press("c")
            await until(pilot, lambda: not app.clients_loading and "wrapped" in screen_text(app)
                        and "✓" in screen_text(app), what="the second scan")
            text = screen_text(app)
            after = collect_status(Env.current())
            assert [(i.data.name, i.data.state, i.data.covered) for i in app.pager.items] == \
                   [(r.name, r.state, r.covered) for r in after.rows]
            mem = next(ln for ln in text.splitlines() if " mem" in ln)
            assert mem.lstrip("❯ ").startswith("✓") and "wrapped" in mem
            assert "policy shipped memory" in text and "held for approval" in text
            await pilot.press("escape")
            assert app.view == "runs"

    run(go())


# -- issue 9 item 16: what a new user found in tmux ---------------------------------------------

def test_the_run_page_counts_its_own_held_calls_not_everyones(world):
    _held_world(world, ["k0"])
    _held_world(world, ["k1", "k2"])  # the newest run holds two

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert "3 awaiting approval" in screen_text(app)  # the runs page: every run's
            await pilot.press("down", "down", "enter")  # below the session, the older run: one held call
            header = screen_text(app).splitlines()[0]
            assert "1 action · 1 held (3 in all)" in header, header
            await pilot.press("escape", "home", "down", "enter")  # the newest: two
            header = screen_text(app).splitlines()[0]
            assert "2 actions · 2 held (3 in all)" in header and "3 held" not in header, header

    run(go())


def test_a_notice_never_stays_behind_on_another_view(world, fake_home):
    from installkit import place
    place(fake_home, "cursor", CURSOR)
    world.session([("put", {"key": "k0", "value": "agent"})])
    _held_world(world, ["k1"])

    def notice_line(app) -> str:
        return screen_text(app).splitlines()[-2]

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("c")  # the clients scan reports on the clients view
            await until(pilot, lambda: "server entries covered" in notice_line(app), what="the scan")
            await pilot.press("g")
            assert app.view == "held" and notice_line(app).strip() == "", notice_line(app)
            await pilot.press("r", "home", "p")  # a preview (of the session) is told on the runs view
            job = app.screen
            await until(pilot, lambda: job.state == "done", what="the preview")
            await pilot.press("escape")
            await until(pilot, lambda: "would be reverted" in notice_line(app), what="the preview's notice")
            await pilot.press("g")
            assert notice_line(app).strip() == "", notice_line(app)

    run(go())


def test_a_refresh_keeps_the_selection_on_the_same_run_by_id(world):
    for name in ("a1", "a2", "a3"):
        world.session([("get", {"key": "k0"})], name)

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("down", "down")  # a3's session and its run, then a2's session
            chosen = app.pager.selected.key
            assert app.pager.selected.data.label == "a2"
            await asyncio.to_thread(world.session, [("get", {"key": "k0"})], "newcomer")
            await until(pilot, lambda: "newcomer" in screen_text(app), what="the new run")
            assert app.pager.selected.key == chosen and app.pager.cursor == 4  # two rows arrived above
            line = next(ln for ln in screen_text(app).splitlines() if ln.startswith("❯"))
            assert "a2" in line

    run(go())


def test_a_held_call_decided_elsewhere_is_said_to_be_gone_not_silently_swapped(world):
    from helpers import cli
    _held_world(world, ["k0", "k1", "k2"])

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("g", "down")
            chosen = app.pager.selected.data.row
            assert json.loads(json.dumps(app.pager.selected.data.args)) == {"key": "k1"}
            denied = await asyncio.to_thread(cli, "deny", chosen.id[:8], "--by", "other", "--reason", "no",
                                             "--journal", str(world.journal))
            assert denied.returncode == 0, denied.stderr
            await until(pilot, lambda: len(app.held) == 2, what="the refresh")
            text = screen_text(app)
            assert f"kv.delete {chosen.id[:8]} is no longer listed here" in text
            assert app.pager.selected.data.args == {"key": "k2"}  # the neighbour, announced

    run(go())


def test_keys_pressed_before_the_deny_prompt_is_on_screen_never_reach_the_reason(world):
    from textual import events

    _held_world(world, ["k0"])

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("g")
            # typed ahead while the console was busy: d, then x y enter before the prompt is drawn
            for key, char in (("d", "d"), ("x", "x"), ("y", "y"), ("enter", "\r")):
                event = events.Key(key, char)
                event.set_sender(app)
                app._driver.send_message(event)
            await until(pilot, lambda: isinstance(app.screen, ReasonScreen) and app.screen.ready, what="the prompt")
            prompt = app.screen
            await pilot.pause(0.2)
            assert prompt.query_one("#reason").value == "" and prompt.ignored >= 3
            assert isinstance(app.screen, ReasonScreen)  # the early enter denied nothing
            await pilot.press(*"typed after", "enter")
            await until(pilot, lambda: "denied kv.delete" in screen_text(app), what="the denial")

    run(go())
    with open_journal(world.journal) as j:
        (row,) = j.actions(j.list_runs()[0].id)
    assert row.status == "denied" and row.decision_note == "typed after"


def test_the_deny_prompt_opens_while_the_journal_is_still_being_read(world, monkeypatch):
    import threading

    from synartesis.tui import data as data_mod

    _held_world(world, ["k0"])
    release, entered = threading.Event(), threading.Event()
    real = data_mod.read_snapshot
    inside = []  # slow reads still blocked (the proof that the prompt did not wait for one)

    def slow_read(j, *args, **kw):
        inside.append(1)
        entered.set()
        try:
            release.wait(60)  # a journal that takes its time (a busy machine, a large journal)
        finally:
            inside.pop()
        return real(j, *args, **kw)

    async def go():
        app = world.app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("g")
            monkeypatch.setattr(data_mod, "read_snapshot", slow_read)
            app.refresh_data()
            assert await asyncio.to_thread(entered.wait, 30), "the journal read never started"
            await pilot.press("d")
            assert isinstance(app.screen, ReasonScreen) and inside  # opened while the read is blocked
            release.set()
            await until(pilot, lambda: not app.polling, what="the read")
            await until(pilot, lambda: app.screen.ready, what="the prompt")
            await pilot.press("escape")

    try:
        run(go())
    finally:
        release.set()


def test_the_console_modules_import_each_other_one_way():
    """No circle inside synartesis/tui (app → screens → jobs/render/widgets/data), counting
    imports made only for type checking."""
    import ast
    from pathlib import Path

    import synartesis.tui

    folder = Path(synartesis.tui.__file__).parent
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("synartesis.tui."):
                names.add(node.module.rsplit(".", 1)[1])
            elif isinstance(node, ast.Import):
                names.update(a.name.rsplit(".", 1)[1] for a in node.names if a.name.startswith("synartesis.tui."))
        graph[path.stem] = names

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph.get(start, ()))

    circles = sorted(m for m in graph if reaches(m, m, {m}))
    assert circles == [], f"import circles in synartesis/tui through: {circles}"
