"""Conversations and the agent loop.

One conversation is one agent session: every server switched on for it is an MCP connection
(:class:`~synartesis.desktop.links.ServerLink`) through its own proxy, launched with
``SYNARTESIS_SESSION=<conversation id>`` and labelled with the conversation's title; the runs
those proxies open are the conversation's runs. A turn streams the model's answer, sends each
tool call through the proxy, and binds the call to the action the proxy journalled (same run,
same server, tool and canonical arguments): the card shows that action, never a guess.

A call the proxy holds stops the turn at its card until a person decides, in the window
(through :func:`synartesis.services.runs.decide`, as ``synartesis approve`` does) or in a
terminal. Then the window makes the identical call again, so the proxy spends the approval
(the call goes through once) or tells the model who denied it and why.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synartesis.desktop.events import Hub
from synartesis.desktop.journalview import JournalView, ledger
from synartesis.desktop.keys import KeyStore
from synartesis.desktop.links import LinkError, ServerLink
from synartesis.desktop.models import Finished, ModelError, TextDelta, ToolCall, adapter_for
from synartesis.desktop.settings import Settings
from synartesis.errors import SynartesisError

__all__ = ["Window", "Conversation", "SYSTEM_PROMPT", "MAX_ROUNDS", "IDLE_SECONDS", "tool_name"]

MAX_ROUNDS = 24
IDLE_SECONDS = 120.0  # an idle conversation's proxies are closed, so its runs end (the CLI can undo them)
SYSTEM_PROMPT = (
    "You are working in synartesis desktop. Your tools come from MCP servers and are named "
    "SERVER__tool. Every tool call goes through synartesis, which records it with the state it "
    "replaced so the user can undo it. A call that cannot be undone waits for the user to approve "
    "it in this window before it runs; you then get its real result, or the user's denial and "
    "reason. Do not try to reach a denied result another way.")
_NAME_BAD = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """The name a model sees: ``SERVER__tool`` (the multi-server proxy's convention), with
    characters providers refuse replaced, at most 64 characters."""
    return _NAME_BAD.sub("_", f"{server}__{tool}")[:64]


@dataclass
class Card:
    """A tool call in a conversation. ``action`` is its journal row (``show --json`` shape)."""

    id: str
    server: str
    tool: str
    args: Any
    run: str | None = None
    state: str = "calling"  # calling | held | retrying | done | error
    error: str | None = None
    action: dict | None = None
    held_id: str | None = None
    decided: asyncio.Event = field(default_factory=asyncio.Event)

    def as_json(self) -> dict:
        return {"id": self.id, "server": self.server, "tool": self.tool, "args": self.args, "run": self.run,
                "state": self.state, "error": self.error, "action": self.action, "heldId": self.held_id}


class Conversation:
    """Messages, transcript items, cards, connections and runs of one conversation."""

    def __init__(self, window: "Window", servers: list[str], profile: str) -> None:
        self.window = window
        self.id = uuid.uuid4().hex
        self.title = "New conversation"
        self.profile = profile
        self.servers = list(servers)
        self.messages: list[dict] = []
        self.items: list[dict] = []
        self.cards: dict[str, Card] = {}
        self.links: dict[str, ServerLink] = {}
        self.runs: list[str] = []
        self.actions: list[dict] = []
        self.task: asyncio.Task | None = None
        self._background: set[asyncio.Task] = set()
        self._binding = asyncio.Lock()
        self._stopping = False
        self._idle: asyncio.TimerHandle | None = None
        self._n = 0

    # -- views -----------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.task is not None and not self.task.done()

    def summary(self) -> dict:
        return {"id": self.id, "title": self.title, "busy": self.busy, "runs": list(self.runs),
                "ledger": ledger(self.actions)}

    def as_json(self) -> dict:
        return {**self.summary(), "profile": self.profile, "servers": list(self.servers), "items": self.items,
                "cards": {k: c.as_json() for k, c in self.cards.items()},
                "connected": sorted(s for s, link in self.links.items() if link.alive)}

    def _item(self, kind: str, **data: Any) -> dict:
        self._n += 1
        item = {"kind": kind, "id": f"i{self._n}", **data}
        self.items.append(item)
        return item

    def notice(self, text: str, level: str = "info") -> None:
        self._item("notice", level=level, text=text)
        self.changed()

    def changed(self) -> None:
        self.window.publish_conversation(self)

    # -- a turn ----------------------------------------------------------------------------
    def send(self, text: str) -> None:
        """Start a turn with the user's ``text``.

        Raises:
            SynartesisError: a turn is already running.
        """
        if self.busy:
            raise SynartesisError("the model is still answering; wait, or press Stop")
        if not self.messages:
            first = " ".join(text.split())
            self.title = first[:60] + ("…" if len(first) > 60 else "")
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        self.messages.append({"role": "user", "content": text})
        self._item("user", text=text)
        self.task = asyncio.create_task(self._turn(), name=f"turn-{self.id[:8]}")
        self.changed()

    def stop(self) -> bool:
        """Cancel the running turn (a tool call already sent is waited for, so its outcome is
        journalled and told to the model). False when nothing runs."""
        if not self.busy:
            return False
        assert self.task is not None
        self.task.cancel()
        return True

    async def _turn(self) -> None:
        pending: list[ToolCall] = []
        self._stopping = False
        try:
            tools, names = await self._connect()
            w = self.window
            profile = w.settings.profiles[self.profile]
            adapter = adapter_for(profile, w.keys.get(profile.id))
            for _ in range(MAX_ROUNDS):
                item = self._item("assistant", text="", streaming=True)
                self.changed()
                calls: list[ToolCall] = []
                async for ev in adapter.stream(self.messages, tools, SYSTEM_PROMPT):
                    if isinstance(ev, TextDelta):
                        item["text"] += ev.text
                        w.hub.publish("delta", {"conversation": self.id, "item": item["id"], "text": ev.text})
                    elif isinstance(ev, ToolCall):
                        calls.append(ev)
                    elif isinstance(ev, Finished):
                        item["finish"] = ev.reason
                item["streaming"] = False
                if not item["text"]:
                    self.items.remove(item)
                self.messages.append({"role": "assistant", "content": item["text"],
                                      "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]})
                self.changed()
                if not calls:
                    return
                pending = list(calls)
                while pending:
                    c = pending[0]
                    text, is_error = await self._tool(c, names)
                    pending.pop(0)
                    self.messages.append({"role": "tool", "tool_call_id": c.id, "name": c.name, "content": text,
                                          "is_error": is_error})
                    if self._stopping:
                        raise asyncio.CancelledError
            self.notice(f"stopped after {MAX_ROUNDS} rounds of tool calls; send a message to go on", "warn")
        except ModelError as exc:
            self._close_streaming()
            self.notice(exc.message, "error")
        except asyncio.CancelledError:
            self._close_streaming()
            self.notice("stopped", "info")
        except (LinkError, SynartesisError) as exc:
            self._close_streaming()
            self.notice(str(exc), "error")
        except Exception as exc:  # a bug: said in the conversation, never lost in a dead task
            from synartesis.log import log
            log("error", "a conversation turn failed", error=f"{type(exc).__name__}: {exc}")
            self._close_streaming()
            self.notice(f"internal error: {type(exc).__name__}: {exc}", "error")
        finally:
            # every tool call the model made gets an answer, or the next request is malformed
            for c in pending:
                self.messages.append({"role": "tool", "tool_call_id": c.id, "name": c.name, "is_error": True,
                                      "content": "not run: the user stopped the conversation before this call"})
            for card in self.cards.values():
                if card.state in ("calling", "retrying"):
                    card.state = "done"  # its call completed (a call is always waited for once sent)
                # a held card stays held: a later decision shows on it, and the model's next
                # identical call spends an approval
            self._idle = asyncio.get_running_loop().call_later(
                IDLE_SECONDS, lambda: self._track(asyncio.ensure_future(self._close_idle())))
            self.changed()

    def _close_streaming(self) -> None:
        for item in self.items:
            if item.get("streaming"):
                item["streaming"] = False

    async def _connect(self) -> tuple[list[dict], dict[str, tuple[str, str]]]:
        """Start a link for every switched-on server that has none; the tools on offer."""
        w = self.window
        for name in self.servers:
            link = self.links.get(name)
            if link is not None and link.alive:
                continue
            try:
                launch = w.launch(name, self.id)
                link = ServerLink(launch, self.title, on_run=self._on_run)
                self.links[name] = link
                await link.start()
            except (LinkError, SynartesisError) as exc:
                self.links.pop(name, None)
                self.notice(f"{name} is not available in this conversation: {exc}", "error")
        tools: list[dict] = []
        names: dict[str, tuple[str, str]] = {}
        for name in self.servers:
            link = self.links.get(name)
            if link is None or not link.alive:
                continue
            for t in link.tools:
                exposed = tool_name(name, t.name)
                names[exposed] = (name, t.name)
                tools.append({"name": exposed, "description": t.description or "",
                              "parameters": t.input_schema if isinstance(t.input_schema, dict) else {"type": "object"}})
        return tools, names

    def _on_run(self, run: str) -> None:
        if run not in self.runs:
            self.runs.append(run)
            self.window.poke()

    async def _close_idle(self) -> None:
        self._idle = None
        if not self.busy:
            await self.disconnect()

    async def disconnect(self, servers: list[str] | None = None) -> None:
        """Close links (all, or those of ``servers``): their proxies end their runs."""
        names = list(self.links) if servers is None else [s for s in servers if s in self.links]
        links = [self.links.pop(n) for n in names]
        await asyncio.gather(*(link.close() for link in links), return_exceptions=True)
        if links:
            self.changed()

    async def _tool(self, c: ToolCall, names: dict[str, tuple[str, str]]) -> tuple[str, bool]:
        """Run one tool call; returns (text for the model, is_error)."""
        target = names.get(c.name)
        card = Card(uuid.uuid4().hex[:12], *(target or ("?", c.name)), c.arguments)
        self.cards[card.id] = card
        self._item("card", card=card.id)
        if target is None:
            card.state, card.error = "error", f"no tool {c.name} is on offer in this conversation"
            self.changed()
            return f"There is no tool named {c.name}; use one of the tools listed.", True
        if c.bad_arguments is not None:
            card.state, card.error = "error", "the model's arguments were not a JSON object, so nothing was sent"
            self.changed()
            return f"Your arguments for {c.name} were not a JSON object ({c.bad_arguments[:200]!r}); nothing was sent.", True
        self.changed()
        link = self.links[card.server]
        try:
            result = await self._sent(link.call(card.tool, c.arguments))
        except LinkError as exc:
            card.state, card.error = "error", str(exc)
            self.changed()
            return f"The call failed before an answer came back: {exc}", True
        held = _held_action(_result_text(result)) if result.get("isError") else None
        if held is None:
            # not held: the model gets the answer now; the card finds its journal row meanwhile
            # (a read is journalled a moment after it is answered)
            self._track(asyncio.create_task(self._bind(card, link)))
        else:
            await self._bind(card, link)  # a held row is journalled before the proxy answers
            if card.action is None:  # held as a waiting twin of this call made elsewhere (another run)
                card.action = await self.window.journal.run(lambda j: JournalView.action(j, held))
        if card.action and card.action["status"] == "gated":
            card.state, card.held_id = "held", card.action["id"]
            self.changed()
            await card.decided.wait()
            card.state = "retrying"
            self.changed()
            try:
                result = await self._sent(link.call(card.tool, c.arguments))  # the identical call
            except LinkError as exc:
                card.state, card.error = "error", str(exc)
                self.changed()
                return f"The call failed before an answer came back: {exc}", True
            self._track(asyncio.create_task(self._bind(card, link)))
        card.state = "done"
        self.changed()
        return _result_text(result), bool(result.get("isError"))

    async def _sent(self, call: Any) -> dict:
        """Await a tool call to its end even when the turn is stopped meanwhile: once sent, its
        outcome is journalled and told to the model; the turn stops right after it."""
        task = asyncio.ensure_future(call)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            self._stopping = True
            return await task

    def _track(self, task: asyncio.Task) -> None:
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _bind(self, card: Card, link: ServerLink, wait: float = 3.0) -> None:
        """Find the journal action the proxy recorded for this call (reads are journalled a
        moment after they are answered, so this polls briefly; the journal refresh keeps trying)."""
        jv = self.window.journal
        loop = asyncio.get_running_loop()
        end = loop.time() + wait
        async with self._binding:  # in call order, so identical calls bind to rows in seq order
            while True:
                taken = {c.action["id"] for c in self.cards.values() if c is not card and c.action}
                for run in reversed(link.run_ids):
                    found = await jv.run(lambda j, r=run, t=taken: JournalView.find_call(j, r, card.server, card.tool,
                                                                                      card.args, t))
                    if found is not None:
                        card.run, card.action = run, found
                        self.changed()
                        return
                if loop.time() >= end:
                    return
                await asyncio.sleep(0.05)

    async def refresh(self) -> None:
        """Re-read this conversation's actions; update cards and wake held cards a person decided."""
        jv = self.window.journal
        runs = list(self.runs)
        self.actions = await jv.run(lambda j: JournalView.actions_of(j, runs))
        by_id = {a["id"]: a for a in self.actions}
        for card in self.cards.values():
            if card.action is None:
                continue
            fresh = by_id.get(card.action["id"])
            if fresh is None:
                fresh = await jv.run(lambda j, ref=card.action["id"]: JournalView.action(j, ref)) or card.action
            card.action = fresh
            if card.state == "held" and fresh["status"] != "gated":
                card.decided.set()


_HELD_ID = re.compile(r"Action ([0-9a-f]{8}) is waiting")


def _held_action(text: str) -> str | None:
    """The action id in the proxy's held-call answer (:data:`synartesis.proxy.pipeline.GATE_PREFIX`)."""
    from synartesis.proxy.pipeline import GATE_PREFIX
    m = _HELD_ID.search(text) if text.startswith(GATE_PREFIX) else None
    return m.group(1) if m else None


def _result_text(result: dict) -> str:
    """What the model is told: the text blocks, else the structured content, else the JSON."""
    import json
    texts = [b.get("text", "") for b in result.get("content") or [] if isinstance(b, dict) and b.get("type") == "text"]
    if texts:
        return "\n".join(texts)
    if "structuredContent" in result:
        return json.dumps(result["structuredContent"], ensure_ascii=False)
    return json.dumps(result, ensure_ascii=False)


class Window:
    """The window's state: settings, keys, conversations, the journal view, the live hub.

    Args:
        policy_path, journal_path: where the proxies it starts read their policy and write
            their journal (the same places the CLI uses).
        by: who decides and undoes (the OS user unless ``--by``).
    """

    def __init__(self, policy_path: Path, journal_path: Path, by: str, keys: KeyStore, settings: Settings) -> None:
        self.policy_path = policy_path
        self.journal_path = journal_path
        self.by = by
        self.keys = keys
        self.settings = settings
        self.hub = Hub()
        self.journal = JournalView(journal_path)
        self.conversations: dict[str, Conversation] = {}
        self.policy: Any = None
        self.policy_problem: str | None = None
        self.undo_lock = asyncio.Lock()
        self._version: int | None = None
        self._poke = asyncio.Event()
        self._pending: set[str] = set()
        self._flush: asyncio.TimerHandle | None = None
        self.load_policy()

    # -- policy and servers ------------------------------------------------------------------
    def load_policy(self) -> None:
        from synartesis.services.undoing import load_policy_at
        try:
            self.policy = load_policy_at(self.policy_path)
            self.policy_problem = None if self.policy else (
                f"there is no policy at {self.policy_path}, so no MCP server is on offer; run "
                "`synartesis install` (or `synartesis init NAME -- COMMAND…`) first")
        except SynartesisError as exc:
            self.policy, self.policy_problem = None, str(exc)

    def servers(self) -> list[dict]:
        """The policy's servers: name, whether the window can start it, and why not."""
        if self.policy is None:
            return []
        out = []
        for name, spec in self.policy.servers.items():
            item = {"name": name, "provenance": spec.provenance, "available": bool(spec.command), "why": None}
            if not spec.command:
                item["why"] = "no command in the policy (its client starts it)"
            out.append(item)
        return out

    def launch(self, name: str, conversation: str):
        """The wrapped launch of server ``name`` for a conversation.

        Raises:
            SynartesisError: no policy, or the server cannot be started here.
        """
        from synartesis.services.wrapped import proxy_launch
        if self.policy is None:
            raise SynartesisError(self.policy_problem or "there is no policy")
        return proxy_launch(self.policy, name, manifest=self.policy_path, journal=self.journal_path,
                            extra_env={"SYNARTESIS_SESSION": conversation, "SYNARTESIS_LOG_LEVEL": "info"})

    # -- conversations -----------------------------------------------------------------------
    def new_conversation(self, servers: list[str] | None = None, profile: str | None = None) -> Conversation:
        available = [s["name"] for s in self.servers() if s["available"]]
        chosen = [s for s in (servers if servers is not None else available) if s in available]
        conv = Conversation(self, chosen, profile if profile in self.settings.profiles else self.settings.current)
        self.conversations[conv.id] = conv
        self.hub.publish("conversations", [c.summary() for c in self.conversations.values()])
        return conv

    def conversation_of_run(self, run: str) -> str | None:
        return next((c.id for c in self.conversations.values() if run in c.runs), None)

    # -- live updates ------------------------------------------------------------------------
    def publish_conversation(self, conv: Conversation) -> None:
        """Debounced: at most one full conversation frame per 40 ms."""
        self._pending.add(conv.id)
        if self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(0.04, self._send_pending)

    def _send_pending(self) -> None:
        self._flush = None
        ids, self._pending = self._pending, set()
        for cid in ids:
            conv = self.conversations.get(cid)
            if conv is not None:
                self.hub.publish("conversation", conv.as_json())

    def poke(self) -> None:
        """Look at the journal now (a new run appeared)."""
        self._poke.set()

    async def refresh(self, conv: Conversation) -> None:
        await conv.refresh()
        conv.changed()

    async def watch_journal(self, interval: float = 0.3) -> None:
        """Follow the journal: on every commit by anyone (a proxy, the CLI, another client),
        refresh the conversations and tell pages that history and held calls changed."""
        while True:
            try:
                version = await self.journal.run(JournalView.version)
                if version != self._version or self._poke.is_set():
                    self._version = version
                    self._poke.clear()
                    for conv in list(self.conversations.values()):
                        if conv.runs:
                            await self.refresh(conv)
                    self.hub.publish("journal", {"version": version})
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a journal that cannot be read right now: say so, keep going
                self.hub.publish("problem", {"text": f"cannot read the journal: {exc}"})
            try:
                await asyncio.wait_for(self._poke.wait(), interval)
            except asyncio.TimeoutError:
                pass

    async def shutdown(self) -> None:
        """Stop every turn and close every link (their proxies end their runs)."""
        for conv in self.conversations.values():
            conv.stop()
        await asyncio.gather(*(c.disconnect() for c in self.conversations.values()), return_exceptions=True)
        self.hub.close()
        await asyncio.to_thread(self.journal.close)
