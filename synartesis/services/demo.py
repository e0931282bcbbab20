"""`synartesis demo`: the whole loop against the bundled toy CRM, through the real proxy.

In a fresh folder it writes a policy (the shipped ``policies/crm.yaml`` pointed at this
interpreter and a store file there), then plays an agent with the mcp SDK's own client
talking to ``synartesis proxy … -- python -m synartesis.demo.crm_server`` exactly as an MCP
client would, and runs the real CLI in that folder (``python -m synartesis …``, shown as
``synartesis …``: the folder's ``synartesis.yaml`` and ``journal.db`` are found by the
usual rules). The steps (issue 3, item 8):

1. the agent's damaging calls;  2. ``list`` / ``show``;  3. ``undo --dry-run`` (nothing
changes);  4. ``undo`` (the store is byte-identical to before);  5. a person edits a record
between the agent's write and the undo → ``undo`` refuses, showing both values, and the store
is left as the person made it;  6. an irreversible call (``send_email``) is held → ``approve``
→ the agent's identical retry goes through.

Every step carries the checks that prove it behaved as shown; :func:`run_demo` stops at the
first step whose checks fail. Nothing here prints: the CLI renders each
:class:`DemoStep` as it arrives (``on_step``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

__all__ = ["Check", "CommandRun", "DemoStep", "DemoResult", "run_demo", "describe_changes",
           "demo_policy_text"]

POLICY_NAME = "synartesis.yaml"
JOURNAL_NAME = "journal.db"
STORE_NAME = "crm-store.json"
AGENT_NAME = "demo-agent"
CLI_TIMEOUT_S = 120.0
CALL_TIMEOUT_S = 60.0

# What the agent does in step 1, and what a person does in step 5.
DAMAGE: list[tuple[str, dict[str, Any]]] = [
    ("get_customer", {"id": "c_001"}),
    ("update_customer", {"id": "c_001", "plan": "free", "notes": ""}),
    ("update_customer", {"id": "c_002", "email": "grace.hopper@example.invalid"}),
    ("delete_customer", {"id": "c_003"}),
    ("create_customer", {"name": "Ada Lovelace", "email": "ada@example.com", "plan": "pro",
                         "notes": "duplicate of c_001"}),
]
AGENT_EDIT = ("update_customer", {"id": "c_002", "plan": "free"})
HUMAN_EDIT = ("update_customer", {"id": "c_002", "notes": "Grace called: keep her on enterprise"})
EMAIL = ("send_email", {"to": "grace@example.com", "subject": "Your plan has changed",
                        "body": "Hello Grace, you are now on the free plan."})


@dataclass
class Check:
    """One claim the demo makes, and whether it held (``detail`` says what was seen)."""

    what: str
    ok: bool
    detail: str = ""


@dataclass
class CommandRun:
    """A CLI command the demo ran: ``shown`` is what a user would type in the folder."""

    shown: str
    exit_code: int
    output: str


@dataclass
class DemoStep:
    """One step of the loop: what happened, in order (``items``: a text line, or a CLI
    command with its output), then the checks that prove it."""

    number: int
    title: str
    items: list[str | CommandRun] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def commands(self) -> list[CommandRun]:
        return [i for i in self.items if isinstance(i, CommandRun)]

    def say(self, *lines: str) -> None:
        self.items.extend(lines)

    def ran(self, command: CommandRun) -> CommandRun:
        self.items.append(command)
        return command

    def check(self, what: str, ok: bool, detail: str = "") -> bool:
        self.checks.append(Check(what, bool(ok), detail))
        return bool(ok)


@dataclass
class DemoResult:
    """The whole demo: ``ok`` only if every step ran and every check held."""

    workdir: Path
    steps: list[DemoStep]
    completed: bool
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.completed and self.error is None and all(s.ok for s in self.steps)


# -- helpers ---------------------------------------------------------------------------------

def describe_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Human lines for what changed between two store dicts ({"customers": …, "outbox": …}).

    Returns e.g. ``["c_001 Ada Lovelace: plan 'pro' → 'free'", "c_003 Alan Turing: removed"]``.
    """
    lines: list[str] = []
    old, new = before.get("customers", {}), after.get("customers", {})
    for cid in sorted(set(old) | set(new)):
        a, b = old.get(cid), new.get(cid)
        if a == b:
            continue
        if a is None:
            lines.append(f"{cid} {b.get('name', '')}: added ({b.get('plan', '')})")
        elif b is None:
            lines.append(f"{cid} {a.get('name', '')}: removed")
        else:
            diffs = [f"{k} {a.get(k)!r} → {b.get(k)!r}" for k in sorted(set(a) | set(b))
                     if a.get(k) != b.get(k)]
            lines.append(f"{cid} {b.get('name', '')}: " + ", ".join(diffs))
    sent = len(after.get("outbox", [])) - len(before.get("outbox", []))
    if sent:
        lines.append(f"outbox: {sent:+d} message(s)")
    return lines


def demo_policy_text(python: str, store: Path) -> str:
    """The shipped crm policy with its server launch line pointed at ``python`` and ``store``."""
    text = (files("synartesis.policies") / "crm.yaml").read_text(encoding="utf-8")
    args = ["-m", "synartesis.demo.crm_server", "--state", str(store)]
    text, n_cmd = re.subn(r"(?m)^(    command:).*$", lambda m: f"{m.group(1)} {json.dumps(python)}",
                          text, count=1)
    text, n_args = re.subn(r"(?m)^(    args:).*$", lambda m: f"{m.group(1)} {json.dumps(args)}",
                           text, count=1)
    if n_cmd != 1 or n_args != 1:
        raise RuntimeError("the shipped policies/crm.yaml has no servers.crm command/args line")
    return text


def _squash(text: str) -> str:
    """``text`` without any whitespace: a terminal may wrap long JSON anywhere."""
    return "".join(text.split())


def _result_text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def _payload(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    text = _result_text(result)
    try:
        return json.loads(text)
    except ValueError:
        return text


class _Demo:
    """State shared by the steps (paths, the environment children get)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.policy = workdir / POLICY_NAME
        self.journal = workdir / JOURNAL_NAME
        self.store = workdir / STORE_NAME
        self.python = sys.executable
        self.steps: list[DemoStep] = []
        env = dict(os.environ)
        # The demo must never touch the user's own policy, journal or client configs.
        env["SYNARTESIS_HOME"] = str(workdir / "home")
        env.setdefault("USER", "demo")
        env["NO_COLOR"] = "1"
        env["COLUMNS"] = "140"
        env["PYTHONIOENCODING"] = "utf-8"
        self.env = env

    # The server behind the proxy, exactly as the policy describes it.
    @property
    def server_argv(self) -> list[str]:
        return [self.python, "-m", "synartesis.demo.crm_server", "--state", str(self.store)]

    @property
    def proxy_argv(self) -> list[str]:
        return [self.python, "-m", "synartesis", "proxy", "--server", "crm",
                "--manifest", str(self.policy), "--journal", str(self.journal), "--",
                *self.server_argv]

    def store_bytes(self) -> bytes:
        return self.store.read_bytes()

    def store_data(self) -> dict[str, Any]:
        return json.loads(self.store_bytes().decode("utf-8"))

    @asynccontextmanager
    async def session(self, argv: list[str]) -> AsyncIterator[Any]:
        """An initialized mcp ClientSession on a process started from ``argv``."""
        from mcp import ClientSession, StdioServerParameters, stdio_client
        from mcp_types import Implementation

        from synartesis import __version__

        params = StdioServerParameters(command=argv[0], args=argv[1:], env=self.env,
                                       cwd=str(self.workdir))
        with open(self.workdir / "servers.log", "a", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT_S,
                                         client_info=Implementation(name=AGENT_NAME,
                                                                    version=__version__)) as s:
                    await s.initialize()
                    yield s

    def agent(self) -> Any:
        """The agent's connection: through the proxy, as an MCP client config would start it."""
        return self.session(self.proxy_argv)

    def person(self) -> Any:
        """A person using the CRM directly (no proxy, nothing journalled)."""
        return self.session(self.server_argv)

    async def cli(self, *args: str) -> CommandRun:
        """Run ``synartesis ARGS`` in the demo folder; returns what a user would see."""
        def go() -> subprocess.CompletedProcess[str]:
            return subprocess.run([self.python, "-m", "synartesis", *args], cwd=self.workdir,
                                  env=self.env, capture_output=True, text=True,
                                  encoding="utf-8", errors="replace", timeout=CLI_TIMEOUT_S)
        try:
            proc = await asyncio.to_thread(go)
        except subprocess.TimeoutExpired:
            return CommandRun("synartesis " + shlex.join(args), -1,
                              f"(no answer after {CLI_TIMEOUT_S:.0f} s)")
        output = proc.stdout + (("\n" if proc.stdout and proc.stderr else "") + proc.stderr)
        return CommandRun("synartesis " + shlex.join(args), proc.returncode, output.rstrip())

    def runs(self) -> list[Any]:
        """The journal's runs, newest first (read directly; the CLI shows the same)."""
        from synartesis.journal import Journal

        with Journal.open(self.journal) as journal:
            return journal.list_runs()

    async def newest_run(self, settle_s: float = 10.0) -> Any | None:
        """The newest run, once its proxy has closed it (an MCP client gives a server about
        2 s to exit after closing its stdin; on a busy machine the proxy may still be
        finishing when the client returns). None when there is no run."""
        deadline = asyncio.get_running_loop().time() + settle_s
        while True:
            runs = self.runs()
            if not runs or runs[0].status != "active" or asyncio.get_running_loop().time() > deadline:
                return runs[0] if runs else None
            await asyncio.sleep(0.1)

    def run_status(self, run_id: str) -> tuple[str, dict[str, str]]:
        """(run status, {seq:tool → action status}) from the journal."""
        from synartesis.journal import Journal

        with Journal.open(self.journal) as journal:
            run = journal.find_run(run_id)
            acts = {f"{a.seq}:{a.tool}": a.status for a in journal.actions(run_id)}
        return run.status, acts


# -- the steps -------------------------------------------------------------------------------

async def _step_damage(d: _Demo, step: DemoStep) -> str | None:
    seed = d.store_data()
    step.say(f"The agent connects through `synartesis proxy --server crm … -- python -m "
             f"synartesis.demo.crm_server` and makes {len(DAMAGE)} calls:")
    async with d.agent() as agent:
        for tool, args in DAMAGE:
            result = await agent.call_tool(tool, args)
            shown = json.dumps(args, ensure_ascii=False)
            step.say(f"  crm.{tool} {shown}" + ("  → error: " + _result_text(result)
                                                if result.is_error else ""))
            step.check(f"crm.{tool} went through the proxy", not result.is_error,
                       _result_text(result)[:300])
    damaged = d.store_data()
    changes = describe_changes(seed, damaged)
    step.say("What that did to the CRM:")
    step.say(*(f"  {line}" for line in changes))
    step.check("the store changed (plan downgraded, email wrong, a customer deleted, a duplicate)",
               len(changes) == 4, "; ".join(changes))
    run = await d.newest_run()
    runs = d.runs()
    step.check("the proxy journalled one run", len(runs) == 1, f"{len(runs)} run(s)")
    if run is None:
        return None
    status, actions = d.run_status(run.id)
    step.check("the run is closed (complete) now that the agent disconnected",
               status == "complete", f"status {status}")
    step.check("every call is recorded as applied",
               len(actions) == len(DAMAGE) and set(actions.values()) == {"applied"},
               json.dumps(actions))
    return run.id


async def _step_list_show(d: _Demo, step: DemoStep, run_id: str) -> None:
    step.say("The journal, as anyone can read it:")
    listed = step.ran(await d.cli("list"))
    step.check("`synartesis list` exits 0 and shows the run", listed.exit_code == 0
               and run_id[:8] in listed.output, f"exit {listed.exit_code}")
    shown = step.ran(await d.cli("show", run_id[:8]))
    step.check("`synartesis show` exits 0 and lists each call with the call that reverses it",
               shown.exit_code == 0 and all(f"crm.{t}" in shown.output for t, _ in DAMAGE)
               and "crm.restore_customer" in shown.output, f"exit {shown.exit_code}")


async def _step_dry_run(d: _Demo, step: DemoStep, run_id: str) -> None:
    before = d.store_bytes()
    step.say("The plan, newest first; nothing is sent:")
    dry = step.ran(await d.cli("undo", run_id[:8], "--dry-run"))
    # a dry run exits as the real undo would (1 if that would halt or leave a call in place):
    # here nothing would, so 0 (new user round 31, 10d: the line read as if a dry run always did)
    step.check("`undo --dry-run` exits 0 (the real undo would do it all) and says what it would call",
               dry.exit_code == 0 and "would call" in dry.output, f"exit {dry.exit_code}")
    step.check("the store is untouched by the dry run", d.store_bytes() == before)
    status, _ = d.run_status(run_id)
    step.check("the run is unchanged by the dry run", status == "complete", f"status {status}")


async def _step_undo(d: _Demo, step: DemoStep, run_id: str, seed: bytes) -> None:
    damaged = d.store_data()
    undo = step.ran(await d.cli("undo", run_id[:8]))
    restored = d.store_data()
    step.say("What undo put back:")
    step.say(*(f"  {line}" for line in describe_changes(damaged, restored)))
    step.check("`undo` exits 0", undo.exit_code == 0, f"exit {undo.exit_code}")
    same = d.store_bytes() == seed
    step.check("the store is byte-identical to before the agent ran", same,
               "; ".join(describe_changes(json.loads(seed), restored)) or "identical")
    status, actions = d.run_status(run_id)
    # the duplicate's deletion cannot be compared with a state before its create (none was
    # captured), so an honest undo calls the run compensated (unverified: 1)
    step.check("the run is rolled back (the deleted duplicate: compensated, unverified)",
               status in ("rolled_back", "compensated"), f"status {status}")
    step.check("every write is rolled_back (the read is skipped)",
               all(s == "rolled_back" for k, s in actions.items() if not k.endswith(":get_customer")),
               json.dumps(actions))


async def _step_drift(d: _Demo, step: DemoStep) -> None:
    tool, args = AGENT_EDIT
    step.say(f"The agent connects again (a new run): crm.{tool} {json.dumps(args)}")
    async with d.agent() as agent:
        result = await agent.call_tool(tool, args)
    step.check("the agent's write went through", not result.is_error, _result_text(result)[:300])
    run = await d.newest_run()
    step.check("the proxy journalled the agent's session as a new run",
               run is not None and run.label == AGENT_NAME and run.actions == 1,
               repr(run))
    if run is None:
        return
    run_id = run.id
    h_tool, h_args = HUMAN_EDIT
    step.say("Then a person, in the CRM itself (not through the proxy): "
             f"{h_tool} {json.dumps(h_args, ensure_ascii=False)}")
    async with d.person() as person:
        result = await person.call_tool(h_tool, h_args)
    step.check("the person's edit went through", not result.is_error, _result_text(result)[:300])
    edited = d.store_bytes()
    step.say("Undoing the agent's change now would throw the person's note away. Undo reads "
             "the record first, sees it is not as the agent left it, and stops:")
    undo = step.ran(await d.cli("undo", run_id[:8]))
    step.check("`undo` refuses (exit 1) and says drift", undo.exit_code == 1
               and "drift" in undo.output.lower(), f"exit {undo.exit_code}")
    flat = _squash(undo.output)
    step.check("it shows both values: what the run left and what is there now",
               _squash('"plan":"free"') in flat and _squash(h_args["notes"]) in flat
               and _squash('"renewal in March"') in flat)
    step.check("the store is exactly as the person left it", d.store_bytes() == edited)
    c002 = d.store_data()["customers"]["c_002"]
    step.say(f"c_002 is untouched: plan {c002['plan']!r}, notes {c002['notes']!r}.")


def _named_command(text: str, verb: str) -> list[str] | None:
    """The arguments after ``synartesis`` of the ``synartesis VERB …`` command line in ``text``
    (a held call's answer names ``… -m synartesis approve ID --journal PATH``); None if none."""
    for line in text.splitlines():
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        for i, w in enumerate(words[:-1]):
            if (w == "synartesis" or w.endswith("/synartesis")) and words[i + 1] == verb:
                return words[i + 1:]
    return None


async def _step_gate(d: _Demo, step: DemoStep) -> None:
    tool, args = EMAIL
    outbox_before = len(d.store_data()["outbox"])
    step.say(f"The agent: crm.{tool} {json.dumps(args, ensure_ascii=False)}")
    async with d.agent() as agent:
        held = await agent.call_tool(tool, args)
        text = _result_text(held)
        step.say("The proxy answers at once, and the email is not sent:")
        step.say(*(f"  │ {line}" for line in text.splitlines()))
        step.check("the call is held (isError, names the approve command)",
                   held.is_error is True and "approve" in text, text[:300])
        step.check("nothing was sent", len(d.store_data()["outbox"]) == outbox_before)
        match = re.search(r"approve\s+([0-9A-Za-z][0-9A-Za-z-]{5,})", text)
        if not match:
            step.check("the refusal names the action to approve", False, text[:300])
            return
        step.say("A person looks at what is waiting, and approves it:")
        # pointed at the demo's journal, so the approve line gates prints works when copied into
        # another shell (it names --journal only when told one: new user round 15, #6)
        gates = step.ran(await d.cli("gates", "--journal", str(d.journal)))
        step.check("`synartesis gates` lists the held call", gates.exit_code == 0
                   and match.group(1)[:8] in gates.output, f"exit {gates.exit_code}")
        # the very command the proxy named to the agent (new user round 9: the demo showed one
        # and ran another): everything after `synartesis`, as a person would paste it
        named = _named_command(text, "approve") or ["approve", match.group(1)]
        approve = step.ran(await d.cli(*named))
        step.check("`approve` exits 0", approve.exit_code == 0, f"exit {approve.exit_code}")
        retry = await agent.call_tool(tool, args)
        step.say("The agent makes the exact same call again, and it goes through:")
        step.say("  → " + _result_text(retry)[:200])
        step.check("the retry goes through", not retry.is_error, _result_text(retry)[:300])
        outbox = d.store_data()["outbox"]
        step.check("exactly one email is in the outbox", len(outbox) == outbox_before + 1,
                   f"{len(outbox)} message(s)")
        again = await agent.call_tool(tool, args)
        step.say("The approval was for one call: a third identical call is held again.")
        step.check("the approval was single-use: a third identical call is held again",
                   again.is_error is True and "approve" in _result_text(again),
                   _result_text(again)[:300])
    step.check("still exactly one email in the outbox",
               len(d.store_data()["outbox"]) == outbox_before + 1)


# -- the driver ------------------------------------------------------------------------------

STEPS = (
    "The agent's damaging calls",
    "What the journal recorded: list and show",
    "undo --dry-run: the plan, nothing sent",
    "undo: the data is back",
    "A person's edit between the agent's write and the undo",
    "An irreversible call is held until a person approves it",
)


async def _run(d: _Demo, on_step: Callable[[DemoStep], None] | None) -> DemoResult:
    steps = d.steps

    def begin(n: int) -> DemoStep:
        step = DemoStep(n, STEPS[n - 1])
        steps.append(step)
        return step

    def done(step: DemoStep) -> bool:
        if on_step is not None:
            on_step(step)
        return step.ok

    from synartesis import fsops  # the demo's own files, in its own temporary folder

    fsops.atomic_write(d.policy, demo_policy_text(d.python, d.store).encode("utf-8"))
    from synartesis.demo.crm_server import SEED, dump_store

    seed = dump_store({"customers": SEED, "outbox": []})
    fsops.atomic_write(d.store, seed)

    step = begin(1)
    run_id = await _step_damage(d, step)
    if not done(step) or run_id is None:
        return DemoResult(d.workdir, steps, completed=False)
    step = begin(2)
    await _step_list_show(d, step, run_id)
    if not done(step):
        return DemoResult(d.workdir, steps, completed=False)
    step = begin(3)
    await _step_dry_run(d, step, run_id)
    if not done(step):
        return DemoResult(d.workdir, steps, completed=False)
    step = begin(4)
    await _step_undo(d, step, run_id, seed)
    if not done(step):
        return DemoResult(d.workdir, steps, completed=False)
    step = begin(5)
    await _step_drift(d, step)
    if not done(step):
        return DemoResult(d.workdir, steps, completed=False)
    step = begin(6)
    await _step_gate(d, step)
    done(step)
    return DemoResult(d.workdir, steps, completed=True)


def run_demo(workdir: Path, on_step: Callable[[DemoStep], None] | None = None) -> DemoResult:
    """Run the whole loop in ``workdir`` (an empty folder the caller owns and removes).

    Args:
        workdir: where the policy (``synartesis.yaml``), journal (``journal.db``), the CRM
            store (``crm-store.json``) and the servers' stderr (``servers.log``) go.
        on_step: called with each finished :class:`DemoStep`, for live output.
    Returns: :class:`DemoResult`; ``ok`` only if every step ran and every check held. A step
        whose checks fail ends the demo there. An unexpected exception (a server that does not
        start, a timeout) is caught and reported in ``error``; the demo never raises for it.
    """
    demo = _Demo(workdir)
    try:
        return asyncio.run(_run(demo, on_step))
    except Exception as exc:  # noqa: BLE001 - reported to the user, exit 1
        detail = f"{type(exc).__name__}: {exc}"
        nested = getattr(exc, "exceptions", None)
        if nested:
            detail += " (" + "; ".join(f"{type(e).__name__}: {e}" for e in nested) + ")"
        log = workdir / "servers.log"
        if log.exists():
            tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-8:]
            if tail:
                detail += "\nlast lines the servers wrote on stderr:\n  " + "\n  ".join(tail)
        return DemoResult(workdir, demo.steps, completed=False, error=detail)
