"""`synartesis` with no command: one full-screen console for runs, held calls, clients and undo
(issue 6; reference-spec §7.3 for the reference's console).

Views: ``runs`` (default: agent sessions, newest activity first, each with its runs folded in),
``run`` (one session's or run's timeline), ``held`` (every call awaiting approval, across runs),
``clients`` (the data of ``synartesis status``). The journal is
followed live: a timer polls ``PRAGMA data_version`` (it changes when any other connection
commits) on the console's journal thread (``tui.data``) and redraws only then, keeping the
selection on the same run or action (by id). The console never creates a journal; with none it
says where it is looking and keeps polling until one appears.

Undo, preview and the live check run as textual workers (they start MCP servers) on their own
journal connections; only one of them runs at a time, and a real undo blocks quitting.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from synartesis.errors import SynartesisError
from synartesis.paths import journal_location
from synartesis.journal import RunRow
from synartesis.services.runs import ActionView
from synartesis.services.sessions import SessionView
from synartesis.tui import jobs
from synartesis.tui.data import ConsoleData, Snapshot
from synartesis.tui.render import (
    action_lines,
    action_pane,
    client_lines,
    client_pane,
    detail_text,
    header_text,
    held_lines,
    held_pane,
    preview_text,
    run_line,
    run_pane,
    session_line,
    status_width,
)
from synartesis.tui.screens import HELP, JOB_KEYS, JobScreen, ReasonScreen, TextScreen
from synartesis.tui.widgets import Item, Pager

__all__ = ["ConsoleApp", "KEYS"]

# What the keys do, per view: the status line always shows one of these (each fits 80 columns).
KEYS = {
    "runs": "enter open · u undo · p preview · l live check · g held · c clients · ? · q quit",
    "run": "esc back · f expand · u undo · p preview · l live · a/d decide held · ? help",
    "held": "a approve · d deny · enter open run · f args · esc back · c clients · ? · q quit",
    "clients": "c look again · esc back · g held · r runs · ? help · q quit",
    "waiting": "waiting for the journal to appear · c clients · ? help · q quit",
}


def _line(text: str, style: str = "") -> Text:
    """One terminal row (the CSS keeps it from wrapping)."""
    return Text(text, style=style)


def _collect_clients() -> Any:
    from synartesis.paths import Env
    from synartesis.services.status import collect_status
    return collect_status(Env.current())


class ConsoleApp(App[None]):
    """The console. ``journal_path``/``policy_path`` come from ``services.context.where``;
    ``by`` is who approves, denies and undoes; ``poll`` is the live-follow interval (s);
    ``clients`` returns a ``StatusReport`` (default: ``collect_status`` on the current env)."""

    TITLE = "synartesis"
    ENABLE_COMMAND_PALETTE = False
    CSS = """
    Screen { layout: vertical; }
    #header { height: 1; background: $panel; }
    #list { height: 1fr; }
    #pane { height: 3; color: $text-muted; border-top: hkey $panel; }
    #notice { height: 1; }
    #keys { height: 1; background: $panel; }
    #header, #pane, #notice, #keys { text-wrap: nowrap; text-overflow: ellipsis; }
    """
    BINDINGS = [
        Binding("up,k", "move(-1)", show=False), Binding("down,j", "move(1)", show=False),
        Binding("pageup", "page(-1)", show=False), Binding("pagedown", "page(1)", show=False),
        Binding("home", "jump(0)", show=False), Binding("end", "jump(1)", show=False),
        Binding("enter", "open", "open"), Binding("escape,h", "back", "back"),
        Binding("f", "expand", "expand"), Binding("u", "undo", "undo"),
        Binding("p", "preview", "preview"), Binding("l", "live", "live check"),
        Binding("g", "view('held')", "held"), Binding("r", "view('runs')", "runs"),
        Binding("c", "view('clients')", "clients"),
        Binding("a", "decide(True)", "approve"), Binding("d", "decide(False)", "deny"),
        Binding("question_mark", "help", "help"), Binding("q", "quit", "quit"),
        Binding("ctrl+c", "quit", show=False, priority=True),
    ]

    def __init__(self, journal_path: Path, policy_path: Path, by: str, poll: float = 0.5,
                 clients: Callable[[], Any] | None = None) -> None:
        super().__init__()
        self.target = jobs.Target(journal_location(journal_path), Path(policy_path), by)
        self.poll = poll
        self.clients_loader = clients or _collect_clients
        self.data = ConsoleData(self.target.journal, policy=self.target.policy)
        self.available = False  # a journal has been read (False: none yet, or it cannot be read)
        self.problem: str | None = None  # why there is no journal to show
        self.polling = False  # a read of the journal is in flight on its thread
        self._again = False  # a forced read was asked for while one was in flight
        self.view = "runs"
        self.runs: list[RunRow] = []
        self.sessions: list[SessionView] = []
        self.production: dict[str, list] = {}
        self.held: list[ActionView] = []
        self.open_run: RunRow | SessionView | None = None  # the open timeline: a run or a session
        self.actions: list[ActionView] = []
        self.clients: Any = None
        self.clients_error: str | None = None
        self.clients_loading = False
        self.busy: str | None = None  # the job screen that is open (undo / preview / live)
        self.undo_running = False
        self._notice: tuple[str, str] = ("", "")  # (view it belongs to, text): never shown in another view
        self._cursors: dict[str, str | None] = {}  # per view: the key selected when it was left
        self._decided: set[str] = set()  # ids decided here, so their leaving the list is expected

    # -- layout ------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="header")
        yield Pager(id="list")
        yield Static(id="pane")
        yield Static(id="notice")
        yield Static(id="keys")

    @property
    def pager(self) -> Pager:
        return self.query_one("#list", Pager)

    def on_mount(self) -> None:
        self._apply(self.data.poll_now(force=True))  # the first frame has data in it
        self.set_interval(self.poll, self._tick)

    def _tick(self) -> None:
        self.refresh_data(force=False)

    # -- data --------------------------------------------------------------------------
    def refresh_data(self, force: bool = True) -> None:
        """Read the journal again on its own thread (if another connection committed since
        the last read, or ``force``) and redraw. Never blocks the keys; errors are shown."""
        if self.polling:
            if force:
                self._again = True
            return
        self.polling = True
        self.run_worker(self._poll(force), exit_on_error=False, group="poll")

    async def _poll(self, force: bool) -> None:
        try:
            while True:
                self._again = False
                snap = await self.data.poll(self.open_run.id if self.open_run else None, force)
                self._apply(snap)
                if not self._again:
                    break
                force = True
        finally:
            self.polling = False

    def _apply(self, snap: Snapshot | None) -> None:
        if snap is None:
            return
        if snap.error:
            self.notice(snap.error)
            self._draw()
            return
        if snap.runs is None:
            self.available, self.problem = False, snap.problem
            self._draw()
            return
        self.available, self.problem = True, None
        self.runs, self.held = snap.runs, snap.held
        self.sessions, self.production = snap.sessions, snap.production
        if self.open_run is not None:
            if snap.open_run is None or snap.open_run.id != self.open_run.id:
                known = [r.id for r in snap.runs] + [x.id for x in snap.sessions]
                if snap.open_run is None and self.open_run.id not in known:
                    self.open_run, self.actions = None, []
                    if self.view == "run":
                        self._switch("runs")
                        self.notice(f"that {self._kind(self.open_run)} is no longer in the journal (pruned?)")
                        return
            else:
                self.open_run, self.actions = snap.open_run, snap.actions
        self._draw()

    def set_undo_running(self, running: bool) -> None:
        """JobHost: a real undo started or ended (quitting waits while one runs)."""
        self.undo_running = running

    # -- drawing -----------------------------------------------------------------------
    def notice(self, text: str) -> None:
        """Show ``text`` on the notice line of the current view (until the next notice or a
        change of view: a notice is never left over on another view)."""
        self._notice = (self.view, text)
        try:
            self.query_one("#notice", Static).update(_line(text, "bold"))
        except Exception:  # noqa: BLE001 - before mount / after unmount
            pass

    def _notice_text(self) -> str:
        view, text = self._notice
        return text if view == self.view else ""

    def _items(self) -> tuple[list[Item], str]:
        if self.view == "runs":
            if not self.available:
                return [], self.problem or "no journal"
            items = []
            width = status_width([*self.sessions, *(r for sv in self.sessions for r in sv.runs)])
            for sv in self.sessions:
                items.append(Item(sv.id, [session_line(sv, width)], sv))
                items.extend(Item(r.id, [run_line(r, indent=True, width=width)], r) for r in sv.runs)
            return (items, "No agent has done anything through this journal yet. Sessions appear here as agents work.")
        if self.view == "run":
            session = isinstance(self.open_run, SessionView)
            return ([Item(v.row.id, action_lines(v, session), v) for v in self.actions],
                    f"no actions recorded in this {self._kind(self.open_run)}")
        if self.view == "held":
            if not self.available:
                return [], self.problem or "no journal"
            return ([Item(v.row.id, held_lines(v, self.production.get(v.row.id)), v) for v in self.held],
                    "Nothing is waiting for a decision.")
        if self.view == "clients":
            if self.clients_loading and self.clients is None:
                return [], "looking at every AI client's configuration…"
            if self.clients_error:
                return [], self.clients_error
            rows = list(self.clients.rows) if self.clients is not None else []
            return ([Item(f"{r.file}|{r.scope}|{r.project}|{r.name}", client_lines(r), r) for r in rows],
                    "No MCP servers found in any client config.")
        return [], ""

    def _draw(self, select: str | None = None) -> None:
        try:
            header = self.query_one("#header", Static)
        except Exception:  # noqa: BLE001 - not mounted yet
            return
        if self.view == "run" and self.open_run is not None:
            r = self.open_run
            held = sum(1 for v in self.actions if v.row.status == "gated")  # this run's, not everyone's
            n = len(self.actions)
            what = (f"session {r.id[:10]} · {r.who}" + (f" · {len(r.runs)} runs" if len(r.runs) != 1 else "")
                    if isinstance(r, SessionView) else f"run {r.id[:8]} · {r.label or r.client or 'an agent'}")
            head = Text.assemble(("synartesis", "bold"), f"  {what} · ",
                                 (r.shown_status, "bold"), f" · {n} action{'s' if n != 1 else ''} · ",
                                 (f"{held} held", "bold yellow") if held else "nothing held",
                                 f" ({len(self.held)} in all)" if len(self.held) > held else "")
        else:
            head = header_text(self.target.journal, self.runs if self.available else None, len(self.held),
                               len(self.sessions) if self.available else None)
        header.update(head)
        items, empty = self._items()
        before = self.pager.selected
        self.pager.set_items(items, empty=empty, select=select)
        after = self.pager.selected
        if (select is None and before is not None and self.view in ("runs", "run", "held")
                and (after is None or after.key != before.key) and before.key not in self._decided):
            # the entry under the cursor left the list (decided or pruned elsewhere): say so,
            # rather than let the cursor rest on another one unannounced
            self.notice(f"{self._what(before)} is no longer listed here; "
                        + ("the selection moved to the next one" if after is not None else "nothing is selected"))
        self._draw_pane()
        self.query_one("#keys", Static).update(_line(self._keys()))
        self.query_one("#notice", Static).update(_line(self._notice_text(), "bold"))

    def _what(self, item: Item) -> str:
        data = item.data
        if isinstance(data, ActionView):
            return f"{data.row.qualified} {data.row.id[:8]}"
        if isinstance(data, RunRow):
            return f"run {data.id[:8]}"
        if isinstance(data, SessionView):
            return f"session {data.id[:10]}"
        return "the selected entry"

    @staticmethod
    def _kind(target: object) -> str:
        return "session" if isinstance(target, SessionView) else "run"

    def _keys(self) -> str:
        if not self.available and self.view in ("runs", "held"):
            return KEYS["waiting"]
        return KEYS[self.view]

    def _draw_pane(self) -> None:
        sel = self.pager.selected
        lines: list[Text] = []
        if sel is not None:
            data = sel.data
            if self.view == "runs":
                lines += run_pane(data)
            elif self.view == "run":
                lines += action_pane(data)
            elif self.view == "held":
                lines += held_pane(data, self.production.get(data.row.id))
            elif self.view == "clients":
                lines += client_pane(data)
        elif self.view == "clients" and self.clients is not None:
            lines.append(Text(f"policy: {self.clients.policy_path}"))
        self.query_one("#pane", Static).update(Text("\n").join(lines[:2]))

    # -- keys --------------------------------------------------------------------------
    async def _on_key(self, event: events.Key) -> None:
        # A key read while the deny prompt was being opened reaches the app through the screen
        # below, and textual would match it against the prompt's bindings: it is dropped.
        screen = self.screen
        if isinstance(screen, ReasonScreen) and not screen.accepts(event):
            event.stop()
            event.prevent_default()

    def _main(self) -> bool:
        """True when the console itself (not a pushed screen) has the keys."""
        return len(self.screen_stack) <= 1

    def action_move(self, delta: int) -> None:
        if self._main():
            self.pager.move(delta)
            self._draw_pane()

    def action_page(self, direction: int) -> None:
        if self._main():
            self.pager.page(direction)
            self._draw_pane()

    def action_jump(self, end: int) -> None:
        if self._main():
            (self.pager.end if end else self.pager.home)()
            self._draw_pane()

    def on_pager_selected(self, message: Pager.Selected) -> None:
        self._draw_pane()

    def _switch(self, view: str, select: str | None = None) -> None:
        """Show ``view``, selecting ``select`` (a key) or the entry selected when it was left."""
        sel = self.pager.selected
        self._cursors[self.view] = sel.key if sel else None
        self.view = view
        if self._notice[0] != view:  # a notice belongs to the view it was given in
            self._notice = ("", "")
        self.pager.items, self.pager.cursor, self.pager.top = [], 0, 0
        self._draw(select=select if select is not None else self._cursors.get(view))

    def action_view(self, view: str) -> None:
        if not self._main():
            return
        if view == "clients":
            if self.view == "clients" or self.clients is None:
                self._scan_clients()
        if view != self.view:
            self._switch(view)

    def _scan_clients(self) -> None:
        if self.clients_loading:
            return
        self.clients_loading = True
        self.clients_error = None
        self.notice("looking at every AI client's configuration…")
        self.run_worker(self._scan(), exit_on_error=False, group="clients")

    async def _scan(self) -> None:
        try:
            self.clients = await asyncio.to_thread(self.clients_loader)
            rows = self.clients.rows
            covered = sum(1 for r in rows if r.covered)
            drift = sum(1 for r in rows if r.drift)
            self._clients_notice(f"{covered} of {len(rows)} server entries covered"
                                 + (f" · {drift} drifted" if drift else "") + " (same as `synartesis status`)")
        except SynartesisError as exc:
            self.clients_error = exc.message
            self._clients_notice(exc.message)
        except Exception as exc:  # noqa: BLE001 - shown, never a crash
            self.clients_error = f"could not read the client configs: {type(exc).__name__}: {exc}"
            self._clients_notice(self.clients_error)
        finally:
            self.clients_loading = False
        self._draw()

    def _clients_notice(self, text: str) -> None:
        """The scan's summary belongs to the clients view, wherever the person is now."""
        if self.view == "clients":
            self.notice(text)
        else:
            self._notice = ("clients", text)

    def action_open(self) -> None:
        if not self._main():
            return
        sel = self.pager.selected
        if sel is None:
            return
        if self.view == "runs":
            self._open_run(sel.data, None)
        elif self.view == "held":
            run = next((r for r in self.runs if r.id == sel.data.row.run_id), None)
            if run is not None:
                self._open_run(run, sel.data.row.id)
        elif self.view == "run":
            self.action_expand()

    def _open_run(self, run: RunRow | SessionView, select: str | None) -> None:
        try:
            actions = self.data.actions(run)
        except SynartesisError as exc:
            self.notice(exc.message)
            return
        self.open_run, self.actions = run, actions
        self._cursors.pop("run", None)
        self._switch("run", select)

    def action_back(self) -> None:
        if not self._main():
            return
        if self.view != "runs":
            if self.view == "run":
                self.open_run, self.actions = None, []
            self._switch("runs")

    def action_expand(self) -> None:
        if not self._main() or not self.available or self.view not in ("run", "held"):
            return
        sel = self.pager.selected
        if sel is None:
            return
        try:
            full = self.data.detail(sel.data.row)
        except SynartesisError as exc:
            self.notice(exc.message)
            return
        run = next((r for r in self.runs if r.id == full.row.run_id), None)
        body = detail_text(full, run)
        if full.row.status == "gated":
            body.append("\n── what it would change\nreading the current state (starting its server)…\n", "dim")
        screen = TextScreen("everything recorded about this action", body)
        self.push_screen(screen)
        if full.row.status == "gated":
            # what it would change: the rule's pre-read, run now on the held call's server
            self.run_worker(self._preview(screen, full), exit_on_error=False, group="preview")

    async def _preview(self, screen: TextScreen, full: ActionView) -> None:
        try:
            preview = await jobs.held_preview(self.target, full.row)
            text = preview_text(preview)
        except SynartesisError as exc:
            text = Text(f"\n── what it would change\n{exc.message}\n", "dim")
        except Exception as exc:  # noqa: BLE001 - shown, never a crash
            text = Text(f"\n── what it would change\ncould not read it: {type(exc).__name__}: {exc}\n", "dim")
        run = next((r for r in self.runs if r.id == full.row.run_id), None)
        body = detail_text(full, run)
        body.append_text(text)
        screen.set_body(body)

    def action_help(self) -> None:
        if self._main():
            self.push_screen(TextScreen("help", HELP))

    # -- decisions ---------------------------------------------------------------------
    def action_decide(self, approve: bool) -> None:
        if not self._main() or not self.available:
            return
        if self.view not in ("held", "run"):
            self.notice("a and d decide held calls: press g to see them")
            return
        sel = self.pager.selected
        if sel is None:
            return
        view: ActionView = sel.data
        if view.row.status != "gated":
            self.notice(f"{view.row.qualified} is not awaiting approval (it is {view.row.label})")
            return
        if approve:
            self._record(view, True, None)
        else:
            self.push_screen(ReasonScreen(f"{view.row.qualified} {view.row.id[:8]}"),
                             lambda reason: self._record(view, False, reason) if reason is not None
                             else self.notice("not denied · nothing was recorded"))

    def _record(self, view: ActionView, approve: bool, reason: str | None) -> None:
        try:
            result = self.data.decide(view.row, approve, self.target.by, reason)
        except SynartesisError as exc:
            self.notice(exc.message)
            return
        self._decided.add(view.row.id)
        self.notice(result.message)
        self.refresh_data()

    # -- jobs --------------------------------------------------------------------------
    def _job_run(self) -> RunRow | SessionView | None:
        sel = self.pager.selected
        if self.view == "runs" and sel is not None:
            return sel.data
        if self.view == "run":
            return self.open_run
        return None

    def _start(self, kind: str) -> None:
        if not self._main():
            return  # a job screen (or help) is open: its own keys apply
        if self.busy:
            self.notice(f"still working on the last {self.busy}")
            return
        if not self.available:
            self.notice("there is no journal yet, so nothing to undo")
            return
        run = self._job_run()
        if run is None:
            self.notice("u, p and l work on a session or a run: press r for them, or enter to open one")
            return
        self.busy = kind

        def done(_: object) -> None:
            self.busy = None
            self.refresh_data()

        self.push_screen(JobScreen(kind, run.id, self.target, self), done)

    def action_undo(self) -> None:
        self._start("undo")

    def action_preview(self) -> None:
        self._start("preview")

    def action_live(self) -> None:
        self._start("live")

    async def action_quit(self) -> None:
        if self.undo_running:
            self.notice("an undo is running; quit when it has finished")
            screen = self.screen
            if isinstance(screen, JobScreen):
                screen.set_keys(JOB_KEYS["undoing"])
            return
        self.exit()

    def on_unmount(self) -> None:
        self.data.close()
