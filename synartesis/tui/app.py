"""`synartesis` with no command: one full-screen console for runs, held calls, clients and undo
(issue 6; reference-spec §7.3 for the reference's console).

Views: ``runs`` (default, newest first), ``run`` (one run's timeline), ``held`` (every call
awaiting approval, across runs), ``clients`` (the data of ``synartesis status``). The journal is
followed live: a timer polls ``PRAGMA data_version`` (it changes when any other connection
commits) and reloads only then. The console never creates a journal; with none it says where it
is looking and keeps polling until one appears.

Undo, preview and the live check run as textual workers (they start MCP servers) on their own
journal connections; only one of them runs at a time, and a real undo blocks quitting.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Callable

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from synartesis.errors import JournalError, NoJournalError, SynartesisError
from synartesis.journal import Journal, RunRow
from synartesis.services.runs import ActionView, action_view, decide
from synartesis.tui import jobs
from synartesis.tui.render import (action_lines, action_pane, client_lines, client_pane, detail_text,
                                   header_text, held_lines, held_pane, run_line, run_pane)
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
        self.target = jobs.Target(Path(journal_path), Path(policy_path), by)
        self.poll = poll
        self.clients_loader = clients or _collect_clients
        self.j: Journal | None = None
        self.problem: str | None = None  # why there is no journal to show
        self._version: int | None = None
        self.view = "runs"
        self.runs: list[RunRow] = []
        self.held: list[ActionView] = []
        self.open_run: RunRow | None = None
        self.actions: list[ActionView] = []
        self.clients: Any = None
        self.clients_error: str | None = None
        self.clients_loading = False
        self.busy: str | None = None  # the job screen that is open (undo / preview / live)
        self.undo_running = False
        self._notice = ""
        self._cursors: dict[str, str | None] = {}  # per view: the key selected when it was left
        self._retry_at = 0.0  # after a JournalError, when to try opening again

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
        self.reload(force=True)
        self.set_interval(self.poll, self._tick)

    def _tick(self) -> None:
        self.reload()

    # -- data --------------------------------------------------------------------------
    def _open(self) -> bool:
        if self.j is not None:
            return True
        if time.monotonic() < self._retry_at:
            return False
        try:
            self.j = Journal.open(self.target.journal, create=False)
        except NoJournalError:
            self.problem = (f"no journal at {self.target.journal} yet; it appears when the first proxy runs. "
                            "Waiting for it…")
            return False
        except JournalError as exc:
            self.problem = f"{exc.message} (looking again every few seconds)"
            self._retry_at = time.monotonic() + 5.0
            return False
        self.problem = None
        self._version = None
        return True

    def reload(self, force: bool = False) -> None:
        """Re-read the journal if another connection committed since the last read (or
        ``force``), then redraw. Errors are shown, never raised."""
        if not self._open():
            self._draw()
            return
        assert self.j is not None
        try:
            version = self.j.data_version()
            if version == self._version and not force:
                return
            self._version = version
            self.runs = self.j.list_runs()
            self.held = [action_view(self.j, a) for a in self.j.list_gated()]
            if self.open_run is not None:
                fresh = next((r for r in self.runs if r.id == self.open_run.id), None)
                if fresh is None:
                    self.open_run, self.actions = None, []
                    if self.view == "run":
                        self.view = "runs"
                        self.notice("that run is no longer in the journal (pruned?)")
                else:
                    self.open_run = fresh
                    self.actions = [action_view(self.j, a) for a in self.j.actions(fresh.id)]
        except SynartesisError as exc:
            self.notice(exc.message)
        except Exception as exc:  # noqa: BLE001 - a live view must survive a bad read; say it, retry next tick
            self.notice(f"could not read the journal: {type(exc).__name__}: {exc}")
        self._draw()

    # -- drawing -----------------------------------------------------------------------
    def notice(self, text: str) -> None:
        """Show ``text`` on the notice line (until the next notice)."""
        self._notice = text
        try:
            self.query_one("#notice", Static).update(_line(text, "bold"))
        except Exception:  # noqa: BLE001 - before mount / after unmount
            pass

    def _items(self) -> tuple[list[Item], str]:
        if self.view == "runs":
            if self.j is None:
                return [], self.problem or "no journal"
            return ([Item(r.id, [run_line(r)], r) for r in self.runs],
                    "No agent has done anything through this journal yet. Runs appear here as agents work.")
        if self.view == "run":
            return ([Item(v.row.id, action_lines(v), v) for v in self.actions], "no actions recorded in this run")
        if self.view == "held":
            if self.j is None:
                return [], self.problem or "no journal"
            return [Item(v.row.id, held_lines(v), v) for v in self.held], "Nothing is waiting for a decision."
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
            head = Text.assemble(("synartesis", "bold"), f"  run {r.id[:8]} · {r.label or r.client or 'an agent'} · ",
                                 (r.status, "bold"), f" · {len(self.actions)} actions · ",
                                 (f"{len(self.held)} held (g)", "bold yellow") if self.held
                                 else "nothing held")
        else:
            head = header_text(self.target.journal, self.runs if self.j else None, len(self.held))
        header.update(head)
        items, empty = self._items()
        self.pager.set_items(items, empty=empty, select=select)
        self._draw_pane()
        self.query_one("#keys", Static).update(_line(self._keys()))
        self.query_one("#notice", Static).update(_line(self._notice, "bold"))

    def _keys(self) -> str:
        if self.j is None and self.view in ("runs", "held"):
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
                lines += held_pane(data)
            elif self.view == "clients":
                lines += client_pane(data)
        elif self.view == "clients" and self.clients is not None:
            lines.append(Text(f"policy: {self.clients.policy_path}"))
        self.query_one("#pane", Static).update(Text("\n").join(lines[:2]))

    # -- keys --------------------------------------------------------------------------
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
            self.notice(f"{covered} of {len(rows)} server entries covered"
                        + (f" · {drift} drifted" if drift else "") + " (same as `synartesis status`)")
        except SynartesisError as exc:
            self.clients_error = exc.message
            self.notice(exc.message)
        except Exception as exc:  # noqa: BLE001 - shown, never a crash
            self.clients_error = f"could not read the client configs: {type(exc).__name__}: {exc}"
            self.notice(self.clients_error)
        finally:
            self.clients_loading = False
        self._draw()

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

    def _open_run(self, run: RunRow, select: str | None) -> None:
        assert self.j is not None
        self.open_run = run
        try:
            self.actions = [action_view(self.j, a) for a in self.j.actions(run.id)]
        except SynartesisError as exc:
            self.notice(exc.message)
            return
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
        if not self._main() or self.j is None or self.view not in ("run", "held"):
            return
        sel = self.pager.selected
        if sel is None:
            return
        try:
            full = action_view(self.j, sel.data.row, full=True)
        except SynartesisError as exc:
            self.notice(exc.message)
            return
        run = next((r for r in self.runs if r.id == full.row.run_id), None)
        self.push_screen(TextScreen("everything recorded about this action", detail_text(full, run)))

    def action_help(self) -> None:
        if self._main():
            self.push_screen(TextScreen("help", HELP))

    # -- decisions ---------------------------------------------------------------------
    def action_decide(self, approve: bool) -> None:
        if not self._main() or self.j is None:
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
        assert self.j is not None
        try:
            (result,) = decide(self.j, [view.row], approve, self.target.by, reason)
        except SynartesisError as exc:
            self.notice(exc.message)
            return
        self.notice(result.message)
        self.reload(force=True)

    # -- jobs --------------------------------------------------------------------------
    def _job_run(self) -> RunRow | None:
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
        if self.j is None:
            self.notice("there is no journal yet, so nothing to undo")
            return
        run = self._job_run()
        if run is None:
            self.notice("u, p and l work on a run: press r for runs, or enter to open one")
            return
        self.busy = kind

        def done(_: object) -> None:
            self.busy = None
            self.reload(force=True)

        self.push_screen(JobScreen(kind, run.id, self.target), done)

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
        if self.j is not None:
            self.j.close()
            self.j = None
