"""Screens pushed over the console: scrolling text (help, one action's detail), the undo /
preview / live-check job screen, and the deny-reason prompt.

The screens know nothing of the console application: a job screen reports to the
:class:`JobHost` it is given (the console implements it), so imports point one way
(``tui.app`` → ``tui.screens``).
"""

from __future__ import annotations

from typing import Any, Protocol

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Static

from synartesis.errors import SynartesisError
from synartesis.tui import jobs
from synartesis.tui.render import (
    live_notice,
    live_report_text,
    undo_notice,
    undo_report_text,
)

__all__ = ["TextScreen", "JobScreen", "JobHost", "ReasonScreen", "HELP", "JOB_KEYS"]


class JobHost(Protocol):
    """What a job screen tells the console that opened it."""

    def notice(self, text: str) -> None:
        """Show ``text`` on the console's notice line."""

    def refresh_data(self) -> None:
        """Read the journal again (the job may have changed it)."""

    def set_undo_running(self, running: bool) -> None:
        """A real undo started (True) or ended (False): quitting waits while one runs."""

# The job screen's status line in each state (each fits 80 columns).
JOB_KEYS = {
    "working": "working… esc cancels (nothing is written by a dry run or a check)",
    "confirm": "y undo it now · n leave it alone (changes nothing) · ↑↓ scroll",
    "undoing": "undoing… please wait (esc and q wait for it to finish)",
    "done": "esc back · ↑↓ scroll · q quit",
}

HELP = """KEYS

everywhere
  ↑ ↓ / j k    move                  PgUp PgDn Home End   jump
  r            runs                  g   held calls (awaiting approval)
  c            AI clients and whether their servers are covered
  ?            this help             q   quit (not while an undo is running)

sessions and runs (newest first; a session's runs are folded in below it)
  enter        open the timeline of a session (every run, in the order the
               agent acted) or of one run
  u            undo it: shows the real plan (a dry run) first, then asks
               y/n; y undoes, n changes nothing (a session: all its servers,
               newest action first)
  p            preview: the dry run only; nothing is sent or written
  l            live check: reads every resource it wrote, as it is now,
               and says per write whether it still matches or drifted
               (with both values); nothing is written

a timeline
  f            everything recorded about the action: arguments, result,
               snapshot, post-state, inverse (held: what it would change)
  esc          back to the list      u p l   as above, for what is open
  a d          approve / deny the selected action if it is held

held calls (every run)
  a            approve: the agent's identical retry goes through (once)
  d            deny: asks for a reason; the agent is told it on its retry
  enter        open the run it belongs to
  f            its full arguments and what it would change (the current
               state, a diff; PRODUCTION when it matches production_patterns)

clients
  c            look again

Only one undo, preview or live check runs at a time. The console follows
the journal live: new runs, actions and held calls appear as agents work.
"""


class TextScreen(Screen[None]):
    """A title, a scrolling body and a key line; esc goes back."""

    BINDINGS = [Binding("escape", "back", "back"), Binding("f", "back", show=False),
                Binding("question_mark", "back", show=False),
                Binding("j", "scroll(1)", show=False), Binding("k", "scroll(-1)", show=False)]

    DEFAULT_CSS = """
    TextScreen #title { height: 1; }
    TextScreen #scroll { height: 1fr; }
    TextScreen #keys { height: 1; background: $panel; }
    TextScreen #title, TextScreen #keys { text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, title: str, body: Text | str, keys: str = "esc back · ↑↓ scroll · q quit") -> None:
        super().__init__()
        self._title = title
        self._body = body
        self._keys = keys

    def compose(self) -> ComposeResult:
        yield Static(Text(self._title, style="bold"), id="title")
        with VerticalScroll(id="scroll"):
            yield Static(self._body, id="body")
        yield Static(self._keys, id="keys")

    def on_mount(self) -> None:
        self.query_one("#scroll", VerticalScroll).focus()

    def set_body(self, body: Text | str) -> None:
        self._body = body
        if self.is_mounted:  # before that, compose() draws it
            self.query_one("#body", Static).update(body)

    def set_keys(self, keys: str) -> None:
        self._keys = keys
        self.query_one("#keys", Static).update(keys)

    @property
    def body_text(self) -> str:
        return self._body.plain if isinstance(self._body, Text) else str(self._body)

    @property
    def keys_text(self) -> str:
        return self._keys

    def action_scroll(self, delta: int) -> None:
        self.query_one("#scroll", VerticalScroll).scroll_relative(y=delta, animate=False)

    def action_back(self) -> None:
        self.dismiss(None)


class JobScreen(TextScreen):
    """Undo (plan → y/n → undo), preview (plan only) or live check of one run.

    States: ``working`` (a dry run, undo or check is running; the body says which),
    ``confirm`` (the plan is shown; ``y`` undoes, ``n`` leaves everything as it is),
    ``undoing`` (the real undo runs; esc and quit wait for it), ``done``.
    ``y`` is honoured once: the state leaves ``confirm`` before the undo starts, so a second
    ``y`` (or ``u``) cannot start another.
    """

    BINDINGS = [Binding("y", "yes", "undo"), Binding("n", "no", "leave it")]

    def __init__(self, kind: str, run_id: str, target: jobs.Target, host: JobHost) -> None:
        self.kind = kind
        self.run_id = run_id
        self.target = target
        self.host = host
        self.state = "working"
        self.report: Any = None
        self.result: Any = None  # the real undo's report, when one ran
        self.error: str | None = None
        titles = {"undo": "undo", "preview": "preview (dry run)", "live": "live check"}
        self.what = f"session {run_id[:10]}" if run_id.startswith("s-") else f"run {run_id[:8]}"
        super().__init__(f"{titles[kind]} · {self.what}", Text(self._working_text()), self._working_keys())

    def _working_text(self) -> str:
        if self.kind == "live":
            return f"reading every resource this {self.what.split()[0]} wrote, as it is now (starting its servers)…"
        return f"working out the real plan: reading the current state of everything this {self.what.split()[0]} wrote…"

    def _working_keys(self) -> str:
        return JOB_KEYS["working"]

    def on_mount(self) -> None:
        super().on_mount()
        self.run_worker(self._first(), exit_on_error=False, group="job")

    async def _first(self) -> None:
        try:
            if self.kind == "live":
                self.report = await jobs.live(self.target, self.run_id)
            else:
                self.report = await jobs.undo(self.target, self.run_id, dry_run=True)
        except SynartesisError as exc:
            self._fail(exc.message)
            return
        except Exception as exc:  # noqa: BLE001 - shown, never a crash
            self._fail(f"unexpected error: {type(exc).__name__}: {exc}")
            return
        if self.kind == "live":
            self.set_body(live_report_text(self.report))
            self._finish(live_notice(self.report))
        elif self.kind == "preview":
            self.set_body(undo_report_text(self.report))
            self._finish(undo_notice(self.report))
        else:
            body = undo_report_text(self.report)
            reverts = sum(1 for s in self.report.steps if s.kind == "revert")
            if self.report.status == "nothing":  # in the CLI's words: the reason above, then its RESULT line
                body.append(f"\nRESULT  {undo_notice(self.report)}\n", "bold")
                self.set_body(body)
                self._finish(f"{self.what}: {undo_notice(self.report)}")
                return
            if not any(s.kind in ("revert", "already-reverted") for s in self.report.steps):
                why = (f"it halts at sequence {self.report.halted.seq} before reverting anything"
                       if self.report.halted else "nothing here needs undoing")
                body.append(f"\nNo undo to do: {why}. Nothing was changed.\n", "bold")
                self.set_body(body)
                self._finish(f"{self.what}: no undo to do · {undo_notice(self.report)}")
                return
            if self.report.halted:
                question = (f"\nUndo as planned? It reverts {reverts} action{'s' if reverts != 1 else ''} and stops at "
                            f"sequence {self.report.halted.seq}. y = undo now · n = leave it as it is\n")
            else:
                question = f"\nUndo this whole {self.what.split()[0]} as planned? y = undo now · n = leave it as it is\n"
            body.append(question, "bold")
            self.set_body(body)
            self.state = "confirm"
            self.set_keys(JOB_KEYS["confirm"])

    def _fail(self, message: str) -> None:
        self.error = message
        self.set_body(Text(message, style="bold red"))
        self._finish(message)

    def _finish(self, notice: str) -> None:
        self.state = "done"
        self.set_keys(JOB_KEYS["done"])
        self.host.notice(notice)
        self.host.refresh_data()

    def action_yes(self) -> None:
        if self.state != "confirm":
            return
        self.state = "undoing"
        self.host.set_undo_running(True)
        self.set_keys(JOB_KEYS["undoing"])
        self.set_body(Text("undoing: sending the inverses, newest first, and reading back…"))
        self.run_worker(self._undo(), exit_on_error=False, group="job")

    async def _undo(self) -> None:
        try:
            self.result = await jobs.undo(self.target, self.run_id, dry_run=False)
        except SynartesisError as exc:
            self.host.set_undo_running(False)
            self._fail(exc.message)
            return
        except Exception as exc:  # noqa: BLE001
            self.host.set_undo_running(False)
            self._fail(f"unexpected error: {type(exc).__name__}: {exc}")
            return
        self.host.set_undo_running(False)
        self.set_body(undo_report_text(self.result))
        self._finish(undo_notice(self.result))

    def action_no(self) -> None:
        if self.state != "confirm":
            return
        self.state = "done"
        self.host.notice(f"{self.what} left alone · nothing was changed")
        self.dismiss(None)

    def action_back(self) -> None:
        if self.state == "undoing":
            self.host.notice("the undo is running; wait for it to finish")
            return
        if self.state == "confirm":
            self.host.notice(f"{self.what} left alone · nothing was changed")
        self.dismiss(None)


class _ReasonInput(Input):
    """The reason box: it takes no key pressed before the prompt was on screen."""

    async def _on_key(self, event: events.Key) -> None:
        screen = self.screen
        if isinstance(screen, ReasonScreen) and not screen.accepts(event):
            event.stop()
            event.prevent_default()  # and Input's own handler never sees it


class ReasonScreen(ModalScreen["str | None"]):
    """Asks why a held call is denied; enter denies with it, esc cancels (nothing recorded).

    Keys pressed before the prompt is on screen are ignored (issue 9 item 16: under load the
    dialog opened seconds after ``d``, and the next key landed in the reason box).
    """

    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    ReasonScreen { align: center middle; }
    ReasonScreen #box { width: 76; height: auto; border: round $accent; padding: 0 1; background: $surface; }
    ReasonScreen Static { height: auto; }
    """

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what
        self.ready_at: float | None = None  # when the prompt was first on screen (textual's clock)
        self.ignored = 0  # keys dropped because they came before that
        self._seen: set[int] = set()

    @property
    def ready(self) -> bool:
        """True once the prompt has been drawn and takes keys."""
        return self.ready_at is not None

    def accepts(self, event: events.Key) -> bool:
        """False (and counted once) for a key pressed before the prompt was on screen.

        Asked by the reason box, by this screen, and by the console for keys that reached it
        through the screen below (a key read before the prompt was pushed is delivered there,
        then matched against this screen's bindings: ``enter`` would deny)."""
        if self.ready_at is not None and event.time >= self.ready_at:
            return True
        if id(event) not in self._seen:
            self._seen.add(id(event))
            self.ignored += 1
        return False

    def compose(self) -> ComposeResult:
        from textual.containers import Vertical
        with Vertical(id="box"):
            yield Static(Text(f"deny {self.what}", style="bold"))
            yield Static("Why? The agent is told this when it tries again.")
            yield _ReasonInput(placeholder="denied from the console", id="reason")
            yield Static("enter deny · esc cancel (nothing is recorded)")

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        self.call_after_refresh(self._on_screen)

    def _on_screen(self) -> None:
        from textual import _time
        self.ready_at = _time.get_time()

    async def _on_key(self, event: events.Key) -> None:
        if not self.accepts(event):  # before the input has focus, keys come to the screen
            event.stop()
            event.prevent_default()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or "denied from the console")

    def action_cancel(self) -> None:
        self.dismiss(None)
